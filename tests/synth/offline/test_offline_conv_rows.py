"""The transposed convolution in output order on the FMA units (``OUT_ROWS``,
``conv_rows_fma_kernel``): a program a run of one output row's columns, held as [channels,
stride phase, column group]. Checked in Triton's interpreter against torch over 1-3 dims,
strides with and without empty phases, dilations, paddings, output padding, groups, a bias,
several tiles of columns and channels, and fp16; the plan's space and default; and through the
judge, which refuses a kernel whose phases read one input column off."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kernelevolve.synth.offline import analyze
from kernelevolve.synth.offline.families.conv.template import empty_phases
from tests.synth.offline.conv_interp import conv_script
from tests.synth.offline.test_offline_conv_fma import _conv
from tests.synth.offline.test_offline_coverage import _problem

_CHECK = conv_script((
    "conv_rows_fma_kernel", "conv_fma_kernel", "conv_gemm_kernel", "conv_gemm_cl_kernel",
    "conv_direct_kernel"), '''
    torch.manual_seed(0)
    fns = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}
    # x shape, w shape, bias, stride, padding, dilation, groups, output padding
    cases = {
        # KernelBench 81's: stride 5 with dilation 2, so each column one tap or none
        "81": ((2, 4, 6, 9), (4, 5, 3, 3), True, 5, 1, 2, 1, 0),
        # 69's: stride 1, every tap reaches every column
        "stride1": ((2, 4, 6, 9), (4, 3, 3, 5), False, 1, 0, 1, 1, 0),
        # phases with two taps (stride 2 over 5 taps), output padding, groups
        "groups": ((2, 4, 5, 7), (4, 3, 2, 5), True, (2, 2), (1, 2), (1, 1), 2, (1, 1)),
        "3d": ((2, 6, 3, 4, 5), (6, 2, 3, 2, 3), True, (2, 1, 3), (1, 0, 1), (1, 2, 2), 3, 0),
        "1d": ((2, 3, 20), (3, 5, 4), True, 3, 2, 2, 1, 1),
        # 40 channels: three channel tiles; 141 columns: several column tiles
        "tiles": ((1, 2, 3, 70), (2, 40, 2, 3), True, 2, 0, 1, 1, 1),
    }
    res = {}
    for name, (xs, wsh, has_b, st, p, d, g, op) in cases.items():
        x, w = torch.randn(*xs), torch.randn(*wsh)
        b = torch.randn(wsh[1] * g) if has_b else None
        want = fns[len(xs) - 2](x, w, b, st, p, op, g, d)
        launched.clear()
        got = conv_nd(x, w, b, st, p, d, g, True, op, out_rows=True)
        res[name] = {"shape": got.shape == want.shape, "launched": sorted(set(launched)),
                     "err": float((got - want).abs().max())}
    # fp16: fp32 accumulation, rounded once
    x, w = torch.randn(2, 4, 6, 9), torch.randn(4, 5, 3, 3)
    launched.clear()
    got = conv_nd(x.half(), w.half(), None, 5, 1, 2, 1, True, 0, out_rows=True)
    want = F.conv_transpose2d(x.half().float(), w.half().float(), None, 5, 1, 0, 1, 2).half()
    res["fp16"] = {"err": float((got.float() - want.float()).abs().max()),
                   "dtype": str(got.dtype), "launched": sorted(set(launched))}
    # a reduction past MAX_FMA_K (64 channels x 9 taps): the phase kernels instead
    ns["MAX_FMA_K"] = 16
    launched.clear()
    x, w = torch.randn(1, 4, 5, 6), torch.randn(4, 3, 3, 3)
    got = conv_nd(x, w, None, 2, 1, 1, 1, True, 0, out_rows=True)
    want = F.conv_transpose2d(x, w, None, 2, 1)
    res["long"] = {"err": float((got - want).abs().max()), "launched": sorted(set(launched))}
    print(json.dumps(res))
''')


def test_rows_kernel_matches_torch_in_the_interpreter():
    done = subprocess.run([sys.executable, "-c", _CHECK], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    res = json.loads(done.stdout.strip().splitlines()[-1])
    for name in ("81", "stride1", "groups", "3d", "1d", "tiles"):
        case = res[name]
        assert case["shape"] and case["err"] < 1e-4, (name, case)
        # the one kernel did all of it
        assert case["launched"] == ["conv_rows_fma_kernel"], (name, case)
    assert res["fp16"]["launched"] == ["conv_rows_fma_kernel"]
    assert res["fp16"]["dtype"] == "torch.float16" and res["fp16"]["err"] < 2e-2
    assert res["long"]["err"] < 1e-4 and "conv_rows_fma_kernel" not in res["long"]["launched"]


@pytest.mark.parametrize(("c", "transposed", "stride", "kernel", "rows"), [
    (32, True, 5, 3, 1),     # KernelBench 81's shape: 288 taps, 3 taps for 5 phases
    (8, True, 4, 3, 1),      # 8 channels, stride 4 over 3 taps: a phase with no tap
    (8, True, 2, 5, 0),      # 200 taps, every phase reached: tunable, off
    (32, True, 2, 3, 0),     # 79's: the GEMM by default, so off
    (32, True, 2, 5, None),  # 800 taps: past MAX_FMA_K
    (8, False, 1, 5, None),  # standard: never
], ids=["81", "8ch-stride4", "8ch", "79", "long", "standard"])
def test_out_rows_is_the_default_where_the_phases_fma_launch_was(
        tmp_path, c, transposed, stride, kernel, rows):
    """On an H200 the rows kernel ran KernelBench 81 in 1.21 ms against the phases' FMA
    launch's 1.96 and 75 in 1.03 against 1.33; with every phase reached (64, 71, 74) and on 79
    the tensor-core GEMM stayed 1.7-9x faster (conv_out_rows.md)."""
    plan = analyze(_problem(tmp_path, f"rows{c}_{transposed}_{stride}_{kernel}",
                            _conv(c, "float32", transposed, stride, kernel)))
    params = plan.default_params()
    assert params.get("OUT_ROWS") == rows
    assert ("OUT_ROWS" in plan.space) == (rows is not None)
    source = plan.render(params)
    assert ("out_rows=OUT_ROWS" in source) == (rows is not None)
    if rows:  # 16 groups of the stride's next power of two columns x 32 channels
        block_m = 128 if stride == 5 else 64
        assert (params["BLOCK_M"], params["BLOCK_N"], params["num_warps"]) == (
            block_m, 32, block_m // 32)
        assert params["FMA"] == 1 and plan.feasible(params) is None


def test_empty_phases():
    # 81: stride 5, padding 1, dilation 2, 3 taps reach phases 0, 2 and 4 of 5 (r + 1 - 2t)
    assert empty_phases([3, 3], [5, 5], [1, 1], [2, 2])
    # stride 2 over 3 taps, dilation 1: both phases reached
    assert not empty_phases([3], [2], [1], [1])
    # stride 2, dilation 2: one phase gets every tap, the other none
    assert empty_phases([3], [2], [1], [2])
    assert not empty_phases([3, 5], [1, 1], [0, 0], [1, 1])


@pytest.mark.slow
def test_rows_candidates_are_verified_and_a_phase_offset_bug_is_refused(tmp_path, small_pool):
    """The rendered module through the judge (the interpreter's worker): correct at the traced
    sizes and on the other shapes it checks. The same module with each phase reading one input
    column off is refused, so the verdict sees the rows kernel do the work."""
    problem = _problem(tmp_path, "rows81", _conv(8, "float32", True, 3, 3, padding=1,
                                                 size=(6, 7)))
    plan = analyze(problem)
    params = {**plan.default_params(), "BLOCK_M": 32, "BLOCK_N": 16, "OUT_ROWS": 1}
    source = plan.render(params)
    result = small_pool.evaluate(problem, source)
    assert result.ok, f"{result.status}: {result.message}\n{result.stderr_tail[-2000:]}"
    assert any(c.name == "correct on other shapes" for c in result.checks)
    broken = source.replace("(off_w - j * DIL_W)", "(off_w + 1 - j * DIL_W)")
    assert broken != source
    refused = small_pool.evaluate(problem, broken)
    assert not refused.ok and refused.status == "mismatch", refused.message
