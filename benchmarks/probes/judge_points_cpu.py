"""The whole judge on a point of the offline synthesizer's parameter space, on this machine's CPU:
for every KernelBench file whose plan has the point's parameters, the candidate rendered at the
plan's default with the point over it is checked by ``kernelevolve check --target cpu --json``
(Triton's interpreter, the problem at the cpu target's sizes: correct on the input sets, on
other and larger shapes and values, NaN and infinities as the reference, compiles for a GPU).
A point no search explores by default (an opt-in value, as fp16x3's ``TMA = 2``) is verified
here before a GPU times it.

    python benchmarks/probes/judge_points_cpu.py ../shared/kernelbench/level1 --point '{"TMA": 2}' \\
        --out /tmp/judge_tma2 [--only 69_ 58_] [--timeout 1500]

Writes OUT/judge.json and OUT/judge.md as each problem finishes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from offline_variants_gpu import select_files  # noqa: E402


def rows_for(files: list[Path], point: dict[str, int], out: Path, timeout: float
             ) -> list[dict[str, Any]]:
    from kernelevolve.problem import load_problem
    from kernelevolve.synth.offline import Unsupported, analyze

    rows: list[dict[str, Any]] = []
    for path in files:
        try:
            plan = analyze(load_problem(path))
        except Unsupported:
            continue
        if not set(point) <= set(plan.space):
            continue
        cand = out / f"{path.stem}.cand.py"
        cand.write_text(plan.render({**plan.default_params(), **point}))
        t0 = time.monotonic()
        try:
            done = subprocess.run(["kernelevolve", "check", str(path), str(cand), "--target",
                                   "cpu", "--json"], capture_output=True, text=True,
                                  timeout=timeout)
            result = json.loads(done.stdout)
            row = {"problem": path.stem, "status": result.get("status"),
                   "message": (result.get("message") or "")[:200],
                   "passed": [c["name"] for c in result.get("checks", []) if c.get("passed")]}
        except (subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
            row = {"problem": path.stem, "status": "no result",
                   "message": f"{type(exc).__name__}: {exc}"[:200], "passed": []}
        row["wall_s"] = round(time.monotonic() - t0, 1)
        rows.append(row)
        print(json.dumps(row), flush=True)
        (out / "judge.json").write_text(json.dumps({"point": point, "command": sys.argv,
                                                    "rows": rows}, indent=1))
        (out / "judge.md").write_text(markdown(rows, point))
    return rows


def markdown(rows: list[dict[str, Any]], point: dict[str, int]) -> str:
    lines = [f"# The judge on the cpu target at {json.dumps(point)}", "",
             f"`python benchmarks/probes/judge_points_cpu.py {' '.join(sys.argv[1:])}`", "",
             "| problem | status | checks passed | wall s | message |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['problem']} | {r['status']} | {len(r['passed'])} | {r['wall_s']} | "
                     f"{r['message']} |")
    ok = sum(1 for r in rows if r["status"] == "ok")
    return "\n".join(lines + ["", f"{ok} of {len(rows)} verified."]) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("problems", type=Path)
    ap.add_argument("--point", type=json.loads, required=True,
                    help="parameters over each plan's default, as JSON")
    ap.add_argument("--only", nargs="*", default=None, help="file-name prefixes, e.g. 69_")
    ap.add_argument("--timeout", type=float, default=1500.0, help="seconds a check may take")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows_for(select_files(args.problems, args.only), args.point, args.out, args.timeout)


if __name__ == "__main__":
    main()
