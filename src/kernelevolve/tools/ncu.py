"""Nsight Compute wrapper: runs ``ncu --clock-control none`` on the candidate's kernels only and
parses its CSV into the metric schema: DRAM and SM throughput as % of peak, achieved occupancy,
warps active, L1/L2 hit rates, registers per thread, shared memory per block, instruction mix
(per-pipe utilization), and the top stall reasons.

ncu profiles a separate driver process (``profile_jobs``) that opens the CUDA profiler range
around one forward only, so input generation and warm-up are never measured. ``--clock-control
none`` leaves the GPU at its own clocks, as the timed runs see it (ncu otherwise locks them to
base clocks). Where ncu is missing or cannot read the counters the report says so, and the other
instruments still run.

Worker-side: the standard library only (the driver imports torch).
"""

from __future__ import annotations

import csv
import gzip
import io
import os
import re
import shutil
import signal
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

from kernelevolve.tools.metrics import METRICS, metric

INSTRUMENT = "ncu"
# Sections chosen for the diagnosis; the raw page lists every metric they collect. Each section
# adds replay passes, so the expensive ones (source counters, memory tables) are left out and
# the few figures wanted from them are asked for by name below.
SECTIONS = ("SpeedOfLight", "LaunchStats", "Occupancy", "WarpStateStats",
            "ComputeWorkloadAnalysis")
# Counters the sections do not collect: cache hit rates, DRAM bytes and FP instruction counts
# (for the roofline), executed instructions and warps per scheduler. Kept to names present on
# sm_70 and later.
EXTRA_METRICS = (
    "l1tex__t_sector_hit_rate.pct", "lts__t_sector_hit_rate.pct",
    "dram__bytes_read.sum", "dram__bytes_write.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
    "smsp__inst_executed.sum", "smsp__warps_active.avg.per_cycle_active",
)
_CANDIDATE_PATHS = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu")

# Report metric -> ncu metric names, first present wins.
_PERCENT = {
    "ncu_dram_throughput": ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                            "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
    "ncu_memory_throughput": ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",),
    "ncu_sm_throughput": ("sm__throughput.avg.pct_of_peak_sustained_elapsed",),
    "ncu_achieved_occupancy": ("sm__warps_active.avg.pct_of_peak_sustained_active",),
    "ncu_theoretical_occupancy": ("sm__maximum_warps_per_active_cycle_pct",),
    "ncu_issue_active": ("smsp__issue_active.avg.pct_of_peak_sustained_active",
                         "sm__inst_issued.avg.pct_of_peak_sustained_active"),
    "ncu_l1_hit_rate": ("l1tex__t_sector_hit_rate.pct",),
    "ncu_l2_hit_rate": ("lts__t_sector_hit_rate.pct",),
    "ncu_warps_active": ("smsp__warps_active.avg.per_cycle_active",),
}
# Report metric -> ncu ratios (0..1) reported as %, where no _PERCENT name is present. ncu
# 2025.3 on sm_90 emits neither issue-active % of peak "active" name above; its scheduler
# statistic is the fraction of active cycles in which a scheduler issued.
_RATIO_PERCENT = {
    "ncu_issue_active": ("smsp__issue_active.avg.per_cycle_active",),
}
# Launch facts, reported for the longest kernel.
_LAUNCH = {
    "ncu_registers_per_thread": ("launch__registers_per_thread",),
    "ncu_block_size": ("launch__block_size",),
    "ncu_grid_size": ("launch__grid_size",),
    "ncu_waves_per_sm": ("launch__waves_per_multiprocessor",),
    "ncu_occupancy_limit_registers": ("launch__occupancy_limit_registers",),
    "ncu_occupancy_limit_shared_mem": ("launch__occupancy_limit_shared_mem",),
    "ncu_occupancy_limit_warps": ("launch__occupancy_limit_warps",),
    "ncu_occupancy_limit_blocks": ("launch__occupancy_limit_blocks",),
}
_FP_OPS = {"ffma": 2, "fadd": 1, "fmul": 1, "hfma": 2, "hadd": 1, "hmul": 1,
           "dfma": 2, "dadd": 1, "dmul": 1}
# Pipe utilization: by instructions issued, and by cycles busy. A Hopper warpgroup MMA is one
# instruction keeping the tensor pipe busy for many cycles, so only the cycles show it.
_PIPE_RES = (
    re.compile(r"^sm__inst_executed_pipe_([a-z0-9_]+?)\.avg\.pct_of_peak_sustained_active$"),
    re.compile(r"^sm__pipe_([a-z0-9_]+?)_cycles_active\.avg\.pct_of_peak_sustained_active$"),
)
_PIPE_GROUPS = (  # (report metric, pipe-name prefixes), first match wins
    ("ncu_pipe_tensor", ("tensor", "hmma", "gmma", "imma", "dmma", "tc")),
    ("ncu_pipe_fp16", ("fp16", "fma_type_fp16")),  # sm_90: FP16 runs on the FMA pipe
    ("ncu_pipe_fp64", ("fp64", "dfma")),
    ("ncu_pipe_fma", ("fma",)),
    ("ncu_pipe_alu", ("alu",)),
    ("ncu_pipe_lsu", ("lsu",)),
    ("ncu_pipe_xu", ("xu",)),
    ("ncu_pipe_branch", ("cbu", "adu", "bru")),
    ("ncu_pipe_uniform", ("uniform",)),
)
_STALL_RES = (
    re.compile(r"^smsp__average_warps_issue_stalled_([a-z0-9_]+?)_per_issue_active\.ratio$"),
    re.compile(r"^smsp__average_warp_latency_issue_stalled_([a-z0-9_]+?)\.ratio$"),
)
_TIME_UNITS = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3,
               "msecond": 1e3, "s": 1e6, "second": 1e6}
_BYTE_UNITS = {"byte": 1.0, "b": 1.0, "kbyte": 1e3, "kb": 1e3, "kib": 1024.0, "mbyte": 1e6,
               "mb": 1e6, "mib": 1024.0**2, "gbyte": 1e9, "gb": 1e9, "gib": 1024.0**3}
_NAME_COLUMNS = ("Kernel Name", "Function Name", "Demangled Name", "Name")
_NON_METRIC_COLUMNS = {"ID", "Process ID", "Process Name", "Host Name", "Context", "Stream",
                       "Block Size", "Grid Size", "Device", "CC", *_NAME_COLUMNS}


def find_ncu(explicit: str | None = None) -> str | None:
    """The ncu executable: ``explicit``, else on PATH, else in the usual CUDA locations."""
    if explicit:
        return explicit if Path(explicit).is_file() and os.access(explicit, os.X_OK) else None
    found = shutil.which("ncu")
    if found:
        return found
    return next((p for p in _CANDIDATE_PATHS if os.access(p, os.X_OK)), None)


def command(ncu: str, driver: list[str], launch_count: int, extra_metrics: bool = True
            ) -> list[str]:
    """The ncu command line around a driver command."""
    cmd = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--csv",
           "--page", "raw", "--print-units", "base", "--launch-count", str(launch_count)]
    for section in SECTIONS:
        cmd += ["--section", section]
    if extra_metrics:
        cmd += ["--metrics", ",".join(EXTRA_METRICS)]
    return cmd + driver


def _run(cmd: list[str], cwd: Path, timeout_s: float) -> tuple[int | None, str, str]:
    """Run ``cmd`` in its own session; on timeout kill the whole group (ncu and the driver)."""
    from kernelevolve.tools.profiling import driver_env

    proc = subprocess.Popen(cmd, cwd=cwd, env=driver_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
        return proc.returncode, out, err
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return None, out, err


def tool_errors(text: str) -> list[str]:
    """ncu's own error lines (``==ERROR==``), without the prefix."""
    return [line.split("==ERROR==", 1)[1].strip() for line in text.splitlines()
            if "==ERROR==" in line]


def run(ctx: Any, opts: Any) -> dict[str, Any]:
    """The ncu pass (see ``profile_jobs``)."""
    from kernelevolve.tools.profiling import keep_raw, unavailable

    exe = find_ncu(opts.ncu_path)
    if exe is None:
        where = f"at {opts.ncu_path}" if opts.ncu_path else "on PATH or in /usr/local/cuda/bin"
        return unavailable(INSTRUMENT, f"ncu (Nsight Compute CLI) not found {where}")
    if ctx.device_type != "cuda":
        return unavailable(INSTRUMENT, "ncu needs a CUDA device")
    out_dir = ctx.workdir / "ncu"
    driver = ctx.driver_args("ncu", out_dir)
    timeout = min(opts.ncu_timeout_s, opts.timeout_s)
    notes: list[str] = []
    code, out, err = _run(command(exe, driver, opts.ncu_launch_count), ctx.workdir, timeout)
    if code is not None and not _has_rows(out) and any("metric" in e.lower()
                                                       for e in tool_errors(out + err)):
        notes.append("ncu rejected an extra metric (" + "; ".join(tool_errors(out + err))[:300]
                     + "): profiled with the sections' metrics only")
        code, out, err = _run(command(exe, driver, opts.ncu_launch_count, extra_metrics=False),
                              ctx.workdir, timeout)
    raw = ctx.workdir / "ncu.csv"
    raw.write_text(out)
    log = ctx.workdir / "ncu.log"
    log.write_text(err)
    if code is None:
        return unavailable(INSTRUMENT, f"ncu did not finish within {timeout:.0f} s", notes)
    errors = tool_errors(out + err)
    if not _has_rows(out):
        failed = unavailable(INSTRUMENT, "", notes)
        keep_raw(opts, raw, "ncu.csv", failed)
        keep_raw(opts, log, "ncu.log", failed)
        reason = "; ".join(errors) or f"ncu profiled no kernel (exit code {code})"
        if any("ERR_NVGPUCTRPERM" in e for e in errors):
            reason = ("ncu cannot read the GPU performance counters (ERR_NVGPUCTRPERM): run as "
                      "root or allow profiling (NVreg_RestrictProfilingToAdminUsers=0)")
        driver_status = out_dir / "driver.json"
        if driver_status.exists():
            notes.append("driver: " + driver_status.read_text()[:1500])
        notes.append("ncu stderr: " + err[-1500:])
        failed["unavailable"] = reason
        return failed
    report = parse_csv(out)
    report["notes"] = notes + report["notes"] + [f"ncu: {e}" for e in errors]
    keep_raw(opts, raw, "ncu.csv", report)
    keep_raw(opts, log, "ncu.log", report)
    return report


# -- parsing (stdlib) -------------------------------------------------------------------------

def _has_rows(text: str) -> bool:
    rows = _table(text)
    return rows is not None and len(rows[2]) > 0


def _table(text: str) -> tuple[list[str], list[str], list[list[str]]] | None:
    """Header, units and data rows of ncu's raw-page CSV; tool lines (``==PROF==``) and the
    application's output around it are skipped."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return None
    body = [line for line in lines[start:] if line.startswith('"')]
    rows = list(csv.reader(io.StringIO("\n".join(body))))
    if len(rows) < 2:
        return None
    header, second = rows[0], rows[1]
    # The raw page's second row holds units; it has no ID.
    units = second if not second[0].strip().isdigit() else [""] * len(header)
    data = rows[2:] if units is second else rows[1:]
    return header, units, [r for r in data if len(r) == len(header)]


def _number(text: str) -> float | None:
    text = text.strip().replace(",", "")
    try:
        return float(text)
    except ValueError:
        return None


def _dims(text: str) -> list[int] | None:
    """``(256, 1, 1)`` (ncu's Block Size and Grid Size columns) as a list."""
    parts = [p.strip() for p in text.strip().strip("()[]").split(",")]
    return [int(p) for p in parts] if parts and all(p.isdigit() for p in parts) else None


def read_csv(text: str) -> list[dict[str, Any]]:
    """One dict per profiled kernel launch: ``name``, ``grid`` and ``block`` (lists, or None)
    and ``metrics`` {ncu name: (value, unit)}."""
    table = _table(text)
    if table is None:
        return []
    header, units, data = table
    name_col = next((c for c in _NAME_COLUMNS if c in header), None)
    kernels = []
    for row in data:
        values: dict[str, tuple[float, str]] = {}
        for col, unit, cell in zip(header, units, row, strict=True):
            if col in _NON_METRIC_COLUMNS:
                continue
            number = _number(cell)
            if number is not None:
                values[col] = (number, unit.strip())
        name = row[header.index(name_col)] if name_col else "kernel"
        dims = {key: _dims(row[header.index(col)]) if col in header else None
                for key, col in (("grid", "Grid Size"), ("block", "Block Size"))}
        kernels.append({"name": name, **dims, "metrics": values})
    return kernels


def _first(values: dict[str, tuple[float, str]], names: tuple[str, ...]) -> float | None:
    for name in names:
        if name in values:
            return values[name][0]
    return None


def _scaled(values: dict[str, tuple[float, str]], name: str, units: dict[str, float],
            default: float) -> float | None:
    if name not in values:
        return None
    value, unit = values[name]
    # ncu qualifies some units per thing ("byte/block", "register/thread").
    return value * units.get(unit.lower().split("/", 1)[0].strip(), default)


def _kernel_facts(values: dict[str, tuple[float, str]]) -> dict[str, float]:
    """The report metrics of one kernel launch (ncu names resolved, units normalized)."""
    facts: dict[str, float] = {}
    duration = _scaled(values, "gpu__time_duration.sum", _TIME_UNITS, 1e-3)  # base unit: ns
    if duration is not None:
        facts["ncu_duration"] = duration
    for key, names in {**_PERCENT, **_LAUNCH}.items():
        value = _first(values, names)
        if value is not None:
            facts[key] = value
    for key, names in _RATIO_PERCENT.items():
        value = _first(values, names)
        if key not in facts and value is not None:
            facts[key] = 100.0 * value
    smem = [_scaled(values, f"launch__shared_mem_per_block_{kind}", _BYTE_UNITS, 1.0)
            for kind in ("static", "dynamic")]
    if any(s is not None for s in smem):
        facts["ncu_shared_mem_per_block"] = sum(s or 0.0 for s in smem) / 1024
    dram = [_scaled(values, f"dram__bytes_{kind}.sum", _BYTE_UNITS, 1.0)
            for kind in ("read", "write")]
    if any(d is not None for d in dram):
        facts["ncu_dram_bytes"] = sum(d or 0.0 for d in dram) / 1e6
    elif "dram__bytes.sum" in values:
        facts["ncu_dram_bytes"] = (_scaled(values, "dram__bytes.sum", _BYTE_UNITS, 1.0) or 0) / 1e6
    ops = [(values.get(f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum"), weight)
           for op, weight in _FP_OPS.items()]
    if any(v is not None for v, _ in ops):
        facts["ncu_fp_ops"] = sum(v[0] * w for v, w in ops if v is not None) / 1e9
    inst = _first(values, ("smsp__inst_executed.sum", "sm__inst_executed.sum"))
    if inst is not None:
        facts["ncu_inst_executed"] = inst
    for col, (value, _) in values.items():
        pipe = next((m for r in _PIPE_RES if (m := r.match(col))), None)
        if pipe:
            group = next((g for g, prefixes in _PIPE_GROUPS
                          if pipe.group(1).startswith(prefixes)), None)
            if group is not None:
                facts[group] = max(facts.get(group, 0.0), value)
    # Stall reasons from the first family of stall metrics the output holds (the families
    # measure different things and must not be mixed).
    for stall_re in _STALL_RES:
        stalls = {m.group(1): values[col][0] for col in values if (m := stall_re.match(col))}
        if stalls:
            facts.update({f"ncu_stall_{reason}": v for reason, v in stalls.items()})
            break
    return facts


_SUMMED = {"ncu_duration", "ncu_dram_bytes", "ncu_fp_ops", "ncu_inst_executed"}


def _combine(launches: list[dict[str, float]]) -> dict[str, float]:
    """Many launches as one: sums for counts and bytes, duration-weighted means for rates and
    percentages, the longest launch's configuration for launch facts."""
    out: dict[str, float] = {}
    weights = [f.get("ncu_duration", 1.0) for f in launches]
    keys = {k for f in launches for k in f}
    for key in keys:
        present = [(f[key], w) for f, w in zip(launches, weights, strict=True) if key in f]
        if key in _SUMMED:
            out[key] = sum(v for v, _ in present)
        elif key in _LAUNCH or key == "ncu_shared_mem_per_block":
            longest = max((f for f in launches if key in f),
                          key=lambda f: f.get("ncu_duration", 0.0))
            out[key] = longest[key]
        else:
            total = sum(w for _, w in present)
            out[key] = sum(v * w for v, w in present) / total if total else present[0][0]
    return out


def parse_csv(text: str | bytes) -> dict[str, Any]:
    """An ncu report from the raw-page CSV ``ncu --csv --page raw`` printed."""
    if isinstance(text, bytes):
        text = (gzip.decompress(text) if text[:2] == b"\x1f\x8b" else text).decode()
    launches = read_csv(text)
    if not launches:
        return {"instrument": INSTRUMENT, "unavailable": "ncu's output holds no profiled kernel",
                "metrics": [], "kernels": [], "notes": []}
    facts = [_kernel_facts(k["metrics"]) for k in launches]
    by_name: dict[str, list[dict[str, float]]] = defaultdict(list)
    dims: dict[str, dict[str, Any]] = {}
    for k, f in zip(launches, facts, strict=True):
        by_name[k["name"]].append(f)
        # The configuration of the kernel's longest launch, as for the launch facts.
        if f.get("ncu_duration", 0.0) >= dims.get(k["name"], {}).get("duration", -1.0):
            dims[k["name"]] = {"duration": f.get("ncu_duration", 0.0), "grid": k["grid"],
                               "block": k["block"]}
    notes = []
    unknown = sorted({k for f in facts for k in f if k not in METRICS})
    if unknown:
        notes.append("stall reasons not in the metric schema: " + ", ".join(
            u.removeprefix("ncu_stall_") for u in unknown))
    total = _combine(facts)
    metrics = [metric("ncu_kernels", len(launches))]
    metrics += [metric(k, v) for k, v in sorted(total.items()) if k in METRICS]
    kernels = []
    for name, fs in sorted(by_name.items(), key=lambda kv: -sum(f.get("ncu_duration", 0.0)
                                                                    for f in kv[1])):
        combined = _combine(fs)
        kernels.append({"name": name, "calls": len(fs),
                        "time_us": combined.get("ncu_duration", 0.0),
                        "registers_per_thread": combined.get("ncu_registers_per_thread"),
                        "grid": dims[name]["grid"], "block": dims[name]["block"]})
        if len(by_name) > 1:
            metrics += [{**metric(k, v), "kernel": name} for k, v in sorted(combined.items())
                        if k in METRICS]
    return {"instrument": INSTRUMENT, "unavailable": None, "metrics": metrics,
            "kernels": kernels, "notes": notes}


def top_stalls(metrics: list[dict[str, Any]], n: int = 3) -> list[tuple[str, float]]:
    """The ``n`` largest stall reasons among report-level metrics (name without prefix)."""
    stalls = [(m["name"].removeprefix("ncu_stall_"), m["value"]) for m in metrics
              if m["name"].startswith("ncu_stall_") and m.get("kernel") is None
              and m["name"] != "ncu_stall_selected"]
    return sorted(stalls, key=lambda kv: -kv[1])[:n]
