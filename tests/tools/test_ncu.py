"""The ncu wrapper: command line, parsing of the raw-page CSV, and the pass's failure reports.

Tests on ``CAPTURED`` read real output of ``benchmarks/suites/profile_gpu.py`` on the H200 (ncu
2025.3.1, sm_90; tests/data/profiles/h200, see NOTES.md) and are required. ``SYNTHETIC`` is a CSV
written here in the same raw-page layout (header, units row, one row per launch) for the branches
the captured runs do not reach: several kernels in one forward, the second stall-metric family.
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
from kernelevolve.tools.profiling import ProfileOptions

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
    # The real output opens with ==WARNING== and ==PROF== lines, has an "ID" column first, a
    # units row, and thousands separators in the values.
    text = (CAPTURED / "copy" / "raw" / "ncu.csv").read_text()
    assert text.startswith("==WARNING==")
    (launch,) = ncu.read_csv(text)
    assert launch["name"] == "copy_kernel"
    assert launch["grid"] == [32768, 1, 1] and launch["block"] == [256, 1, 1]
    assert launch["metrics"]["dram__bytes_read.sum"] == (536_881_408.0, "byte")
    assert launch["metrics"]["gpu__time_duration.sum"] == (259_360.0, "ns")
    assert launch["metrics"]["launch__shared_mem_per_block_dynamic"] == (0.0, "byte/block")
    assert "Block Size" not in launch["metrics"] and "ID" not in launch["metrics"]
    assert [k["name"] for k in ncu.read_csv(SYNTHETIC)] == ["copy_kernel", "copy_kernel",
                                                           "tail_kernel"]


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


CASES = ("copy", "matmul_bf16", "tiny_launches", "register_heavy")


def _captured(case: str) -> dict:
    (path,) = sorted((CAPTURED / case / "raw").glob("ncu.csv*"))
    return ncu.parse_csv(path.read_bytes())


@pytest.mark.parametrize("case", CASES)
def test_captured_h200_csv_parses(case):
    report = _captured(case)
    assert report["unavailable"] is None
    names = {m["name"] for m in report["metrics"]}
    for needed in ("ncu_duration", "ncu_dram_throughput", "ncu_memory_throughput",
                   "ncu_sm_throughput", "ncu_achieved_occupancy", "ncu_theoretical_occupancy",
                   "ncu_warps_active", "ncu_issue_active", "ncu_registers_per_thread",
                   "ncu_l1_hit_rate", "ncu_l2_hit_rate", "ncu_dram_bytes", "ncu_fp_ops",
                   "ncu_inst_executed", "ncu_occupancy_limit_registers", "ncu_pipe_tensor",
                   "ncu_pipe_fma", "ncu_pipe_fp16", "ncu_pipe_lsu", "ncu_stall_long_scoreboard"):
        assert needed in names, f"{needed} missing from {sorted(names)}"
    # Every stall reason ncu emits on sm_90 is in the metric schema.
    assert report["notes"] == []
    assert 0 < _value(report, "ncu_issue_active") < 100
    # What the capture-time parser reported is read again, figure for figure.
    expected = json.loads((CAPTURED / case / "report.json").read_text())
    stored = next(r for r in expected if r["instrument"] == "ncu")
    assert stored["metrics"]
    for m in stored["metrics"]:
        assert _value(report, m["name"], m.get("kernel")) == pytest.approx(m["value"]), m["name"]


def test_captured_h200_copy_reads_the_dram_roof():
    report = _captured("copy")
    assert _value(report, "ncu_kernels") == 1
    assert _value(report, "ncu_dram_throughput") == pytest.approx(84.09)
    assert _value(report, "ncu_sm_throughput") == pytest.approx(6.30)
    # 512 MiB read and 512 MiB written, the 1 GiB the copy must move (L2 absorbs ~2%).
    assert _value(report, "ncu_dram_bytes") == pytest.approx(1049.344)
    assert _value(report, "ncu_duration") == pytest.approx(259.36)  # us
    assert _value(report, "ncu_l2_hit_rate") == pytest.approx(50.9)
    assert _value(report, "ncu_registers_per_thread") == 28
    assert _value(report, "ncu_fp_ops") == 0
    assert report["kernels"] == [{"name": "copy_kernel", "calls": 1, "time_us": 259.36,
                                  "registers_per_thread": 28.0, "grid": [32768, 1, 1],
                                  "block": [256, 1, 1]}]


def test_captured_h200_matmul_keeps_the_tensor_pipes_busy():
    report = _captured("matmul_bf16")
    # The warpgroup MMAs: 2.6 % of instructions issued, 82 % of the tensor pipe's cycles.
    assert _value(report, "ncu_pipe_tensor") == pytest.approx(82.09)
    assert _value(report, "ncu_sm_throughput") == pytest.approx(78.97)
    assert _value(report, "ncu_dram_throughput") == pytest.approx(21.02)
    assert _value(report, "ncu_registers_per_thread") == 202
    # 147,456 B of dynamic shared memory (unit "byte/block"), 1 block per SM.
    assert _value(report, "ncu_shared_mem_per_block") == pytest.approx(144.0)
    assert _value(report, "ncu_occupancy_limit_shared_mem") == 1
    assert _value(report, "ncu_theoretical_occupancy") == pytest.approx(12.5)
    assert _value(report, "ncu_issue_active") == pytest.approx(25.0)


def test_captured_h200_tiny_launches_profiles_the_launch_count_only():
    report = _captured("tiny_launches")
    assert _value(report, "ncu_kernels") == ProfileOptions().ncu_launch_count == 10
    assert report["kernels"][0]["calls"] == 10 and report["kernels"][0]["grid"] == [1, 1, 1]
    assert _value(report, "ncu_registers_per_thread") == 18
    assert _value(report, "ncu_dram_throughput") < 1


def test_captured_h200_register_heavy_is_limited_by_registers():
    report = _captured("register_heavy")
    assert _value(report, "ncu_registers_per_thread") == 148
    assert _value(report, "ncu_achieved_occupancy") == pytest.approx(18.08)
    assert _value(report, "ncu_theoretical_occupancy") == pytest.approx(18.75)
    assert _value(report, "ncu_occupancy_limit_registers") == 3
    assert _value(report, "ncu_occupancy_limit_warps") == 16
    assert ncu.top_stalls(report["metrics"], 2) == [
        ("long_scoreboard", pytest.approx(141.66)), ("wait", pytest.approx(2.41))]


@pytest.mark.parametrize("case", CASES)
def test_captured_h200_ncu_accepted_the_sections_and_extra_metrics(case):
    # ncu.log is ncu's stderr: no error, so no retry without EXTRA_METRICS was needed.
    assert ncu.tool_errors((CAPTURED / case / "raw" / "ncu.log").read_text()) == []
    (launch,) = ncu.read_csv((CAPTURED / case / "raw" / "ncu.csv").read_text())[:1]
    missing = [m for m in ncu.EXTRA_METRICS if m not in launch["metrics"]]
    assert missing == []
    listed = (CAPTURED / "ncu_sections.txt").read_text().split()
    assert [s for s in ncu.SECTIONS if s not in listed] == []


def test_captured_h200_missing_ncu_is_reported():
    report = json.loads((CAPTURED / "ncu_missing.json").read_text())
    assert report["unavailable"].startswith("ncu (Nsight Compute CLI) not found")
    assert report["metrics"] == []
