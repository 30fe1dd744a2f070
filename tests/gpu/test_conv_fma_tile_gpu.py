"""The FMA convolution kernel's register tiles (``SUB_M``: threads over positions x channels,
a thread a sub-tile of both), register limits (``MAXNREG``) and broadcast weights
(``W_BCAST``: the weights copied channels-innermost into whole channel tiles, loaded unmasked)
on a real GPU, where Triton's layouts, the shared-memory round trips between them and ptxas's
allocation are real: exact fp32 products on the FMA units, so fp32-level error against float64
at every point, for a 3-channel 3D convolution (KernelBench 54's shape, small) and an 8-channel
2D one with a bias (level 2's chains). Marked ``gpu``: run with ``python -m pytest -m gpu
tests/gpu``."""

from __future__ import annotations

import pytest
import torch

from kernelevolve.problem import load_problem
from kernelevolve.synth.offline import analyze
from tests.rendered import conv_problem, load_rendered

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

PROBLEMS = {
    "3d_3ch": ("nn.Conv3d(3, 64, 3, bias=False)", (2, 3, 12, 20, 30)),
    "2d_8ch": ("nn.Conv2d(8, 64, 3, padding=1)", (4, 8, 40, 70)),
}

POINTS = [{"SUB_M": 0, "MAXNREG": 0}, {"SUB_M": 8, "MAXNREG": 0}, {"SUB_M": 16, "MAXNREG": 128},
          {"SUB_M": 32, "MAXNREG": 0}, {"SUB_M": 8, "BLOCK_M": 128, "MAXNREG": 168},
          {"SUB_M": 8, "BLOCK_M": 128, "MAXNREG": 96}]
POINTS = ([{**p, "W_BCAST": 0} for p in POINTS]
          + [{"W_BCAST": 1}, {"W_BCAST": 1, "MAXNREG": 128},
             {"W_BCAST": 1, "BLOCK_M": 128, "num_warps": 4}, {"W_BCAST": 1, "BLOCK_N": 32}])


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_every_register_tile_is_exact_fp32(tmp_path, name):
    conv, shape = PROBLEMS[name]
    plan = analyze(load_problem(conv_problem(tmp_path / f"p_{name}.py", conv, shape)))
    assert plan.default_params()["FMA"] == 1
    # a standard convolution takes the broadcast weights by default, a position a thread
    assert plan.default_params()["W_BCAST"] == 1 and plan.default_params()["SUB_M"] == 0
    torch.manual_seed(0)
    x = torch.rand(*shape, device="cuda")
    errors = {}
    for k, point in enumerate(POINTS):
        params = {**plan.default_params(), **point}
        assert plan.feasible(params) is None, point
        cand = load_rendered(plan, params, tmp_path / f"cand_{name}_{k}.py")
        torch.manual_seed(0)
        model = cand.ModelNew().cuda()
        c = model.conv
        dims = len(shape) - 2
        fn = torch.nn.functional.conv3d if dims == 3 else torch.nn.functional.conv2d
        with torch.no_grad():
            truth = fn(x.double(), c.weight.double(),
                       None if c.bias is None else c.bias.double(), c.stride, c.padding,
                       c.dilation, c.groups)
            got = model(x)
        assert got.shape == truth.shape and got.dtype == torch.float32
        errors[str(point)] = float(((got.double() - truth).abs() / (truth.abs() + 1)).max())
    # fp32 products summed in fp32 over at most 81 taps: a few ulp, at every point
    assert max(errors.values()) < 1e-5, errors
