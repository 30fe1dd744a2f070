"""The ATen suite's three-target table: per operator class, verified / unsupported / failed /
crashed on each target, from the ``aten_suite_<target>.json`` files
``benchmarks/suites/aten_suite.py`` wrote (each keeps its own versions, device and command; this
only lays them side by side).

    python benchmarks/suites/aten_targets.py benchmarks/results/aten_suite_{cpu,mtia-sim-2i,cuda}.json \
        --out benchmarks/results/aten_suite_targets.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

COLS = ("verified", "unsupported", "failed", "crashed")


def table(reports: list[dict]) -> str:
    targets = [r["meta"]["target"] for r in reports]
    classes = list(dict.fromkeys(c for r in reports for c in r["summary"]["by_class"]))
    head = "| class | " + " | ".join(targets) + " |"
    lines = [f"Each cell: {' / '.join(COLS)} of the class's problems.", "", head,
             "|---|" + "---|" * len(targets)]
    for cls in [*classes, "all"]:
        cells = []
        for r in reports:
            c = r["summary"]["total"] if cls == "all" else r["summary"]["by_class"].get(cls)
            cells.append("-" if c is None else
                         f"{c['problems']}: " + " / ".join(str(c[k]) for k in COLS))
        name = "**all**" if cls == "all" else cls
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "Where each ran:", ""]
    for r in reports:
        m = r["meta"]
        lines.append(f"- {m['target']}: {m.get('date', '?')}, "
                     + ", ".join(f"{k} {m[k]}" for k in ("python", "torch", "triton", "device")
                                 if k in m)
                     + f": `{m.get('command', '?')}`")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("reports", type=Path, nargs="+")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    reports = [json.loads(p.read_text()) for p in args.reports]
    text = "# ATen suite on three targets (offline synthesizer)\n\n" + table(reports)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
