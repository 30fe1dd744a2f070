"""The Winograd kernel (``conv_wino_kernel``, ``WINO = 1``): fp32 convolutions with stride 1 and
2-5 adjacent taps along w (a transposed convolution's phases too) as F(4, 5) along w, x read in
TMA boxes, 8 products a tile of 4 output columns. Checked in Triton's interpreter against
float64 (values) and torch (NaN and infinities), where it falls back, the plan's parameter,
the register budget ptxas gives its tile on sm_90, and the judge on a candidate that takes it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kernelevolve.llm.offline import analyze
from tests.llm.offline.conv_interp import conv_script
from tests.llm.offline.test_offline_conv_fma import _conv
from tests.llm.offline.test_offline_coverage import _problem

ROOT = Path(__file__).resolve().parents[3]

_CHECK = conv_script(("conv_wino_kernel", "conv_gemm_tma_kernel"), '''
    torch.manual_seed(0)
    d = lambda t: None if t is None else t.double()
    x, b = torch.rand(2, 16, 7, 19), torch.randn(24)
    w3, w5 = torch.randn(24, 16, 3, 3) * 0.1, torch.randn(24, 16, 3, 5) * 0.1
    w2, w7 = torch.randn(24, 16, 2, 2) * 0.1, torch.randn(24, 16, 3, 7) * 0.1
    xg, wg = torch.rand(2, 32, 8, 21), torch.randn(32, 16, 3, 5) * 0.1
    x1, w1 = torch.rand(2, 16, 45), torch.randn(20, 16, 5) * 0.1
    x3, w3d = torch.rand(1, 16, 4, 5, 11), torch.randn(8, 16, 3, 3, 3) * 0.1
    xt, wt = torch.rand(2, 16, 6, 13), torch.randn(16, 20, 3, 5) * 0.1
    x8, w8 = torch.rand(2, 8, 7, 9), torch.randn(12, 8, 3, 3) * 0.1
    cases = {  # name: (run, float64 reference, the Winograd kernel expected)
        "3x5": (lambda: conv_nd(x, w5, b, 1, (1, 2), 1, 1, False, 0, **k),
                F.conv2d(d(x), d(w5), d(b), 1, (1, 2)), True),
        "3x3_padded": (lambda: conv_nd(x, w3, b, 1, 1, 1, 1, False, 0, **k),
                       F.conv2d(d(x), d(w3), d(b), 1, 1), True),
        "2x2_unpadded": (lambda: conv_nd(x, w2, None, 1, 0, 1, 1, False, 0, **k),
                         F.conv2d(d(x), d(w2), None, 1, 0), True),
        # groups, and a dilation along h (the taps along w stay adjacent)
        "groups_dilated_h": (lambda: conv_nd(xg, wg, None, 1, (2, 2), (2, 1), 2, False, 0,
                                             **k),
                             F.conv2d(d(xg), d(wg), None, 1, (2, 2), (2, 1), 2), True),
        "1d": (lambda: conv_nd(x1, w1, None, 1, 2, 1, 1, False, 0, **k),
               F.conv1d(d(x1), d(w1), None, 1, 2), True),
        "3d": (lambda: conv_nd(x3, w3d, None, 1, 1, 1, 1, False, 0, **k),
               F.conv3d(d(x3), d(w3d), None, 1, 1), True),
        # 69's kind: the taps along w step backwards (mirrored), boxes start left of x
        "transposed": (lambda: conv_nd(xt, wt, None, 1, 0, 1, 1, True, 0, **k),
                       F.conv_transpose2d(d(xt), d(wt)), True),
        # stride 2 with a 5-wide window: phases of 3 and 2 taps along w
        "transposed_phases": (lambda: conv_nd(xt, wt, b[:20], 2, 1, 1, 1, True, 1, **k),
                              F.conv_transpose2d(d(xt), d(wt), d(b[:20]), 2, 1, 1), True),
        # where it does not fit: 7 taps along w, a dilation along w, a stride, 8 channels
        "7_taps": (lambda: conv_nd(x, w7, None, 1, 1, 1, 1, False, 0, **k),
                   F.conv2d(d(x), d(w7), None, 1, 1), False),
        "dilated_w": (lambda: conv_nd(x, w3, None, 1, 2, 2, 1, False, 0, **k),
                      F.conv2d(d(x), d(w3), None, 1, 2, 2), False),
        "strided": (lambda: conv_nd(x, w5, b, 2, 1, 1, 1, False, 0, **k),
                    F.conv2d(d(x), d(w5), d(b), 2, 1), False),
        "narrow": (lambda: conv_nd(x8, w8, None, 1, 1, 1, 1, False, 0, **k),
                   F.conv2d(d(x8), d(w8), None, 1, 1), False),
    }
    k = dict(tf32x3=1, channels_last=1, wino=True)
    res = {}
    for name, (run, want, expect) in cases.items():
        launched.clear()
        got = run()
        res[name] = {"err": float((got.double() - want).abs().max() / want.abs().mean()),
                     "wino": "conv_wino_kernel" in launched, "want_wino": expect}
    # WINO = 2 (the products chained on the tensor cores; exact here, as every product)
    launched.clear()
    got = conv_nd(xt, wt, None, 1, 0, 1, 1, True, 0, tf32x3=1, channels_last=1, wino=2)
    want = F.conv_transpose2d(d(xt), d(wt))
    res["chained"] = {"err": float((got.double() - want).abs().max() / want.abs().mean()),
                      "wino": "conv_wino_kernel" in launched, "want_wino": True}
    # off, or products other than tf32x3: not taken
    off = {}
    for kw in (dict(tf32x3=1, channels_last=1, wino=False),
               dict(tf32x3=0, channels_last=1, wino=True),
               dict(tf32x3=2, channels_last=1, wino=True)):
        launched.clear()
        conv_nd(x, w5, b, 1, 1, 1, 1, False, 0, **kw)
        off[str(kw)] = "conv_wino_kernel" not in launched
    # infinities and NaN in x (0 * inf in the transforms: the direct sums), an infinity in the
    # weight (the flag: every program sums directly), and finite values whose transform
    # overflows fp32 (5.25 * 3e38): torch's NaN and infinities, its values elsewhere
    xn = x.clone()
    xn[0, 3, 2, 4], xn[1, 5, 6, 0], xn[1, 2, 1, 18] = float("inf"), float("nan"), float("-inf")
    wn = w5.clone()
    # the window's centre tap: no output reads the padding through it (0 * inf is NaN in
    # every GEMM kernel here; torch's CPU convolution skips the padding)
    wn[3, 2, 1, 2] = float("inf")
    xo = x.clone()
    xo[0, 1, 3, 7] = 3e38
    nonfinite = {}
    for name, (xx, ww) in {"x": (xn, w5), "w": (x, wn), "overflow": (xo, w5)}.items():
        launched.clear()
        got, want = (conv_nd(xx, ww, None, 1, (1, 2), 1, 1, False, 0, **k),
                     F.conv2d(xx, ww, None, 1, (1, 2)))
        nonfinite[name] = {
            "same": bool(torch.equal(got.isnan(), want.isnan())
                         and torch.equal(got.isinf(), want.isinf())),
            "err": float((got - want).nan_to_num(0.0, 0.0, 0.0).abs().max()
                         / want.nan_to_num(0.0, 0.0, 0.0).abs().mean()),
            "wino": "conv_wino_kernel" in launched}
    # the program's tile: 69's 130 rows of 65 tiles, a 1-D row of 512, one too small
    tiles = [ns["_wino_tile"](130, 65), ns["_wino_tile"](1, 512), ns["_wino_tile"](2, 3)]
    print(json.dumps({"cases": res, "off": off, "nonfinite": nonfinite, "tiles": tiles}))
''')


@pytest.fixture(scope="module")
def checked():
    done = subprocess.run([sys.executable, "-c", _CHECK], capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_stride_one_convolutions_match_float64(checked):
    """Windows of 5, 3 and 2 taps along w (padded with zero taps to F(4, 5)'s 5), padding and
    a bias, groups with a dilation along h, 1-D, 3-D, a transposed convolution with stride 1
    and the phases of one with stride 2: tf32x3-level error (the transforms scale by up to
    5.25 and 8). 7 taps along w, a dilation along w, a stride and 8 channels do not fit."""
    for name, r in checked["cases"].items():
        assert r["wino"] == r["want_wino"], name
        assert r["err"] < 1e-5, (name, r)  # of the mean output (TF32 alone: ~5e-3)


def test_off_or_other_products_do_not_take_it(checked):
    assert all(checked["off"].values()), checked["off"]


def test_infinities_nan_and_overflow_give_torchs(checked):
    """0 * inf in the transforms would spread NaN over a tile's columns, and a finite x near
    fp32's limit overflows in them: such a program sums again directly."""
    for name, r in checked["nonfinite"].items():
        assert r["wino"] and r["same"], (name, r)
        assert r["err"] < 1e-5, (name, r)


def test_the_tile_wastes_least_past_the_edges(checked):
    """8 x 8 tiles use 86% of 69's programs' tiles (4 x 16: 80%); a 1-D row takes 64 along
    w; an output of fewer than 16 tiles is left to the other kernels."""
    assert checked["tiles"] == [[8, 8], [1, 64], [0, 0]]


def test_the_plan_offers_wino_where_a_launch_can_take_it(tmp_path):
    fp32 = analyze(_problem(tmp_path, "wino32", _conv(32, "float32")))
    assert fp32.space["WINO"] == (0, 1, 2) and fp32.default_params()["WINO"] == 0
    source = fp32.render({**fp32.default_params(), "WINO": 1})
    assert "wino=WINO" in source and "WINO = 1" in source
    # 69's kind: transposed with stride 1 and 5 taps along w
    assert "WINO" in analyze(_problem(tmp_path, "winot", _conv(32, "float32",
                                                                transposed=True))).space
    for name, text in {"wide": _conv(32, "float32", kernel=7, padding=3),
                       "strided": _conv(32, "float32", stride=2),
                       "half": _conv(32, "float16"),
                       "narrow": _conv(3, "float32")}.items():
        assert "WINO" not in analyze(_problem(tmp_path, f"wino_{name}", text)).space, name


@pytest.mark.slow
def test_its_tile_compiles_for_sm90_without_spills(tmp_path):
    """The kernel holds 8 sums and 8 input columns: at its tile ptxas must fit them in
    registers (on sm_90, with the Triton bundled here; no GPU)."""
    problem = _problem(tmp_path, "wino_ptxas", _conv(32, "float32", size=(8, 40))).path
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "ptxas_report.py"), str(problem),
         "--shapes", "[[2, 32, 8, 40]]", "--points", '[{"WINO": 1}, {"WINO": 2}]'],
        capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    reports = done.stdout.split("`conv_wino_kernel`")[1:]
    assert len(reports) == 2, done.stdout[-3000:]
    for report in reports:
        lines = report.split("\n- ", 1)[0].split("\n## ", 1)[0]
        if "ptxas failed" in lines:  # Triton 3.9's PTX is newer than the ptxas it bundles
            pytest.skip(lines.strip())
        registers = int(re.search(r"Used (\d+) registers", lines).group(1))
        assert "spill" not in lines or re.search(r"\b0 bytes spill stores", lines), lines
        assert registers <= 255, lines


@pytest.mark.slow
def test_a_candidate_taking_it_is_verified_by_the_judge(tmp_path, small_pool):
    """A 32-channel padded convolution with WINO=1 through the judge: correct at the traced
    sizes, on other shapes and values, with NaN and infinities, and it compiles for sm_90."""
    problem = _problem(tmp_path, "wino_judge", _conv(32, "float32", kernel=3, padding=1,
                                                     size=(6, 9)))
    plan = analyze(problem)
    result = small_pool.evaluate(problem, plan.render({**plan.default_params(), "WINO": 1}))
    assert result.ok, f"{result.status}: {result.message}\n{result.stderr_tail[-2000:]}"
    names = {c.name for c in result.checks if c.passed}
    assert {"correct on other shapes", "NaN as the reference", "infinities as the reference",
            "compiles for a GPU"} <= names, names
