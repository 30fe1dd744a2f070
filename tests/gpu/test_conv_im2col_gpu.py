"""The im2col convolution (``IM2COL=1``) on a real GPU, where precision differs (the interpreter
multiplies every mode exactly): fp32 products as tf32x3 in the kernel and split once stay at
fp32-level error against float64, fp16 at one rounding, and with split once an infinity in x
gives torch's infinities and NaNs (the im2col pass flags it and the GEMM takes its FMA path).
tf32x3 in the kernel is not checked with infinities: its split of one leaves a remainder
inf - inf = NaN, as in the implicit GEMMs' tf32x3 (flagging them cost 8-25% on the H200:
``conv_im2col_flag.md``).
Marked ``gpu``: run with ``python -m pytest -m gpu tests/gpu``."""

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

# KernelBench 50's layer (3 -> 96 channels, 11 x 11, stride 4, padding 2) at a small size
CONV = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 96, kernel_size=11, stride=4, padding=2, dtype=torch.DTYPE)

    def forward(self, x):
        return self.conv1(x)


def get_inputs():
    return [torch.rand(8, 3, 96, 100, dtype=torch.DTYPE)]


def get_init_inputs():
    return []
'''


def _candidate(tmp_path, dtype: str, point: dict[str, int]):
    (tmp_path / f"p_{dtype}.py").write_text(CONV.replace("DTYPE", dtype))
    plan = analyze(load_problem(tmp_path / f"p_{dtype}.py"))
    params = {**plan.default_params(), **point}
    assert params["IM2COL"] == 1  # 363 taps over 3 channels: the default
    name = f"cand_{dtype}_{'_'.join(f'{k}{v}' for k, v in point.items())}"
    source = tmp_path / f"{name}.py"
    source.write_text(plan.render(params))
    spec = importlib.util.spec_from_file_location(name, source)
    assert spec is not None and spec.loader is not None
    cand = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cand)
    torch.manual_seed(0)
    model = cand.ModelNew().cuda()
    return model, model.conv1.weight.detach(), model.conv1.bias.detach()


@pytest.mark.parametrize("mode", [1, 2, 0])
def test_fp32_im2col_stays_accurate(tmp_path, mode):
    model, w, b = _candidate(tmp_path, "float32", {"TF32X3": mode})
    x = torch.rand(8, 3, 96, 100, device="cuda")
    truth = torch.nn.functional.conv2d(x.double(), w.double(), b.double(), 4, 2)
    got = model(x)
    assert got.shape == truth.shape and got.dtype == torch.float32
    rel = ((got.double() - truth).abs().max() / truth.abs().max()).item()
    assert rel < 1e-5, rel  # fp32 tolerance 1e-4
    if mode == 2:  # an infinity: the flag sends the products to the FMA units
        x[1, 2, 40, 41] = float("inf")
        got = model(x)
        want = torch.nn.functional.conv2d(x.double(), w.double(), b.double(), 4, 2)
        assert (~torch.isfinite(want)).any()
        assert torch.equal(torch.isnan(got), torch.isnan(want))
        assert torch.equal(torch.isinf(got), torch.isinf(want))
        finite = torch.isfinite(want)
        rel = ((got.double()[finite] - want[finite]).abs().max() / truth.abs().max()).item()
        assert rel < 1e-5, rel


def test_fp16_im2col_rounds_once(tmp_path):
    model, w, b = _candidate(tmp_path, "float16", {})
    x = torch.rand(8, 3, 96, 100, device="cuda", dtype=torch.float16)
    truth = torch.nn.functional.conv2d(x.double(), w.double(), b.double(), 4, 2)
    got = model(x)
    assert got.dtype == torch.float16
    rel = ((got.double() - truth).abs().max() / truth.abs().max()).item()
    assert rel < 2e-3, rel  # fp16's rounding is 4.9e-4 of a value
