"""Candidates the offline synthesizer writes pass the real harness: the cpu target (Triton's
interpreter, sizes shrunk by the harness) and one simulated MTIA run."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from kernelevolve.config import EvalConfig
from kernelevolve.problem import Problem, load_problem
from kernelevolve.synth.offline import analyze, mutate
from kernelevolve.tools.harness.pool import WorkerPool

PROBLEMS = Path(__file__).resolve().parents[3] / "examples" / "problems"
SUPPORTED = ["01_gelu_sigmoid_bias", "02_swiglu_fp16", "03_leaky_relu_scale_clamp",
             "04_row_softmax", "05_layernorm", "06_rmsnorm", "07_row_mean", "08_max_middle_dim",
             "09_l2_normalize", "10_linear_bias_gelu", "11_matmul_bf16",
             "12_conv2d_relu_scale_bias"]


@pytest.fixture(scope="module")
def pool():
    with WorkerPool("cpu", EvalConfig(n_input_sets=2), workers=1) as p:
        yield p


def _evaluate_all(pool: WorkerPool, jobs: list[tuple[Problem, str]]) -> list:
    # One after the other: pool.evaluate parses the source with ast, which CPython 3.11.7 does
    # not do safely from two threads at once (SystemError: AST constructor recursion depth).
    return [pool.evaluate(problem, source) for problem, source in jobs]


def _assert_ok(result, what: str) -> None:
    assert result.ok, f"{what}: {result.status}: {result.message}\n{result.stderr_tail[-2000:]}"


@pytest.mark.parametrize("name", SUPPORTED)
def test_default_and_mutated_candidates_are_verified(pool, name):
    problem = load_problem(PROBLEMS / f"{name}.py")
    plan = analyze(problem)
    defaults = plan.default_params()
    mutated, intent = mutate(plan, defaults, "memory-bound", random.Random(0))
    assert mutated != defaults
    results = _evaluate_all(pool, [(problem, plan.render(defaults)),
                                   (problem, plan.render(mutated))])
    _assert_ok(results[0], f"{name} at {defaults}")
    _assert_ok(results[1], f"{name} at {mutated} ({intent})")
    assert any(c.name == "correct on other shapes" for c in results[0].checks)


def _resized(tmp_path: Path, name: str, sizes: dict[str, int]) -> Problem:
    text = (PROBLEMS / f"{name}.py").read_text()
    for key, value in sizes.items():
        text, n = re.subn(rf"^{key} = \d+$", f"{key} = {value}", text, flags=re.M)
        assert n == 1, key
    path = tmp_path / f"{name}_small.py"
    path.write_text(text)
    return load_problem(path)


def test_rows_longer_than_a_block_take_several_passes(pool, tmp_path):
    """BLOCK_N below the row length: the multi-pass branch of the row template."""
    jobs = []
    for name in ("04_row_softmax", "06_rmsnorm", "07_row_mean", "09_l2_normalize"):
        problem = load_problem(PROBLEMS / f"{name}.py")
        plan = analyze(problem)
        jobs.append((problem, plan.render({**plan.default_params(), "BLOCK_N": 128,
                                           "BLOCK_M": 8})))
    layernorm = _resized(tmp_path, "05_layernorm", {"batch_size": 2, "seq_len": 16,
                                                    "hidden": 512})
    plan = analyze(layernorm)
    jobs.append((layernorm, plan.render({**plan.default_params(), "BLOCK_N": 128,
                                         "BLOCK_M": 4})))
    # Softmax: max and sum of exp in one online pass, then the output pass (two reads).
    assert "at once (online)" in jobs[0][1] and jobs[0][1].count("for start in range") == 2
    for (problem, source), result in zip(jobs, _evaluate_all(pool, jobs), strict=True):
        assert "for start in range(0, n_cols, BLOCK_N)" in source
        _assert_ok(result, problem.name)


HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
VARIANTS = {
    # nn.Linear on a 3-D input (leading dims flattened, result viewed back), tanh-GELU.
    "linear_3d": ("matmul", """
class Model(nn.Module):
    def __init__(self, k, n):
        super(Model, self).__init__()
        self.fc = nn.Linear(k, n)

    def forward(self, x):
        return F.gelu(self.fc(x), approximate="tanh") * 2.0


b = 8
s = 16
k = 64
n = 32


def get_inputs():
    return [torch.randn(b, s, k)]


def get_init_inputs():
    return [k, n]
"""),
    # bmm of a transposed input with a residual tile and a per-row scale in the epilogue.
    "bmm_residual": ("matmul", """
class Model(nn.Module):
    def forward(self, a, b, r, s):
        return torch.sigmoid(torch.bmm(a, b.transpose(1, 2)) + r) * s


bs = 8
m = 32
k = 16
n = 24


def get_inputs():
    return [torch.randn(bs, m, k), torch.randn(bs, n, k), torch.randn(bs, m, n),
            torch.randn(bs, m, 1)]


def get_init_inputs():
    return []
"""),
    # bf16 chain with a learned vector, computed in fp32 and cast back.
    "bf16_gate": ("elementwise", """
class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.g = nn.Parameter(torch.randn(n, dtype=torch.bfloat16))

    def forward(self, x):
        return F.silu(x) * self.g - x.sigmoid() + F.softplus(x) - F.hardswish(x)


b = 40
n = 72


def get_inputs():
    return [torch.randn(b, n, dtype=torch.bfloat16)]


def get_init_inputs():
    return [n]
"""),
    # Centre, variance and a constructor float: three reductions in one row program.
    "standardize": ("rowwise", """
class Model(nn.Module):
    def __init__(self, eps):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        xc = x - x.mean(-1, keepdim=True)
        return xc / torch.sqrt(x.var(dim=-1, keepdim=True) + self.eps)


b = 4
s = 8
n = 96


def get_inputs():
    return [torch.randn(b, s, n)]


def get_init_inputs():
    return [1e-5]
"""),
    # Sum over the first dim of exp(x): a strided reduction with a prologue and an epilogue.
    "strided_sum": ("reduction", """
class Model(nn.Module):
    def forward(self, x):
        return torch.exp(x).sum(dim=0) / 3.0


b = 50
n = 40


def get_inputs():
    return [torch.randn(b, n)]


def get_init_inputs():
    return []
"""),
    # Reductions over two trailing dims without keepdim, mixed with a model attribute.
    "sum_max_2d": ("reduction", """
class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return x.sum(dim=(1, 2)) * self.scale + x.amax(dim=(1, 2))


b = 16
c = 12
n = 40


def get_inputs():
    return [torch.randn(b, c, n)]


def get_init_inputs():
    return [0.5]
"""),
}


def test_handwritten_variants_are_verified(pool, tmp_path):
    jobs = []
    for name, (cls, body) in VARIANTS.items():
        path = tmp_path / f"{name}.py"
        path.write_text(HEADER + body.lstrip())
        problem = load_problem(path)
        plan = analyze(problem)
        assert plan.operator_class == cls, name
        jobs.append((problem, plan.render(plan.default_params())))
    for (problem, _), result in zip(jobs, _evaluate_all(pool, jobs), strict=True):
        _assert_ok(result, problem.name)


def test_simulated_mtia_run(tmp_path):
    problem = _resized(tmp_path, "04_row_softmax", {"batch_size": 64, "dim": 512})
    plan = analyze(problem)
    with WorkerPool("mtia-sim:2i", EvalConfig(n_input_sets=1), workers=1) as mtia:
        result = mtia.evaluate(problem, plan.render(plan.default_params()))
    _assert_ok(result, "softmax on mtia-sim:2i")
    assert result.timing is not None and result.timing.simulated
    assert result.timing.candidate.median_ms > 0
