"""The fp32 GEMM's split-once mode on a real GPU, where precision differs (the interpreter
multiplies every mode exactly): its error against float64 stays at fp32 level, and an infinity
or NaN in an operand gives torch's infinities and NaNs (the split pass flags the operand and the
GEMM takes its FMA path). The same checks ran on an H200 this stop as a script: split once
2.2e-6 relative error beside the non-finite values, 1.2e-5 on clean inputs at K = 1024; tf32x3
in the kernel 7.5e-7 and 4.6e-7. Marked ``gpu``: run with ``python -m pytest -m gpu tests/gpu``."""

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

MATMUL = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.rand(512, 1024), torch.rand(1024, 512)]


def get_init_inputs():
    return []
'''


@pytest.mark.parametrize("mode", [1, 2, 3])
def test_fp32_products_stay_accurate_and_keep_infinities(tmp_path, mode):
    (tmp_path / "p.py").write_text(MATMUL)
    plan = analyze(load_problem(tmp_path / "p.py"))
    # 512 x 512 by K = 1024: split once, b only (a's tiles meet 4 columns of output tiles)
    assert plan.default_params()["TF32X3"] == 3
    source = tmp_path / f"cand{mode}.py"
    source.write_text(plan.render({**plan.default_params(), "TF32X3": mode}))
    spec = importlib.util.spec_from_file_location(f"cand{mode}", source)
    assert spec is not None and spec.loader is not None
    cand = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cand)
    model = cand.ModelNew()
    torch.manual_seed(0)

    a, b = torch.rand(512, 1024, device="cuda"), torch.rand(1024, 512, device="cuda")
    truth = a.double() @ b.double()
    rel = ((model(a, b).double() - truth).abs() / truth.abs()).max().item()
    assert rel < 5e-5, rel  # fp32 tolerance 1e-4; measured 1.2e-5 (split once), 4.6e-7

    b[5, :] = 1.0  # exact TF32 values: their remainders are 0, and inf * 0 = NaN
    a[3, 5] = float("inf")
    a[7, 9] = float("nan")
    got, want = model(a, b), a @ b
    assert torch.equal(got.isnan(), want.isnan())
    inf = want.isinf()
    assert inf.any() and torch.equal(got[inf], want[inf])
    fin = want.isfinite()
    assert ((got - want).abs()[fin] / want.abs()[fin]).max().item() < 5e-5
