"""Calibration against the published anchors: DPE peak, DRAM roofline, launch cost."""

from __future__ import annotations

import mtia_kernels as K
import pytest
import torch

from kernelevolve.tools.mtia import GENERATIONS, simulate_forward


def _metrics(report):
    return {m["name"]: m["value"] for m in report.metrics}


def test_well_tiled_2048_fp16_gemm_reaches_90_percent_of_dpe_peak():
    torch.manual_seed(0)
    a = torch.randn(2048, 2048, dtype=torch.float16)
    b = torch.randn(2048, 2048, dtype=torch.float16)
    # 4 of the 128 tile programs run in the interpreter; every tile is full, so they are exact.
    report = simulate_forward(lambda: K.matmul(a, b, 256, 128, 64), "2i", max_programs_per_launch=4)
    peak = _metrics(report)["mtia_sim_dpe_peak_fraction"]
    achieved = 2 * 2048**3 / report.time_s / GENERATIONS["2i"].dpe_chip_flops.value
    assert achieved >= 0.90
    assert peak == pytest.approx(achieved, rel=1e-6)
    assert report.limiting_resource == "pe:dpe"
    assert report.launches[0].programs == 128 and report.launches[0].programs_simulated == 4


def test_large_elementwise_kernel_lands_at_the_dram_roofline():
    n = 24 * 2**20  # x, y, out: 288 MiB, more than the 256 MiB on-chip SRAM of 2i
    x = torch.empty(n).uniform_()
    y = torch.empty(n).uniform_()
    report = simulate_forward(lambda: K.add(x, y, 4096), "2i")
    roofline = 3 * n * 4 / GENERATIONS["2i"].dram_bw_effective
    assert report.time_s == pytest.approx(roofline, rel=0.10)
    assert report.limiting_resource == "dram"
    assert _metrics(report)["mtia_sim_cache_hit_rate"] < 0.05


def test_an_empty_kernel_costs_about_the_launch():
    out = torch.zeros(8)
    report = simulate_forward(lambda: K.empty_kernel[(1,)](out))
    assert 0.9e-6 <= report.time_s <= 1.3e-6
    assert report.limiting_resource == "launch"
    assert out[0].item() == 1.0
