"""The fp32 GEMM's persistent kernel (``PERSISTENT=1``, TMA descriptors, a flattened tile and k
loop) on a real GPU, where TMA and the tensor cores' precision are real (the interpreter emulates
one and multiplies exactly): fp32-level error against float64 with tf32x3 and ieee products, a
fused epilogue, partial tiles at both edges and K past its last whole k step; an output whose
rows TMA cannot store takes the per-tile kernel. Marked ``gpu``: run with
``python -m pytest -m gpu tests/gpu``."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from kernelevolve.problem import load_problem
from kernelevolve.synth.offline import analyze

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

GEMM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.randn({n}))

    def forward(self, a, b, c):
        return {forward}


def get_inputs():
    return [torch.rand({m}, {k}), torch.rand({k}, {n}), torch.rand({m}, {n})]


def get_init_inputs():
    return []
'''


EPILOGUE = "torch.relu(torch.matmul(a, b) + self.bias) * c"


def _model(tmp_path, m: int, n: int, k: int, forward: str = EPILOGUE, **params):
    text = GEMM.format(m=m, n=n, k=k, forward=forward)
    path = tmp_path / f"gemm_{m}_{n}_{k}_{len(forward)}.py"
    path.write_text(text)
    plan = analyze(load_problem(path))
    chosen = {**plan.default_params(), **params}
    assert plan.feasible(chosen) is None
    source = tmp_path / f"cand_{m}_{n}_{k}_{len(forward)}_{len(params)}.py"
    source.write_text(plan.render(chosen))
    spec = importlib.util.spec_from_file_location(source.stem, source)
    assert spec is not None and spec.loader is not None
    cand = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cand)
    torch.manual_seed(0)
    return cand, cand.ModelNew().cuda()


@pytest.mark.parametrize("m, n, k, params, tol", [
    (1000, 1028, 40, {}, 2e-6),  # partial tiles, two k steps (the last past K)
    (4096, 4096, 64, {}, 2e-6),  # KernelBench 7's K
    (1000, 1028, 40, {"TF32X3": 0}, 2e-6),  # ieee products
])
def test_persistent_kernel_is_fp32_exact_enough(tmp_path, m, n, k, params, tol):
    cand, model = _model(tmp_path, m, n, k, **params)
    assert cand.PERSISTENT == 1
    a, b, c = (torch.rand(m, k, device="cuda"), torch.rand(k, n, device="cuda"),
               torch.rand(m, n, device="cuda"))
    truth = torch.relu(a.double() @ b.double() + model.bias.double()) * c.double()
    got = model(a, b, c)
    assert got.shape == truth.shape and got.dtype == torch.float32
    rel = ((got.double() - truth).abs().max() / truth.abs().max()).item()
    assert rel < tol, rel


@pytest.mark.parametrize("tf32x3", [1, 0])
def test_persistent_kernel_keeps_infinities_and_nans(tmp_path, tf32x3):
    """(A product alone: the epilogue's relu is ``tl.maximum``, which drops NaN, a gap of the
    expression writer shared by every template, not of this kernel.)"""
    cand, model = _model(tmp_path, 1000, 1028, 40, forward="torch.matmul(a, b) * c",
                         TF32X3=tf32x3)
    assert cand.PERSISTENT == 1
    a, b, c = (torch.rand(1000, 40, device="cuda"), torch.rand(40, 1028, device="cuda"),
               torch.rand(1000, 1028, device="cuda"))
    b[5, :] = 1.0  # exact TF32 values: their remainders are 0, and inf * 0 = NaN
    a[3, 5] = float("inf")
    a[7, 9] = float("nan")
    got, want = model(a, b, c), (a @ b) * c
    assert torch.equal(got.isnan(), want.isnan())
    inf = want.isinf()
    assert inf.any() and torch.equal(got[inf], want[inf])
    fin = want.isfinite()
    assert ((got - want).abs()[fin] / want.abs()[fin]).max().item() < 5e-5


def test_rows_tma_cannot_store_take_the_per_tile_kernel(tmp_path):
    cand, model = _model(tmp_path, 1000, 1030, 40, PERSISTENT=1, TF32X3=1, SPLIT_K=1)
    a, b, c = (torch.rand(1000, 40, device="cuda"), torch.rand(40, 1030, device="cuda"),
               torch.rand(1000, 1030, device="cuda"))
    truth = torch.relu(a.double() @ b.double() + model.bias.double()) * c.double()
    rel = ((model(a, b, c).double() - truth).abs().max() / truth.abs().max()).item()
    assert rel < 2e-6, rel
