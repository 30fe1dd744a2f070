"""Run every profiling instrument on kernels whose bound is known by construction, save the raw
instrument outputs (parser fixtures), the parsed reports, the diagnoses and the measured roofline
ceilings, and check each diagnosis against the known case:

- ``copy``: a pure copy kernel -> memory-bound, near the measured bandwidth
- ``matmul_bf16``: a large bf16 matrix product -> compute-bound
- ``tiny_launches``: a tiny kernel launched 200 times per forward -> launch-bound
- ``register_heavy``: a serial-latency kernel holding 128 fp32 per thread -> occupancy-bound
- ``copy_scoped``: the copy with Proton intra-kernel scopes (Proton only)

    PYTHONPATH=src python benchmarks/suites/profile_gpu.py --out /tmp/profiles

On a machine without a GPU, ``--device cpu`` runs the same pipeline at tiny sizes through
Triton's interpreter (no device kernels, no ceilings, no ncu or Proton): a smoke test of the
plumbing. Imports only torch, triton, numpy, the standard library and kernelevolve.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "tests" / "data" / "profiles" / "kernels"
# Raw files above this are gzipped (the parsers read .gz), keeping the whole output small.
GZIP_ABOVE = 256 * 1024
OUTPUT_BUDGET = 12 * 1024 * 1024
TIME_BUDGET_S = 270.0  # no new case starts after this; a case takes well under 90 s


@dataclass(frozen=True)
class Case:
    name: str
    problem: str
    expected: str
    cpu_sizes: dict[str, int]
    tools: tuple[str, ...] = ("torch", "proton", "ncu")
    gpu_only: bool = False  # Triton's interpreter cannot run it


CASES = (
    Case("copy", "copy", "memory-bound", {"n": 4096}),
    Case("matmul_bf16", "matmul_bf16", "compute-bound", {"m": 32, "n": 32, "k": 32}),
    Case("tiny_launches", "tiny_launches", "launch-bound", {"n": 64, "steps": 4}),
    Case("register_heavy", "register_heavy", "occupancy-bound",
         {"rows": 4, "row": 256, "nodes": 1024, "steps": 4}),
    Case("copy_scoped", "copy", "memory-bound", {"n": 4096}, tools=("proton",), gpu_only=True),
)


def _run(cmd: list[str], timeout: float = 60) -> str:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return done.stdout + done.stderr
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{type(exc).__name__}: {exc}"


def environment(out: Path, ncu: str | None) -> dict[str, Any]:
    """Versions, the device, and ncu's own facts (version, sections, metric names)."""
    import torch
    import triton

    info: dict[str, Any] = {
        "python": platform.python_version(), "torch": torch.__version__,
        "triton": triton.__version__, "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
        "ncu": ncu,
    }
    if ncu:
        info["ncu_version"] = _run([ncu, "--version"]).strip()[-300:]
        (out / "ncu_sections.txt").write_text(_run([ncu, "--list-sections"]))
        with gzip.open(out / "ncu_query_metrics.txt.gz", "wt") as f:
            f.write(_run([ncu, "--query-metrics"], timeout=120))
    if torch.cuda.is_available():
        info["nvidia_smi"] = _run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,"
                                   "clocks.max.mem,memory.total", "--format=csv"]).strip()
    return info


def check_output(expected: Any, actual: Any) -> float:
    """Max abs error of the candidate against the reference; raises when it is wrong."""
    import torch

    tol = {torch.bfloat16: (2e-2, 2e-2), torch.float16: (1e-2, 1e-2)}.get(expected.dtype,
                                                                          (1e-4, 1e-4))
    err = (expected.float() - actual.float()).abs().max().item() if expected.numel() else 0.0
    if not torch.allclose(expected.float(), actual.float(), atol=tol[0], rtol=tol[1]):
        raise AssertionError(f"candidate output differs from the reference (max abs err {err})")
    return err


def time_forward(model: Any, inputs: list[Any]) -> float:
    """The harness's timing of one forward (median ms, L2 flushed before each trial)."""
    import torch

    from kernelevolve.tools.harness.timing import time_interleaved

    def forward() -> Any:
        return model(*inputs)

    with torch.no_grad():
        lat = time_interleaved({"candidate": forward}, min_trials=30, min_time_s=0.5,
                               max_trials=300, warmup_ms=50)
    return lat["candidate"].median_ms


def gzip_large(folder: Path) -> None:
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix != ".gz" and path.stat().st_size > GZIP_ABOVE:
            with path.open("rb") as src, gzip.open(path.with_name(path.name + ".gz"), "wb") as dst:
                shutil.copyfileobj(src, dst)
            path.unlink()


def run_case(case: Case, args: argparse.Namespace, out: Path, ceilings: Path) -> dict[str, Any]:
    import torch
    from pydantic import TypeAdapter

    from kernelevolve.problem import parse_problem
    from kernelevolve.tools.diagnosis import ProfileReports, diagnosis_of
    from kernelevolve.tools.profile_jobs import build, run_profile
    from kernelevolve.tools.profiling import ProfileContext, ProfileOptions

    cuda = args.device == "cuda"
    problem = KERNELS / f"{case.problem}_problem.py"
    candidate = KERNELS / f"{case.name}_candidate.py"
    sizes = dict(parse_problem(problem).sizes) if cuda else dict(case.cpu_sizes)
    case_dir = out / case.name
    raw = case_dir / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    row: dict[str, Any] = {"case": case.name, "expected": case.expected, "sizes": sizes}
    t0 = time.perf_counter()
    model, inputs, ref = build(str(problem), str(candidate), sizes, args.seed, args.device)
    with torch.no_grad():
        row["max_abs_error"] = check_output(ref(*inputs), model(*inputs))
    forward_ms = time_forward(model, inputs) if cuda else None
    row["forward_ms"] = forward_ms
    row["setup_s"] = time.perf_counter() - t0
    tools = tuple(t for t in case.tools if t in args.tools)
    opts = ProfileOptions(enabled=True, tools=tools, ceilings_path=str(ceilings),
                          ncu_path=args.ncu, ncu_launch_count=args.launch_count,
                          raw_dir=str(raw))
    ctx = ProfileContext(problem=str(problem), candidate=str(candidate), sizes=sizes,
                         seed=args.seed, model=model, inputs=inputs, reference=ref,
                         forward_ms=forward_ms, workdir=case_dir / "work")
    ctx.workdir.mkdir(exist_ok=True)
    t0 = time.perf_counter()
    dicts = run_profile(ctx, opts)
    row["profile_s"] = time.perf_counter() - t0
    (raw / "worker_reports.json").write_text(json.dumps(dicts, indent=1, default=str))
    reports = TypeAdapter(ProfileReports).validate_python(dicts)
    (case_dir / "report.json").write_text(json.dumps(
        [r.model_dump(mode="json") for r in reports], indent=1))
    row["instruments"] = {r.instrument: ("ok" if r.available else f"unavailable: {r.unavailable}")
                          for r in reports}
    row["pass_s"] = {r.instrument: round(r.elapsed_s, 2) for r in reports}
    diag = diagnosis_of(reports)
    row["diagnosis"] = diag.model_dump(mode="json") if diag else None
    row["kind"] = diag.kind.value if diag else None
    roof = next(r for r in reports if r.instrument == "roofline")
    row["bandwidth_fraction"] = roof.value("bandwidth_fraction")
    row["compute_fraction"] = roof.value("compute_fraction")
    row["match"] = row["kind"] == case.expected
    shutil.rmtree(ctx.workdir, ignore_errors=True)
    del model, inputs, ref, ctx
    if cuda:
        torch.cuda.empty_cache()
    gzip_large(case_dir)
    return row


def ncu_missing(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """The ncu pass with no ncu: the report must say so."""
    from kernelevolve.tools.ncu import run
    from kernelevolve.tools.profiling import ProfileOptions

    class _Ctx:
        device_type = args.device

    report = run(_Ctx(), ProfileOptions(ncu_path=str(out / "no-such-ncu")))
    (out / "ncu_missing.json").write_text(json.dumps(report, indent=1))
    return report


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "" if value is None else format(value, spec)


def harness_check(args: argparse.Namespace, out: Path, ceilings: Path) -> dict[str, Any]:
    """The copy case through the evaluation harness with profiling on (once the worker calls
    the profile job graph: config.ProfileConfig exists)."""
    from kernelevolve import config
    from kernelevolve.tools.diagnosis import diagnosis_of
    from kernelevolve.tools.harness.pool import WorkerPool

    if not hasattr(config, "ProfileConfig"):
        return {"error": "not wired yet: kernelevolve.config has no ProfileConfig"}
    cfg = config.EvalConfig(compile_reference=False, profile={
        "enabled": True, "tools": list(args.tools), "ceilings_path": str(ceilings),
        "raw_dir": str(out / "harness" / "raw")})
    t0 = time.perf_counter()
    with WorkerPool("cuda", cfg, workers=1) as pool:
        result = pool.evaluate(KERNELS / "copy_problem.py", KERNELS / "copy_candidate.py")
    diag = diagnosis_of(result.profile)
    (out / "harness").mkdir(exist_ok=True)
    (out / "harness" / "eval_result.json").write_text(result.model_dump_json(indent=1))
    return {"status": result.status.value, "message": result.message[:500],
            "wall_s": time.perf_counter() - t0, "kind": diag.kind.value if diag else None,
            "profile_s": sum(r.elapsed_s for r in result.profile or [])}


def render(summary: dict[str, Any]) -> str:
    lines = ["# Profiler diagnoses on known kernels", "",
             f"- device: {summary['env']['device']}",
             f"- versions: python {summary['env']['python']}, torch {summary['env']['torch']}, "
             f"triton {summary['env']['triton']}, ncu {summary['env'].get('ncu_version', 'none')}",
             f"- command: `{summary['command']}`", f"- date: {summary['date']}",
             f"- ceilings: {json.dumps(summary.get('ceilings'))}", "",
             "| case | expected | diagnosis | match | roofline fraction | bandwidth | compute | "
             "forward ms | full profile s | instruments |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in summary["cases"]:
        if "error" in r:
            lines.append(f"| {r['case']} | {r['expected']} | error: {r['error'][:120]} |"
                         " | | | | | | |")
            continue
        d = r.get("diagnosis") or {}
        lines.append(
            f"| {r['case']} | {r['expected']} | {r['kind']} | {'yes' if r['match'] else 'NO'} | "
            f"{_fmt(d.get('roofline_fraction'))} | {_fmt(r['bandwidth_fraction'])} | "
            f"{_fmt(r['compute_fraction'])} | {_fmt(r['forward_ms'], '.4f')} | "
            f"{r['profile_s']:.1f} | "
            + ", ".join(f"{k}: {v}" for k, v in r["instruments"].items()) + " |")
    if "harness" in summary:
        lines += ["", f"Through the harness (copy): {json.dumps(summary['harness'])}"]
    for r in summary["cases"]:
        if r.get("diagnosis"):
            lines += ["", f"## {r['case']}: {r['kind']}", ""]
            lines += [f"- {e}" for e in r["diagnosis"]["evidence"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="output directory (created)")
    parser.add_argument("--only", nargs="*", default=None, help="case names to run")
    parser.add_argument("--tools", default="torch,proton,ncu",
                        help="comma-separated instruments (default: all)")
    parser.add_argument("--ncu", default=None, help="path of ncu (default: found on PATH)")
    parser.add_argument("--launch-count", type=int, default=10,
                        help="kernels ncu profiles per forward at most")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="cpu: a smoke test at tiny sizes through Triton's interpreter")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--harness", action="store_true",
                        help="also profile the copy case through the evaluation harness")
    args = parser.parse_args(argv)
    args.tools = tuple(t.strip() for t in args.tools.split(",") if t.strip())
    unknown = [c for c in args.only or [] if c not in {c.name for c in CASES}]
    if unknown:
        parser.error(f"unknown cases {unknown}; known: {[c.name for c in CASES]}")
    if args.device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported
    import torch

    from kernelevolve.tools.ncu import find_ncu

    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("no CUDA GPU here; use --device cpu for a smoke test")
    args.out.mkdir(parents=True, exist_ok=True)
    t_all = time.perf_counter()
    ncu = find_ncu(args.ncu) if "ncu" in args.tools else None
    env = environment(args.out, ncu if args.device == "cuda" else None)
    ceilings = args.out / "ceilings.json"
    summary: dict[str, Any] = {
        "env": env, "command": "python " + " ".join(shlex.quote(a) for a in sys.argv),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "cases": [],
    }
    if args.device == "cuda":
        from kernelevolve.tools.roofline import ceilings_for

        t0 = time.perf_counter()
        values, _ = ceilings_for(ceilings, remeasure=True)
        summary["ceilings_measure_s"] = time.perf_counter() - t0
        summary["ceilings"] = {k: v for k, v in values.items() if isinstance(v, int | float)}
    for case in CASES:
        if (args.only and case.name not in args.only) or (case.gpu_only
                                                            and args.device == "cpu"):
            continue
        if time.perf_counter() - t_all > TIME_BUDGET_S:
            summary["cases"].append({"case": case.name, "expected": case.expected,
                                     "error": "skipped: the run's time budget was spent"})
            continue
        print(f"== {case.name}", file=sys.stderr, flush=True)
        try:
            row = run_case(case, args, args.out, ceilings)
        except Exception as exc:  # recorded; the other cases still run
            import traceback

            row = {"case": case.name, "expected": case.expected,
                   "error": f"{type(exc).__name__}: {exc}",
                   "traceback": traceback.format_exc()[-3000:]}
        summary["cases"].append(row)
        print(json.dumps({k: row.get(k) for k in ("case", "kind", "match", "profile_s",
                                                   "error")}), file=sys.stderr, flush=True)
    summary["ncu_missing"] = ncu_missing(args, args.out)
    if args.harness and args.device == "cuda":
        try:
            summary["harness"] = harness_check(args, args.out, ceilings)
        except Exception as exc:  # recorded like a case
            summary["harness"] = {"error": f"{type(exc).__name__}: {exc}"}
    summary["total_s"] = time.perf_counter() - t_all
    size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    summary["output_bytes"] = size
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    (args.out / "summary.md").write_text(render(summary))
    print(render(summary))
    if size > OUTPUT_BUDGET:
        print(f"warning: output is {size / 1e6:.1f} MB, over the 12 MB budget", file=sys.stderr)
    if args.device == "cpu":  # no device, no diagnosis: the smoke test needs no errors only
        return 0 if not any("error" in r for r in summary["cases"]) else 1
    return 0 if all(r.get("match") for r in summary["cases"]) else 1


if __name__ == "__main__":
    sys.exit(main())
