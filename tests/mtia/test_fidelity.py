"""Simulator fidelity: a kernel that moves the minimum traffic reaches the bound the model states,
and the eager baseline of a fused op sits on that bound (issue #20: row softmax)."""

from __future__ import annotations

import mtia_kernels as K
import pytest
import torch

from kernelevolve.tools.mtia import GENERATIONS, simulate_forward, simulate_reference

CHAIN = ("dma", "dpe", "se", "mlu", "re")


class Softmax(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)


def _bound(report) -> float:
    """The model's own bound for a launch: launch cost plus the largest of its SRAM time, its
    DRAM time and the busiest unit of an average PE."""
    launch = report.launches[0]
    busiest = max(launch.unit_busy_s.values()) / launch.active_pes
    return launch.launch_s + max(launch.sram_time_s, launch.dram_time_s, busiest)


def test_one_program_per_row_softmax_reaches_the_bound_the_eager_softmax_sits_on():
    # 512 rows of 4096 fp32, 8 programs per PE: the programs a PE runs back to back overlap
    # their DMA and compute as loop iterations do, so the textbook kernel (read once, write
    # once) costs what a persistent kernel with the same per-PE work costs.
    torch.manual_seed(0)
    x = torch.randn(512, 4096)
    grid = simulate_forward(lambda: K.softmax(x))
    persistent = simulate_forward(lambda: K.persistent_softmax(x))
    eager = simulate_reference(Softmax(), [x])
    launch = grid.launches[0]
    assert launch.sram_bytes == 2 * x.numel() * 4  # read once, write once
    assert launch.dram_read_bytes == launch.dram_write_bytes == 0  # steady state: it all fits
    assert _bound(grid) / grid.time_s >= 0.9  # before the fix: 0.56 (pe:se)
    assert eager.time_s / grid.time_s >= 0.9
    assert grid.time_s == pytest.approx(persistent.time_s, rel=0.05)
    assert eager.time_s == pytest.approx(_bound(eager), rel=1e-9)  # eager sits on the bound


def test_a_lone_one_shot_program_still_serialises_its_dma_and_compute():
    # One program per PE: nothing to overlap with, so DMA, SIMD and reduction run in series; the
    # RISC-V issue and the local-memory traffic run alongside them and add nothing.
    x = torch.randn(64, 8192)
    launch = simulate_forward(lambda: K.softmax(x)).launches[0]
    chain = sum(launch.unit_busy_s[u] for u in CHAIN) / launch.active_pes
    gen = GENERATIONS["2i"]
    dispatch = gen.program_dispatch_cycles.value / gen.clock
    assert launch.pe_time_s == pytest.approx(chain + dispatch, rel=1e-6)
    assert launch.pe_time_s > 1.5 * max(launch.unit_busy_s.values()) / launch.active_pes


def test_the_second_pass_over_a_row_hits_the_sram_beyond_the_cache():
    # Rows of 512 KiB, too wide for a tile: an online pass, then the output pass reads the row
    # again. x and out (256 MiB) overflow v1's 128 MiB SRAM, but the row was read moments
    # before (64 rows in flight: 32 MiB), so DRAM sees x once and out once.
    torch.manual_seed(0)
    x = torch.randn(256, 131072)
    nbytes = x.numel() * 4
    report = simulate_forward(lambda: K.online_softmax(x), "v1", max_programs_per_launch=4)
    launch = report.launches[0]
    assert launch.sram_bytes == 3 * nbytes
    assert launch.dram_read_bytes + launch.dram_write_bytes == pytest.approx(2 * nbytes, rel=0.01)
    assert report.limiting_resource == "dram"
    eager = simulate_reference(Softmax(), [x], "v1")
    assert eager.time_s / report.time_s >= 0.95  # before the fix: 0.80 (a quarter more DRAM)
