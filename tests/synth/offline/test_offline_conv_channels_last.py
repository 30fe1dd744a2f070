"""The convolution template's CHANNELS_LAST parameter (issue #17): the implicit GEMM reads a
channels-last copy of the input, k walking the taps and within a tap a slice of input channels,
so its x loads are contiguous along K; or x as it is through the window table. Channels-last
is the default where every implicit GEMM has at least 16 input channels per group. Each kernel
is checked against the reference in Triton's interpreter (standard and transposed, 1-3 dims,
stride, padding, dilation, groups, output padding, channel slices that end inside a group) and
verified by the real harness on the cpu target.

CHANNELS_LAST=2 walks k along whole window rows (a row's taps along w and their channels lie
next to each other in a channels-last x), so a 3-channel convolution's 3x3 row is one run of 9
rather than three runs of 3 each padded to 16. Short output rows of a contiguous (oh, ow) plane
are tiled as one run of the plane (FLAT_HW) where a power-of-two run of columns would be mostly
padding."""

from __future__ import annotations

import pytest

from kernelevolve.synth.offline import analyze
from kernelevolve.synth.offline.families.conv.template import CHANNELS_LAST_MIN_C
from tests.synth.offline.test_offline_conv_direct import _model
from tests.synth.offline.test_offline_conv_tf32 import _CHAIN
from tests.synth.offline.test_offline_coverage import _interpreted, _problem

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

# 3 input channels, a 3-D window with padding on every dim and stride along h: the image's first
# layer, where runs along window rows pay (KernelBench 50, 54, 60, 66); rows of 16 columns
_RGB_3D = _model(
    "c_in, c_out", "        self.conv = nn.Conv3d(c_in, c_out, (2, 3, 5), stride=(1, 2, 1), "
    "padding=(1, 1, 2), bias=True)", "self.conv(x)",
    "batch = 2\nc_in = 3\nc_out = 5\nd = 3\nh = 5\nw = 16", "batch, c_in, d, h, w", "c_in, c_out")
# Rows of 6 columns in a contiguous 7 x 6 plane (KernelBench 59's rows are 10): the plane is
# tiled as one row; 2-D, stride 2 along w, 3 channels
_SHORT_ROWS = _model(
    "c_in, c_out", "        self.conv = nn.Conv2d(c_in, c_out, 3, stride=(1, 2), padding=1, "
    "bias=False)", "self.conv(x)",
    "batch = 2\nc_in = 3\nc_out = 4\nh = 7\nw = 12", "batch, c_in, h, w", "c_in, c_out")


class _Recorder:
    """Stands in for a Triton kernel in the launcher's namespace: records each launch's grid,
    arguments and constexprs; runs nothing."""

    def __init__(self):
        self.launches = []

    def __getitem__(self, grid):
        return lambda *args, **meta: self.launches.append((grid, args, meta))


def _launcher():
    """The launcher's functions (conv_source.LAUNCHER) at the template's default tiles, with
    recorders for its kernels."""
    import torch
    import triton

    from kernelevolve.synth.offline.families.conv.source import LAUNCHER
    from kernelevolve.synth.offline.families.conv.template import DEFAULTS

    ns = {"torch": torch, "triton": triton, **DEFAULTS, "NUM_WARPS": DEFAULTS["num_warps"],
          "BLOCK_H": 1, "BLOCK_W": 256}
    exec(compile(LAUNCHER, "<conv launcher>", "exec"), ns)
    for name in ("conv_gemm_cl_kernel", "conv_gemm_kernel", "conv_table_kernel",
                 "channels_last_kernel", "split_dense_kernel"):
        ns[name] = _Recorder()
    return ns


def test_row_runs_and_flat_planes_are_chosen_where_they_apply():
    import torch

    ns = _launcher()
    x = torch.zeros(2, 3, 8, 66)  # rows of 64 output columns
    # 3 channels, a 3x5 window: k runs along window rows of 5 taps x 3 channels = 15
    ns["conv_nd"](x, torch.zeros(6, 3, 3, 5), None, 1, 1, 1, 1, False, 0, channels_last=2)
    (_, args, meta), = ns["conv_gemm_cl_kernel"].launches
    assert meta["RUN_W"] and meta["BLOCK_K"] == 16 and not meta["FLAT_HW"]
    assert args[19:21] == (15, 3)  # the run, and k steps: 3 rows of one 16-wide slice
    # channels_last=1: a tap's 3 channels a run, 15 taps
    ns["conv_gemm_cl_kernel"].launches.clear()
    ns["conv_nd"](x, torch.zeros(6, 3, 3, 5), None, 1, 1, 1, 1, False, 0, channels_last=1)
    (_, args, meta), = ns["conv_gemm_cl_kernel"].launches
    assert not meta["RUN_W"] and args[19:21] == (3, 15)
    # dilation along w, or two groups: the row's taps are not adjacent in x, runs stay per tap
    for w, dil, groups in ((torch.zeros(6, 3, 3, 5), (1, 2), 1),
                           (torch.zeros(6, 3, 3, 5), 1, 2)):
        ns["conv_gemm_cl_kernel"].launches.clear()
        xg = torch.zeros(2, 3 * groups, 8, 66)
        ns["conv_nd"](xg, w, None, 1, 1, dil, groups, False, 0, channels_last=2)
        assert all(not meta["RUN_W"] for _, _, meta in ns["conv_gemm_cl_kernel"].launches)
    # rows of 10 columns in a contiguous plane (6 of 16 padding): tiled as the plane
    ns["conv_gemm_cl_kernel"].launches.clear()
    ns["conv_nd"](torch.zeros(2, 3, 9, 10), torch.zeros(4, 3, 3, 3), None, 1, 1, 1, 1, False, 0,
                  channels_last=2)
    (grid, args, meta), = ns["conv_gemm_cl_kernel"].launches
    assert meta["FLAT_HW"] and meta["BLOCK_W"] == 64 and args[7] == 2  # rows: the 2 planes
    assert grid[0] == 2 * 2  # 2 planes of 90 positions, 2 tiles of 64 each
    # the table path takes the same tiling
    ns["conv_nd"](torch.zeros(2, 3, 9, 10), torch.zeros(4, 3, 3, 3), None, 1, 1, 1, 1, False, 0,
                  channels_last=0)
    (_, _, meta), = ns["conv_gemm_kernel"].launches
    assert meta["FLAT_HW"]
    # rows of 32 columns (a power of two) or a transposed phase's strided view: rows as before
    for x5, w5, stride, transposed in ((torch.zeros(1, 3, 9, 34), torch.zeros(4, 3, 3, 3), 1,
                                        False),
                                       (torch.zeros(1, 3, 5, 5), torch.zeros(3, 4, 3, 3), 2,
                                        True)):
        ns["conv_gemm_cl_kernel"].launches.clear()
        ns["conv_nd"](x5, w5, None, stride, 0, 1, 1, transposed, 0, channels_last=2)
        assert all(not meta["FLAT_HW"] for _, _, meta in ns["conv_gemm_cl_kernel"].launches)


def test_channels_last_is_the_default_from_16_channels(tmp_path):
    assert CHANNELS_LAST_MIN_C == 16
    wide = analyze(_problem(tmp_path, "wide", _WIDE_3D))
    assert wide.space["CHANNELS_LAST"] == (1, 0, 2)
    assert wide.default_params()["CHANNELS_LAST"] == 1
    source = wide.render(wide.default_params())
    assert "CHANNELS_LAST = 1" in source and "channels_last=CHANNELS_LAST" in source
    assert "conv_gemm_cl_kernel[grid]" in source
    # the chain's convolutions have 2 and 3 input channels per group: the table
    chain = analyze(_problem(tmp_path, "chain", _CHAIN))
    assert chain.default_params()["CHANNELS_LAST"] == 0
    assert chain.render(chain.default_params()).count("channels_last=CHANNELS_LAST") == 2


def test_no_channels_last_without_an_implicit_gemm(tmp_path):
    from tests.synth.offline.test_offline_conv_direct import _DEPTHWISE, _POINTWISE

    for name, body in (("dw", _DEPTHWISE), ("pw", _POINTWISE)):
        plan = analyze(_problem(tmp_path, name, body))
        assert "CHANNELS_LAST" not in plan.space
        assert "CHANNELS_LAST =" not in plan.render(plan.default_params())


def test_channels_last_matches_the_reference_in_the_interpreter(tmp_path):
    own = {"wide3d": _WIDE_3D, "grouped1d": _GROUPED_1D, "transposed3d": _TRANSPOSED_3D,
           "chain": _CHAIN, "rgb3d": _RGB_3D, "short": _SHORT_ROWS}
    for name, body in own.items():
        _problem(tmp_path, name, body)
    _interpreted([f"{tmp_path / 'wide3d.py'}@BLOCK_K=16",
                  f"{tmp_path / 'wide3d.py'}@BLOCK_K=16,TF32X3=0",
                  str(tmp_path / "grouped1d.py"),
                  str(tmp_path / "transposed3d.py"),
                  # 2 and 3 channels per group: slices mostly masked, phases without taps
                  f"{tmp_path / 'chain.py'}@CHANNELS_LAST=1",
                  # the table on a problem that defaults to channels-last
                  f"{tmp_path / 'grouped1d.py'}@CHANNELS_LAST=0",
                  # runs along window rows: 3 channels (a 5-tap row, 15 wide, one slice); 20
                  # channels (a 2-tap row with dilation: per tap); transposed phases; groups
                  f"{tmp_path / 'rgb3d.py'}@CHANNELS_LAST=2,BLOCK_K=16",
                  f"{tmp_path / 'rgb3d.py'}@CHANNELS_LAST=2,BLOCK_K=16,TF32X3=0",
                  f"{tmp_path / 'wide3d.py'}@CHANNELS_LAST=2,BLOCK_K=16",
                  f"{tmp_path / 'transposed3d.py'}@CHANNELS_LAST=2",
                  f"{tmp_path / 'grouped1d.py'}@CHANNELS_LAST=2",
                  # short rows tiled as planes, by each implicit GEMM
                  f"{tmp_path / 'short.py'}@CHANNELS_LAST=2,BLOCK_M=32",
                  f"{tmp_path / 'short.py'}@CHANNELS_LAST=0,BLOCK_M=32"])


@pytest.mark.parametrize("tf32x3", [1, 0])
def test_channels_last_is_verified(tmp_path, small_pool, tf32x3):
    problem = _problem(tmp_path, "conv_chain", _CHAIN)
    plan = analyze(problem)
    source = plan.render({**plan.default_params(), "BLOCK_M": 32, "BLOCK_N": 16,
                          "BLOCK_K": 16, "TF32X3": tf32x3, "CHANNELS_LAST": 1})
    result = small_pool.evaluate(problem, source)
    assert result.ok, f"{result.status}: {result.message}\n{result.stderr_tail[-2000:]}"
    assert any(c.name == "correct on other shapes" for c in result.checks)
