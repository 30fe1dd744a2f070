"""The convolution template's CHANNELS_LAST parameter (issue #17): the implicit GEMM reads a
channels-last copy of the input, k walking the taps and within a tap a slice of input channels,
so its x loads are contiguous along K; or x as it is through the window table. Channels-last
is the default where every implicit GEMM has at least 16 input channels per group. Each kernel
is checked against the reference in Triton's interpreter (standard and transposed, 1-3 dims,
stride, padding, dilation, groups, output padding, channel slices that end inside a group) and
verified by the real harness on the cpu target."""

from __future__ import annotations

import pytest

from kernelevolve.llm.offline import analyze
from kernelevolve.llm.offline.conv import CHANNELS_LAST_MIN_C
from tests.llm.offline.test_offline_conv_direct import _model
from tests.llm.offline.test_offline_conv_tf32 import _CHAIN
from tests.llm.offline.test_offline_coverage import _interpreted, _problem

# 20 input channels: a 16-wide slice and a masked one per tap; a 3-D window with stride,
# padding and dilation per dim
_WIDE_3D = _model(
    "c_in, c_out", "        self.conv = nn.Conv3d(c_in, c_out, (2, 3, 2), stride=(1, 2, 1), "
    "padding=(1, 1, 0), dilation=(1, 1, 2), bias=True)", "self.conv(x)",
    "batch = 2\nc_in = 20\nc_out = 6\nd = 3\nh = 5\nw = 6", "batch, c_in, d, h, w", "c_in, c_out")
# 1-D, 16 channels per group in 2 groups: channels-last by default
_GROUPED_1D = _model(
    "c_in, c_out", "        self.conv = nn.Conv1d(c_in, c_out, 3, stride=2, padding=2, "
    "dilation=2, groups=2, bias=False)", "self.conv(x)",
    "batch = 2\nc_in = 32\nc_out = 12\nlength = 30", "batch, c_in, length", "c_in, c_out")
# A transposed 3-D one with stride and output padding: 8 phases, each a channels-last GEMM
_TRANSPOSED_3D = _model(
    "c_in, c_out", "        self.conv = nn.ConvTranspose3d(c_in, c_out, 3, stride=2, padding=1, "
    "output_padding=1, bias=True)", "self.conv(x)",
    "batch = 1\nc_in = 16\nc_out = 5\nd = 3\nh = 4\nw = 4", "batch, c_in, d, h, w", "c_in, c_out")


def test_channels_last_is_the_default_from_16_channels(tmp_path):
    assert CHANNELS_LAST_MIN_C == 16
    wide = analyze(_problem(tmp_path, "wide", _WIDE_3D))
    assert wide.space["CHANNELS_LAST"] == (1, 0)
    assert wide.default_params()["CHANNELS_LAST"] == 1
    source = wide.render(wide.default_params())
    assert "CHANNELS_LAST = 1" in source and "channels_last=CHANNELS_LAST" in source
    assert "conv_gemm_cl_kernel[grid]" in source
    # the chain's convolutions have 2 and 3 input channels per group: the table
    chain = analyze(_problem(tmp_path, "chain", _CHAIN))
    assert chain.default_params()["CHANNELS_LAST"] == 0
    assert chain.render(chain.default_params()).count("channels_last=CHANNELS_LAST") == 2


def test_no_channels_last_without_an_implicit_gemm(tmp_path):
    from tests.llm.offline.test_offline_conv_direct import _DEPTHWISE, _POINTWISE

    for name, body in (("dw", _DEPTHWISE), ("pw", _POINTWISE)):
        plan = analyze(_problem(tmp_path, name, body))
        assert "CHANNELS_LAST" not in plan.space
        assert "CHANNELS_LAST =" not in plan.render(plan.default_params())


def test_channels_last_matches_the_reference_in_the_interpreter(tmp_path):
    own = {"wide3d": _WIDE_3D, "grouped1d": _GROUPED_1D, "transposed3d": _TRANSPOSED_3D,
           "chain": _CHAIN}
    for name, body in own.items():
        _problem(tmp_path, name, body)
    _interpreted([f"{tmp_path / 'wide3d.py'}@BLOCK_K=16",
                  f"{tmp_path / 'wide3d.py'}@BLOCK_K=16,TF32X3=0",
                  str(tmp_path / "grouped1d.py"),
                  str(tmp_path / "transposed3d.py"),
                  # 2 and 3 channels per group: slices mostly masked, phases without taps
                  f"{tmp_path / 'chain.py'}@CHANNELS_LAST=1",
                  # the table on a problem that defaults to channels-last
                  f"{tmp_path / 'grouped1d.py'}@CHANNELS_LAST=0"])


@pytest.mark.parametrize("tf32x3", [1, 0])
def test_channels_last_is_verified(tmp_path, small_pool, tf32x3):
    problem = _problem(tmp_path, "conv_chain", _CHAIN)
    plan = analyze(problem)
    source = plan.render({**plan.default_params(), "BLOCK_M": 32, "BLOCK_N": 16,
                          "BLOCK_K": 16, "TF32X3": tf32x3, "CHANNELS_LAST": 1})
    result = small_pool.evaluate(problem, source)
    assert result.ok, f"{result.status}: {result.message}\n{result.stderr_tail[-2000:]}"
    assert any(c.name == "correct on other shapes" for c in result.checks)
