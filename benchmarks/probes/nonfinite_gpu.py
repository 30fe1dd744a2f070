"""Do the offline synthesizer's default kernels keep the reference's NaN and infinities? On the
GPU, at KernelBench's own sizes: each problem's default kernel and its reference on one input
set with a few NaN values and one with a few +inf and -inf (the judge's own
``compare.with_nonfinite``), compared
by the judge's ``compare_outputs`` (a NaN or infinity passes only where the reference has the
same value at the same place; where the fp32 reference's NaN and infinities differ from its
float64 run's, as cuDNN's FFT convolutions spread them, float64's decide). The same check ``eval.nonfinite`` runs in every verdict; this
sweep measures it over a whole level in one call, without timing, to see which templates lose a
NaN (``tl.maximum`` drops one by default) or make one (inf - inf in a 3xTF32 split).

    python benchmarks/probes/nonfinite_gpu.py ../shared/kernelbench/level1 --out /tmp/nonfinite \\
        [--only 1_ 23_] [--shard 0/3]

Writes ``nonfinite.json`` and ``nonfinite.md`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).parent))
from offline_variants_gpu import _import, _to, run_meta, select_files  # noqa: E402


def one(path: Path, seed: int) -> dict[str, Any]:
    from kernelevolve.problem import call_factory, load_problem
    from kernelevolve.synth.offline.analyze import analyze
    from kernelevolve.synth.offline.plan import Unsupported
    from kernelevolve.tools.harness.compare import (
        INF_VALUES,
        NAN_VALUES,
        compare_outputs,
        nonfinite_from_truth,
        with_nonfinite,
    )

    row: dict[str, Any] = {"problem": path.stem}
    problem = load_problem(path)
    try:
        plan = analyze(problem)
    except Unsupported as exc:
        row["unsupported"] = str(exc)
        return row
    row["operator_class"] = plan.operator_class
    params = plan.default_params()
    row["params"] = params
    module, model, _ = problem.instantiate(seed=0)
    model = model.cuda()
    torch.manual_seed(seed)
    with torch.device("cuda"):
        inputs = _to(call_factory(module, "get_inputs", path))
    gen = torch.Generator().manual_seed(seed)
    sets = {"finite": inputs}
    for label, values in (("nan", NAN_VALUES), ("inf", INF_VALUES)):
        sets[label] = [with_nonfinite(t, gen, values) if isinstance(t, torch.Tensor)
                       and t.dtype.is_floating_point and t.numel() else t for t in inputs]
    mod = _import(plan.render(params), f"nf_{path.stem.split('_')[0]}")
    cand = mod.ModelNew(*call_factory(module, "get_init_inputs", path)).cuda()
    cand.load_state_dict(model.state_dict())
    with torch.no_grad():
        for label, values in sets.items():
            try:
                expected = model(*values)
                out = cand(*values)
                torch.cuda.synchronize()
                _, why = compare_outputs(expected, out)
                if why and ("NaN/Inf" in why or "scaled to the output" in why):
                    # as the judge: the float64 reference's error allows for the fp32
                    # reference's own (a cancellation), and its NaN and infinities decide where
                    # the fp32 reference's algorithm spread them
                    exact = model.double()(*_to(values, torch.float64))
                    model.float()
                    merged, spread = nonfinite_from_truth(expected, exact)
                    if spread:
                        row[f"{label}_spread"] = spread
                    _, why = compare_outputs(merged, out, truth=exact)
                    del exact, merged
            except Exception as exc:
                why = f"{type(exc).__name__}: {exc}"[:300]
            row[label] = why is None
            row[f"{label}_why"] = why
            del values
    del inputs, sets
    torch.cuda.empty_cache()
    return row


def markdown(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    judged = [r for r in rows if r.get("finite")]
    nan = [r for r in judged if r.get("nan")]
    inf = [r for r in judged if r.get("inf")]
    lines = [
        "# NaN and infinities through the offline synthesizer's default kernels", "",
        f"`{meta['command']}`; {meta['device']}, torch {meta['torch']}, Triton "
        f"{meta['triton']}, Python {meta['python']}, {meta['date']}.", "",
        f"Of {len(judged)} default kernels correct on finite inputs ({len(rows)} problems): "
        f"**{len(nan)} keep the reference's NaN**, **{len(inf)} its infinities** (and the NaN "
        f"they make).", "",
        "| problem | class | finite inputs | NaN | infinities | why |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "unsupported" in r:
            lines.append(f"| {r['problem']} | - | - | - | - | unsupported: "
                         f"{r['unsupported'][:80]} |")
            continue
        why = "; ".join([f"{k}: {r[k + '_why']}" for k in ("finite", "nan", "inf")
                         if r.get(k + "_why")] + [f"{k}: {r[k + '_spread']} elements where the "
                                                  f"fp32 reference spreads them"
                                                  for k in ("nan", "inf") if r.get(k + "_spread")])
        lines.append(f"| {r['problem']} | {r.get('operator_class', '-')} | "
                     + " | ".join("yes" if r.get(k) else "no" for k in ("finite", "nan", "inf"))
                     + f" | {why.replace('|', '/')[:240]} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("problems", type=Path)
    ap.add_argument("--only", nargs="*", default=None, help="file-name prefixes, e.g. 1_ 23_")
    ap.add_argument("--shard", default="0/1", help="i/n: every n-th file from the i-th")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    files = select_files(args.problems, args.only)
    i, n = (int(x) for x in args.shard.split("/"))
    files = files[i::n]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    meta = run_meta("probes/nonfinite_gpu.py")
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for path in files:
        t0 = time.monotonic()
        try:
            row = one(path, args.seed)
        except Exception as exc:
            row = {"problem": path.stem, "unsupported": f"bench error {type(exc).__name__}: {exc}"}
        row["wall_s"] = time.monotonic() - t0
        rows.append(row)
        print(f"{path.stem}: finite={row.get('finite')} nan={row.get('nan')} "
              f"inf={row.get('inf')} {row.get('nan_why') or ''} {row.get('inf_why') or ''}"[:400],
              flush=True)
        (args.out / "nonfinite.json").write_text(json.dumps({"meta": meta, "rows": rows},
                                                            indent=1))
        (args.out / "nonfinite.md").write_text(markdown(rows, meta))


if __name__ == "__main__":
    main()
