"""The PyTorch Profiler wrapper: a real capture on the CPU (host side only), and parsing of
GPU traces.

``gpu_trace`` builds a trace in the layout kineto writes on CUDA (``user_annotation`` ranges,
``cuda_runtime``/``cuda_driver`` launch calls and ``kernel`` events joined by ``correlation``);
``CAPTURED`` tests read real traces of ``benchmarks/profile_gpu.py`` on the H200 and skip until
they are committed.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from kernelevolve.tools import torch_profiler
from kernelevolve.tools.profile_jobs import ProfileOptions

CAPTURED = Path(__file__).resolve().parents[1] / "data" / "profiles" / "h200"


def gpu_trace(forwards: int, launches: int, kernel_us: float, launch_us: float,
              sync_in_forward: bool = False) -> dict:
    """Forwards of ``launches`` kernels each, the host issuing one launch every ``launch_us``."""
    events: list[dict] = []
    corr = 0
    t = 1000.0
    for f in range(forwards):
        start = t
        gpu_free = t
        for _ in range(launches):
            corr += 1
            events.append({"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernelEx",
                           "ts": t, "dur": launch_us * 0.8, "args": {"correlation": corr}})
            k_start = max(t + 3.0, gpu_free)
            events.append({"ph": "X", "cat": "kernel", "name": "step_kernel", "ts": k_start,
                           "dur": kernel_us, "pid": 0, "tid": 7,
                           "args": {"correlation": corr, "grid": [1, 1, 1],
                                    "block": [128, 1, 1], "registers per thread": 16,
                                    "shared memory": 0, "est. achieved occupancy %": 3}})
            gpu_free = k_start + kernel_us
            t += launch_us
        if sync_in_forward:
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize",
                           "ts": t, "dur": 1.0, "args": {"correlation": 10_000 + f}})
            t += 1.0
        events.append({"ph": "X", "cat": "user_annotation", "name": f"kernelevolve.forward#{f}",
                       "ts": start, "dur": t - start})
        # The synchronization between forwards is not part of any forward.
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize",
                       "ts": t + 1, "dur": max(gpu_free - t, 1.0)})
        t = max(t, gpu_free) + 50.0
    return {"schemaVersion": 1, "traceEvents": events}


def _value(report: dict, name: str) -> float:
    return next(m["value"] for m in report["metrics"] if m["name"] == name)


def test_launch_bound_trace_shows_an_idle_device():
    report = torch_profiler.parse_trace(gpu_trace(3, 200, kernel_us=2.0, launch_us=10.0))
    assert _value(report, "tp_kernels") == 200
    assert _value(report, "tp_kernel_time") == pytest.approx(400.0)
    assert _value(report, "tp_gpu_busy") < 0.25
    assert _value(report, "tp_idle_gaps") == pytest.approx(199 * 8.0)
    assert _value(report, "tp_launch_api_time") == pytest.approx(8.0)
    assert _value(report, "tp_syncs") == 0  # the sync between forwards is left out
    assert report["kernels"][0]["calls"] == 200
    assert _value(report, "tp_registers_per_thread") == 16


def test_long_kernel_keeps_the_device_busy():
    report = torch_profiler.parse_trace(gpu_trace(2, 1, kernel_us=5000.0, launch_us=10.0))
    assert _value(report, "tp_kernels") == 1
    assert _value(report, "tp_gpu_busy") > 0.99
    assert _value(report, "tp_first_kernel_delay") == pytest.approx(3.0)


def test_synchronizations_inside_the_forward_are_counted():
    report = torch_profiler.parse_trace(gpu_trace(2, 4, 2.0, 10.0, sync_in_forward=True))
    assert _value(report, "tp_syncs") == 1


def test_kernels_launched_outside_the_forwards_are_left_out():
    trace = gpu_trace(1, 2, 2.0, 10.0)
    trace["traceEvents"] += [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 1.0, "dur": 1.0,
         "args": {"correlation": 999}},
        {"ph": "X", "cat": "kernel", "name": "randn_kernel", "ts": 5.0, "dur": 100.0,
         "args": {"correlation": 999}},
    ]
    report = torch_profiler.parse_trace(trace)
    assert _value(report, "tp_kernels") == 2
    assert [k["name"] for k in report["kernels"]] == ["step_kernel"]


def test_host_only_trace_reports_no_device_figures():
    trace = {"traceEvents": [
        {"ph": "X", "cat": "user_annotation", "name": "kernelevolve.forward#0", "ts": 0,
         "dur": 50},
        {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "ts": 1, "dur": 2},
    ]}
    report = torch_profiler.parse_trace(trace)
    assert {m["name"] for m in report["metrics"]} == {"tp_syncs"}
    assert any("no device activity" in n for n in report["notes"])


def test_capture_on_cpu_writes_a_trace_the_parser_reads(tmp_path):
    model = torch.nn.Linear(8, 8)
    x = torch.randn(4, 8)
    ctx = SimpleNamespace(device_type="cpu", workdir=tmp_path,
                          forward=lambda: model(x))
    report = torch_profiler.run(ctx, ProfileOptions(torch_iters=2, raw_dir=str(tmp_path / "raw")))
    assert report["unavailable"] is None
    trace = torch_profiler.load_trace(tmp_path / "raw" / "torch_trace.json")
    marks = [e for e in trace["traceEvents"] if e.get("cat") == "user_annotation"]
    assert [e["name"] for e in marks] == ["kernelevolve.forward#0", "kernelevolve.forward#1"]
    rows = json.loads((tmp_path / "raw" / "torch_key_averages.json").read_text())
    assert any(r["name"] == "aten::linear" for r in rows)


def test_gzipped_trace_loads(tmp_path):
    path = tmp_path / "t.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(gpu_trace(1, 1, 1.0, 1.0), f)
    assert torch_profiler.load_trace(path)["traceEvents"]


@pytest.mark.parametrize("case", ["copy", "matmul_bf16", "tiny_launches", "register_heavy"])
def test_captured_h200_trace_parses(case):
    paths = sorted((CAPTURED / case / "raw").glob("torch_trace.json*"))
    if not paths:
        pytest.skip("captured H200 fixtures not committed yet (tests/data/profiles/NOTES.md)")
    report = torch_profiler.parse_trace(torch_profiler.load_trace(paths[0]))
    launches = {"copy": 1, "matmul_bf16": 1, "tiny_launches": 200, "register_heavy": 1}[case]
    assert _value(report, "tp_kernels") == launches
    busy = _value(report, "tp_gpu_busy")
    assert busy < 0.5 if case == "tiny_launches" else busy > 0.5
