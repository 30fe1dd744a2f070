"""`kernelevolve bench` over a problem directory, sharded across GPUs: each shard (one process
per GPU, CUDA_VISIBLE_DEVICES set) tunes every N-th problem and writes its outcomes after each
problem; ``--merge`` joins the shards into one report (bench.json, bench.md) with device,
versions and commands.

    CUDA_VISIBLE_DEVICES=0 python benchmarks/suites/bench_gpu.py examples/problems --shard 0/2 \\
        --out /tmp/b
    CUDA_VISIBLE_DEVICES=1 python benchmarks/suites/bench_gpu.py examples/problems --shard 1/2 \\
        --out /tmp/b
    python benchmarks/suites/bench_gpu.py examples/problems --merge --out /tmp/b
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("problems", type=Path)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--target", default="cuda")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--wall", type=float, default=90.0, help="wall budget per problem (s)")
    p.add_argument("--shard", default="0/1")
    p.add_argument("--merge", action="store_true")
    p.add_argument("--llm", default="offline",
                   help="the synthesizer, as `tune --llm` takes it (default: offline)")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)

    import torch
    import triton

    from kernelevolve.bench import (
        ProblemOutcome,
        markdown,
        problem_files,
        summarize,
        synthesizers,
    )
    from kernelevolve.config import load_settings
    from kernelevolve.targets import get_target

    if args.merge:
        shards = [json.loads(f.read_text()) for f in sorted(args.out.glob("shard_*.json"))]
        outcomes = sorted((ProblemOutcome.model_validate(o) for s in shards for o in s["outcomes"]),
                          key=lambda o: o.problem)
        target = get_target(args.target) if args.target != "cuda" else None
        report = summarize(
            outcomes, problems_dir=str(args.problems), target=args.target,
            timed=target.timed if target else True,
            simulated=target.simulated if target else False, synthesizer=synthesizers(outcomes),
            rounds=shards[0]["rounds"], wall_s=max(s["wall_s"] for s in shards))
        meta = {"shards": [s["meta"] for s in shards]}
        (args.out / "bench.json").write_text(json.dumps(
            {**json.loads(report.model_dump_json()), **meta}, indent=1))
        lines = [markdown(report), "", "Shards:"] + [
            f"- `{m['command']}` on {m['device']} (python {m['python']}, torch {m['torch']}, "
            f"triton {m['triton']}), {m['date']}" for m in meta["shards"]]
        (args.out / "bench.md").write_text("\n".join(lines) + "\n")
        print("\n".join(lines))
        return 0

    index, count = (int(x) for x in args.shard.split("/"))
    files = problem_files(args.problems)[index::count]
    settings = load_settings(search={"rounds": args.rounds, "wall_s": args.wall,
                                     "retrieve": False, "distill": False, "warm_start": 0},
                             llm={"model": args.llm})
    from kernelevolve.bench import bench_one

    meta = {"command": "python " + " ".join(shlex.quote(a) for a in sys.argv),
            "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
            "python": platform.python_version(), "torch": torch.__version__,
            "triton": triton.__version__, "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    start = time.monotonic()
    outcomes: list[dict[str, object]] = []
    for path in files:
        print(f"== {path.stem}", file=sys.stderr, flush=True)
        outcome = bench_one(path, target=args.target, settings=settings)
        outcomes.append(json.loads(outcome.model_dump_json()))
        (args.out / f"shard_{index}.json").write_text(json.dumps(
            {"meta": meta, "rounds": args.rounds, "wall_s": time.monotonic() - start,
             "outcomes": outcomes}, indent=1))
        print(outcome.model_dump_json()[:300], file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
