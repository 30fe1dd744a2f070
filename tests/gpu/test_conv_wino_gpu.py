"""The Winograd kernel (``conv_wino_kernel``, ``WINO = 1``) on a real sm_90 GPU, where the TMA
boxes, their out-of-bounds zeros, the register splits of the boxes into columns and the tensor
cores' TF32 products are real (the interpreter multiplies exactly): tf32x3-level error against
float64, torch's NaN and infinities (the direct sums), and the kernel really launched. A 2-D
convolution with padding and a bias (3 taps along w, padded to F(4, 5)'s 5), a transposed one
with stride 1 (KernelBench 69's kind, taps mirrored), one with stride 2 (phases of 3 and 2
taps) and a 1-D one. Marked ``gpu``: run with ``python -m pytest -m gpu tests/gpu``."""

from __future__ import annotations

import pytest

from kernelevolve.llm.offline import analyze
from kernelevolve.problem import load_problem
from tests.gpu.test_conv_tma_gpu import SM90, inputs, run_and_check
from tests.rendered import conv_problem, load_rendered

pytestmark = SM90

PROBLEMS = {
    "2d": ("nn.Conv2d(64, 96, 3, padding=1)", (4, 64, 33, 70), "conv2d"),
    "transposed": ("nn.ConvTranspose2d(64, 128, (3, 5), bias=False)", (2, 64, 30, 61),
                   "conv_transpose2d"),
    "transposed_stride2": ("nn.ConvTranspose2d(32, 48, 5, stride=2, padding=2)",
                           (2, 32, 20, 24), "conv_transpose2d"),
    "1d": ("nn.Conv1d(32, 64, 5, padding=2)", (4, 32, 1000), "conv1d"),
}


@pytest.mark.parametrize("name", list(PROBLEMS))
@pytest.mark.parametrize("wino", [1, 2])
def test_winograd_is_tf32x3_exact_and_keeps_infinities(tmp_path, name, wino):
    """WINO = 2 chains each sum's products on the tensor cores: the error bound is the same,
    so a chain whose truncating adds cost too much fails here."""
    conv, shape, fn = PROBLEMS[name]
    plan = analyze(load_problem(conv_problem(tmp_path / f"p_{name}.py", conv, shape)))
    params = {**plan.default_params(), "WINO": wino}
    assert plan.feasible(params) is None
    x, xn = inputs(shape)
    cand = load_rendered(plan, params, tmp_path / f"cand_{name}_{wino}.py")
    run_and_check(cand, "conv_wino_kernel", x, xn, fn, (name, wino))
