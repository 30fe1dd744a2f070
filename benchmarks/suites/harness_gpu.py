"""Verify and time every example solution on a GPU; measure the harness's timing spread and
overhead. Writes JSON and Markdown (device, versions and command included).

    python benchmarks/suites/harness_gpu.py --out benchmarks/results [--only 04_row_softmax]

Needs a CUDA GPU. Figures in benchmarks/results/ come from this script on the machine named there.
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch
import triton

from kernelevolve.config import EvalConfig
from kernelevolve.tools.harness.pool import WorkerPool
from kernelevolve.tools.harness.result import EvalResult

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", nargs="*", default=None, help="solution stems to run")
    parser.add_argument("--spread-solution", default="04_row_softmax")
    parser.add_argument("--spread-runs", type=int, default=5)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("this benchmark needs a CUDA GPU")
    args.out.mkdir(parents=True, exist_ok=True)
    solutions = sorted((ROOT / "examples" / "solutions").glob("[0-9]*.py"))
    if args.only:
        solutions = [s for s in solutions if s.stem in args.only]
    rows = []
    t_all = time.perf_counter()
    with WorkerPool("cuda", EvalConfig()) as pool:
        for sol in solutions:
            problem = ROOT / "examples" / "problems" / sol.name
            t0 = time.perf_counter()
            r = pool.evaluate(problem, sol)
            rows.append({"problem": sol.stem, **result_row(r, time.perf_counter() - t0)})
            print(json.dumps(rows[-1]), flush=True)
        spread_sol = ROOT / "examples" / "solutions" / f"{args.spread_solution}.py"
        spread_problem = ROOT / "examples" / "problems" / f"{args.spread_solution}.py"
        spread = []
        for _ in range(args.spread_runs):
            r = pool.evaluate(spread_problem, spread_sol)
            if r.timing is None:
                break
            spread.append({"candidate_ms": r.timing.candidate.median_ms,
                           "in_run_cv": r.timing.candidate.cv,
                           "eager_ms": r.timing.eager.median_ms,
                           "overhead_s": r.overhead_s, "elapsed_s": r.elapsed_s,
                           "first_call_s": r.first_call_s})
    medians = [s["candidate_ms"] for s in spread]
    summary = {
        "device": torch.cuda.get_device_name(0),
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "triton": triton.__version__, "cuda": torch.version.cuda},
        "command": "python " + " ".join(shlex.quote(a) for a in sys.argv),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "total_wall_s": time.perf_counter() - t_all,
        "solutions": rows,
        "spread": {
            "solution": args.spread_solution, "runs": spread,
            "cv_of_medians": (statistics.stdev(medians) / statistics.fmean(medians)
                              if len(medians) > 1 else None),
            "warm_overhead_s_median": statistics.median([s["overhead_s"] for s in spread])
            if spread else None,
        },
    }
    (args.out / "harness_gpu.json").write_text(json.dumps(summary, indent=2))
    (args.out / "harness_gpu.md").write_text(render(summary))
    print(render(summary))


def result_row(r: EvalResult, wall_s: float) -> dict[str, Any]:
    """One evaluation's verdict, timings and costs, as the result tables show them."""
    t = r.timing
    return {
        "status": r.status.value, "message": r.message[:300],
        "stderr_tail": "" if r.ok else r.stderr_tail[-1500:], "wall_s": wall_s,
        "candidate_ms": t.candidate.median_ms if t else None,
        "candidate_cv": t.candidate.cv if t else None,
        "eager_ms": t.eager.median_ms if t else None,
        "compiled_ms": t.compiled.median_ms if t and t.compiled else None,
        "speedup_vs_eager": t.speedup_vs_eager if t else None,
        "speedup_vs_compiled": t.speedup_vs_compiled if t else None,
        "compile_error": t.compile_error if t else None,
        "trials": t.candidate.trials if t else None,
        "max_abs_error": max((e.max_abs_error for e in r.errors), default=None),
        "nondeterministic": r.nondeterministic, "flags": r.flags,
        "first_call_s": r.first_call_s, "compile_reference_s": r.compile_reference_s,
        "overhead_s": r.overhead_s, "elapsed_s": r.elapsed_s, "sizes": t.sizes if t else None,
        "checks": [c.name + (" (skipped)" if c.skipped else "") for c in r.checks],
    }


def fmt(v: object, spec: str = ".3f") -> str:
    return "" if v is None else format(v, spec) if isinstance(v, float) else str(v)


def render(s: dict) -> str:
    lines = [
        "# Example solutions on the GPU", "",
        f"- device: {s['device']}", f"- versions: {s['versions']}",
        f"- command: `{s['command']}`", f"- date: {s['date']}", "",
        "| problem | status | candidate ms | eager ms | torch.compile ms | vs eager | "
        "vs compile | CV | trials | harness overhead s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in s["solutions"]:
        lines.append(
            f"| {r['problem']} | {r['status']} | {fmt(r['candidate_ms'], '.4f')} | "
            f"{fmt(r['eager_ms'], '.4f')} | {fmt(r['compiled_ms'], '.4f')} | "
            f"{fmt(r['speedup_vs_eager'], '.2f')} | {fmt(r['speedup_vs_compiled'], '.2f')} | "
            f"{fmt(r['candidate_cv'], '.2%')} | {fmt(r['trials'])} | {fmt(r['overhead_s'], '.2f')} |")
    failed = [r for r in s["solutions"] if r["status"] != "ok"]
    for r in failed:
        lines.append(f"\n`{r['problem']}`: {r['status']}: {r['message']}")
    sp = s["spread"]
    lines += ["", f"## Timing spread: {sp['solution']} timed {len(sp['runs'])} times in one warm "
              "worker", "",
              "| run | candidate median ms | in-run CV | harness overhead s (excl. compile) |",
              "|---|---|---|---|"]
    for i, r in enumerate(sp["runs"]):
        lines.append(f"| {i + 1} | {r['candidate_ms']:.4f} | {r['in_run_cv']:.2%} | "
                     f"{r['overhead_s']:.2f} |")
    lines.append(f"\nCV of the medians: {fmt(sp['cv_of_medians'], '.2%')}; median warm harness "
                 f"overhead: {fmt(sp['warm_overhead_s_median'], '.2f')} s")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
