"""The transposed convolution in output order (``OUT_ROWS=1``, ``conv_rows_fma_kernel``) on a
real GPU: exact fp32 products on the FMA units, so fp32-level error against float64, with a
bias, groups and stride phases no tap reaches (KernelBench 81's and 75's shapes, small); an
infinity in x gives torch's infinities and NaNs (no tensor-core split to turn them into NaN).
Marked ``gpu``: run with ``python -m pytest -m gpu tests/gpu``."""

from __future__ import annotations

import pytest
import torch

from kernelevolve.problem import load_problem
from kernelevolve.synth.offline import analyze
from tests.rendered import load_rendered

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

# in channels, out channels, kernel, stride, padding, dilation, groups, bias, input size
SHAPES = {
    "81": (32, 64, 3, 5, 1, 2, 1, False, (20, 36)),
    "75": (32, 64, (3, 5), (2, 3), (1, 2), (2, 1), 4, True, (24, 40)),
}

CONV = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.ConvTranspose2d(CIN, COUT, KERNEL, stride=STRIDE, padding=PAD,
                                       dilation=DIL, groups=GROUPS, bias=BIAS)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(4, CIN, H, W)]


def get_init_inputs():
    return []
'''


def _candidate(tmp_path, name: str):
    cin, cout, k, st, pad, dil, groups, bias, (h, w) = SHAPES[name]
    text = CONV
    for key, value in (("CIN", cin), ("COUT", cout), ("KERNEL", k), ("STRIDE", st),
                       ("PAD", pad), ("DIL", dil), ("GROUPS", groups), ("BIAS", bias),
                       ("H", h), ("W", w)):
        text = text.replace(key, str(value))
    (tmp_path / f"p_{name}.py").write_text(text)
    plan = analyze(load_problem(tmp_path / f"p_{name}.py"))
    params = plan.default_params()
    assert params["OUT_ROWS"] == 1  # empty phases, a short reduction: the default
    cand = load_rendered(plan, params, tmp_path / f"cand_{name}.py")
    torch.manual_seed(0)
    model = cand.ModelNew().cuda()
    conv = model.conv
    return model, (cin, h, w), lambda x: torch.nn.functional.conv_transpose2d(
        x.double(), conv.weight.double(), None if conv.bias is None else conv.bias.double(),
        conv.stride, conv.padding, conv.output_padding, conv.groups, conv.dilation)


@pytest.mark.parametrize("name", list(SHAPES))
def test_rows_kernel_is_exact_fp32_and_keeps_infinities(tmp_path, name):
    model, (cin, h, w), reference = _candidate(tmp_path, name)
    x = torch.rand(4, cin, h, w, device="cuda")
    truth = reference(x)
    got = model(x)
    assert got.shape == truth.shape and got.dtype == torch.float32
    rel = ((got.double() - truth).abs().max() / truth.abs().max()).item()
    assert rel < 1e-6, rel  # fp32 sums of exact products
    x[1, 2, 5, 7] = float("inf")
    got = model(x)
    want = reference(x)
    assert (~torch.isfinite(want)).any()
    assert torch.equal(torch.isnan(got), torch.isnan(want))
    assert torch.equal(torch.isinf(got), torch.isinf(want))
    finite = torch.isfinite(want)
    rel = ((got.double()[finite] - want[finite]).abs().max() / truth.abs().max()).item()
    assert rel < 1e-6, rel
