"""The matmul template's persistent kernel (``PERSISTENT``): a program per SM over the output
tiles, its tile and k loops flattened, tiles in and out through TMA descriptors. Short-K fp32
GEMMs (KernelBench 7 and 9) start with it; the real harness verifies it in the interpreter with
an epilogue and partial tiles at both edges, refuses it with its k steps broken, and an output
whose rows TMA cannot store takes the per-tile kernel at run time."""

from __future__ import annotations

import pytest

from kernelevolve.config import EvalConfig
from kernelevolve.problem import load_problem
from kernelevolve.synth.offline import analyze
from kernelevolve.synth.offline.families.matmul import PERSISTENT_TILES
from kernelevolve.tools.harness.pool import WorkerPool

SHORT_K = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(n))

    def forward(self, a, b, c):
        return torch.relu(torch.matmul(a, b) + self.bias) * c


M = 300
N = {n}
K = 40


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N), torch.randn(M, N)]


def get_init_inputs():
    return [N]
'''


def _problem(tmp_path_factory, n: int):
    path = tmp_path_factory.mktemp("persistent") / f"short_k_{n}.py"
    path.write_text(SHORT_K.format(n=n))
    return load_problem(path)


@pytest.fixture(scope="module")
def short_k(tmp_path_factory):
    return _problem(tmp_path_factory, 260)


@pytest.fixture(scope="module")
def pool():
    with WorkerPool("cpu", EvalConfig(n_input_sets=1, extra_shapes=False), workers=1) as p:
        yield p


def test_short_k_gemms_start_persistent(kernelbench):
    for name in ("7_Matmul_with_small_K_dimension_", "9_Tall_skinny_matrix_multiplication_"):
        params = analyze(load_problem(kernelbench / "level1" / f"{name}.py")).default_params()
        assert params["PERSISTENT"] == 1 and params["SPLIT_K"] == 1, name
        assert {k: params[k] for k in PERSISTENT_TILES} == PERSISTENT_TILES, name
    square = analyze(load_problem(kernelbench / "level1" / "1_Square_matrix_multiplication_.py"))
    assert square.default_params()["PERSISTENT"] == 0 and square.space["PERSISTENT"] == (0, 1)
    batched = analyze(load_problem(kernelbench / "level1" / "3_Batched_matrix_multiplication.py"))
    assert "PERSISTENT" not in batched.space


def test_persistent_feasibility(short_k):
    plan = analyze(short_k)
    params = plan.default_params()
    assert plan.feasible(params) is None
    assert "TF32X3 0 or 1" in plan.feasible({**params, "TF32X3": 2})
    assert "TF32X3 0 or 1" in plan.feasible({**params, "SPLIT_K": 4})
    # 128 x 128 x 64 in 3 stages plus the output tile's buffer: 256 KB
    assert "shared memory" in plan.feasible({**params, "BLOCK_K": 64})


@pytest.mark.parametrize("extra", [{}, {"TF32X3": 0, "BLOCK_M": 64, "BLOCK_N": 32,
                                        "BLOCK_K": 16}])
def test_the_persistent_kernel_is_verified(short_k, pool, extra):
    """Partial tiles along M and N (the harness shrinks M to 150), a bias, a relu and a tile
    operand in the epilogue; K = 40 in two or three k steps, the last one past K."""
    plan = analyze(short_k)
    source = plan.render({**plan.default_params(), **extra})
    assert "persistent_matmul_kernel[" in source and "flatten=True" in source
    result = pool.evaluate(short_k, source)
    assert result.ok, f"{result.status}: {result.message}\n{result.stderr_tail[-2000:]}"


def test_broken_k_steps_are_refused(short_k, pool):
    plan = analyze(short_k)
    source = plan.render(plan.default_params())
    broken = source.replace("ki * BLOCK_K])", "0])")  # every k step reads the first k tile
    assert broken.count("load([pid_") == 2 and broken != source
    result = pool.evaluate(short_k, broken)
    assert not result.ok and result.status == "mismatch", result.message


def test_rows_tma_cannot_store_take_the_per_tile_kernel(tmp_path_factory, pool):
    """N = 258: fp32 rows of 1032 bytes, not a multiple of 16. The plan does not start
    persistent, and a forced PERSISTENT = 1 still verifies (the launcher's run-time check)."""
    odd = _problem(tmp_path_factory, 258)
    plan = analyze(odd)
    assert plan.default_params()["PERSISTENT"] == 0
    source = plan.render({**plan.default_params(), "PERSISTENT": 1, "TF32X3": 1, "SPLIT_K": 1})
    result = pool.evaluate(odd, source)
    assert result.ok, f"{result.status}: {result.message}\n{result.stderr_tail[-2000:]}"
