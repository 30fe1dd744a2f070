"""The matmul template's split-K and precision parameters: a long-K product with a small output
starts split (each program one K range into a workspace, a second launch summing the ranges in
a fixed order), and both the split and the one-pass kernel are verified by the real harness in
the interpreter; fp32 plans carry the tf32x3/ieee choice."""

from __future__ import annotations

import pytest

from kernelevolve.config import EvalConfig
from kernelevolve.problem import load_problem
from kernelevolve.synth.offline import analyze
from kernelevolve.synth.offline.families.matmul import SPLIT_KS
from kernelevolve.tools.harness.pool import WorkerPool

LONG_K = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return torch.relu(torch.matmul(a, b)) * 0.5


M = 64
N = 48
K = 32768


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
'''


@pytest.fixture(scope="module")
def long_k(tmp_path_factory):
    path = tmp_path_factory.mktemp("splitk") / "long_k_matmul.py"
    path.write_text(LONG_K)
    return load_problem(path)


def test_a_long_k_small_output_matmul_starts_split(long_k, kernelbench):
    plan = analyze(long_k)
    params = plan.default_params()
    assert params["SPLIT_K"] > 1 and params["TF32X3"] == 1
    assert plan.space["SPLIT_K"] == SPLIT_KS and plan.space["TF32X3"] == (1, 0, 2, 3)
    square = analyze(load_problem(kernelbench / "level1" / "1_Square_matrix_multiplication_.py"))
    assert square.default_params()["SPLIT_K"] == 1  # 1024 output tiles fill any GPU
    batched = analyze(load_problem(kernelbench / "level1" / "3_Batched_matrix_multiplication.py"))
    assert "SPLIT_K" not in batched.space  # the batch is the second grid axis


def test_the_split_kernel_is_verified(long_k):
    """(The one-pass kernel, SPLIT_K = 1, is what every other matmul test verifies.)"""
    plan = analyze(long_k)
    source = plan.render({**plan.default_params(), "SPLIT_K": 4, "BLOCK_M": 32,
                          "BLOCK_N": 32, "BLOCK_K": 32})
    assert ("PHASE=1" in source) and ("ws = torch.empty" in source)
    with WorkerPool("cpu", EvalConfig(n_input_sets=1, extra_shapes=False,
                                      cpu_max_elements=1 << 14), workers=1) as pool:
        result = pool.evaluate(long_k, source)
    assert result.ok, f"{result.status}: {result.message}\n{result.stderr_tail[-2000:]}"


def test_a_split_whose_workspace_outgrows_a_gib_is_infeasible(kernelbench):
    """KernelBench 8 (8205x2949 by 2949x5921) split 64 ways would need 12 GiB of partial sums
    (and passed 2**31 elements, an illegal memory access on the H200 before the offsets were
    made 64-bit); its output fills the GPU unsplit."""
    plan = analyze(load_problem(kernelbench / "level1" / "8_Matmul_with_irregular_shapes_.py"))
    params = plan.default_params()
    assert params["SPLIT_K"] == 1
    assert plan.feasible({**params, "SPLIT_K": 2}) is None
    why = plan.feasible({**params, "SPLIT_K": 64})
    assert why is not None and "GiB split-K workspace" in why
    assert "tl.cast(M, tl.int64) * N" in plan.render(params)
