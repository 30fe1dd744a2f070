"""The TMA implicit GEMM (``conv_gemm_tma_kernel``) on a real sm_90 GPU, where the descriptors,
the copy engine's out-of-bounds zeros and the tensor cores' TF32 and fp16 products are real
(the interpreter multiplies exactly): tf32x3-level error against float64 at its tiles, with
TF32 products (``TMA = 1``) and fp16x3 ones (``TMA = 2``; 3 chained), torch's NaN and
infinities, and the kernel really launched. A standard 2-D convolution with padding and a
bias, a transposed one with stride 1 (KernelBench 69's kind) and one with stride 2 (phases);
fp16x3 also on magnitudes far from 1 (its parts' scales, fp16's subnormals on the tensor
cores).
Marked ``gpu``: run with ``python -m pytest -m gpu tests/gpu``."""

from __future__ import annotations

import pytest
import torch

from kernelevolve.problem import load_problem
from kernelevolve.synth.offline import analyze
from tests.rendered import conv_problem, load_rendered

# The marks of a test that needs an sm_90 GPU (TMA descriptors)
SM90 = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available()
                       or torch.cuda.get_device_capability()[0] < 9, reason="needs sm_90"),
]
pytestmark = SM90

PROBLEMS = {
    "2d": ("nn.Conv2d(64, 96, 3, padding=1)", (4, 64, 33, 70), "conv2d"),
    "transposed": ("nn.ConvTranspose2d(64, 128, (3, 5), bias=False)", (2, 64, 30, 61),
                   "conv_transpose2d"),
    "transposed_stride2": ("nn.ConvTranspose2d(32, 48, 3, stride=2, padding=1)",
                           (2, 32, 20, 24), "conv_transpose2d"),
}

POINTS = [{}, {"BLOCK_M": 128, "num_warps": 8}, {"BLOCK_M": 128, "num_warps": 4},
          {"BLOCK_N": 64}]


def _reference(c, x, fn):
    kw = dict(stride=c.stride, padding=c.padding, dilation=c.dilation, groups=c.groups)
    if fn == "conv_transpose2d":
        kw["output_padding"] = c.output_padding
    bias = None if c.bias is None else c.bias.detach().to(x.dtype)
    return getattr(torch.nn.functional, fn)(x, c.weight.detach().to(x.dtype), bias, **kw)


class _Spy:
    """A kernel whose launches append their grid to ``launched``."""

    def __init__(self, kernel, launched):
        self.kernel, self.launched = kernel, launched

    def __getitem__(self, grid):
        self.launched.append(grid)
        return self.kernel[grid]


def inputs(shape):
    """x ~ U[0, 1) on the GPU, and a copy with an infinity, a NaN and a -infinity in it."""
    torch.manual_seed(0)
    x = torch.rand(*shape, device="cuda")
    xn = x.clone()
    places = [5, x.numel() // 3, x.numel() - 7]
    xn.view(-1)[places] = torch.tensor([float("inf"), float("nan"), float("-inf")],
                                       device="cuda")
    return x, xn


def run_and_check(cand, kernel, x, xn, fn, label):
    """The candidate's model on x and xn with ``kernel`` (its name) spied on: it launched, its
    error on x is tf32x3-level against float64, and on xn it has float64's NaN and infinities
    (cuDNN's fp32 FFT spreads them over its tiles) and that error elsewhere."""
    launched: list[tuple[int, ...]] = []
    setattr(cand, kernel, _Spy(getattr(cand, kernel), launched))
    torch.manual_seed(0)
    model = cand.ModelNew().cuda()
    with torch.no_grad():
        got = model(x)
        truth = _reference(model.conv, x.double(), fn)
        err = float((got.double() - truth).abs().max() / truth.abs().mean())
        assert launched, label  # the kernel ran, no fallback
        assert err < 2e-5, (label, err)  # one TF32 product: ~5e-3
        got_n, want_n = model(xn).double(), _reference(model.conv, xn.double(), fn)
    assert torch.equal(got_n.isnan(), want_n.isnan()), label
    assert torch.equal(got_n.isinf(), want_n.isinf()), label
    finite = torch.isfinite(want_n)
    assert float((got_n - want_n)[finite].abs().max() / truth.abs().mean()) < 2e-5, label


# fp16x3 chained (TMA = 3, opt-in: search.fp16x3) on the transposed convolution measured
# 2.1-3.1e-5 of the output's mean on an H100 80GB (2026-12-07, torch 2.11, Triton 3.6) against
# these tests' 2e-5; the judge decides per candidate, so it stays opt-in and marked here.
CHAINED_TRANSPOSED = pytest.mark.xfail(strict=False, reason=(
    "fp16x3 chained on the transposed convolution: 2.1-3.1e-5 on an H100 (bound 2e-5)"))


@pytest.mark.parametrize("tma", [1, 2, 3])
@pytest.mark.parametrize("name", list(PROBLEMS))
def test_tma_gemm_is_tf32x3_exact_and_keeps_infinities(tmp_path, request, name, tma):
    if tma == 3 and name == "transposed":
        request.applymarker(CHAINED_TRANSPOSED)
    conv, shape, fn = PROBLEMS[name]
    plan = analyze(load_problem(conv_problem(tmp_path / f"p_{name}.py", conv, shape)))
    assert plan.default_params()["TMA"] == 1
    x, xn = inputs(shape)
    for k, point in enumerate(POINTS):
        params = {**plan.default_params(), **point, "TMA": tma}
        assert plan.feasible(params) is None, point
        cand = load_rendered(plan, params, tmp_path / f"cand_{name}_{k}_{tma}.py")
        run_and_check(cand, "conv_gemm_tma_kernel", x, xn, fn, (name, point, tma))


@pytest.mark.parametrize("tma", [2, 3])
@pytest.mark.parametrize("scale", [1e30, 1e-30, 1e-40, 0.0, None])
def test_fp16x3_keeps_fp32_error_far_from_one(tmp_path, request, scale, tma):
    """x times 1e30, 1e-30, 1e-40 (fp32's subnormals: within 2x torch's own fp32 error, as
    their products lose bits there), zero, and magnitudes 2^-20 .. 2^20 in one x (None):
    fp16x3 keeps fp32-level error against float64 (each operand's parts are scaled from its
    largest finite magnitude)."""
    if tma == 3 and scale in (1e30, 1e-30, None):
        request.applymarker(CHAINED_TRANSPOSED)
    conv, shape, fn = PROBLEMS["transposed"]
    plan = analyze(load_problem(conv_problem(tmp_path / "p.py", conv, shape)))
    cand = load_rendered(plan, {**plan.default_params(), "TMA": tma}, tmp_path / "cand.py")
    launched: list[tuple[int, ...]] = []
    cand.conv_gemm_tma_kernel = _Spy(cand.conv_gemm_tma_kernel, launched)
    torch.manual_seed(0)
    x = torch.rand(*shape, device="cuda")
    if scale is None:
        x = torch.randn_like(x) * torch.exp2(torch.randint(-20, 21, shape, device="cuda").float())
    else:
        x = x * scale
    model = cand.ModelNew().cuda()
    with torch.no_grad():
        got = model(x).double()
        truth = _reference(model.conv, x.double(), fn)
        with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
            own = _reference(model.conv, x, fn).double()  # torch's fp32 (cuDNN, no TF32)
    assert launched
    mean = float(truth.abs().mean()) or 1.0
    err = float((got - truth).abs().max()) / mean
    assert err < max(2e-5, 2 * float((own - truth).abs().max()) / mean), (scale, err)
