"""The matrix-vector template (gemv.py): a product with one output column (or row) is planned
as one pass over the matrix instead of a GEMM tiling, starts split along K where there are few
rows, and is verified by the real harness in the interpreter (its input sets, other shapes,
non-contiguous views), with and without the split and with a fused epilogue."""

from __future__ import annotations

import pytest

from kernelevolve.config import EvalConfig
from kernelevolve.problem import load_problem
from kernelevolve.synth.offline import analyze
from kernelevolve.synth.offline.families.gemv import GemvTemplate
from kernelevolve.tools.harness.pool import WorkerPool

MATVEC = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, A, B):
        return torch.matmul(A, B)


M = 24
K = 20000


def get_inputs():
    return [torch.rand(M, K), torch.rand(K, 1)]


def get_init_inputs():
    return []
'''

VECMAT = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, B):
        return torch.sigmoid(torch.matmul(x, B))


N = 200
K = 300


def get_inputs():
    return [torch.randn(1, K), torch.randn(K, N)]


def get_init_inputs():
    return []
'''

LINEAR_ONE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features):
        super().__init__()
        self.fc = nn.Linear(in_features, 1)

    def forward(self, x):
        return torch.relu(self.fc(x)) * 2.0


batch = 37
in_features = 1000


def get_inputs():
    return [torch.randn(batch, in_features)]


def get_init_inputs():
    return [in_features]
'''


def _problem(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return load_problem(path)


@pytest.fixture(scope="module")
def pool():
    with WorkerPool("cpu", EvalConfig(n_input_sets=1, cpu_max_elements=1 << 14),
                    workers=1) as p:
        yield p


def _verify(pool, problem, params):
    plan = analyze(problem)
    result = pool.evaluate(problem, plan.render({**plan.default_params(), **params}))
    assert result.ok, f"{result.status}: {result.message}\n{result.stderr_tail[-2000:]}"


def test_kernelbench_matvec_is_one_pass_split_along_k(kernelbench):
    """KernelBench 4 (2048 x 1048576 by a vector): 256 blocks of 8 rows are too few programs,
    so K starts split; the GEMM tiling is not used."""
    problem = load_problem(kernelbench / "level1" / "4_Matrix_vector_multiplication_.py")
    plan = analyze(problem)
    assert isinstance(plan.template, GemvTemplate) and plan.operator_class == "matmul"
    assert "matrix-vector" in plan.description
    params = plan.default_params()
    assert params["SPLIT_K"] > 1 and plan.feasible(params) is None
    assert "tl.dot" not in plan.render(params)
    square = analyze(load_problem(kernelbench / "level1" / "1_Square_matrix_multiplication_.py"))
    assert not isinstance(square.template, GemvTemplate)


def test_a_wide_tile_is_infeasible(kernelbench):
    plan = analyze(load_problem(kernelbench / "level1" / "4_Matrix_vector_multiplication_.py"))
    why = plan.feasible({**plan.default_params(), "BLOCK": 128, "BLOCK_K": 2048,
                         "num_warps": 4})
    assert why is not None and "spills" in why


@pytest.mark.parametrize("params", [{"SPLIT_K": 4, "BLOCK": 4, "BLOCK_K": 256},
                                    {"SPLIT_K": 1, "BLOCK": 16, "BLOCK_K": 128}])
def test_matvec_is_verified(tmp_path, pool, params):
    """A few rows and a long K (20000 is not a multiple of the chunks: the masked K path), split
    and one-pass; the harness also tries other shapes and non-contiguous views."""
    _verify(pool, _problem(tmp_path, "matvec", MATVEC), params)


def test_vector_times_matrix_is_verified(tmp_path, pool):
    problem = _problem(tmp_path, "vecmat", VECMAT)
    plan = analyze(problem)
    assert isinstance(plan.template, GemvTemplate) and plan.template.side == "m"
    _verify(pool, problem, {"SPLIT_K": 2, "BLOCK": 32, "BLOCK_K": 64})


def test_linear_to_one_feature_keeps_its_epilogue(tmp_path, pool):
    problem = _problem(tmp_path, "linear_one", LINEAR_ONE)
    plan = analyze(problem)
    assert isinstance(plan.template, GemvTemplate)
    assert "+ bias" in plan.description and "relu" in plan.description
    _verify(pool, problem, {"SPLIT_K": 2, "BLOCK": 8, "BLOCK_K": 128})
