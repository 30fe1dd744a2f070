"""Run the ATen operator suite (``kernelevolve aten generate``) on one target with a short
tuning budget, and report per target and per operator class: loaded, verified, unsupported (the
synthesizer cannot write the operator, with its reason), failed (candidates written, none
verified, with the first failure) and crashed (the project itself failed on the problem: an
exception out of load or tune, a harness crash inside an evaluation, a hang or a dead process).
The target is 0 crashed: every problem reaches a clean end.

Each problem runs in its own process group (a crash or hang costs that problem only and is
killed with all its workers), ``--jobs`` at a time; the results are rewritten after every
problem, so a run cut short keeps what finished and ``--resume`` continues it.

    python benchmarks/suites/aten_suite.py --target cpu --suite /tmp/aten --rounds 1
    python benchmarks/suites/aten_suite.py --target mtia-sim:2i --suite /tmp/aten --rounds 1
    python benchmarks/suites/aten_suite.py --target cuda --suite /tmp/aten --rounds 2 --jobs 1
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import multiprocessing
import os
import platform
import shlex
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

STATUSES = ("verified", "unsupported", "failed", "crashed")


def _first_line(text: str, limit: int = 240) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[:limit - 3] + "..."


def run_one(path: str, target: str, rounds: int, wall_s: float, eval_timeout_s: float,
            data_dir: str, llm: str) -> dict[str, Any]:
    """Load and tune one problem; never raises: the outcome is the row's ``status``."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ["KERNELEVOLVE_HOME"] = data_dir
    p = Path(path)
    row: dict[str, Any] = {"problem": p.stem, "loaded": False, "status": "crashed",
                           "reason": "", "statuses": {}, "synthesizer": None, "wall_s": 0.0}
    start = time.monotonic()
    stage = "import"
    try:
        from kernelevolve.bench import bench_one
        from kernelevolve.config import load_settings
        from kernelevolve.errors import KernelEvolveError
        from kernelevolve.graph.session import read_run
        from kernelevolve.problem import load_problem
        from kernelevolve.synth import offline

        stage = "load"
        try:
            problem = load_problem(p)
        except KernelEvolveError as exc:
            row["status"], row["reason"] = "failed", f"does not load: {_first_line(str(exc))}"
            return row
        row["loaded"] = True
        if llm == "offline":
            stage = "analyze"
            try:
                offline.analyze(problem)
            except offline.Unsupported as exc:
                row["status"], row["reason"] = "unsupported", _first_line(str(exc))
                return row
        stage = "tune"
        settings = load_settings(
            search={"rounds": rounds, "wall_s": wall_s, "retrieve": False, "distill": False,
                    "warm_start": 0},
            llm={"model": llm}, eval={"timeout_s": eval_timeout_s},
            runs={"dir": str(Path(data_dir) / "runs")},
            store={"path": str(Path(data_dir) / "store.sqlite")})
        outcome = bench_one(p, target=target, settings=settings)
        row["synthesizer"] = outcome.synthesizer
        row["speedup_vs_eager"] = outcome.speedup_vs_eager  # (None where not timed)
        row["speedup_vs_compiled"] = outcome.speedup_vs_compiled
        nodes = []
        if outcome.run_dir:
            state = read_run(outcome.run_dir).values or {}
            tree = state.get("tree")
            nodes = [n for n in (tree.nodes.values() if tree else []) if n.origin != "root"]
            row["statuses"] = dict(Counter(n.status for n in nodes))
        crashes = [n for n in nodes if n.status == "crash"]
        if crashes:
            row["status"] = "crashed"
            row["reason"] = f"harness crash: {_first_line(crashes[0].message)}"
        elif outcome.correct:
            row["status"] = "verified"
        elif outcome.reason.startswith("SynthesisError"):
            row["status"], row["reason"] = "unsupported", _first_line(outcome.reason)
        elif outcome.reason.startswith("internal error"):
            row["status"], row["reason"] = "crashed", _first_line(outcome.reason)
        else:
            failed = [n for n in nodes if n.status not in ("ok", "pending")]
            row["status"] = "failed"
            row["reason"] = (f"{failed[0].status}: {_first_line(failed[0].message)}"
                             if failed else _first_line(outcome.reason))
    except Exception as exc:  # the benchmark's boundary: the project failed on this problem
        row["status"] = "crashed"
        row["reason"] = f"{stage} raised {type(exc).__name__}: {_first_line(str(exc))}"
        row["traceback"] = traceback.format_exc()[-3000:]
    finally:
        row["wall_s"] = round(time.monotonic() - start, 1)
    return row


def _child(conn: Any, args: tuple[Any, ...]) -> None:
    os.setsid()  # its own process group: a timeout kills the problem's workers with it
    conn.send(run_one(*args))
    conn.close()


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _versions(target: str) -> dict[str, Any]:
    import torch
    import triton

    import kernelevolve

    device = f"{platform.machine()} CPU, {os.cpu_count()} cores"
    if target == "cuda" and torch.cuda.is_available():
        device = f"{torch.cuda.get_device_name(0)} (CUDA {torch.version.cuda}), {device}"
    return {"python": platform.python_version(), "torch": torch.__version__,
            "triton": triton.__version__, "kernelevolve": kernelevolve.__version__,
            "device": device}


def _counts(rows: list[dict[str, Any]]) -> dict[str, Any]:
    c = Counter(r["status"] for r in rows)
    speedups = [r["speedup_vs_eager"] for r in rows
                if r["status"] == "verified" and r.get("speedup_vs_eager")]
    geomean = (math.exp(sum(math.log(v) for v in speedups) / len(speedups))
               if speedups else None)
    return {"problems": len(rows), "loaded": sum(1 for r in rows if r["loaded"]),
            **{s: c.get(s, 0) for s in STATUSES}, "geomean_speedup_vs_eager": geomean,
            "n_timed": len(speedups)}


def summarize(rows: list[dict[str, Any]], classes: list[str]) -> dict[str, Any]:
    by_class = {cls: _counts([r for r in rows if r["op_class"] == cls]) for cls in classes}
    reasons = Counter(r["reason"].split(":")[0][:120] for r in rows
                      if r["status"] == "unsupported")
    return {"total": _counts(rows), "by_class": {k: v for k, v in by_class.items()
                                                  if v["problems"]},
            "unsupported_reasons": reasons.most_common(15)}


def markdown(report: dict[str, Any]) -> str:
    meta, summary = report["meta"], report["summary"]
    cols = ("problems", "loaded", *STATUSES)
    timed = summary["total"]["n_timed"] > 0
    sim = " (simulated)" if meta["target"].startswith("mtia-sim") else ""

    def cells(counts: dict[str, Any]) -> str:
        out = [str(counts[c]) for c in cols]
        if timed:
            g = counts["geomean_speedup_vs_eager"]
            out.append(f"{g:.2f}x over {counts['n_timed']}" if g else "-")
        return " | ".join(out)

    head = " | ".join(cols) + (f" | geomean speedup vs eager{sim}" if timed else "")
    rule = "|---" * (len(cols) + 1 + (1 if timed else 0)) + "|"
    lines = [f"# ATen suite on {meta['target']} ({meta['synthesizer']} synthesizer)", "",
             f"`{meta['command']}`", "",
             f"{meta['date']}; kernelevolve {meta['kernelevolve']}, python {meta['python']}, "
             f"torch {meta['torch']}, triton {meta['triton']}; device: {meta['device']}. "
             f"Suite: {meta['suite_problems']} problems ({meta['suite_ops']} operators) "
             f"generated from torch {meta['suite_torch']}'s OpInfo database; this run: "
             f"{summary['total']['problems']} of them, {meta['rounds']} round(s) each, "
             f"{meta['wall_s']:.0f} s in all.", "",
             f"| target | {head} |", rule, f"| {meta['target']} | {cells(summary['total'])} |",
             "", f"| class | {head} |", rule]
    for cls, counts in summary["by_class"].items():
        lines.append(f"| {cls} | {cells(counts)} |")
    if summary["unsupported_reasons"]:
        lines += ["", "Unsupported, by reason:", ""]
        lines += [f"- {n} x {reason}" for reason, n in summary["unsupported_reasons"]]
    lines += ["", "| problem | op | class | status | vs eager | candidates | wall s | reason |",
              "|---|---|---|---|---|---|---|---|"]
    for r in report["rows"]:
        cands = ", ".join(f"{k} {v}" for k, v in sorted(r["statuses"].items())) or "-"
        reason = r["reason"].replace("|", "/")
        x = r.get("speedup_vs_eager")
        lines.append(f"| {r['problem']} | {r['op']} | {r['op_class']} | {r['status']} | "
                     f"{f'{x:.2f}x' if x else '-'} | {cands} | {r['wall_s']} | {reason} |")
    return "\n".join(lines) + "\n"


def ops_markdown(suite: Any) -> str:
    """The suite's operator list: per class, each problem's op, sample, structure and sizes,
    then every operator left out with its reason."""
    lines = ["# The ATen suite's operators", "",
             f"Generated from PyTorch {suite.torch_version}'s OpInfo database by kernelevolve "
             f"{suite.kernelevolve_version} ({suite.created}), dtype {suite.dtype}: "
             f"{len(suite.problems)} problems from {len({p.op for p in suite.problems})} "
             f"operators; {len(suite.skipped)} operators left out.", "",
             "| class | problems |", "|---|---|"]
    lines += [f"| {cls} | {n} |" for cls, n in suite.classes().items() if n]
    lines += ["", "| class | operator | file | sample | structure | sizes |",
              "|---|---|---|---|---|---|"]
    for p in sorted(suite.problems, key=lambda p: (list(suite.classes()).index(p.op_class)
                                                   if p.op_class in suite.classes() else 99,
                                                   p.op)):
        sizes = ", ".join(f"{k}={v}" for k, v in p.sizes.items()) or "as sampled"
        sample = f"{p.sample} of {p.n_samples}" + (" (non-contiguous)" if p.noncontiguous
                                                   else "")
        lines.append(f"| {p.op_class} | `{p.op}` | {p.file} | {sample} | "
                     f"{', '.join(p.structure) or '-'} | {sizes} |")
    lines += ["", "## Left out", "", "| operator | reason |", "|---|---|"]
    lines += [f"| `{s.op}` | {s.reason.replace('|', '/')} |"
              for s in sorted(suite.skipped, key=lambda s: s.op)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", required=True, help="cpu, mtia-sim:2i or cuda")
    ap.add_argument("--suite", type=Path,
                    help="the suite's directory: used when it has suite.json, else generated "
                         "there (default: generated into a temporary directory)")
    ap.add_argument("--ops", nargs="*", default=None,
                    help="generate these OpInfo names instead of the curated list")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--samples", type=int, default=1, help="problems per operator")
    ap.add_argument("--classes", nargs="*", default=None, help="run only these classes")
    ap.add_argument("--limit", type=int, default=None, help="run only the first N problems")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--wall", type=float, default=120.0, help="tune's wall budget (s)")
    ap.add_argument("--eval-timeout", type=float, default=180.0,
                    help="one evaluation's limit (s); longer is a timeout verdict")
    ap.add_argument("--timeout", type=float, default=600.0,
                    help="a problem that takes longer is killed and counted as crashed (hung)")
    ap.add_argument("--jobs", type=int, default=None,
                    help="problems at once (default 2 on cpu targets, 1 on cuda)")
    ap.add_argument("--llm", default="offline", help="the synthesizer (default offline)")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results"),
                    help="writes aten_suite_<target>.json and .md here")
    ap.add_argument("--resume", action="store_true",
                    help="keep the rows of an earlier run's JSON and run only the others "
                         "(crashed ones again)")
    args = ap.parse_args(argv)

    from kernelevolve.aten.generate import generate_suite, read_suite
    from kernelevolve.aten.ops import CLASSES
    from kernelevolve.targets import get_target

    target = get_target(args.target).name  # a clear error for an unknown or absent target
    suite_dir = args.suite or Path(tempfile.mkdtemp(prefix="kernelevolve-aten-"))
    if (suite_dir / "suite.json").is_file():
        suite = read_suite(suite_dir)
    else:
        print(f"generating the suite into {suite_dir} ...", flush=True)
        suite = generate_suite(suite_dir, ops=args.ops, dtype=args.dtype, samples=args.samples)
    problems = [p for p in suite.problems if not args.classes or p.op_class in args.classes]
    # round-robin over the classes, so a run cut short (or --limit) still covers every class
    queues: dict[str, list[Any]] = {}
    for p in problems:
        queues.setdefault(p.op_class, []).append(p)
    problems = [q[i] for i in range(max(map(len, queues.values()), default=0))
                for q in queues.values() if i < len(q)]
    problems = problems[:args.limit] if args.limit else problems
    stem = "aten_suite_" + target.replace(":", "-")
    json_path, md_path = args.out / f"{stem}.json", args.out / f"{stem}.md"
    rows: list[dict[str, Any]] = []
    earlier_s = 0.0
    if args.resume and json_path.is_file():
        earlier = json.loads(json_path.read_text())
        in_suite = {Path(p.file).stem for p in suite.problems}
        rows = [r for r in earlier["rows"]  # (crashed ones run again)
                if r["status"] != "crashed" and r["problem"] in in_suite]
        earlier_s = earlier["meta"]["wall_s"]
    done = {r["problem"] for r in rows}
    todo = [p for p in problems if Path(p.file).stem not in done]
    jobs = args.jobs or (1 if target == "cuda" else 2)
    data_dir = tempfile.mkdtemp(prefix="kernelevolve-aten-run-")
    meta = {"command": "python " + " ".join(shlex.quote(a) for a in (argv or sys.argv)),
            "target": target, "synthesizer": args.llm, "rounds": args.rounds,
            "suite_dir": str(suite_dir), "suite_problems": len(suite.problems),
            "suite_ops": len({p.op for p in suite.problems}), "suite_torch": suite.torch_version,
            "suite_skipped_ops": len(suite.skipped), **_versions(target)}
    start = time.monotonic()

    def write() -> dict[str, Any]:
        by_file = {Path(p.file).stem: i for i, p in enumerate(suite.problems)}
        rows.sort(key=lambda r: by_file.get(r["problem"], len(by_file)))
        report = {"meta": {**meta, "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
                           "wall_s": earlier_s + time.monotonic() - start},
                  "summary": summarize(rows, list(CLASSES) + ["uncurated"]), "rows": rows}
        args.out.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(report, indent=1))
        md_path.write_text(markdown(report))
        return report

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "aten_suite_ops.md").write_text(ops_markdown(suite))
    ctx = multiprocessing.get_context("spawn")
    running: list[tuple[Any, Any, Any, float]] = []
    queue = list(todo)
    while queue or running:
        while queue and len(running) < jobs:
            p = queue.pop(0)
            recv, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_child, args=(send, (
                str(suite_dir / p.file), target, args.rounds, args.wall, args.eval_timeout,
                data_dir, args.llm)))
            proc.start()
            send.close()
            running.append((proc, recv, p, time.monotonic()))
        time.sleep(0.2)
        for item in list(running):
            proc, recv, p, began = item
            row: dict[str, Any] | None = None
            if recv.poll():
                try:
                    row = recv.recv()
                except EOFError:
                    row = None
                proc.join(30)
                if row is None:
                    row = {"problem": Path(p.file).stem, "loaded": False, "status": "crashed",
                           "reason": f"the problem's process died (exit code {proc.exitcode})",
                           "statuses": {}, "synthesizer": None,
                           "wall_s": round(time.monotonic() - began, 1)}
            elif not proc.is_alive():
                row = {"problem": Path(p.file).stem, "loaded": False, "status": "crashed",
                       "reason": f"the problem's process died (exit code {proc.exitcode})",
                       "statuses": {}, "synthesizer": None,
                       "wall_s": round(time.monotonic() - began, 1)}
            elif time.monotonic() - began > args.timeout:
                _kill_group(proc.pid)
                proc.join(10)
                row = {"problem": Path(p.file).stem, "loaded": False, "status": "crashed",
                       "reason": f"hung: killed after {args.timeout:.0f} s", "statuses": {},
                       "synthesizer": None, "wall_s": round(time.monotonic() - began, 1)}
            if row is None:
                continue
            _kill_group(proc.pid)  # workers the problem's run left behind
            running.remove(item)
            recv.close()
            row.update(op=p.op, op_class=p.op_class)
            rows.append(row)
            print(f"[{len(rows)}/{len(problems)}] {row['problem']}: {row['status']} "
                  f"{row['wall_s']} s {row['reason'][:110]}", flush=True)
            write()
    report = write()
    print(markdown(report).split("\n| problem |")[0])
    return 1 if report["summary"]["total"]["crashed"] else 0


if __name__ == "__main__":
    sys.exit(main())
