"""The outputs of a sampled simulation are checked where they hold what the full forward writes.

``Written`` (tools/mtia/written.py) must never trust an element whose value differs from the
full run's (an honest kernel would be refused), and must trust the sampled programs' own
writes (a kernel wrong only in large grids must be caught). Then, through the worker on the
mtia-sim target: an honest kernel passes, and kernels right at the checked sizes but wrong,
or silent, at the problem's own (timed, sampled) sizes are refused.
"""

from __future__ import annotations

from pathlib import Path

import mtia_kernels as K
import pytest
import torch
import triton
import triton.language as tl

from kernelevolve.config import EvalConfig
from kernelevolve.tools.harness.pool import WorkerPool
from kernelevolve.tools.mtia import Written, simulate_forward


@triton.jit
def atomic_sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(out_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0))


def _picked(fn, **kwargs):
    """Run ``fn`` sampled; for each output: the picked elements, the reference's there, how
    many are trusted, whether it was written."""
    written, result = Written(seed=3), []
    simulate_forward(lambda: result.append(fn()), written=written, **kwargs)
    outs = result[0] if isinstance(result[0], tuple) else (result[0],)
    picks = []
    for out in outs:
        idx, trusted, wrote = written.pick(out, 1 << 16)
        coords = torch.unravel_index(torch.from_numpy(idx), out.shape)
        picks.append((idx, out[coords], trusted, wrote))
    return picks, written


def _assert_trusted_values_are_right(fn, want, min_trusted=1):
    picks, _ = _picked(fn)
    for (idx, got, trusted, wrote), ref in zip(picks, want, strict=True):
        assert wrote and trusted >= min_trusted
        coords = torch.unravel_index(torch.from_numpy(idx), ref.shape)
        assert torch.allclose(got.double(), ref[coords].double(), atol=1e-4, rtol=1e-4), (got, ref[coords])


def test_a_sampled_launch_trusts_exactly_the_simulated_programs_writes():
    torch.manual_seed(0)
    x, y = torch.randn(300 * 256 + 5), torch.randn(300 * 256 + 5)
    [(idx, got, trusted, wrote)], _ = _picked(lambda: K.add(x, y, 256))
    assert wrote and trusted == 63 * 256 + 5  # 64 programs sampled, the last a 5-element tail
    assert torch.equal(got, (x + y)[torch.from_numpy(idx)])


def test_later_launches_and_torch_ops_keep_trust_only_where_the_full_run_agrees():
    torch.manual_seed(1)
    x, y = torch.randn(200 * 512 + 7), torch.randn(200 * 512 + 7)
    # The second launch's programs (another grid, another sample) read the first's output:
    # only reads of elements the first launch's simulated programs wrote stay trusted.
    _assert_trusted_values_are_right(lambda: K.add(K.add(x, y, 512), y, 256), [x + 2 * y])
    _assert_trusted_values_are_right(lambda: K.add(x, y, 512).to(torch.float64),
                                     [(x + y).double()])
    _assert_trusted_values_are_right(
        lambda: torch.cat([K.add(x, y, 512), x]), [torch.cat([x + y, x])])

    def copy_into_empty():
        out = torch.empty(x.shape)
        out.copy_(K.add(x, y, 512))
        return out

    _assert_trusted_values_are_right(copy_into_empty, [x + y])
    a, b = torch.randn(300, 192), torch.randn(192, 320)
    _assert_trusted_values_are_right(lambda: K.matmul(a, b, 32, 32, 32), [a @ b])


def test_untouched_and_atomic_outputs_are_not_trusted():
    x = torch.randn(100 * 128)
    [(idx, _, trusted, wrote)], _ = _picked(lambda: (K.add(x, x, 128), torch.empty(64))[1])
    assert idx.size == trusted == 0 and not wrote  # allocated, returned as it was

    def atomic_sum():
        out = torch.zeros(1)
        atomic_sum_kernel[(100,)](x, out, x.numel(), BLOCK=128)
        return out

    [(idx, _, trusted, wrote)], written = _picked(atomic_sum)
    assert idx.size == trusted == 0 and wrote and written.atomics
    [(idx, _, trusted, _)], _ = _picked(lambda: torch.zeros(8))
    assert trusted == 8  # made by torch from nothing untrusted: trusted whole


# -- through the worker ---------------------------------------------------------------------
PROBLEM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """x * sigmoid(x) (SiLU) on rows."""

    def forward(self, x):
        return x * torch.sigmoid(x)


rows = 1024
cols = 64


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
'''

# One program per row: 1024 programs at the problem's own sizes, sampled by the simulator;
# the checks before run full grids of at most 256 rows (eval.cpu_max_elements = 4096).
CANDIDATE = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def silu_rows_kernel(
    # pointers
    x_ptr, out_ptr,
    # sizes
    n_cols,
    # strides
    stride_x, stride_out,
    # meta
    LIMIT: tl.constexpr, BLOCK: tl.constexpr,
):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * stride_x + offs, mask=mask, other=0.0)
    y = x / (1.0 + tl.exp(-x))
    if LIMIT > 0:
        y = tl.where(row < LIMIT, y, x)
    tl.store(out_ptr + row * stride_out + offs, y, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        # SKIP
        silu_rows_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), out.stride(0),
                                        LIMIT=0, BLOCK=triton.next_power_of_2(x.shape[1]))
        return out
'''
# Right for the first 512 rows only: every full-grid check passes, the timed grid does not.
WRONG_BEYOND_512_ROWS = CANDIDATE.replace("LIMIT=0", "LIMIT=512")
# Writes nothing at all when the grid is large.
SILENT_WHEN_LARGE = CANDIDATE.replace("# SKIP", "if x.shape[0] > 512:\n            return out")


@pytest.fixture(scope="module")
def small_mtia_pool():
    with WorkerPool("mtia-sim:2i", EvalConfig(n_input_sets=2, cpu_max_elements=4096),
                    workers=1) as pool:
        yield pool


def test_honest_kernel_passes_the_check_at_its_timed_sizes(small_mtia_pool, tmp_path: Path):
    problem = tmp_path / "silu_rows.py"
    problem.write_text(PROBLEM)
    result = small_mtia_pool.evaluate(problem, CANDIDATE)
    assert result.status == "ok", result.message
    check = next(c for c in result.checks if c.name.startswith("correct at the timed sizes"))
    assert check.detail == "output 0: 4096 of 4096 elements"  # 64 sampled rows of 64
    larger = next(c for c in result.checks if c.name == "correct on larger shapes")
    assert "'rows': 256" in larger.detail  # the full-grid checks never reach row 512


# Refused before the timed run: the check at the real size of `rows` (1024 rows, `cols` shrunk to
# fit eval.cpu_max_elements) runs every program, row 512 on.
@pytest.mark.parametrize(("candidate", "status", "pattern"), [
    (WRONG_BEYOND_512_ROWS, "mismatch", "values outside"),
    (SILENT_WHEN_LARGE, "cheat", "launched no custom kernel"),
], ids=["wrong_beyond_row_512", "silent_when_large"])
def test_kernel_wrong_only_at_the_timed_sizes_is_refused(small_mtia_pool, tmp_path: Path,
                                                         candidate: str, status: str,
                                                         pattern: str):
    problem = tmp_path / "silu_rows.py"
    problem.write_text(PROBLEM)
    result = small_mtia_pool.evaluate(problem, candidate)
    assert result.status == status, result.message
    assert "at its real size" in result.message and "'rows': 1024" in result.message
    assert pattern in result.message
