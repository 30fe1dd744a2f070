"""One plain TF32 product for fp32 convolutions (``TF32X3 = 4``, ``conv.with_tf32``): where the
caller allows TF32 (the timed baseline, cuDNN at torch's default flags, computes in it), every
GEMM kernel takes ``tl.dot(..., input_precision="tf32")`` on its tiles as they are, nothing
split, and the TMA GEMM (``TMA = 1``) one such product a k step of the x box and the weight copy
as they are. Checked in Triton's interpreter, whose dot computes "tf32" in full fp32, so the
errors here show that the operands are the raw values (a TF32 high part alone would leave
~1e-4; on a GPU TF32 leaves ~1e-3 of the output's scale); the plan's opt-in and its rendering by
their source; the judge on the default of a plan that allows TF32."""

from __future__ import annotations

import difflib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kernelevolve.problem import load_problem
from kernelevolve.synth.offline import analyze
from kernelevolve.synth.offline.families.conv.template import ONE_TF32, with_tf32
from tests.synth.offline.conv_interp import conv_script
from tests.synth.offline.test_offline_conv_fma import _chain, _conv
from tests.synth.offline.test_offline_coverage import _problem

_GEMMS = ("conv_gemm_kernel", "conv_gemm_cl_kernel", "conv_gemm_tma_kernel",
          "conv_pointwise_kernel", "conv_im2col_gemm_kernel")

_CHECK = conv_script(_GEMMS + ("split_dense_kernel",), '''
    # each GEMM launch's meta-parameters, beside the spies' names
    metas = []
    class Meta:
        def __init__(self, spy):
            self.spy = spy
        def __getitem__(self, grid):
            launch = self.spy[grid]
            def call(*args, **kwargs):
                metas.append({k: v for k, v in kwargs.items() if k in ("TF32X3", "ONE_TF32",
                                                                       "FP16")})
                return launch(*args, **kwargs)
            return call
    for name in GEMMS:
        ns[name] = Meta(ns[name])
    torch.manual_seed(0)
    x, w, b = torch.rand(2, 16, 7, 9), torch.randn(24, 16, 3, 5) * 0.1, torch.randn(24)
    x3, w3 = torch.rand(2, 3, 7, 9), torch.randn(16, 3, 3, 3) * 0.1
    x1, w1 = torch.rand(2, 16, 40), torch.randn(20, 16, 5) * 0.1
    xt, wt = torch.rand(2, 16, 6, 9), torch.randn(16, 12, 3, 5) * 0.1
    wp = torch.randn(24, 16, 1, 1) * 0.1
    d = lambda t: None if t is None else t.double()
    one = dict(tf32x3=4)
    cases = {  # name: (x, run, float64 reference, the GEMM expected)
        "table": (x, lambda x: conv_nd(x, w, b, 1, 1, 1, 1, False, 0, channels_last=0, **one),
                  lambda x: F.conv2d(x, d(w), d(b), 1, 1), "conv_gemm_kernel"),
        "channels_last": (x, lambda x: conv_nd(x, w, b, 1, 1, 1, 1, False, 0, channels_last=1,
                                               **one),
                          lambda x: F.conv2d(x, d(w), d(b), 1, 1), "conv_gemm_cl_kernel"),
        "rows": (x3, lambda x: conv_nd(x, w3, None, 1, 1, 1, 1, False, 0, channels_last=2,
                                       **one),
                 lambda x: F.conv2d(x, d(w3), None, 1, 1), "conv_gemm_cl_kernel"),
        "tma": (x, lambda x: conv_nd(x, w, b, 1, 1, 1, 1, False, 0, channels_last=1, tma=1,
                                     **one),
                lambda x: F.conv2d(x, d(w), d(b), 1, 1), "conv_gemm_tma_kernel"),
        "tma_1d": (x1, lambda x: conv_nd(x, w1, None, 1, 2, 1, 1, False, 0, channels_last=1,
                                         tma=1, **one),
                   lambda x: F.conv1d(x, d(w1), None, 1, 2), "conv_gemm_tma_kernel"),
        "tma_transposed": (xt, lambda x: conv_nd(x, wt, b[:12], 2, 1, 1, 1, True, 1,
                                                 channels_last=1, tma=1, **one),
                           lambda x: F.conv_transpose2d(x, d(wt), d(b[:12]), 2, 1, 1),
                           "conv_gemm_tma_kernel"),
        "transposed_table": (xt, lambda x: conv_nd(x, wt, None, 2, 1, 1, 1, True, 1,
                                                   channels_last=0, **one),
                             lambda x: F.conv_transpose2d(x, d(wt), None, 2, 1, 1),
                             "conv_gemm_kernel"),
        "pointwise": (x, lambda x: conv_nd(x, wp, b, 1, 0, 1, 1, False, 0, **one),
                      lambda x: F.conv2d(x, d(wp), d(b)), "conv_pointwise_kernel"),
        "im2col": (x3, lambda x: conv_nd(x, w3, None, 1, 1, 1, 1, False, 0, channels_last=0,
                                         im2col=True, **one),
                   lambda x: F.conv2d(x, d(w3), None, 1, 1), "conv_im2col_gemm_kernel"),
    }
    res = {}
    for name, (xx, run, ref, gemm) in cases.items():
        launched.clear()
        metas.clear()
        got, want = run(xx), ref(xx.double())
        res[name] = {"err": float((got.double() - want).abs().max() / want.abs().mean()),
                     "gemms": sorted(set(launched) - {"split_dense_kernel"}), "want": gemm,
                     "split": "split_dense_kernel" in launched, "metas": metas[:1]}
    # infinities and NaN in x: torch's NaN and infinities (no remainder, no flag), its values
    # elsewhere
    nonfinite = {}
    for name in ("table", "channels_last", "tma", "tma_transposed", "pointwise", "im2col"):
        xx, run, ref, _ = cases[name]
        xn = xx.clone()
        xn[0, 1, 2, 4], xn[1, 2, 5, 0], xn[1, 0, 1, 1] = float("inf"), float("nan"), float("-inf")
        launched.clear()
        got, want = run(xn), ref(xn.double()).float()
        nonfinite[name] = {
            "same": bool(torch.equal(got.isnan(), want.isnan())
                         and torch.equal(got.isinf(), want.isinf())
                         and torch.equal(got[got.isinf()], want[want.isinf()])),
            "err": float((got - want).nan_to_num(0.0, 0.0, 0.0).abs().max()),
            "nonfinite": int((~torch.isfinite(want)).sum()),
            "gemm": cases[name][3] in launched}
    # the TMA GEMM's products otherwise: three TF32 ones (tf32x3 1), fp16x3 kept (TMA 2)
    other = {}
    for kw in (dict(tf32x3=1, tma=1), dict(tf32x3=4, tma=2)):
        metas.clear()
        conv_nd(x, w, b, 1, 1, 1, 1, False, 0, channels_last=1, **kw)
        other[str(kw)] = metas[0]
    print(json.dumps({"cases": res, "nonfinite": nonfinite, "other": other}))
''').replace("GEMMS", repr(_GEMMS))


@pytest.fixture(scope="module")
def checked():
    done = subprocess.run([sys.executable, "-c", _CHECK], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_every_gemm_takes_one_product_of_its_tiles_as_they_are(checked):
    """The window table, channels-last (a tap's channels; runs along rows), the TMA GEMM (2-D,
    1-D, a transposed convolution's phases), the pointwise and the im2col GEMMs at TF32X3 = 4:
    the kernel expected, no split pass, the TMA GEMM with ONE_TF32; the interpreter's exact
    "tf32" products leave fp32 rounding alone."""
    for name, r in checked["cases"].items():
        assert r["gemms"] == [r["want"]], (name, r)
        assert not r["split"], name
        want = ({"ONE_TF32": True, "FP16": False} if r["want"] == "conv_gemm_tma_kernel"
                else {"TF32X3": ONE_TF32})
        assert r["metas"] == [want], (name, r)
        assert r["err"] < 1e-5, (name, r)  # TF32 on a GPU: ~1e-3 of the mean output


def test_infinities_and_nan_give_torchs(checked):
    for name, r in checked["nonfinite"].items():
        assert r["gemm"] and r["same"] and r["nonfinite"] > 0, (name, r)
        assert r["err"] < 1e-4, (name, r)


def test_the_tma_gemm_keeps_its_other_products(checked):
    assert checked["other"] == {
        "{'tf32x3': 1, 'tma': 1}": {"FP16": False, "ONE_TF32": False},
        "{'tf32x3': 4, 'tma': 2}": {"FP16": True, "ONE_TF32": False}}


def _changed_lines(a: str, b: str) -> list[str]:
    return [ln for ln in difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0)
            if ln[:1] in "+-" and ln[:3] not in ("+++", "---")]


def test_one_tf32_product_is_the_default_only_where_tf32_is_allowed(tmp_path):
    """Without ``with_tf32`` the plan is as it was (TF32X3 4 is not even legal); with it, 4 is
    searched and the default, the rest of the space and defaults unchanged, and the default's
    source differs from the plain default's by the TF32X3 constant alone."""
    plan = analyze(_problem(tmp_path, "tma32", _conv(32, "float32")))
    assert plan.space["TF32X3"] == (1, 0, 2) and plan.default_params()["TF32X3"] == 1
    assert plan.default_params()["TMA"] == 1
    with pytest.raises(ValueError, match="TF32X3=4"):
        plan.validate({**plan.default_params(), "TF32X3": 4})
    tf32 = with_tf32(plan)
    assert tf32.space == {**plan.space, "TF32X3": (1, 0, 2, 4)}
    assert tf32.default_params() == {**plan.default_params(), "TF32X3": 4}
    assert plan.space["TF32X3"] == (1, 0, 2)  # the plan given is left as it was
    default = plan.render(plan.default_params())
    assert tf32.render(plan.default_params()) == default
    source = tf32.render(tf32.default_params())
    assert _changed_lines(default, source) == ["-TF32X3 = 1", "+TF32X3 = 4"]
    # the kernels' one-product branches: the pointer GEMMs (table, channels-last, im2col), the
    # pointwise GEMM and the TMA GEMM
    assert len(re.findall(r'TF32X3 == 4:\n(?:\s*#.*\n)*\s*acc = tl\.dot\(x_tile, w_tile, '
                          r'acc, input_precision="tf32"\)', source)) == 3
    assert 'acc = tl.dot(w_tile, x_tile, acc, input_precision="tf32")' in source
    assert re.search(r'if ONE_TF32:\n(?:.*\n){3}\s*acc = tl\.dot\(x, whi_desc\.load\(.*\)\.T, '
                     r'acc, input_precision="tf32"\)', source)
    assert "ONE_TF32=one_tf32" in source
    # idempotent; fp16x3's opt-in (``searched``) decided apart, in either order
    assert with_tf32(tf32).space == tf32.space
    assert with_tf32(tf32).default_params() == tf32.default_params()
    assert tf32.searched().space["TMA"] == (0, 1) and tf32.searched().space["TF32X3"][-1] == 4
    assert with_tf32(plan.searched()).space == tf32.searched().space


def test_a_split_once_default_and_a_fused_chain_take_it_too(tmp_path):
    """A few-channel plan through the window table (split once by default) and a convolution
    with an epilogue (the elementwise template's ``conv_nd``) take TF32X3 = 4 as well."""
    narrow = analyze(_problem(tmp_path, "narrow", _conv(4, "float32", kernel=3, padding=1)))
    assert narrow.default_params()["TF32X3"] == 2
    tf32 = with_tf32(narrow)
    assert tf32.default_params()["TF32X3"] == 4
    assert "\nTF32X3 = 4\n" in tf32.render(tf32.default_params())
    chain = analyze(_problem(tmp_path, "chain32", _chain(32)))
    assert chain.operator_class == "convolution" and "TF32X3" in chain.space
    tf32 = with_tf32(chain)
    source = tf32.render(tf32.default_params())
    assert "\nTF32X3 = 4\n" in source and "tf32x3=TF32X3" in source


def test_plans_without_fp32_convolution_products_are_left_alone(tmp_path):
    """16-bit and depthwise-only convolutions have no TF32X3; the matmul template's TF32X3 is its
    own (3 is its split of one operand): each plan comes back as it is."""
    for name, body in {"fp16": _conv(32, "float16"),
                       "depthwise": _conv(8, "float32", kernel=3, groups=8, padding=1)}.items():
        plan = analyze(_problem(tmp_path, name, body))
        assert "TF32X3" not in plan.space, name
        assert with_tf32(plan) is plan, name
    problems = Path(__file__).resolve().parents[3] / "examples" / "problems"
    matmul = analyze(load_problem(problems / "10_linear_bias_gelu.py"))
    assert matmul.operator_class == "matmul" and "TF32X3" in matmul.space
    assert with_tf32(matmul) is matmul


@pytest.mark.slow
def test_the_tf32_default_is_held_to_fp32_on_the_cpu_target(tmp_path, small_pool):
    """A 32-channel padded convolution's default where TF32 is allowed (the TMA GEMM, one
    product a k step) through the judge on the cpu target: the interpreter computes its TF32
    products as the tensor cores do (operands truncated to 10 mantissa bits), and there the
    baseline computes in full fp32, so the precision contract is the fp32 rule and the kernel
    is refused, with the contract named. (On a GPU the contract holds it to cuDNN's TF32
    error instead: tests/gpu/test_baselines_gpu.py.)"""
    problem = _problem(tmp_path, "tf32_judge", _conv(32, "float32", kernel=3, padding=1,
                                                     size=(6, 7)))
    plan = with_tf32(analyze(problem))
    params = {**plan.default_params(), "BLOCK_M": 32, "BLOCK_N": 16}
    assert params["TF32X3"] == ONE_TF32 and params["TMA"] == 1
    result = small_pool.evaluate(problem, plan.render(params))
    assert result.status == "mismatch", f"{result.status}: {result.message}"
    assert result.precision is not None and not result.precision.inexact_ops
    assert "TF32 exists on NVIDIA GPUs only" in result.precision.why


def test_a_rounds_second_fresh_draft_hedges_with_fp32_level_products(tmp_path, make_ps):
    """Where TF32 is allowed the first fresh draft takes one TF32 product; the second is the same
    configuration at the plan's fp32-level default (the baseline's error is measured: cuDNN
    computed KernelBench 76 exactly on an H100, and a round's drafts are all written before any
    is judged); the third is a fresh random one. Without TF32 there is no hedge."""
    from kernelevolve.synth.offline.synthesizer import OfflineSynthesizer

    problem = _problem(tmp_path, "hedge32", _conv(32, "float32"))
    exact = analyze(problem).default_params()
    synth = OfflineSynthesizer(problem, tf32=True)
    first, second = synth.write(make_ps("fresh")), synth.write(make_ps("fresh"))
    assert first.params == {**exact, "TF32X3": ONE_TF32}
    assert second.params == exact and "fp32-level" in second.intent
    assert "TF32X3 = 1" in second.source and "TF32X3 = 4" in first.source
    third = synth.write(make_ps("fresh"))
    assert third.params not in (first.params, second.params)
    assert "fresh configuration" in third.intent
    plain = OfflineSynthesizer(problem)
    assert plain.write(make_ps("fresh")).params == exact
    assert "fresh configuration" in plain.write(make_ps("fresh")).intent
