"""The im2col convolution (``IM2COL``: a standard convolution with one group writes its im2col
matrix once, then multiplies it by the weight in a plain GEMM on the tensor cores). Checked in
Triton's interpreter against torch over strides, paddings, dilations, 1-3 dims, a bias, fp16,
a strided input and each fp32 precision; the fallbacks (groups, a transposed convolution, a
matrix past the memory cap); the plan's choice of it; and through the judge, which refuses a
kernel with its taps out of order."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kernelevolve.synth.offline import analyze
from kernelevolve.synth.offline.families.conv.template import IM2COL_DEFAULTS, feasible
from tests.synth.offline.conv_interp import conv_script
from tests.synth.offline.test_offline_conv_fma import _conv
from tests.synth.offline.test_offline_coverage import _problem

_CHECK = conv_script((
    "conv_im2col_kernel", "conv_im2col_gemm_kernel", "conv_fma_kernel", "conv_gemm_kernel",
    "conv_gemm_cl_kernel", "split_dense_kernel"), '''
    torch.manual_seed(0)
    x, w, b = torch.randn(2, 3, 13, 12), torch.randn(5, 3, 5, 4), torch.randn(5)
    x3, w3 = torch.randn(2, 3, 5, 6, 7), torch.randn(7, 3, 3, 2, 3)
    x1, w1 = torch.randn(2, 3, 40), torch.randn(4, 3, 7)
    wide = torch.randn(2, 24, 40, 3)[..., 1].transpose(1, 2)  # [2, 40, 24]: strided
    ww = torch.randn(33, 40, 3)
    xg, wg = torch.randn(2, 4, 8, 8), torch.randn(6, 2, 3, 3)
    wt = torch.randn(4, 3, 3, 3)
    cases = {
        "2d": (lambda **k: conv_nd(x, w, b, 2, 1, 1, 1, False, 0, **k),
               F.conv2d(x, w, b, 2, 1)),
        "stride-dilation": (lambda **k: conv_nd(x, w, None, (3, 2), (2, 0), (1, 2), 1, False,
                                                0, **k),
                            F.conv2d(x, w, None, (3, 2), (2, 0), (1, 2))),
        "3d": (lambda **k: conv_nd(x3, w3, b[:1].repeat(7), (1, 2, 1), 1, (2, 1, 1), 1,
                                   False, 0, **k),
               F.conv3d(x3, w3, b[:1].repeat(7), (1, 2, 1), 1, (2, 1, 1))),
        "1d": (lambda **k: conv_nd(x1, w1, None, 3, 2, 1, 1, False, 0, **k),
               F.conv1d(x1, w1, None, 3, 2)),
        # K = 120: 8 slices of 16, the last half padding; 33 channels: three channel tiles
        "strided-x": (lambda **k: conv_nd(wide, ww, None, 1, 1, 1, 1, False, 0, **k),
                      F.conv1d(wide, ww, None, 1, 1)),
    }
    res = {}
    for name, (run, want) in cases.items():
        for prec in (0, 1, 2):
            launched.clear()
            got = run(im2col=True, tf32x3=prec)
            res[f"{name}-{prec}"] = {
                "err": float((got - want).abs().max()), "shape": got.shape == want.shape,
                "im2col": launched.count("conv_im2col_kernel"),
                "gemm": launched.count("conv_im2col_gemm_kernel"),
                "others": sorted(set(launched) - {"conv_im2col_kernel",
                                                  "conv_im2col_gemm_kernel",
                                                  "split_dense_kernel"})}
    # fp16: the matrix in fp16, fp32 accumulation, rounded once
    launched.clear()
    got = conv_nd(x.half(), w.half(), None, 1, 1, 1, 1, False, 0, im2col=True)
    want = F.conv2d(x.half().float(), w.half().float(), None, 1, 1).half()
    res["fp16"] = {"err": float((got.float() - want.float()).abs().max()),
                   "dtype": str(got.dtype), "im2col": launched.count("conv_im2col_kernel")}
    # an infinity in x: split once's flag sends the products to the FMA units, as torch
    # computes them (inf * w, and no NaN from a remainder; the GPU test checks it where the
    # precision is real)
    xi = x.clone()
    xi[0, 1, 5, 6] = float("inf")
    want = F.conv2d(xi, w, None, 1, 1)
    finite = torch.isfinite(want)
    for prec in (2, 0):
        got = conv_nd(xi, w, None, 1, 1, 1, 1, False, 0, im2col=True, tf32x3=prec)
        res[f"inf-{prec}"] = {
            "same_pattern": bool(torch.equal(torch.isnan(got), torch.isnan(want))
                                 and torch.equal(torch.isinf(got), torch.isinf(want))),
            "nonfinite": int((~finite).sum()),
            "err": float((got[finite] - want[finite]).abs().max())}
    # where it does not apply, the other kernels: groups, transposed, past the memory cap
    fallback = {}
    for name, run, want in (
            ("groups", lambda: conv_nd(xg, wg, None, 1, 1, 1, 2, False, 0, im2col=True),
             F.conv2d(xg, wg, None, 1, 1, 1, 2)),
            ("transposed", lambda: conv_nd(xg, wt, None, 2, 1, 1, 1, True, 1, im2col=True),
             F.conv_transpose2d(xg, wt, None, 2, 1, 1)),
            ("cap", lambda: conv_nd(x, w, b, 2, 1, 1, 1, False, 0, im2col=True, fma=True),
             F.conv2d(x, w, b, 2, 1))):
        if name == "cap":
            ns["IM2COL_MAX_BYTES"] = 1024
        launched.clear()
        got = run()
        fallback[name] = {"err": float((got - want).abs().max()),
                          "im2col": launched.count("conv_im2col_kernel"),
                          "launched": sorted(set(launched))}
    print(json.dumps({"res": res, "fallback": fallback}))
''')


def test_im2col_convolutions_match_torch_in_the_interpreter():
    done = subprocess.run([sys.executable, "-c", _CHECK], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    res, fallback = out["res"], out["fallback"]
    for name in ("2d", "stride-dilation", "3d", "1d", "strided-x"):
        for prec in (0, 1, 2):
            case = res[f"{name}-{prec}"]
            assert case["shape"] and case["err"] < 1e-4, (name, prec, case)
            # the matrix written once, one GEMM, nothing else beside them
            assert case["im2col"] == 1 and case["gemm"] == 1, (name, prec, case)
            assert case["others"] == [], (name, prec, case)
    assert res["fp16"]["im2col"] == 1 and res["fp16"]["dtype"] == "torch.float16"
    assert res["fp16"]["err"] < 2e-2  # one fp16 rounding of values about 10
    for prec in (2, 0):
        case = res[f"inf-{prec}"]
        assert case["nonfinite"] > 0 and case["same_pattern"] and case["err"] < 1e-4, case
    for name, case in fallback.items():
        assert case["im2col"] == 0 and case["err"] < 1e-4, (name, case)
    assert fallback["cap"]["launched"] == ["conv_fma_kernel"]
    assert fallback["groups"]["launched"] and fallback["transposed"]["launched"]


@pytest.mark.parametrize(("c", "dtype", "transposed", "kernel", "groups", "im2col"), [
    (3, "float32", False, 11, 1, 1),    # KernelBench 50's first layer: 363 taps
    (3, "float16", False, 11, 1, 1),
    (3, "float32", False, 5, 1, 0),     # 75 taps: the FMA kernel
    (16, "float32", False, 5, 1, 0),    # 400 taps over 16 channels: tunable, off
    (8, "float32", True, 5, 1, None),   # transposed: never
    (4, "float32", False, 5, 2, None),  # groups: never
], ids=["3ch-11x11", "3ch-11x11-fp16", "3ch-5x5", "16ch", "transposed", "groups"])
def test_im2col_is_the_default_for_few_channels_and_long_windows(tmp_path, c, dtype,
                                                                 transposed, kernel, groups,
                                                                 im2col):
    """On an H200 the im2col GEMM ran KernelBench 50, 60 and 66 (3 channels, 315-363 taps)
    1.3-1.8x faster than the FMA kernel, and 54 and 59 (81 taps) slower."""
    body = _conv(c, dtype, transposed, 4 if kernel == 11 else 1, kernel, groups,
                 size=(24, 23))
    plan = analyze(_problem(tmp_path, f"im2col{c}_{dtype}_{transposed}_{groups}", body))
    params = plan.default_params()
    assert params.get("IM2COL") == im2col
    assert ("IM2COL" in plan.space) == (im2col is not None)
    source = plan.render(params)
    assert ("im2col=IM2COL" in source) == (im2col is not None)
    if im2col:
        tile = {k: v for k, v in IM2COL_DEFAULTS.items() if k != "TF32X3"}
        assert {k: params[k] for k in tile} == tile
        assert params.get("TF32X3") == (1 if dtype == "float32" else None)
        assert "\nIM2COL = 1\n" in source and plan.feasible(params) is None


def test_the_fma_tile_rule_does_not_bind_an_im2col_point():
    """The FMA kernel's rule (no fewer positions than threads) rules out its own slow tiles,
    not the im2col GEMM's, which the same point may run."""
    point = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "FMA": 1}
    assert "fewer than" in feasible({**point, "IM2COL": 0})
    assert feasible({**point, "IM2COL": 1}) is None


@pytest.mark.slow
def test_im2col_candidates_are_verified_and_a_tap_order_bug_is_refused(tmp_path, small_pool):
    """The rendered module through the judge (the interpreter's worker): correct at the traced
    sizes and on the other shapes it checks. The same module with the window's columns read
    one tap off is refused, so the verdict sees the im2col kernels do the work."""
    problem = _problem(tmp_path, "im2col3", _conv(3, "float32", False, 2, 7, size=(12, 11)))
    plan = analyze(problem)
    params = {**plan.default_params(), "BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 16,
              "num_warps": 4}
    assert params["IM2COL"] == 0  # 147 taps: not by default
    params["IM2COL"] = 1
    source = plan.render(params)
    result = small_pool.evaluate(problem, source)
    assert result.ok, f"{result.status}: {result.message}\n{result.stderr_tail[-2000:]}"
    assert any(c.name == "correct on other shapes" for c in result.checks)
    broken = source.replace("    t_w = k % KW\n", "    t_w = (k + 1) % KW\n")
    assert broken != source
    refused = small_pool.evaluate(problem, broken)
    assert not refused.ok and refused.status == "mismatch", refused.message
