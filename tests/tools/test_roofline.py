"""Roofline: the arithmetic, the per-device cache, and counting a forward's work on the CPU.
Measuring the ceilings needs a GPU (benchmarks/suites/profile_gpu.py records them on the H200)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from kernelevolve.tools import roofline
from kernelevolve.tools.profiling import ProfileOptions

CAPTURED = Path(__file__).resolve().parents[1] / "data" / "profiles" / "h200"
H200ISH = {"peak_bandwidth": 4000.0, "peak_tflops_bf16": 700.0, "peak_tflops_tf32": 350.0,
           "peak_tflops_fp32": 50.0}


def test_copy_is_on_the_memory_roof():
    # 1 GB moved in 0.3 ms, no FLOPs.
    out = roofline.derive(H200ISH, "float32", flops_g=0.0, bytes_mb=1000.0,
                          kernel_time_us=300.0)
    assert out["achieved_bandwidth"] == pytest.approx(1000e6 / 300e-6 / 1e9)
    assert out["bandwidth_fraction"] == pytest.approx(out["achieved_bandwidth"] / 4000)
    assert out["roofline_fraction"] == out["bandwidth_fraction"]
    assert out["arithmetic_intensity"] == 0.0


def test_matmul_is_above_the_ridge_and_uses_the_bf16_peak():
    n = 8192
    out = roofline.derive(H200ISH, "bfloat16", flops_g=2 * n**3 / 1e9,
                          bytes_mb=3 * n * n * 2 / 1e6, kernel_time_us=2000.0)
    assert out["ridge_point"] == pytest.approx(700e12 / 4000e9)
    assert out["arithmetic_intensity"] > out["ridge_point"]
    assert out["compute_fraction"] == pytest.approx(2 * n**3 / 2e-3 / 1e12 / 700)
    assert out["roofline_fraction"] == out["compute_fraction"]


def test_fp32_faster_than_plain_fp32_is_judged_against_tf32():
    peak, label = roofline.peak_tflops(H200ISH, "float32", achieved_tflops=120.0)
    assert peak == 350.0 and "TF32" in label
    assert roofline.peak_tflops(H200ISH, "float32", 10.0)[0] == 50.0
    assert roofline.peak_tflops(H200ISH, "float8_e4m3fn")[0] == 700.0


def test_no_time_gives_intensity_only():
    # 1 GFLOP over 1 MB.
    assert roofline.derive(H200ISH, "float32", 1.0, 1.0, 0.0) == {"arithmetic_intensity": 1000.0}


def test_cache_round_trip_per_device(tmp_path):
    path = tmp_path / "sub" / "ceilings.json"
    a = {"device": "NVIDIA H200", "peak_bandwidth": 4100.0, "measured_at": "now"}
    b = {"device": "NVIDIA A100", "peak_bandwidth": 1800.0, "measured_at": "then"}
    roofline.store_ceilings(path, a)
    roofline.store_ceilings(path, b)
    assert roofline.load_ceilings(path, "NVIDIA H200") == a
    assert roofline.load_ceilings(path, "NVIDIA A100") == b
    assert roofline.load_ceilings(path, "NVIDIA B200") is None
    assert not list(path.parent.glob("*.tmp"))


def test_cache_of_another_version_or_garbage_is_ignored(tmp_path):
    path = tmp_path / "ceilings.json"
    path.write_text(json.dumps({"version": 0, "devices": {"X": {"device": "X"}}}))
    assert roofline.load_ceilings(path, "X") is None
    path.write_text("not json")
    assert roofline.load_ceilings(path, "X") is None
    roofline.store_ceilings(path, {"device": "X", "measured_at": "now"})
    assert roofline.load_ceilings(path, "X") == {"device": "X", "measured_at": "now"}


class _MatmulRef(torch.nn.Module):
    def forward(self, a, b):
        return torch.relu(a @ b)


def test_count_work_counts_matrix_products_and_io_bytes():
    a, b = torch.randn(16, 32, dtype=torch.bfloat16), torch.randn(32, 8, dtype=torch.bfloat16)
    out = torch.empty(16, 8, dtype=torch.bfloat16)
    work = roofline.count_work(_MatmulRef(), torch.nn.Linear(2, 2), [a, b], out)
    assert work["flops"] == 2 * 16 * 32 * 8  # relu is not counted
    assert work["bytes"] == (16 * 32 + 32 * 8 + 16 * 8) * 2 + (2 * 2 + 2) * 4
    assert work["dtype"] == "bfloat16"


def test_pass_on_cpu_counts_work_but_measures_no_ceilings(tmp_path):
    x = torch.randn(4, 4)
    ctx = SimpleNamespace(reference=_MatmulRef(), model=torch.nn.Identity(),
                          inputs=[x, x], forward=lambda: x @ x, forward_ms=0.5,
                          device_type="cpu")
    report = roofline.run(ctx, ProfileOptions(ceilings_path=str(tmp_path / "c.json")))
    assert "CUDA" in report["unavailable"]
    names = {m["name"]: m["value"] for m in report["metrics"]}
    assert names["reference_flops"] == pytest.approx(2 * 4**3 / 1e9)
    assert names["forward_time"] == pytest.approx(500.0)
    assert report["facts"]["dtype"] == "float32"
    assert not (tmp_path / "c.json").exists()


def test_captured_h200_ceilings_are_plausible():
    path = CAPTURED / "ceilings.json"
    entry = roofline.load_ceilings(path, "NVIDIA H200")  # the cache format reads back
    assert entry is not None
    assert 2000 < entry["peak_bandwidth"] < 4800  # GB/s; HBM3e is 4.8 TB/s on paper
    assert 300 < entry["peak_tflops_bf16"] < 990  # dense bf16 is 989 TFLOPS on paper
    assert entry["peak_tflops_fp32"] < entry["peak_tflops_tf32"] < entry["peak_tflops_bf16"]
    assert entry["peak_tflops_fp32"] < 67  # fp32 CUDA cores: 67 TFLOPS on paper
    assert 2 < entry["launch_overhead"] < 50  # us per Triton launch, timed on the host
    assert entry["sm_count"] == 132
    summary = json.loads((CAPTURED / "summary.json").read_text())
    assert summary["ceilings"] == {k: entry[k] for k in summary["ceilings"]}
