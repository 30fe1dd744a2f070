"""Kernels MTIA could not run are rejected with a reason; legal but slow ones get warnings."""

from __future__ import annotations

import mtia_kernels as K
import numpy as np
import pytest
import torch
import triton.language as tl

from kernelevolve.tools.mtia import GENERATIONS, MtiaIllegalKernel, simulate_forward
from kernelevolve.tools.mtia.counters import LaunchRecorder


def test_misaligned_block_access_is_rejected():
    x, out = torch.randn(4096), torch.empty(4096)
    with pytest.raises(MtiaIllegalKernel) as err:
        simulate_forward(lambda: K.copy_offset_kernel[(4,)](x, out, 4000, SHIFT=1, BLOCK=1024))
    assert len(err.value.reasons) == 1
    assert "4 B past a 32 B boundary" in err.value.reasons[0]


def test_masked_tails_and_aligned_rows_are_legal():
    x = torch.randn(1000)  # last block is masked at 1000 of 1024
    simulate_forward(lambda: K.add(x, x, 1024))
    rows = torch.randn(3, 1000)  # row stride 4000 B, a multiple of 32 B
    simulate_forward(lambda: K.softmax(rows))


def test_misaligned_row_stride_is_rejected():
    rows = torch.randn(3, 1001)  # row stride 4004 B: rows 1 and 2 start off a 32 B boundary
    with pytest.raises(MtiaIllegalKernel, match="softmax_kernel: load"):
        simulate_forward(lambda: K.softmax(rows))


def test_tile_footprint_beyond_local_memory_is_rejected():
    x, out = torch.randn(1 << 17), torch.empty(1 << 17)  # one 512 KB fp32 tile, plus its products
    with pytest.raises(MtiaIllegalKernel, match="exceeds the 384 KB local memory"):
        simulate_forward(lambda: K.big_tile_kernel[(1,)](x, out, BLOCK=1 << 17))
    small = torch.randn(1 << 13)
    report = simulate_forward(lambda: K.big_tile_kernel[(1,)](small, torch.empty(1 << 13), BLOCK=1 << 13))
    assert 64 * 1024 <= report.launches[0].tile_footprint_bytes <= 384 * 1024


def test_scatter_store_is_rejected_unless_allowed():
    x, out = torch.randn(1024), torch.zeros(1024)
    idx = torch.randperm(1024).to(torch.int32)
    with pytest.raises(MtiaIllegalKernel, match="scatter store"):
        simulate_forward(lambda: K.scatter_kernel[(1,)](x, idx, out, 1024, BLOCK=1024))
    report = simulate_forward(lambda: K.scatter_kernel[(1,)](x, idx, out, 1024, BLOCK=1024), allow_scatter=True)
    assert report.launches[0].bytes_gathered > 0


def test_gather_load_is_legal_but_costly():
    x, out = torch.randn(1 << 16), torch.empty(1 << 16)
    idx = torch.randperm(1 << 16).to(torch.int32)
    ident = torch.arange(1 << 16, dtype=torch.int32)
    gathered = simulate_forward(lambda: K.gather_kernel[(64,)](x, idx, out, 1 << 16, BLOCK=1024))
    assert torch.equal(out, x[idx.long()])
    contiguous = simulate_forward(lambda: K.add(x, x, 1024))
    assert any("gather loads" in w for w in gathered.warnings)
    assert gathered.time_s > 2 * contiguous.time_s
    # Offsets from memory are a gather even when they happen to be contiguous: no descriptor.
    assert simulate_forward(lambda: K.gather_kernel[(64,)](x, ident, out, 1 << 16, BLOCK=1024)).time_s > 0


def test_fp16_transcendental_is_rejected():
    # Triton's front end already refuses tl.exp on fp16 (the candidate fails on every target);
    # the simulator also checks at the builder, for any path that reaches it.
    launch = LaunchRecorder("k", [], GENERATIONS["2i"], 64, False)
    program = launch.begin_program((0, 0, 0), (1, 1, 1))
    from triton.runtime.interpreter import TensorHandle

    half = TensorHandle(np.ones(64, dtype=np.float16), tl.float16)
    program.on_elementwise("sfu", "exp", (half,), TensorHandle(np.exp(half.data), tl.float16))
    record = launch.finish((1, 1, 1))
    assert any("exp on fp16" in reason for reason in record.illegal)
    x = torch.randn(1024, dtype=torch.float16)
    ok = simulate_forward(lambda: K.exp_kernel[(1,)](x, torch.empty_like(x), 1024, BLOCK=1024))
    assert ok.launches[0].unit_busy_s["se"] > 0
