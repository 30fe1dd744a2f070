"""Tune every example problem with the offline synthesizer and record, per problem: whether a
verified kernel was found, its speedup vs eager and vs torch.compile, the time to the first
verified kernel, rounds and candidates; and which problems the offline synthesizer cannot write.

    PYTHONPATH=src python benchmarks/suites/tune_examples.py --target cuda --rounds 4 --out /tmp/tune

On a GPU host, ``--shard I/N`` runs every N-th problem starting at I (one process per GPU with
CUDA_VISIBLE_DEVICES set), and ``--merge`` joins the shards' JSON into one table. No knowledge
base is used (``search.retrieve``/``distill`` off): the offline synthesizer does not read it.
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PROBLEMS = ROOT / "examples" / "problems"


def versions() -> dict[str, str]:
    import torch
    import triton

    out = {"python": platform.python_version(), "torch": torch.__version__,
           "triton": triton.__version__}
    if torch.cuda.is_available():
        out["device"] = torch.cuda.get_device_name(0)
    return out


def tune_one(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    from kernelevolve.config import load_settings
    from kernelevolve.errors import SynthesisError
    from kernelevolve.graph.session import Session

    # The search times candidates against eager only; the best is then re-evaluated with the
    # torch.compile reference (compiling the reference in every evaluation would cost minutes).
    settings = load_settings(
        search={"rounds": args.rounds, "goal": args.goal, "retrieve": False, "distill": False,
                "seed": args.seed, "wall_s": args.wall},
        eval={"compile_reference": False}, runs={"dir": str(args.out / "runs")},
        llm={"use": "offline"})  # the offline synthesizer even where a model is installed
    row: dict[str, Any] = {"problem": path.stem}
    t0 = time.perf_counter()
    try:
        session = Session.create(path, target=args.target, settings=settings)
    except SynthesisError as exc:
        row.update(status="unsupported", reason=str(exc).split(". Configure")[0])
        return row
    with session:
        result = session.run()
        events = session.events()
        statuses = sorted({n.status for n in session.values()["tree"].nodes.values()})
        final = None
        if result.kernel_path:
            from kernelevolve.tools.harness.pool import WorkerPool

            cfg = settings.eval.model_copy(update={"compile_reference": True})
            with WorkerPool(session.target, cfg, workers=1) as pool:
                final = pool.evaluate(session.problem, Path(result.kernel_path))
    if final is not None and final.ok:
        result.best_result = final
        result.best_speedup = final.speedup
        result.best_latency_ms = final.timing.candidate.median_ms if final.timing else None
    first_ok = next((e.at_s for e in events if e.kind == "evaluate" and ": ok" in e.text), None)
    timing = result.best_result.timing if result.best_result else None
    row.update(
        status="verified" if result.best_node else "no verified kernel",
        best=result.best_node, speedup_vs_eager=result.best_speedup,
        speedup_vs_compiled=timing.speedup_vs_compiled if timing else None,
        latency_ms=result.best_latency_ms,
        eager_ms=timing.eager.median_ms if timing else None,
        compiled_ms=timing.compiled.median_ms if timing and timing.compiled else None,
        simulated=result.simulated, first_verified_s=first_ok, rounds=result.rounds,
        candidates=result.candidates, verified=result.verified,
        wall_s=time.perf_counter() - t0, stop_reason=result.stop_reason,
        final_status=final.status.value if final is not None else None,
        statuses=statuses,
        plans=[e.text for e in events if e.kind == "plan"],
        diagnoses=[e.text for e in events if e.kind == "evaluate"],
        run_dir=result.run_dir)
    return row


def render(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [f"# Offline synthesizer on the example problems ({meta['target']})", "",
             f"- versions: {json.dumps(meta['versions'])}", f"- command: `{meta['command']}`",
             f"- date: {meta['date']}", "",
             "| problem | result | speedup vs eager | vs torch.compile | best ms | eager ms | "
             "first verified (s) | rounds | candidates (verified) | wall s |",
             "|---|---|---|---|---|---|---|---|---|---|"]

    def f(v: Any, fmt: str = ".2f") -> str:
        return "" if v is None else format(v, fmt)

    for r in sorted(rows, key=lambda r: r["problem"]):
        if r["status"] in ("unsupported", "harness error"):
            label = "offline: " if r["status"] == "unsupported" else "harness error: "
            lines.append(f"| {r['problem']} | {label}{r['reason'][:90]} |  |  |  |  |  |  |  |  |")
            continue
        lines.append(
            f"| {r['problem']} | {r['status']} | {f(r['speedup_vs_eager'])} | "
            f"{f(r['speedup_vs_compiled'])} | {f(r['latency_ms'], '.4f')} | "
            f"{f(r['eager_ms'], '.4f')} | {f(r['first_verified_s'], '.1f')} | {r['rounds']} | "
            f"{r['candidates']} ({r['verified']}) | {f(r['wall_s'], '.0f')} |")
    tried = [r for r in rows if r["status"] != "unsupported"]
    ok = [r for r in tried if r["status"] == "verified"]
    lines += ["", f"{len(ok)} of {len(tried)} problems the offline synthesizer writes reached a "
              f"verified kernel ({len(rows) - len(tried)} unsupported)."]
    return "\n".join(lines) + "\n"


def write(args: argparse.Namespace, meta: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    name = "tune" if args.shard == "0/1" or args.merge else f"tune_{args.shard.replace('/', 'of')}"
    (args.out / f"{name}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1,
                                                      default=str))
    (args.out / f"{name}.md").write_text(render(rows, meta))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--target", default=None)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--goal", type=float, default=100.0, help="high: spend the whole budget")
    p.add_argument("--wall", type=float, default=3600.0, help="wall-clock budget per problem")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--only", nargs="*", default=None, help="problem stems")
    p.add_argument("--shard", default="0/1", help="I/N: every N-th problem from the I-th")
    p.add_argument("--merge", nargs="*", type=Path, default=None,
                   help="join these shard JSON files into --out instead of running")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.merge:
        parts = [json.loads(m.read_text()) for m in args.merge]
        meta, rows = parts[0]["meta"], [r for part in parts for r in part["rows"]]
        meta["shards"] = [part["meta"]["command"] for part in parts]
    else:
        index, count = (int(x) for x in args.shard.split("/"))
        paths = sorted(PROBLEMS.glob("[0-9]*.py"))
        paths = [q for q in paths if not args.only or q.stem in args.only][index::count]
        meta = {"target": args.target or "default", "versions": versions(),
                "command": "python " + " ".join(shlex.quote(a) for a in sys.argv),
                "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
        rows = []
        for q in paths:
            print(f"== {q.stem}", file=sys.stderr, flush=True)
            try:
                rows.append(tune_one(q, args))
            except Exception as exc:  # recorded; the other problems still run
                rows.append({"problem": q.stem, "status": "harness error",
                             "reason": f"{type(exc).__name__}: {exc}"[:300]})
            print(json.dumps(rows[-1], default=str)[:400], file=sys.stderr, flush=True)
            write(args, meta, rows)  # after each problem: a cut-off run keeps what it did
    write(args, meta, rows)
    print(render(rows, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
