"""The convolution template's two special kernels (issue #17): depthwise convolutions (one input
channel per group) take a direct kernel over tiles of one channel's rows x columns with the
window unrolled, and 1x1 convolutions with stride 1 and no padding a GEMM over the channels with
the positions contiguous. Their plans tune their own tiles; each kernel is checked against the
reference in Triton's interpreter (default candidates, at small and at other sizes) and verified
by the real harness on the cpu target at non-default tiles."""

from __future__ import annotations

import pytest

from kernelevolve.synth.offline import analyze
from tests.synth.offline.test_offline_coverage import _interpreted, _problem


def _model(init: str, modules: str, forward: str, sizes: str, shape: str, args: str) -> str:
    return ("class Model(nn.Module):\n"
            f"    def __init__(self, {init}):\n        super().__init__()\n{modules}\n"
            f"    def forward(self, x):\n        return {forward}\n\n\n{sizes}\n\n\n"
            f"def get_inputs():\n    return [torch.rand({shape})]\n\n\n"
            f"def get_init_inputs():\n    return [{args}]\n")


# Depthwise with a channel multiplier of 2, an asymmetric kernel, stride, padding and dilation
# per dim, and a bias
_DEPTHWISE = _model(
    "c", "        self.conv = nn.Conv2d(c, 2 * c, (3, 2), stride=(2, 1), padding=(1, 2), "
    "dilation=(1, 2), groups=c, bias=True)", "self.conv(x)",
    "batch = 2\nc = 3\nh = 9\nw = 13", "batch, c, h, w", "c")
# 1-D depthwise, no bias: one row a channel, so the tile is all columns
_DEPTHWISE_1D = _model(
    "c", "        self.conv = nn.Conv1d(c, c, 5, stride=2, padding=3, groups=c, bias=False)",
    "self.conv(x)", "batch = 2\nc = 4\nlength = 40", "batch, c, length", "c")
# 3-D depthwise with a kernel as deep as the input: rows are (depth, height) pairs
_DEPTHWISE_3D = _model(
    "c", "        self.conv = nn.Conv3d(c, c, (3, 2, 3), padding=(0, 1, 1), groups=c)",
    "self.conv(x)", "batch = 1\nc = 2\nd = 3\nh = 5\nw = 6", "batch, c, d, h, w", "c")
# A grouped 1x1 convolution with a bias: one GEMM per image and group
_POINTWISE = _model(
    "c_in, c_out", "        self.conv = nn.Conv2d(c_in, c_out, 1, groups=2, bias=True)",
    "self.conv(x)", "batch = 2\nc_in = 6\nc_out = 10\nh = 5\nw = 7", "batch, c_in, h, w",
    "c_in, c_out")
# A depthwise-separable block (KernelBench 86's shape): the direct kernel, then the GEMM
_SEPARABLE = _model(
    "c_in, c_out",
    "        self.depthwise = nn.Conv2d(c_in, c_in, 3, padding=1, groups=c_in, bias=False)\n"
    "        self.pointwise = nn.Conv2d(c_in, c_out, 1, bias=False)",
    "self.pointwise(self.depthwise(x))",
    "batch = 2\nc_in = 4\nc_out = 8\nh = 6\nw = 7", "batch, c_in, h, w", "c_in, c_out")


def test_a_depthwise_plan_tunes_the_direct_tile(tmp_path):
    plan = analyze(_problem(tmp_path, "dw", _DEPTHWISE))
    assert plan.operator_class == "convolution"
    assert "conv2d (direct)" in plan.description
    assert set(plan.space) == {"BLOCK_H", "BLOCK_W", "num_warps"}  # no GEMM, no TF32X3
    assert plan.default_params() == {"BLOCK_H": 1, "BLOCK_W": 256, "num_warps": 2}
    source = plan.render(plan.default_params())
    assert "conv_direct_kernel[" in source and "tl.static_range(NT_W)" in source
    assert plan.feasible({"BLOCK_H": 32, "BLOCK_W": 512, "num_warps": 2}) is not None


def test_a_pointwise_plan_tunes_a_gemm_over_channels(tmp_path):
    plan = analyze(_problem(tmp_path, "pw", _POINTWISE))
    assert "conv2d (a GEMM over channels)" in plan.description
    assert "BLOCK_H" not in plan.space and plan.space["TF32X3"] == (1, 0)
    assert plan.default_params() == {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32,
                                     "num_warps": 4, "TF32X3": 1}
    assert plan.feasible(plan.default_params()) is None


def test_a_separable_plan_tunes_both(tmp_path):
    plan = analyze(_problem(tmp_path, "sep", _SEPARABLE))
    assert "conv2d then conv2d (direct, then a GEMM over channels)" in plan.description
    # the GEMM's 4 warps: the direct tile grows with them
    assert plan.default_params() == {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32,
                                     "num_warps": 4, "TF32X3": 1, "BLOCK_H": 2,
                                     "BLOCK_W": 512}


def test_the_kernels_match_the_reference_in_the_interpreter(tmp_path):
    own = {"dw": _DEPTHWISE, "dw1d": _DEPTHWISE_1D, "dw3d": _DEPTHWISE_3D, "pw": _POINTWISE,
           "sep": _SEPARABLE}
    for name, body in own.items():
        _problem(tmp_path, name, body)
    _interpreted([tmp_path / f"{name}.py" for name in own])


@pytest.mark.slow
@pytest.mark.parametrize(("body", "params"), [
    (_DEPTHWISE, {"BLOCK_H": 2, "BLOCK_W": 32, "num_warps": 2}),
    (_SEPARABLE, {"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 16, "num_warps": 4, "TF32X3": 0,
                  "BLOCK_H": 1, "BLOCK_W": 64}),
], ids=["depthwise", "separable-ieee"])
def test_the_kernels_are_verified_at_other_tiles(tmp_path, small_pool, body, params):
    problem = _problem(tmp_path, "own_problem", body)
    plan = analyze(problem)
    result = small_pool.evaluate(problem, plan.render(params))
    assert result.ok, f"{result.status}: {result.message}\n{result.stderr_tail[-2000:]}"
    assert any(c.name == "correct on other shapes" for c in result.checks)
