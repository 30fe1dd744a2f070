"""The local LLM (Qwen2.5-Coder on the CPU) through the whole graph on the ``cpu`` target, with and
without knowledge retrieval (KB passages + a worked example of the nearest operator class) and
with and without the Debugger. Per run: whether a verified kernel was found, after how many
rounds and LLM calls, and what the failed candidates failed with.

    python benchmarks/suites/llm_ablation.py --model 0.5b --rounds 2 \\
        --out benchmarks/results/llm_ablation_cpu

The cpu target only verifies, so a run stops at its first verified kernel. Runs are isolated
(their own data directory: no warm starts from earlier runs); one server serves every run.
``--budget-min`` stops starting runs after that many minutes (the table says which did not run).
Problems are the outer loop, so an early stop leaves every configuration with the same problems.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PROBLEMS = ROOT / "examples" / "problems"
DEFAULT_PROBLEMS = ["03_leaky_relu_scale_clamp", "06_rmsnorm", "09_l2_normalize"]
CONFIGS = [("kb+debugger", True, True), ("kb", True, False), ("debugger", False, True),
           ("neither", False, False)]


def versions() -> dict[str, str]:
    import importlib.metadata

    out = {"python": platform.python_version(), "machine": platform.machine(),
           "cpus": str(os.cpu_count())}
    for pkg in ("torch", "triton", "xllamacpp", "langchain-openai", "kernelevolve"):
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            out[pkg] = "missing"
    return out


def run_one(problem: Path, kb: bool, debugger: bool, args: argparse.Namespace, server: Any,
            home: Path) -> dict[str, Any]:
    from kernelevolve.config import load_settings
    from kernelevolve.graph.session import Session
    from kernelevolve.synth.llm.local import MODELS, LocalSynthesizer

    settings = load_settings(
        search={"rounds": args.rounds, "max_repairs": 1 if debugger else 0,
                "retrieve": kb, "distill": False, "warm_start": 0, "seed": args.seed,
                "max_reply_retries": args.reply_retries, "stagnation_rounds": 100},
        llm={"use": "local", "local_model": args.model, "temperature": args.temperature,
             "local_max_tokens": args.max_tokens},
        eval={"n_input_sets": 3}, runs={"dir": str(home / "runs")},
        kb={"path": str(args.kb_path)} if args.kb_path else {})
    synth = LocalSynthesizer(MODELS[args.model], settings.llm, examples=kb, seed=args.seed,
                             server=server)
    t0 = time.perf_counter()
    with Session.create(problem, target="cpu", settings=settings, synthesizer=synth) as session:
        result = session.run()
        tree = session.values()["tree"]
    nodes = [n for n in tree.nodes.values() if n.id != "root"]
    first = min((n for n in nodes if n.ok), key=lambda n: n.id, default=None)
    statuses: dict[str, int] = {}
    for n in nodes:
        statuses[n.status] = statuses.get(n.status, 0) + 1
    return {
        "verified": first is not None,
        "rounds_to_first_verified": first.round if first else None,
        "verified_by": first.origin if first else None,
        "rounds": result.rounds, "candidates": len(nodes),
        "llm_calls": result.usage.llm_calls, "prompt_tokens": result.usage.prompt_tokens,
        "completion_tokens": result.usage.completion_tokens,
        "statuses": statuses,
        "messages": [f"{n.id} ({n.origin}): {n.status}: {n.message[:160]}" for n in nodes
                     if not n.ok],
        "wall_s": round(time.perf_counter() - t0, 1),
        "stop_reason": result.stop_reason,
    }


# How far a candidate got, from nothing to verified (statuses of kernelevolve's harness).
STAGES = {"no_code": "no code", "compile_error": "did not compile", "runtime_error": "raised",
          "crash": "raised", "timeout": "raised", "cheat": "refused as cheat",
          "mismatch": "wrong output", "ok": "verified"}
STAGE_ORDER = ["no code", "did not compile", "raised", "refused as cheat", "wrong output",
               "verified"]


def stages(rows: list[dict[str, Any]]) -> dict[str, int]:
    out = dict.fromkeys(STAGE_ORDER, 0)
    for r in rows:
        for status, n in r.get("statuses", {}).items():
            out[STAGES.get(status, "raised")] += n
    return out


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for name, _, _ in CONFIGS:
        done = [r for r in rows if r["config"] == name and "verified" in r]
        if not done:
            continue
        ok = [r for r in done if r["verified"]]
        cands = sum(r["candidates"] for r in done)
        out.append({
            "config": name, "runs": len(done), "verified_runs": len(ok),
            "verified_rate": round(len(ok) / len(done), 2),
            "verified_candidates": f"{sum(r['statuses'].get('ok', 0) for r in done)}/{cands}",
            "mean_rounds_to_first_verified": round(
                sum(r["rounds_to_first_verified"] for r in ok) / len(ok), 2) if ok else None,
            "llm_calls": sum(r["llm_calls"] for r in done),
            "wall_s": round(sum(r["wall_s"] for r in done), 1),
            "stages": stages(done),
        })
    return out


def markdown(report: dict[str, Any]) -> str:
    lines = [f"# Local LLM ablation on the cpu target ({report['model']['name']})", "",
             f"- command: `{report['command']}`", f"- date: {report['date']}",
             f"- model: {report['model']['name']} Q4_K_M GGUF, sha256 "
             f"`{report['model']['sha256']}`, packages {report['model']['packages']}",
             f"- server: xllamacpp, {report['threads']} thread(s), context "
             f"{report['context']}; temperature {report['temperature']}, seed {report['seed']}, "
             f"max reply {report['max_tokens']} tokens",
             f"- versions: {', '.join(f'{k} {v}' for k, v in report['versions'].items())}",
             f"- machine load (1-min load average) at start / end: {report['load'][0]} / "
             f"{report['load'][1]}", f"- total wall time: {report['wall_s']:.0f} s", "",
             "| config | runs | verified runs | mean rounds to first verified | LLM calls | "
             "wall s | candidates: " + " / ".join(STAGE_ORDER) + " |",
             "|---|---|---|---|---|---|---|"]
    for s in summarise(report["runs"]):
        lines.append(f"| {s['config']} | {s['runs']} | {s['verified_runs']} | "
                     f"{s['mean_rounds_to_first_verified'] or '-'} | {s['llm_calls']} | "
                     f"{s['wall_s']} | {' / '.join(str(v) for v in s['stages'].values())} |")
    lines += ["", "| problem | config | verified | rounds to first | calls | tokens in/out | "
              "statuses | wall s |", "|---|---|---|---|---|---|---|---|"]
    for r in report["runs"]:
        if "verified" not in r:
            lines.append(f"| {r['problem']} | {r['config']} | not run ({r.get('skipped')}) "
                         f"| | | | | |")
            continue
        st = ", ".join(f"{k} {v}" for k, v in sorted(r["statuses"].items()))
        lines.append(f"| {r['problem']} | {r['config']} | {'yes' if r['verified'] else 'no'} | "
                     f"{r['rounds_to_first_verified'] or '-'} | {r['llm_calls']} | "
                     f"{r['prompt_tokens']}/{r['completion_tokens']} | {st} | {r['wall_s']} |")
    return "\n".join(lines) + "\n"


def _out(out: Path, suffix: str) -> Path:
    return out.with_name(out.name + suffix)  # "..._1.5b" keeps its ".5b"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="0.5b", choices=["0.5b", "1.5b"])
    ap.add_argument("--problems", nargs="+", default=DEFAULT_PROBLEMS)
    ap.add_argument("--configs", nargs="+", default=[c[0] for c in CONFIGS])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--reply-retries", type=int, default=0)
    ap.add_argument("--temperature", type=float, default=0.2)
    ap.add_argument("--max-tokens", type=int, default=768)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--budget-min", type=float, default=38.0)
    ap.add_argument("--kb-path", type=Path, default=None,
                    help="an indexed knowledge base (default: one indexed in the run's home)")
    ap.add_argument("--out", type=Path, required=True, help="writes OUT.json and OUT.md")
    ap.add_argument("--render", action="store_true",
                    help="only write OUT.md again from OUT.json (a finished ablation)")
    args = ap.parse_args()
    if args.render:
        _out(args.out, ".md").write_text(
            markdown(json.loads(_out(args.out, ".json").read_text())))
        return

    from kernelevolve.config import LLMConfig
    from kernelevolve.synth.llm.local import (
        CONTEXT_TOKENS,
        MODELS,
        LocalServer,
        install,
        model_file,
    )

    spec = MODELS[args.model]
    models_dir = LLMConfig().resolved_local_dir()  # before KERNELEVOLVE_HOME moves below
    path = install(spec, models_dir)
    home = Path(tempfile.mkdtemp(prefix="llm-ablation-"))
    os.environ["KERNELEVOLVE_HOME"] = str(home)  # runs, run store and KB of this benchmark only
    if any(kb for c, kb, _ in CONFIGS if c in args.configs) and args.kb_path is None:
        from kernelevolve.config import KBConfig
        from kernelevolve.kb import KnowledgeBase

        KnowledgeBase.open(KBConfig())  # index the bundled corpus before the clock starts
    rows: list[dict[str, Any]] = []
    t_start = time.perf_counter()
    load_start = os.getloadavg()[0]
    with LocalServer(model_file(spec, models_dir), threads=args.threads,
                     alias=spec.name) as server:
        for name in args.problems:
            for config, kb, debugger in CONFIGS:
                if config not in args.configs:
                    continue
                row: dict[str, Any] = {"problem": name, "config": config}
                spent = (time.perf_counter() - t_start) / 60
                if spent > args.budget_min:
                    row["skipped"] = f"budget of {args.budget_min:.0f} min spent"
                else:
                    print(f"[{spent:5.1f} min] {name} {config}", file=sys.stderr, flush=True)
                    row.update(run_one(PROBLEMS / f"{name}.py", kb, debugger, args, server, home))
                    print(f"    verified={row['verified']} calls={row['llm_calls']} "
                          f"{row['statuses']} {row['wall_s']} s", file=sys.stderr, flush=True)
                rows.append(row)
        threads = server.threads
    report = {
        "command": shlex.join(["python", *sys.argv]),
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "model": {"key": spec.key, "name": spec.name, "sha256": spec.sha256,
                  "packages": f"{spec.packages[0]}..{spec.packages[-1]} =={spec.version}",
                  "file": str(path)},
        "versions": versions(), "threads": threads, "context": CONTEXT_TOKENS,
        "temperature": args.temperature, "seed": args.seed, "max_tokens": args.max_tokens,
        "rounds": args.rounds, "load": [round(load_start, 2), round(os.getloadavg()[0], 2)],
        "wall_s": round(time.perf_counter() - t_start, 1),
        "summary": summarise(rows), "runs": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    _out(args.out, ".json").write_text(json.dumps(report, indent=1) + "\n")
    _out(args.out, ".md").write_text(markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
