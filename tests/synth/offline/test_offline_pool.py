"""The pooling template (pool.py): constexpr windows, a [BLOCK_R, BLOCK_W] output tile, the
window-span loads (WINDOW=1) beside one load per window column (WINDOW=0), and the sliding
kernel written for the window along W (WINDOW=2, strides 1-4), verified by the real harness in the
interpreter over 1-3-D max and average pooling with padding, dilation, ceil mode, strides other
than the window, count_include_pad and divisor_override."""

from __future__ import annotations

import pytest

from kernelevolve.config import EvalConfig
from kernelevolve.problem import load_problem
from kernelevolve.synth.offline import analyze
from kernelevolve.tools.harness.pool import WorkerPool

POOL = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = {module}

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn({shape})]


def get_init_inputs():
    return []
'''

CASES = {
    "max1d_dilated_padded": ("nn.MaxPool1d(5, stride=2, padding=2, dilation=3)", "2, 3, 61"),
    "max2d_ceil": ("nn.MaxPool2d((3, 2), stride=(2, 3), padding=1, ceil_mode=True)",
                   "2, 3, 17, 19"),
    "max3d_dilated": ("nn.MaxPool3d(3, stride=2, padding=1, dilation=2)", "1, 2, 11, 9, 13"),
    "avg1d_stride1": ("nn.AvgPool1d(4, stride=1, padding=2)", "2, 3, 40"),
    "avg2d_no_pad_count": ("nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, "
                           "count_include_pad=False)", "2, 3, 15, 18"),
    "avg3d_divisor": ("nn.AvgPool3d((2, 3, 3), stride=(1, 2, 3), padding=(1, 1, 0), "
                      "divisor_override=5)", "1, 2, 7, 9, 11"),
    # Stride 1 along W (the sliding kernel's case): paddings that are and are not multiples of
    # its 4-wide vectors, dilation, odd widths, strides elsewhere
    "max1d_slide_dilated": ("nn.MaxPool1d(8, stride=1, padding=4, dilation=3)", "2, 3, 70"),
    "max2d_slide": ("nn.MaxPool2d(4, stride=1, padding=1)", "2, 3, 13, 22"),
    "avg1d_slide_odd": ("nn.AvgPool1d(8, stride=1, padding=4)", "2, 3, 37"),
    "avg2d_slide_no_pad_count": ("nn.AvgPool2d((3, 5), stride=(2, 1), padding=(1, 2), "
                                 "count_include_pad=False)", "2, 3, 9, 19"),
    "avg3d_slide_divisor": ("nn.AvgPool3d((2, 2, 3), stride=1, padding=(0, 1, 1), "
                            "divisor_override=7)", "1, 2, 5, 6, 11"),
    # a stride along W past MAX_SLIDE_SW: no sliding kernel
    "max1d_stride5": ("nn.MaxPool1d(5, stride=5, padding=1)", "2, 3, 41"),
}


@pytest.fixture(scope="module")
def pool():
    with WorkerPool("cpu", EvalConfig(n_input_sets=1, extra_shapes=False), workers=1) as p:
        yield p


def _plan(tmp_path, name):
    module, shape = CASES[name]
    path = tmp_path / f"{name}.py"
    path.write_text(POOL.format(module=module, shape=shape))
    problem = load_problem(path)
    plan = analyze(problem)
    assert plan.operator_class == "pooling"
    return problem, plan


# A narrow tile and few loads per program: several programs along OW and several rows per
# program, so the tile's edges are crossed.
NARROW = {"BLOCK_W": 16, "BLOCK": 256, "num_warps": 1}


@pytest.mark.parametrize("window", [0, 1, 2])
@pytest.mark.parametrize("name", sorted(CASES))
def test_pooling_is_verified(tmp_path, pool, name, window):
    problem, plan = _plan(tmp_path, name)
    params = {**plan.default_params(), **NARROW, "WINDOW": window}
    # every window slides (strides along W of 1-3 here) but the stride-5 one
    assert (plan.template.slide is None) == (name == "max1d_stride5")
    if window == 2 and plan.template.slide is None:
        assert "a stride along W of at most 4" in (plan.feasible(params) or "")
        return
    result = pool.evaluate(problem, plan.render(params))
    assert result.ok, f"{result.status}: {result.message}\n{result.stderr_tail[-2000:]}"


@pytest.mark.parametrize("name", ["max2d_slide", "avg1d_slide_odd", "max2d_ceil"])
def test_the_sliding_kernel_is_the_one_that_runs(tmp_path, pool, name):
    """Its outputs 1 and 2 swapped in the join, the candidate is refused: WINDOW=2 launches the
    written kernel rather than falling back to pool_kernel."""
    problem, plan = _plan(tmp_path, name)
    source = plan.render({**plan.default_params(), **NARROW, "WINDOW": 2})
    swapped = source.replace("tl.join(tl.join(acc0, acc2), tl.join(acc1, acc3))",
                             "tl.join(tl.join(acc0, acc1), tl.join(acc2, acc3))")
    assert swapped != source
    result = pool.evaluate(problem, swapped)
    assert not result.ok and result.status == "mismatch", result.message


def test_kernelbench_defaults_follow_the_window(kernelbench):
    """Sliding windows where the stride along W is 1 or the window is not dilated there;
    else window-span loads for 1-D and strided windows that fill their power-of-two lanes, one
    column at a time otherwise (as measured on the H200); the tile as wide as the output up
    to 1024."""
    def params(name):
        return analyze(load_problem(kernelbench / "level1" / f"{name}.py")).default_params()

    assert params("41_Max_Pooling_1D")["WINDOW"] == 2  # window 8, stride 1: slides
    assert params("41_Max_Pooling_1D")["BLOCK_W"] == 1024  # output width 65523
    assert params("42_Max_Pooling_2D")["WINDOW"] == 2  # 4 x 4, stride 1
    assert params("44_Average_Pooling_1D")["WINDOW"] == 2  # window 8, stride 1
    assert params("43_Max_Pooling_3D")["WINDOW"] == 1  # 3 x 3 x 3, stride 2, dilation 3
    avg3d = params("46_Average_Pooling_3D")  # 3 x 3 x 3, stride 2: slides, a group a thread
    assert avg3d["WINDOW"] == 2 and avg3d["BLOCK"] == 256 and avg3d["num_warps"] == 2
    assert params("43_Max_Pooling_3D")["BLOCK_W"] == 64  # output width 62
    avg2d = params("45_Average_Pooling_2D")  # 11 x 11 (16 lanes), stride 11, width 186
    assert avg2d["WINDOW"] == 0 and avg2d["BLOCK_W"] == 256 and avg2d["BLOCK"] == 512


def test_a_tile_that_spills_the_unrolled_window_is_infeasible(kernelbench):
    plan = analyze(load_problem(kernelbench / "level1" / "45_Average_Pooling_2D.py"))
    assert plan.feasible(plan.default_params()) is None
    why = plan.feasible({**plan.default_params(), "BLOCK": 2048, "num_warps": 4})
    assert why is not None and "121 unrolled window taps" in why
