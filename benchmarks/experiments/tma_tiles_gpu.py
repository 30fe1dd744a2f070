"""The TMA implicit GEMM's (``conv_gemm_tma_kernel``) tiles and pipeline stages at KernelBench's
own sizes: each point's time and error (the harness's comparison, float64 as truth) over the
plan's default. A point's stage count is set in the rendered candidate's text: ``TMA_STAGES``
to it and ``TMA_STAGE_BYTES`` (the shared-memory budget ``_tma_stages`` fits the stages to) out
of the way, so the launch takes exactly that many.

Why: ncu on KernelBench 69 (batch 8) found the default tile (64 x 128, 4 warps, 4 stages; 156
KB of shared memory a program) at one program of 4 warps an SM, 6.25% occupancy, the tensor
pipe 43% busy: each k step waits for its products before adding them in fp32, with no other
warps to fill the wait.

    python benchmarks/experiments/tma_tiles_gpu.py .carry/kernelbench/level1 --only 69_ 57_ --out /tmp/t

``--tma 1 2 3`` times each point with each of the kernel's products: three TF32 ones (``TMA =
1``), fp16x3 (``TMA = 2``, whose k step is twice BLOCK_K where that divides a tap's channels
and takes at most 64) and fp16x3 chained (``TMA = 3``).

Writes OUT/tiles.json and OUT/tiles.md as each problem finishes. Imports only torch, triton,
numpy, the standard library and kernelevolve.

Experiment of 2026-12-05; fed docs/notes/2026-12-05-fp16x3-tma-gemm.md and
docs/notes/2026-12-05-winograd-and-tma-stages.md.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "probes"))
from offline_variants_gpu import _import, _to, run_meta, select_files  # noqa: E402

TILES = [  # (BLOCK_M, BLOCK_N, BLOCK_K, num_warps)
    (64, 128, 32, 4), (128, 128, 32, 8), (128, 64, 32, 4), (64, 64, 32, 4), (128, 128, 16, 8),
]
STAGES = (2, 3, 4)
PRODUCTS = {1: "TF32", 2: "fp16x3", 3: "fp16x3 chained"}


def one(path: Path, tiles: list[tuple[int, ...]], stages: tuple[int, ...],
        products: tuple[int, ...] = (1,)) -> dict[str, Any]:
    from triton.testing import do_bench

    from kernelevolve.problem import call_factory, load_problem
    from kernelevolve.synth.offline.analyze import analyze
    from kernelevolve.tools.harness.compare import compare_outputs

    problem = load_problem(path)
    plan = analyze(problem)
    module, model, _ = problem.instantiate(seed=0)
    model = model.cuda().eval()
    torch.manual_seed(1)
    with torch.device("cuda"):
        inputs = _to(call_factory(module, "get_inputs", path))
    row: dict[str, Any] = {"problem": path.stem, "points": []}
    with torch.no_grad():
        expected = model(*inputs)
        truth = model.double()(*_to(inputs, torch.float64))
        model.float()
        row["eager_ms"] = do_bench(lambda: model(*inputs), warmup=25, rep=200)
    base = plan.default_params()
    if base.get("TMA") != 1:
        row["skipped"] = f"the default does not take the TMA GEMM: {base}"
        return row
    for (bm, bn, bk, warps), st, tma in itertools.product(tiles, stages, products):
        params = {**base, "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "num_warps": warps,
                  "TMA": tma}
        rec: dict[str, Any] = {"params": params, "stages": st}
        try:
            if plan.feasible(params) is not None:
                raise ValueError(plan.feasible(params))
            src = plan.render(params)
            for const in ("TMA_STAGES = 4\n", "TMA_STAGE_BYTES = 144 << 10\n"):
                assert const in src, const
            src = src.replace("TMA_STAGES = 4\n", f"TMA_STAGES = {st}\n").replace(
                "TMA_STAGE_BYTES = 144 << 10\n", "TMA_STAGE_BYTES = 1 << 30\n")
            mod = _import(src, f"{path.stem.split('_')[0]}_{bm}_{bn}_{bk}_{warps}_{st}_{tma}")
            init = call_factory(module, "get_init_inputs", path)
            cand = mod.ModelNew(*init).cuda().eval()
            cand.load_state_dict(model.state_dict())
            with torch.no_grad():
                out = cand(*inputs)
                errors, why = compare_outputs(expected, out, truth=truth)
                rec["ok"], rec["why"] = why is None, why
                rec["max_rel"] = max((e.max_rel_error for e in errors), default=None)
                rec["ms"] = do_bench(lambda c=cand: c(*inputs), warmup=25, rep=200)
                rec["vs_eager"] = row["eager_ms"] / rec["ms"]
        except Exception as exc:
            rec["ok"], rec["why"] = False, f"{type(exc).__name__}: {exc}"[:300]
        print(f"  {path.stem[:40]} {bm}x{bn}x{bk} w{warps} s{st} TMA={tma} -> "
              f"{rec.get('ms', '-')} ms "
              f"ok={rec['ok']} {rec.get('why') or ''}", flush=True)
        row["points"].append(rec)
    inputs.clear()
    torch.cuda.empty_cache()
    return row


def markdown(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [f"# The TMA implicit GEMM's tiles and stages on {meta['device']}", "",
             f"`{meta['command']}`; torch {meta['torch']}, Triton {meta['triton']}, "
             f"{meta['date']}. do_bench medians (L2 flushed); the error check is the harness's "
             "`compare_outputs` against float64.", "",
             "| problem | eager ms | BLOCK_M x N x K, warps | products | stages | ms | vs eager "
             "| ok | max rel err |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['problem']} | {r['eager_ms']:.3f} | {r['skipped']} ||||||| ")
        for p in r["points"]:
            t = p["params"]
            lines.append(
                f"| {r['problem']} | {r['eager_ms']:.3f} | {t['BLOCK_M']} x {t['BLOCK_N']} x "
                f"{t['BLOCK_K']}, {t['num_warps']} | {PRODUCTS[t.get('TMA', 1)]} "
                f"| {p['stages']} | {p.get('ms', float('nan')):.3f}"
                f" | {p.get('vs_eager', float('nan')):.2f}x | {'yes' if p['ok'] else 'no'} | "
                f"{p.get('max_rel') if p['ok'] else p['why']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("problems", type=Path)
    ap.add_argument("--only", nargs="*", default=None, help="file-name prefixes, e.g. 69_ 57_")
    ap.add_argument("--tiles", type=json.loads, default=TILES,
                    help="a JSON list of [BLOCK_M, BLOCK_N, BLOCK_K, num_warps]")
    ap.add_argument("--stages", type=int, nargs="*", default=list(STAGES))
    ap.add_argument("--tma", type=int, nargs="*", default=[1], choices=(1, 2, 3),
                    help="the kernel's products: 1 three TF32, 2 fp16x3, 3 fp16x3 chained")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    meta = run_meta("experiments/tma_tiles_gpu.py")
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for path in select_files(args.problems, args.only):
        t0 = time.monotonic()
        try:
            row = one(path, [tuple(t) for t in args.tiles], tuple(args.stages), tuple(args.tma))
        except Exception as exc:
            row = {"problem": path.stem, "eager_ms": float("nan"), "points": [],
                   "skipped": f"bench error {type(exc).__name__}: {exc}"[:300]}
        row["wall_s"] = time.monotonic() - t0
        rows.append(row)
        (args.out / "tiles.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
        (args.out / "tiles.md").write_text(markdown(rows, meta))
    print(markdown(rows, meta))


if __name__ == "__main__":
    main()
