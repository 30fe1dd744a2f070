"""Run the issue-47 red team through the real judge and write RESULTS.md.

Every ``cases/*.py`` names its problem, expectation, class and targets in a module-level dict
``CASE = {"problem": "problems/x.py", "expect": "refused" | "accepted", "class": "...",
"targets": ["cpu", ...]}`` (read with ``ast.literal_eval``: the case is never imported here).
Each (case, target) pair runs as ``kernelevolve check PROBLEM CASE --target T --json`` in its own
subprocess, at most two at a time (OMP_NUM_THREADS=1), and the verdict is compared with the
expectation: a cheat must get any status but ``ok``; an honest kernel must get ``ok``.

    python tests/adversarial/redteam47/run_redteam.py            # every case, every target
    python tests/adversarial/redteam47/run_redteam.py c1a h02    # cases whose name starts so
    python tests/adversarial/redteam47/run_redteam.py --jobs 1 --timeout 400
    python tests/adversarial/redteam47/run_redteam.py --merge c4     # rerun c4*, keep the rest
    python tests/adversarial/redteam47/run_redteam.py --merge --rerun-matching "keeps a ref"
    python tests/adversarial/redteam47/run_redteam.py --target cuda --jobs 4 --out DIR  # a GPU

``--target T`` runs every case once on T, whatever targets it lists (on a GPU host: the classes
the interpreter cannot show, timing and races, meet the real device); ``--out DIR`` writes the
results there instead of beside this file.

``--merge`` keeps the other runs' verdicts from the last results.json (the judge is edited
concurrently: a run that hit a half-edited judge can be run again alone);
``--rerun-matching TEXT`` reruns the runs whose last message contains TEXT.

Writes RESULTS.md (the table, the holes, the honest kernels refused) and results.json (every
verdict's status, message, flags and stage times) beside this file.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures as cf
import hashlib
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
SRC = HERE.parents[2] / "src" / "kernelevolve"
# The judge is edited while this runs: each run records a digest of these sources at its start
# and end, so a verdict can be tied to the judge that gave it.
JUDGE_FILES = ("tools/harness/*.py", "tools/harness/judge/*.py", "problem.py",
               "tools/mtia/*.py")


def judge_digest() -> str:
    h = hashlib.sha256()
    for pattern in JUDGE_FILES:
        for path in sorted(SRC.glob(pattern)):
            h.update(path.name.encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:8]


@dataclass(frozen=True)
class Run:
    case: str
    klass: str
    problem: Path
    expect: str
    target: str
    trick: str

    @property
    def path(self) -> Path:
        return CASES / f"{self.case}.py"


def load_case(path: Path) -> tuple[dict, str]:
    tree = ast.parse(path.read_text())
    doc = ast.get_docstring(tree) or ""
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "CASE"):
            return ast.literal_eval(node.value), " ".join(doc.split())
    raise ValueError(f"{path} has no module-level CASE dict")


def discover(prefixes: list[str], only: str = "") -> list[Run]:
    runs = []
    for path in sorted(CASES.glob("*.py")):
        if prefixes and not any(path.stem.startswith(p) for p in prefixes):
            continue
        case, doc = load_case(path)
        for target in [only] if only else case.get("targets", ["cpu"]):
            runs.append(Run(path.stem, case.get("class", "?"), HERE / case["problem"],
                            case["expect"], target, doc))
    return runs


def run_one(run: Run, timeout: float) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = ["kernelevolve", "check", str(run.problem), str(run.path), "--target", run.target,
           "--json"]
    t0 = time.perf_counter()
    before = judge_digest()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                              cwd=HERE)
    except subprocess.TimeoutExpired:
        return {"status": "runner-timeout", "message": f"no verdict within {timeout:.0f} s",
                "wall_s": time.perf_counter() - t0, "judge": before}
    wall = time.perf_counter() - t0
    after = judge_digest()
    judge = before if before == after else f"{before}->{after}"
    text = proc.stdout
    start = text.find("{")
    try:
        result = json.loads(text[start:]) if start >= 0 else None
    except json.JSONDecodeError:
        result = None
    if not isinstance(result, dict) or "status" not in result:
        tail = (proc.stderr or proc.stdout)[-400:]
        return {"status": "runner-error", "message": f"exit {proc.returncode}: {tail}",
                "wall_s": wall, "judge": judge}
    return {"status": result["status"], "message": result.get("message", ""),
            "flags": result.get("flags", []), "stages": result.get("stages", {}),
            "aten_ops": result.get("aten_ops", []),
            "kernel_launches": result.get("kernel_launches"), "wall_s": wall, "judge": judge}


def passed(run: Run, status: str) -> bool:
    return status == "ok" if run.expect == "accepted" else status != "ok"


def one_line(text: str, limit: int = 150) -> str:
    flat = " ".join(str(text).split()).replace("|", "\\|")
    return flat[:limit]


def write_results(runs: list[Run], results: dict[tuple[str, str], dict], total_s: float,
                  jobs: int = 2, out: Path = HERE) -> None:
    rows = []
    for r in runs:
        res = results[(r.case, r.target)]
        rows.append((r, res))
    holes = [(r, res) for r, res in rows if r.expect == "refused" and res["status"] == "ok"]
    false_refusals = [(r, res) for r, res in rows if r.expect == "accepted"
                      and res["status"] != "ok"]
    cheats = sum(r.expect == "refused" for r, _ in rows)
    honest = sum(r.expect == "accepted" for r, _ in rows)
    lines = [
        "# Red team for issue 47: results",
        "",
        f"Generated by `run_redteam.py` on {time.strftime('%Y-%m-%d %H:%M')} "
        f"({len(rows)} runs, {jobs} at a time; this invocation {total_s / 60:.1f} min, the runs' wall "
        f"times add up to {sum(res.get('wall_s', 0) for _, res in rows) / 60:.1f} min). Each row is "
        "`kernelevolve check PROBLEM CASE --target T --json`. *expected*: a cheat must be "
        "refused (any status but `ok`), an honest kernel accepted (`ok`). **HOLE** marks a cheat "
        "judged `ok`; **FALSE REFUSAL** an honest kernel refused.",
        "",
        f"- cheats judged `ok` (holes): **{len(holes)} of {cheats}** runs",
        f"- honest kernels refused: **{len(false_refusals)} of {honest}** runs",
        "",
        "*judge*: a digest of the judge's sources (src/kernelevolve/tools/harness, problem.py, "
        "tools/mtia) when the run started (`a->b`: they changed while it ran); the judge is "
        "edited concurrently, so rows with different digests saw different judges.",
        "",
        "| case | class | target | expected | verdict | judge | message (first 150 chars) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r, res in rows:
        mark = ""
        if r.expect == "refused" and res["status"] == "ok":
            mark = " **HOLE**"
        elif r.expect == "accepted" and res["status"] != "ok":
            mark = " **FALSE REFUSAL**"
        expected = "cheat refused" if r.expect == "refused" else "honest: ok"
        msg = res.get("message", "")
        if res["status"] == "ok" and res.get("flags"):
            msg = f"{msg}; flags: {' / '.join(res['flags'])}"
        lines.append(f"| {r.case} | {r.klass} | {r.target} | {expected} | "
                     f"`{res['status']}`{mark} | {res.get('judge', '?')} | {one_line(msg)} |")
    lines += ["", "## The tricks", ""]
    seen = set()
    for r, _ in rows:
        if r.case in seen:
            continue
        seen.add(r.case)
        lines.append(f"- **{r.case}** ({r.problem.name}): {r.trick}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "RESULTS.md").write_text("\n".join(lines) + "\n")
    (out / "results.json").write_text(json.dumps(
        [{"case": r.case, "class": r.klass, "target": r.target, "expect": r.expect,
          "problem": r.problem.name, **res} for r, res in rows], indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("prefixes", nargs="*", help="run only cases whose name starts so")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=400.0)
    parser.add_argument("--merge", action="store_true",
                        help="keep the verdicts of runs not rerun from the last results.json")
    parser.add_argument("--rerun-matching", default="",
                        help="rerun only runs whose last message contains this text")
    parser.add_argument("--target", default="",
                        help="run every case once on this target instead of the ones it lists")
    parser.add_argument("--out", type=Path, default=HERE,
                        help="write RESULTS.md and results.json here (default: beside this file)")
    args = parser.parse_args()
    everything = discover([], args.target)
    previous: dict[tuple[str, str], dict] = {}
    if (args.merge or args.rerun_matching) and (args.out / "results.json").exists():
        for row in json.loads((args.out / "results.json").read_text()):
            keep = {k: v for k, v in row.items()
                    if k not in ("case", "class", "target", "expect", "problem")}
            previous[(row["case"], row["target"])] = keep
    runs = discover(args.prefixes, args.target)
    if args.rerun_matching:
        runs = [r for r in runs if args.rerun_matching in
                previous.get((r.case, r.target), {}).get("message", args.rerun_matching)]
    # The slow ones (mtia-sim, C++ builds) first, so two workers finish together.
    order = sorted(runs, key=lambda r: (not r.target.startswith("mtia"), "cpp" not in r.case))
    results: dict[tuple[str, str], dict] = {}
    if previous:
        results.update({(r.case, r.target): previous[(r.case, r.target)] for r in everything
                        if (r.case, r.target) in previous})
    t0 = time.perf_counter()
    jobs = max(1, args.jobs)
    with cf.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_one, r, args.timeout): r for r in order}
        for fut in cf.as_completed(futures):
            r = futures[fut]
            res = fut.result()
            results[(r.case, r.target)] = res
            verdict = "pass" if passed(r, res["status"]) else (
                "HOLE" if r.expect == "refused" else "FALSE REFUSAL")
            print(f"[{time.perf_counter() - t0:6.0f}s] {r.case:40s} {r.target:12s} "
                  f"{res['status']:14s} {verdict:13s} {res['wall_s']:5.0f}s "
                  f"{one_line(res.get('message', ''), 90)}", flush=True)
    shown = [r for r in everything if (r.case, r.target) in results] if previous else runs
    write_results(shown, results, time.perf_counter() - t0, jobs, args.out)
    print(f"wrote {args.out / 'RESULTS.md'}", file=sys.stderr)


if __name__ == "__main__":
    main()
