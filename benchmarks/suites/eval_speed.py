"""How fast the harness evaluates candidates at KernelBench's own sizes on a GPU: first and warm
evaluations per problem with their stage breakdown, candidates per GPU-minute, and the timing
spread of one candidate over repeated evaluations. Writes JSON and Markdown (device, versions
and command included).

    python benchmarks/suites/eval_speed.py --kernelbench .carry/kernelbench --out /tmp/speed \\
        [--problems 19_ReLU 23_Softmax ...] [--warm 2] [--spread 5]

Each problem gets the offline synthesizer's candidates (its default parameters, then other
points of its search space), so every evaluation is of a new source, as in a search. "Warm"
excludes the candidate's own Triton compile (``first_call_s``), which the issue's target leaves
out; both figures are kept. Needs a CUDA GPU.
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DEFAULT_PROBLEMS = ["19_ReLU", "26_GELU_", "23_Softmax", "24_LogSoftmax",
                    "1_Square_matrix_multiplication_", "47_Sum_reduction_over_a_dimension",
                    "38_L1Norm_", "49_Max_reduction_over_a_dimension"]


def candidates(problem: Path, count: int, work: Path) -> list[Path]:
    """``count`` different sources for ``problem`` from the offline synthesizer: its default
    parameters first, then other points of its space."""
    from kernelevolve.problem import load_problem
    from kernelevolve.synth import offline

    plan = offline.analyze(load_problem(problem))
    base = plan.default_params()
    params = [base]
    for key, values in plan.space.items():  # neighbours: one parameter moved
        for value in values:
            p = {**base, key: value}
            if p not in params and plan.feasible(p) is None:
                params.append(p)
    sources, paths = [], []
    for p in params:
        src = plan.render(p)
        if src not in sources:
            sources.append(src)
        if len(sources) == count:
            break
    for i, src in enumerate(sources):
        path = work / f"{problem.stem}_{i}.py"
        path.write_text(src)
        paths.append(path)
    return paths


def row(problem: str, candidate: Path, r: Any, wall_s: float, kind: str) -> dict[str, Any]:
    t = r.timing
    return {
        "problem": problem, "candidate": candidate.stem, "kind": kind, "status": r.status.value,
        "message": r.message[:300], "wall_s": wall_s, "elapsed_s": r.elapsed_s,
        "first_call_s": r.first_call_s, "compile_reference_s": r.compile_reference_s,
        "warm_s": wall_s - r.first_call_s, "stages": getattr(r, "stages", {}),
        "references_reused": bool(t and getattr(t, "references_reused", False)),
        "candidate_ms": t.candidate.median_ms if t else None,
        "candidate_cv": t.candidate.cv if t else None,
        "speedup_vs_eager": t.speedup_vs_eager if t else None,
        "speedup_vs_compiled": t.speedup_vs_compiled if t else None,
        "flags": r.flags, "stderr_tail": "" if r.ok else r.stderr_tail[-800:],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernelbench", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--problems", nargs="*", default=DEFAULT_PROBLEMS)
    ap.add_argument("--warm", type=int, default=2, help="warm evaluations per problem")
    ap.add_argument("--spread", type=int, default=5, help="repeats of one candidate for the CV")
    ap.add_argument("--spread-problem", default="23_Softmax")
    ap.add_argument("--render", type=Path, default=None, help="rewrite the Markdown from JSON")
    args = ap.parse_args()
    if args.render is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "eval_speed.md").write_text(render(json.loads(args.render.read_text())))
        return 0
    import torch
    import triton

    from kernelevolve.config import EvalConfig
    from kernelevolve.tools.harness.pool import WorkerPool

    if not torch.cuda.is_available():
        sys.exit("this benchmark needs a CUDA GPU")
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="eval-speed-"))
    rows: list[dict[str, Any]] = []
    spread: list[dict[str, Any]] = []
    t_all = time.perf_counter()

    def summary() -> dict[str, Any]:
        return summarize(rows, spread, {
            "device": torch.cuda.get_device_name(0),
            "versions": {"python": platform.python_version(), "torch": torch.__version__,
                         "triton": triton.__version__, "cuda": str(torch.version.cuda)},
            "command": "python " + " ".join(shlex.quote(a) for a in sys.argv),
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "total_wall_s": time.perf_counter() - t_all})

    with WorkerPool("cuda", EvalConfig()) as pool:
        for name in args.problems:
            problem = args.kernelbench / "level1" / f"{name}.py"
            try:
                paths = candidates(problem, 1 + args.warm, work)
            except Exception as exc:  # not covered: recorded, the benchmark goes on
                rows.append({"problem": name, "kind": "skipped", "status": "uncovered",
                             "message": f"{type(exc).__name__}: {exc}"[:300]})
                continue
            for i, path in enumerate(paths):
                print(f"== {name} / {path.stem}", file=sys.stderr, flush=True)
                t0 = time.perf_counter()
                r = pool.evaluate(problem, path)
                rows.append(row(name, path, r, time.perf_counter() - t0,
                                "first" if i == 0 else "warm"))
                print(json.dumps(rows[-1])[:400], flush=True)
            (args.out / "eval_speed.json").write_text(json.dumps(summary(), indent=1))
        problem = args.kernelbench / "level1" / f"{args.spread_problem}.py"
        path = candidates(problem, 1, work)[0]
        for _ in range(args.spread):
            t0 = time.perf_counter()
            r = pool.evaluate(problem, path)
            spread.append(row(args.spread_problem, path, r, time.perf_counter() - t0, "spread"))
    s = summary()
    (args.out / "eval_speed.json").write_text(json.dumps(s, indent=1))
    (args.out / "eval_speed.md").write_text(render(s))
    print(render(s))
    return 0


def summarize(rows: list[dict[str, Any]], spread: list[dict[str, Any]],
              meta: dict[str, Any]) -> dict[str, Any]:
    evaluated = [r for r in rows if r["kind"] in ("first", "warm")]
    warm = [r for r in evaluated if r["kind"] == "warm"]
    first = [r for r in evaluated if r["kind"] == "first"]
    medians = [r["candidate_ms"] for r in spread if r.get("candidate_ms")]
    wall = sum(r["wall_s"] for r in evaluated)
    return {
        **meta, "rows": rows, "spread": spread,
        "median_warm_s": statistics.median([r["warm_s"] for r in warm]) if warm else None,
        "median_first_s": statistics.median([r["wall_s"] for r in first]) if first else None,
        "max_first_s": max((r["wall_s"] for r in first), default=None),
        "candidates_per_gpu_minute": 60 * len(evaluated) / wall if wall else None,
        "warm_candidates_per_gpu_minute": (60 * len(warm) / sum(r["wall_s"] for r in warm)
                                           if warm else None),
        "spread_cv_of_medians": (statistics.stdev(medians) / statistics.fmean(medians)
                                 if len(medians) > 1 else None),
        "ok": sum(r["status"] == "ok" for r in evaluated), "evaluated": len(evaluated),
    }


def _f(v: Any, spec: str = ".2f") -> str:
    return "" if v is None else format(v, spec) if isinstance(v, float) else str(v)


def render(s: dict[str, Any]) -> str:
    lines = [
        "# Evaluation speed at KernelBench's own sizes", "",
        f"- device: {s['device']}", f"- versions: {s['versions']}",
        f"- command: `{s['command']}`", f"- date: {s['date']}", "",
        f"- evaluations: {s['evaluated']} ({s['ok']} ok), total {s['total_wall_s']:.0f} s",
        f"- median first evaluation (torch.compile of the reference included): "
        f"{_f(s['median_first_s'])} s (max {_f(s['max_first_s'])} s)",
        f"- median warm evaluation (candidate's Triton compile excluded): "
        f"{_f(s['median_warm_s'])} s",
        f"- candidates per GPU-minute: {_f(s['candidates_per_gpu_minute'], '.1f')} overall, "
        f"{_f(s['warm_candidates_per_gpu_minute'], '.1f')} warm",
        f"- five-run CV of one candidate's median: {_f(s['spread_cv_of_medians'], '.2%')}", "",
        "| problem | candidate | kind | status | wall s | Triton compile s | torch.compile s | "
        "stages | vs eager | vs compile |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in s["rows"] + s["spread"]:
        if r["kind"] == "skipped":
            lines.append(f"| {r['problem']} | | skipped | {r['status']} | | | | "
                         f"{r['message'][:80]} | | |")
            continue
        stages = " · ".join(f"{k} {v:.1f}" for k, v in r["stages"].items())
        lines.append(
            f"| {r['problem']} | {r['candidate']} | {r['kind']} | {r['status']} | "
            f"{r['wall_s']:.1f} | {r['first_call_s']:.1f} | {r['compile_reference_s']:.1f} | "
            f"{stages} | {_f(r['speedup_vs_eager'])} | {_f(r['speedup_vs_compiled'])} |")
    bad = [r for r in s["rows"] if r.get("status") not in ("ok", "uncovered")]
    for r in bad:
        lines += ["", f"`{r['problem']} / {r.get('candidate')}`: {r['status']}: {r['message']}"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
