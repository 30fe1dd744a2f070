"""The model ranks kernels and generations the way the hardware would."""

from __future__ import annotations

import mtia_kernels as K
import pytest
import torch

from kernelevolve.tools.mtia import MtiaIllegalKernel, simulate_forward


def test_tiled_matmul_beats_naive_matmul():
    torch.manual_seed(0)
    a, b = torch.randn(32, 32), torch.randn(32, 32)
    naive = simulate_forward(lambda: K.naive_matmul(a, b), max_programs_per_launch=16)
    tiled = simulate_forward(lambda: K.matmul(a, b, 32, 32, 32))
    assert tiled.time_s * 10 < naive.time_s
    assert naive.launches[0].dpe_flops == 0 and tiled.launches[0].flops == 2 * 32**3


def test_tile_choice_trades_reuse_against_occupancy():
    a = torch.randn(1024, 1024, dtype=torch.float16)
    b = torch.randn(1024, 1024, dtype=torch.float16)
    times, active = {}, {}
    for bm, bn in ((64, 64), (128, 128), (256, 128)):
        rep = simulate_forward(lambda bm=bm, bn=bn: K.matmul(a, b, bm, bn, 64), max_programs_per_launch=2)
        times[(bm, bn)], active[(bm, bn)] = rep.time_s, rep.launches[0].active_pes
    # 64x64 tiles re-read the operands too often; 256x128 leaves half of the 64 PEs idle.
    assert times[(128, 128)] < times[(64, 64)]
    assert times[(128, 128)] < times[(256, 128)] and active[(256, 128)] == 32
    with pytest.raises(MtiaIllegalKernel, match="local memory"):
        simulate_forward(lambda: K.matmul(a, b, 256, 256, 64), max_programs_per_launch=1)


def test_the_best_tiling_differs_between_generations():
    # v1 has 128 KB of local memory: the tile 2i prefers does not fit there.
    a = torch.randn(1024, 1024, dtype=torch.float16)
    b = torch.randn(1024, 1024, dtype=torch.float16)
    big = lambda: K.matmul(a, b, 128, 128, 128)
    small = lambda: K.matmul(a, b, 64, 64, 64)
    assert simulate_forward(big, "2i", max_programs_per_launch=1).time_s < \
        simulate_forward(small, "2i", max_programs_per_launch=1).time_s
    with pytest.raises(MtiaIllegalKernel, match="128 KB local memory"):
        simulate_forward(big, "v1", max_programs_per_launch=1)
    assert simulate_forward(small, "v1", max_programs_per_launch=1).time_s > 0


@pytest.mark.parametrize("n", [1 << 20, 24 * 2**20], ids=["in-cache", "beyond-cache"])
def test_generations_order_for_a_memory_bound_kernel(n):
    x, y = torch.empty(n).uniform_(), torch.empty(n).uniform_()
    t = {g: simulate_forward(lambda: K.add(x, y, 4096), g).time_s for g in ("v1", "2i", "300")}
    assert t["v1"] > t["2i"] > t["300"]


def test_upcast_16_bit_tiles_cost_the_16_bit_dpe_rate():
    # Candidates upcast bf16 tiles because the interpreter multiplies bf16 as raw integers.
    a = torch.randn(256, 256, dtype=torch.float16)
    direct = simulate_forward(lambda: K.matmul(a, a, 64, 64, 64), max_programs_per_launch=4)
    upcast = simulate_forward(lambda: K.matmul(a, a, 64, 64, 64, upcast=True), max_programs_per_launch=4)
    fp32 = simulate_forward(lambda: K.matmul(a.float(), a.float(), 64, 64, 64), max_programs_per_launch=4)
    assert upcast.launches[0].unit_busy_s["dpe"] == pytest.approx(direct.launches[0].unit_busy_s["dpe"])
    assert fp32.launches[-1].unit_busy_s["dpe"] == pytest.approx(4 * direct.launches[0].unit_busy_s["dpe"])
    assert any("upcast 16-bit" in w for w in upcast.warnings)
