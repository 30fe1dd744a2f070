"""The ncu wrapper: command line, parsing of the raw-page CSV, and the pass's failure reports.

Tests on ``SYNTHETIC`` use a CSV written here in the raw-page layout (header, units row, one row
per launch); tests on ``CAPTURED`` read real output of ``benchmarks/profile_gpu.py`` on the H200
(tests/data/profiles/h200, see NOTES.md) and skip until it is committed.
"""

from __future__ import annotations

import csv
import io
import json
import stat
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from kernelevolve.tools import ncu
from kernelevolve.tools.profile_jobs import ProfileOptions

CAPTURED = Path(__file__).resolve().parents[1] / "data" / "profiles" / "h200"

_ID_COLUMNS = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context",
               "Stream", "Block Size", "Grid Size", "Device", "CC"]
_UNITS = {
    "gpu__time_duration.sum": "ns",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "%",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "%",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "%",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "%",
    "sm__maximum_warps_per_active_cycle_pct": "%",
    "smsp__warps_active.avg.per_cycle_active": "warp",
    "l1tex__t_sector_hit_rate.pct": "%",
    "lts__t_sector_hit_rate.pct": "%",
    "launch__registers_per_thread": "register/thread",
    "launch__shared_mem_per_block_static": "byte",
    "launch__shared_mem_per_block_dynamic": "byte",
    "launch__block_size": "",
    "launch__grid_size": "",
    "launch__occupancy_limit_registers": "block",
    "launch__occupancy_limit_warps": "block",
    "dram__bytes_read.sum": "byte",
    "dram__bytes_write.sum": "byte",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": "inst",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": "inst",
    "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active": "%",
    "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active": "%",
    "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active": "%",
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active": "%",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio": "ratio",
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio": "ratio",
    "smsp__average_warps_issue_stalled_warpgroup_arrive_per_issue_active.ratio": "ratio",
    "smsp__average_warp_latency_issue_stalled_wait.ratio": "ratio",
}


def _row(name: str, duration_ns: float, dram: float, sm: float, regs: int, **extra: float
         ) -> dict[str, str]:
    values = {
        "gpu__time_duration.sum": duration_ns,
        "dram__throughput.avg.pct_of_peak_sustained_elapsed": dram,
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": dram + 1,
        "sm__throughput.avg.pct_of_peak_sustained_elapsed": sm,
        "sm__warps_active.avg.pct_of_peak_sustained_active": 20.0,
        "sm__maximum_warps_per_active_cycle_pct": 25.0,
        "smsp__warps_active.avg.per_cycle_active": 3.2,
        "l1tex__t_sector_hit_rate.pct": 10.0,
        "lts__t_sector_hit_rate.pct": 50.0,
        "launch__registers_per_thread": regs,
        "launch__shared_mem_per_block_static": 0,
        "launch__shared_mem_per_block_dynamic": 2048,
        "launch__block_size": 128,
        "launch__grid_size": 4096,
        "launch__occupancy_limit_registers": 3,
        "launch__occupancy_limit_warps": 16,
        "dram__bytes_read.sum": 1_000_000,
        "dram__bytes_write.sum": 500_000,
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 1000,
        "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": 10,
        "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active": 12.0,
        "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active": 30.0,
        "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active": 0.0,
        "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active": 0.0,
        "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio": 9.5,
        "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio": 0.5,
        "smsp__average_warps_issue_stalled_warpgroup_arrive_per_issue_active.ratio": 0.1,
        "smsp__average_warp_latency_issue_stalled_wait.ratio": 7.0,
        **extra,
    }
    cells = {"ID": "0", "Process ID": "4242", "Process Name": "python3.12",
             "Host Name": "127.0.0.1", "Kernel Name": name, "Context": "1", "Stream": "7",
             "Block Size": "(128, 1, 1)", "Grid Size": "(4096, 1, 1)", "Device": "0",
             "CC": "9.0"}
    # ncu prints large numbers with thousands separators.
    cells.update({k: f"{v:,}" if isinstance(v, int) else str(v) for k, v in values.items()})
    return cells


def synthetic_csv(rows: list[dict[str, str]]) -> str:
    header = _ID_COLUMNS + list(_UNITS)
    buf = io.StringIO()
    writer = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(header)
    writer.writerow([""] * len(_ID_COLUMNS) + list(_UNITS.values()))
    for i, row in enumerate(rows):
        writer.writerow([str(i) if c == "ID" else row[c] for c in header])
    return ("==PROF== Connected to process 4242 (python3.12)\n==PROF== Profiling \"copy\": 0%"
            "....50%....100% - 30 passes\n" + buf.getvalue()
            + "==PROF== Disconnected from process 4242\n")


SYNTHETIC = synthetic_csv([
    _row("copy_kernel", 400_000, dram=90.0, sm=20.0, regs=32),
    _row("copy_kernel", 600_000, dram=80.0, sm=30.0, regs=32),
    _row("tail_kernel", 1_000, dram=1.0, sm=2.0, regs=128),
])


def _value(report: dict, name: str, kernel: str | None = None) -> float:
    return next(m["value"] for m in report["metrics"]
                if m["name"] == name and m.get("kernel") == kernel)


def test_command_pins_clocks_off_and_profiles_the_marked_range_only():
    cmd = ncu.command("/opt/ncu", ["python", "-m", "driver"], launch_count=7)
    assert cmd[:3] == ["/opt/ncu", "--clock-control", "none"]
    assert cmd[cmd.index("--profile-from-start") + 1] == "off"
    assert cmd[cmd.index("--launch-count") + 1] == "7"
    assert "--csv" in cmd and cmd[cmd.index("--page") + 1] == "raw"
    assert cmd[-3:] == ["python", "-m", "driver"]
    assert "--metrics" not in ncu.command("/opt/ncu", ["x"], 1, extra_metrics=False)


def test_read_csv_skips_tool_lines_and_reads_units_and_separators():
    launches = ncu.read_csv(SYNTHETIC)
    assert [k["name"] for k in launches] == ["copy_kernel", "copy_kernel", "tail_kernel"]
    assert launches[0]["metrics"]["dram__bytes_read.sum"] == (1_000_000.0, "byte")
    assert launches[0]["metrics"]["gpu__time_duration.sum"] == (400_000.0, "ns")
    assert "Block Size" not in launches[0]["metrics"]


def test_parse_csv_weights_rates_by_duration_and_sums_counts():
    report = ncu.parse_csv(SYNTHETIC)
    assert report["unavailable"] is None
    assert _value(report, "ncu_kernels") == 3
    assert _value(report, "ncu_duration") == pytest.approx(1001.0)  # us
    # Duration-weighted: (90 * 400 + 80 * 600 + 1 * 1) / 1001.
    assert _value(report, "ncu_dram_throughput") == pytest.approx(
        (90 * 400 + 80 * 600 + 1) / 1001)
    assert _value(report, "ncu_dram_bytes") == pytest.approx(4.5)  # MB over three launches
    assert _value(report, "ncu_fp_ops") == pytest.approx(3 * 2010 / 1e9)
    # Launch facts come from the longest kernel, not the last or the largest.
    assert _value(report, "ncu_registers_per_thread") == 32
    assert _value(report, "ncu_shared_mem_per_block") == pytest.approx(2.0)  # KB
    assert _value(report, "ncu_pipe_lsu") == pytest.approx(30.0)
    assert _value(report, "ncu_pipe_tensor") == pytest.approx(0.0)


def test_tensor_pipe_busy_cycles_count_though_few_instructions_issue():
    # A warpgroup MMA issues rarely and keeps the tensor pipe busy: the cycles tell.
    row = _row("matmul_kernel", 2_000_000, dram=10.0, sm=45.0, regs=168, **{
        "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active": 3.0,
        "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active": 82.0})
    assert _value(ncu.parse_csv(synthetic_csv([row])), "ncu_pipe_tensor") == pytest.approx(82.0)


def test_stall_reasons_use_one_family_and_unknown_ones_are_noted():
    report = ncu.parse_csv(SYNTHETIC)
    assert _value(report, "ncu_stall_long_scoreboard") == pytest.approx(9.5)
    names = {m["name"] for m in report["metrics"]}
    assert "ncu_stall_wait" not in names  # the other family is not mixed in
    assert any("warpgroup_arrive" in n for n in report["notes"])
    assert ncu.top_stalls(report["metrics"], 1) == [("long_scoreboard", pytest.approx(9.5))]


def test_per_kernel_metrics_when_several_kernels():
    report = ncu.parse_csv(SYNTHETIC)
    assert [k["name"] for k in report["kernels"]] == ["copy_kernel", "tail_kernel"]
    assert report["kernels"][0]["calls"] == 2
    assert _value(report, "ncu_registers_per_thread", kernel="tail_kernel") == 128


def test_output_without_rows_is_unavailable():
    report = ncu.parse_csv("==PROF== Connected\n==WARNING== No kernels were profiled.\n")
    assert report["unavailable"] and report["metrics"] == []
    assert ncu.tool_errors("==ERROR== ERR_NVGPUCTRPERM - no permission\nok") == [
        "ERR_NVGPUCTRPERM - no permission"]


def _ctx(tmp_path: Path) -> SimpleNamespace:
    return SimpleNamespace(device_type="cuda", workdir=tmp_path,
                           driver_args=lambda mode, out, iters=1: [sys.executable, "-c", "0"])


def test_missing_ncu_is_reported_not_raised(tmp_path):
    report = ncu.run(_ctx(tmp_path), ProfileOptions(ncu_path=str(tmp_path / "no-ncu")))
    assert "not found" in report["unavailable"]
    assert ncu.find_ncu(str(tmp_path / "no-ncu")) is None


def _fake_ncu(tmp_path: Path, stdout: str, stderr: str = "", code: int = 0) -> str:
    (tmp_path / "out.txt").write_text(stdout)
    (tmp_path / "err.txt").write_text(stderr)
    exe = tmp_path / "ncu"
    exe.write_text(f"#!/bin/sh\ncat {tmp_path / 'out.txt'}\ncat {tmp_path / 'err.txt'} >&2\n"
                   f"exit {code}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe)


def test_run_parses_what_ncu_prints_and_keeps_the_raw_csv(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    exe = _fake_ncu(tmp_path, SYNTHETIC)
    report = ncu.run(_ctx(work), ProfileOptions(ncu_path=exe, raw_dir=str(tmp_path / "raw")))
    assert report["unavailable"] is None and _value(report, "ncu_kernels") == 3
    assert (tmp_path / "raw" / "ncu.csv").read_text() == SYNTHETIC


def test_counter_permission_error_says_what_to_do(tmp_path):
    exe = _fake_ncu(tmp_path, "==PROF== Connected\n", "==ERROR== ERR_NVGPUCTRPERM - The user "
                    "does not have permission to access NVIDIA GPU Performance Counters\n", 1)
    report = ncu.run(_ctx(tmp_path), ProfileOptions(ncu_path=exe))
    assert "ERR_NVGPUCTRPERM" in report["unavailable"] and "root" in report["unavailable"]


def test_cpu_device_is_unavailable(tmp_path):
    exe = _fake_ncu(tmp_path, SYNTHETIC)
    ctx = _ctx(tmp_path)
    ctx.device_type = "cpu"
    assert "CUDA" in ncu.run(ctx, ProfileOptions(ncu_path=exe))["unavailable"]


@pytest.mark.parametrize("case", ["copy", "matmul_bf16", "tiny_launches", "register_heavy"])
def test_captured_h200_csv_parses(case):
    paths = sorted((CAPTURED / case / "raw").glob("ncu.csv*"))
    if not paths:
        pytest.skip("captured H200 fixtures not committed yet (tests/data/profiles/NOTES.md)")
    report = ncu.parse_csv(paths[0].read_bytes())
    assert report["unavailable"] is None
    names = {m["name"] for m in report["metrics"]}
    for needed in ("ncu_duration", "ncu_dram_throughput", "ncu_sm_throughput",
                   "ncu_achieved_occupancy", "ncu_registers_per_thread", "ncu_l2_hit_rate"):
        assert needed in names, f"{needed} missing from {sorted(names)}"
    expected = json.loads((CAPTURED / case / "report.json").read_text())
    stored = next(r for r in expected if r["instrument"] == "ncu")
    assert _value(report, "ncu_duration") == pytest.approx(
        next(m["value"] for m in stored["metrics"] if m["name"] == "ncu_duration"))
