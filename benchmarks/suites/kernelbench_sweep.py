"""Sweep every KernelBench file through the project on this machine: load, analyze (the offline
synthesizer's coverage), and, where the offline synthesizer covers the operator, one short
``tune`` on a CPU target with a wall budget. Each problem runs in its own process (a crash or a
hang costs that problem only), ``--jobs`` at a time.

Per problem the table says: loaded, analyzed (covered or not, with the one-line reason),
verified, and what every evaluated candidate's status was. ``crashed`` means the project itself
failed on the file: an exception out of load/analyze/tune, or a harness error inside an
evaluation (status ``crash``). The target is 0 crashed.

    python benchmarks/suites/kernelbench_sweep.py ../shared/kernelbench --out benchmarks/results/sweep
    python benchmarks/suites/kernelbench_sweep.py ../shared/kernelbench --only level1/36 --no-tune
    # level 2 with the library convolutions kept and the rest fused (tune --allow-op)
    python benchmarks/suites/kernelbench_sweep.py ../shared/kernelbench --only level2/ \
        --allow-op conv2d conv3d conv_transpose2d conv_transpose3d --out /tmp/l2
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import multiprocessing
import os
import platform
import shlex
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

FIELDS = ("problem", "loaded", "covered", "operator_class", "tuned", "verified", "crashed",
          "reason", "statuses", "wall_s")


def _first_line(text: str, limit: int = 220) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[:limit - 3] + "..."


def sweep_one(path: str, tune: bool, target: str, wall_s: float, rounds: int,
              eval_timeout_s: float, data_dir: str, allow_ops: list[str] | None = None
              ) -> dict[str, Any]:
    """Load, analyze and (when covered) tune one file; never raises."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ["KERNELEVOLVE_HOME"] = data_dir
    from kernelevolve.bench import bench_one
    from kernelevolve.config import load_settings
    from kernelevolve.errors import KernelEvolveError
    from kernelevolve.graph.session import read_run
    from kernelevolve.problem import load_problem
    from kernelevolve.synth import offline

    p = Path(path)
    row: dict[str, Any] = {"problem": f"{p.parent.name}/{p.stem}", "loaded": False,
                           "covered": False, "operator_class": None, "tuned": False,
                           "verified": False, "crashed": False, "reason": "", "statuses": {},
                           "wall_s": 0.0}
    start = time.monotonic()
    stage = "load"
    try:
        try:
            problem = load_problem(p).allowing(allow_ops or [])
        except KernelEvolveError as exc:
            row["reason"] = f"does not load: {_first_line(str(exc))}"
            return row
        row["loaded"] = True
        stage = "analyze"
        try:
            plan = offline.analyze(problem)
        except offline.Unsupported as exc:
            row["reason"] = _first_line(str(exc))
            return row
        row["covered"], row["operator_class"] = True, plan.operator_class
        if not tune:
            return row
        stage = "tune"
        settings = load_settings(
            search={"rounds": rounds, "wall_s": wall_s, "retrieve": False, "distill": False,
                    "warm_start": 0},
            llm={"model": "offline"},
            eval={"timeout_s": eval_timeout_s, "allowed_ops": allow_ops or []},
            runs={"dir": str(Path(data_dir) / "runs")},
            store={"path": str(Path(data_dir) / "store.sqlite")})
        outcome = bench_one(p, target=target, settings=settings)
        row["tuned"] = outcome.run_dir is not None
        row["verified"] = outcome.correct
        if outcome.run_dir:
            state = read_run(outcome.run_dir).values or {}
            tree = state.get("tree")
            nodes = [n for n in (tree.nodes.values() if tree else []) if n.origin != "root"]
            row["statuses"] = dict(Counter(n.status for n in nodes))
            crashes = [n for n in nodes if n.status == "crash"]
            if crashes:
                row["crashed"] = True
                row["reason"] = f"harness crash: {_first_line(crashes[0].message)}"
            elif not outcome.correct:
                failed = [n for n in nodes if n.status not in ("ok", "pending")]
                row["reason"] = (f"{failed[0].status}: {_first_line(failed[0].message)}"
                                 if failed else outcome.reason)
        else:
            row["reason"] = _first_line(outcome.reason)
    except Exception as exc:  # the sweep's boundary: the project failed on this file
        row["crashed"] = True
        row["reason"] = f"{stage} raised {type(exc).__name__}: {_first_line(str(exc))}"
        row["traceback"] = traceback.format_exc()[-3000:]
    finally:
        row["wall_s"] = round(time.monotonic() - start, 1)
    return row


def _markdown(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    def count(key: str, level: str | None = None) -> int:
        return sum(1 for r in rows if r[key] and (level is None or r["problem"].startswith(level)))

    lines = [f"# KernelBench sweep ({meta['target']}, offline synthesizer)", "",
             f"`{meta['command']}`", "",
             f"{meta['date']}; python {meta['python']}, torch {meta['torch']}, triton "
             f"{meta['triton']}, {meta['machine']}; {meta['wall_s']:.0f} s in all.", "",
             "| | files | loaded | covered | tuned | verified | clean unsupported | crashed |",
             "|---|---|---|---|---|---|---|---|"]
    for level in ("level1", "level2", None):
        sel = [r for r in rows if level is None or r["problem"].startswith(level)]
        unsupported = sum(1 for r in sel if r["loaded"] and not r["covered"] and not r["crashed"])
        lines.append(f"| {level or 'all'} | {len(sel)} | {count('loaded', level)} | "
                     f"{count('covered', level)} | {count('tuned', level)} | "
                     f"{count('verified', level)} | {unsupported} | {count('crashed', level)} |")
    lines += ["", "| problem | loaded | covered | verified | candidates | wall s | reason |",
              "|---|---|---|---|---|---|---|"]
    for r in rows:
        cands = ", ".join(f"{k} {v}" for k, v in sorted(r["statuses"].items())) or "-"
        verified = "CRASH" if r["crashed"] else ("yes" if r["verified"] else
                                                 "no" if r["tuned"] else "-")
        reason = r["reason"].replace("|", "/")
        lines.append(f"| {r['problem']} | {'yes' if r['loaded'] else 'no'} | "
                     f"{r['operator_class'] or 'no'} | {verified} | {cands} | {r['wall_s']} | "
                     f"{reason} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=Path, help="KernelBench's directory (level1/, level2/ inside)")
    ap.add_argument("--out", type=Path, help="write sweep.json and sweep.md here")
    ap.add_argument("--target", default="cpu", help="cpu or mtia-sim:2i (default cpu)")
    ap.add_argument("--wall", type=float, default=90.0, help="tune's wall budget per problem (s)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--eval-timeout", type=float, default=120.0,
                    help="one evaluation's limit (s); longer is a timeout verdict")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--no-tune", action="store_true", help="load and analyze only")
    ap.add_argument("--only", nargs="*", default=None,
                    help="problems whose 'level/name' starts with one of these")
    ap.add_argument("--allow-op", nargs="*", default=[], dest="allow_ops",
                    help="library ops kernels may call (e.g. conv2d conv3d): the offline "
                         "synthesizer keeps them and fuses what follows (level 2)")
    ap.add_argument("--timeout", type=float, default=600.0,
                    help="a problem that takes longer is recorded as crashed (hung)")
    args = ap.parse_args(argv)

    import torch
    import triton

    files = sorted(f for level in ("level1", "level2")
                   for f in (args.root / level).glob("*.py"))
    if args.only:
        files = [f for f in files if any(f"{f.parent.name}/{f.stem}".startswith(o)
                                         for o in args.only)]
    data_dir = tempfile.mkdtemp(prefix="kernelevolve-sweep-")
    start = time.monotonic()
    rows: list[dict[str, Any]] = []
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(args.jobs, mp_context=ctx, max_tasks_per_child=1) as pool:
        futures = {pool.submit(sweep_one, str(f), not args.no_tune, args.target, args.wall,
                               args.rounds, args.eval_timeout, data_dir, args.allow_ops): f
                   for f in files}
        for fut in cf.as_completed(futures):
            f = futures[fut]
            try:
                row = fut.result(timeout=args.timeout)
            except Exception as exc:  # the process died or hung
                row = {"problem": f"{f.parent.name}/{f.stem}", "loaded": False, "covered": False,
                       "operator_class": None, "tuned": False, "verified": False,
                       "crashed": True, "reason": f"the sweep process failed: {exc!r}",
                       "statuses": {}, "wall_s": 0.0}
            rows.append(row)
            mark = "CRASH" if row["crashed"] else "ok" if row["verified"] else "-"
            print(f"[{len(rows)}/{len(files)}] {row['problem']}: {mark} {row['reason'][:120]}",
                  flush=True)
    rows.sort(key=lambda r: (r["problem"].split("/")[0],
                             int(r["problem"].split("/")[1].split("_")[0])))
    meta = {"command": "python " + " ".join(shlex.quote(a) for a in sys.argv),
            "target": args.target, "python": platform.python_version(),
            "torch": torch.__version__, "triton": triton.__version__,
            "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "wall_s": time.monotonic() - start}
    md = _markdown(rows, meta)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "sweep.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
        (args.out / "sweep.md").write_text(md)
    print(md.split("\n| problem |")[0])
    return 1 if any(r["crashed"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
