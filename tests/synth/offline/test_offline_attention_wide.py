"""The attention template's two modes and its fp32 precision: value heads up to WIDE_DV features
take the one flash-attention kernel (WIDE=0), wider ones a score kernel that forms each
q @ k^T tile once and a softmax @ v kernel (WIDE=1); fp32 plans carry the tf32x3/ieee choice
(TF32X3), 16-bit plans do not. Every mode and precision is verified by the real harness on the
cpu target (Triton's interpreter, then a compile of every launched kernel for the H200), at
small sizes so the interpreter stays quick."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kernelevolve.config import EvalConfig
from kernelevolve.problem import load_problem
from kernelevolve.synth.offline import analyze
from kernelevolve.synth.offline.families import attention
from kernelevolve.tools.harness.pool import WorkerPool

_PROBLEM = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, q, k, v):
        return {forward}


batch = 1
heads = 2
queries = {queries}
keys = {keys}
d = 16
dv = {dv}


def get_inputs():
    return [torch.randn(batch, heads, queries, d{dtype}), torch.randn(batch, heads, keys, d{dtype}),
            {v}]


def get_init_inputs():
    return []
'''
_SDPA = "F.scaled_dot_product_attention(q, k, v)"
# sdpa traces fp16 softmax as half_to_float, which the template leaves alone; by hand it matches
# (a scale of 0.3: the template reads one equal to d ** -0.5 at the traced d, 0.25, as sdpa's
# default, from the query's width at call time)
_BY_HAND = "torch.softmax(q @ k.transpose(-1, -2) * 0.3, dim=-1) @ v"
_V = "torch.randn(batch, heads, keys, dv{dtype})"
# v with its key axis contiguous: the layout the launcher copies v into for TF32 products on a GPU
_V_KMAJOR = "torch.randn(batch, heads, dv, keys{dtype}).transpose(-1, -2)"


def _problem(tmp_path: Path, name: str, *, dv: int, queries: int = 32, keys: int = 48,
             forward: str = _SDPA, v: str = _V, dtype: str = ""):
    path = tmp_path / f"{name}.py"
    dt = f", dtype={dtype}" if dtype else ""
    path.write_text(_PROBLEM.format(forward=forward, queries=queries, keys=keys, dv=dv, dtype=dt,
                                    v=v.format(dtype=dt)))
    return load_problem(path)


@pytest.fixture(scope="module")
def problems(tmp_path_factory):
    root = tmp_path_factory.mktemp("attention")
    wide = {"dv": attention.WIDE_DV + 64, "queries": 24, "keys": 40}
    return {"narrow": _problem(root, "narrow_attention", dv=16),
            "wide": _problem(root, "wide_attention", v=_V_KMAJOR, **wide),
            "half": _problem(root, "half_attention", forward=_BY_HAND, dtype="torch.float16",
                             **wide)}


@pytest.fixture(scope="module")
def pool():
    with WorkerPool("cpu", EvalConfig(n_input_sets=1), workers=1) as pool:
        yield pool


def _verified(pool: WorkerPool, problem, source: str) -> None:
    result = pool.evaluate(problem, source)
    assert result.ok, (f"{problem.name}: {result.status}: {result.message}\n"
                       f"{result.stderr_tail[-2000:]}")
    assert any(c.name == "correct on other shapes" for c in result.checks)


def test_the_value_width_picks_the_mode(problems):
    narrow, wide = analyze(problems["narrow"]), analyze(problems["wide"])
    assert narrow.default_params()["WIDE"] == 0 and wide.default_params()["WIDE"] == 1
    assert "one flash-attention kernel" in narrow.description
    assert "the scores once" in wide.description
    for plan in (narrow, wide):
        assert plan.space["WIDE"] == (0, 1)
        assert plan.space["TF32X3"] == (1, 0) and plan.default_params()["TF32X3"] == 1
        assert plan.feasible(plan.default_params()) is None
        # the other mode is offered but flagged, so the search keeps to the chosen one
        other = {**plan.default_params(), "WIDE": 1 - plan.default_params()["WIDE"]}
        assert plan.feasible(other) is not None
    source = wide.render(wide.default_params())
    assert "attention_scores_kernel[" in source and "attention_values_kernel[" in source
    assert "def attention_kernel" not in source  # only the mode's own kernels are written
    assert 'precision = "tf32x3" if TF32X3' in source and "input_precision=PRECISION" in source
    assert "def attention_kernel" in narrow.render(narrow.default_params())
    why = wide.feasible({**wide.default_params(), "BLOCK_N": 128, "BLOCK_DV": 256})
    assert why is not None and "registers" in why


def test_a_16_bit_plan_has_no_precision_choice(problems):
    plan = analyze(problems["half"])
    assert "TF32X3" not in plan.space and plan.default_params()["WIDE"] == 1
    source = plan.render(plan.default_params())
    assert "TF32X3" not in source and "kmajor_values" not in source


@pytest.mark.parametrize("wide", [0, 1], ids=["flash", "wide"])
@pytest.mark.parametrize("tf32x3", [1, 0], ids=["tf32x3", "ieee"])
def test_each_mode_and_precision_is_verified(problems, pool, wide, tf32x3):
    """Both modes on 16-wide heads (the mode is a parameter: rendering does not refuse the
    flagged one); small tiles so that several programs share a head."""
    plan = analyze(problems["narrow"])
    params = {**plan.default_params(), "WIDE": wide, "TF32X3": tf32x3, "BLOCK_M": 16,
              "BLOCK_N": 16, "BLOCK_D": 16, "BLOCK_DV": 16}
    _verified(pool, problems["narrow"], plan.render(params))


@pytest.mark.parametrize("name", ["wide", "half"])
def test_wide_heads_are_verified_at_the_defaults(problems, pool, name, monkeypatch):
    """Value heads wider than WIDE_DV at the plan's defaults: fp32 with tf32x3 and v read
    through its strides (key axis contiguous), its workspace too small for two heads (so each
    head has a launch of its own); and fp16."""
    plan = analyze(problems[name])
    if name == "wide":
        monkeypatch.setattr(attention, "WORKSPACE_BYTES", 24 * 48 * 4)  # one head's scores
    source = plan.render(plan.default_params())
    assert name != "wide" or "min(BH, 65535, 4608 //" in source
    _verified(pool, problems[name], source)


# Run in a fresh interpreter process (the interpreter must be on before triton loads): each
# rendered candidate against torch on positive inputs (KernelBench 97's torch.rand) holding -inf
# in a query, then also an infinity in v, then -inf and +inf in a key
_NONFINITE = textwrap.dedent('''
    import importlib.util, json, os, sys
    os.environ["TRITON_INTERPRET"] = "1"
    import torch
    import torch.nn.functional as F
    res = {}
    for path in sys.argv[1:]:
        spec = importlib.util.spec_from_file_location("cand", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        model = mod.ModelNew()
        for case in ("query -inf", "and v inf", "key -inf", "key +inf"):
            gen = torch.Generator().manual_seed(0)
            q, k, v = (torch.rand(1, 2, n, 16, generator=gen) for n in (32, 48, 48))
            if case in ("query -inf", "and v inf"):
                q[0, 1, 5, 3] = float("-inf")
            if case == "and v inf":
                v[0, 1, 7, 2] = float("inf")
            if case.startswith("key"):
                k[0, 0, 9, 4] = float(case[-4:])
            want, got = F.scaled_dot_product_attention(q, k, v), model(q, k, v)
            res[f"{os.path.basename(path)} {case}"] = [
                bool(torch.equal(got.isnan(), want.isnan())),
                bool(torch.equal(got.isinf(), want.isinf())),
                bool(torch.allclose(got.nan_to_num(), want.nan_to_num(), atol=1e-5)),
                int(want.isnan().sum()), int((want == 0).all(-1).sum())]
    print(json.dumps(res))
''')


def test_a_query_of_minus_infinity_gives_torchs_zero_row(tmp_path, problems):
    """With positive keys (KernelBench 97's torch.rand) a -inf in a query makes its whole row
    of scores -inf. torch's SDPA gives that row 0 (its products with v: NaN where v holds an
    infinity); the online softmax gave exp(-inf - -inf) = NaN, a difference the judge's
    infinities check found at 97 on the H200 (2048 values: two query rows of 1024). Both
    modes, in the interpreter, keep torch's NaN, infinities and values."""
    plan = analyze(problems["narrow"])
    paths = []
    for wide in (0, 1):
        params = {**plan.default_params(), "WIDE": wide, "BLOCK_M": 16, "BLOCK_N": 16,
                  "BLOCK_D": 16, "BLOCK_DV": 16}
        paths.append(tmp_path / f"mode{wide}.py")
        paths[-1].write_text(plan.render(params))
    done = subprocess.run([sys.executable, "-c", _NONFINITE, *map(str, paths)],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    res = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(res) == 8
    for case, (nan_same, inf_same, close, n_nan, zero_rows) in res.items():
        assert nan_same and inf_same and close, case
        if case.endswith("query -inf"):
            assert n_nan == 0 and zero_rows == 1, case  # torch's row of zeros, no NaN
        if case.endswith("v inf"):
            assert n_nan == 1, case  # that row's 0 * inf
