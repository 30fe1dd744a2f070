"""Does the best tiling of one example (11_matmul_bf16, a 4096^3 bf16 GEMM) differ between the
H200 and the simulated MTIA 2i? Each configuration of the example solution's kernel is timed on
the GPU (``--mode gpu``) or simulated (``--mode mtia``); results go to JSON and Markdown.

    python benchmarks/experiments/tiling_mtia_vs_h200.py --mode gpu  --out benchmarks/results
    python benchmarks/experiments/tiling_mtia_vs_h200.py --mode mtia --out benchmarks/results

The mtia mode sets TRITON_INTERPRET=1 itself (before triton is imported).

Experiment of 2026-11-29, before the notes began; its figures are benchmarks/results/tiling_*
(docs/results.md, "Other measurements").
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shlex
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOLUTION = ROOT / "examples" / "solutions" / "11_matmul_bf16.py"
# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)
CONFIGS = [
    (64, 64, 64, 4, 4),
    (128, 64, 64, 4, 4),
    (128, 128, 64, 4, 3),
    (128, 256, 64, 8, 3),
    (256, 128, 64, 8, 3),
]
BLOCKS_LINE = "BLOCK_M, BLOCK_N, BLOCK_K = 128, 256, 64"
LAUNCH_LINE = "num_warps=8, num_stages=3,"


def variant(config: tuple[int, ...], workdir: Path):
    bm, bn, bk, warps, stages = config
    source = SOLUTION.read_text()
    if BLOCKS_LINE not in source or LAUNCH_LINE not in source:
        sys.exit(f"{SOLUTION} changed: update BLOCKS_LINE / LAUNCH_LINE in this script")
    source = source.replace(BLOCKS_LINE, f"BLOCK_M, BLOCK_N, BLOCK_K = {bm}, {bn}, {bk}")
    source = source.replace(LAUNCH_LINE, f"num_warps={warps}, num_stages={stages},")
    path = workdir / f"matmul_{bm}x{bn}x{bk}_w{warps}_s{stages}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.ModelNew()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mode", choices=["gpu", "mtia"], required=True)
    parser.add_argument("--gen", default="2i")
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.mode == "mtia":
        os.environ["TRITON_INTERPRET"] = "1"
    import torch
    import triton

    rows = []
    n = args.size
    device = "cuda" if args.mode == "gpu" else "cpu"
    torch.manual_seed(0)
    a = torch.randn(n, n, dtype=torch.bfloat16, device=device)
    b = torch.randn(n, n, dtype=torch.bfloat16, device=device)
    with tempfile.TemporaryDirectory() as tmp:
        for config in CONFIGS:
            model = variant(config, Path(tmp))
            row: dict[str, object] = {"config": config}
            if args.mode == "gpu":
                from kernelevolve.tools.harness.timing import time_interleaved

                torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
                out = model(a, b)
                ref = (a.float() @ b.float())
                row["max_rel_error"] = float(((out.float() - ref).abs().max()
                                               / ref.abs().max()).item())
                lat = time_interleaved({"c": lambda m=model: m(a, b)})["c"]
                row["ms"] = lat.median_ms
                row["cv"] = lat.cv
            else:
                from kernelevolve.tools.mtia import MtiaIllegalKernel, simulate_forward

                t0 = time.perf_counter()
                try:
                    sim = simulate_forward(lambda m=model: m(a, b), args.gen)
                    row["ms"] = sim.time_s * 1e3
                    row["limiting_resource"] = sim.limiting_resource
                except MtiaIllegalKernel as exc:
                    row["ms"] = None
                    row["illegal"] = exc.reasons
                row["simulation_s"] = time.perf_counter() - t0
            if row.get("ms"):
                row["tflops"] = 2 * n**3 / (float(row["ms"]) * 1e-3) / 1e12  # type: ignore[arg-type]
            rows.append(row)
            print(json.dumps(row), flush=True)
    timed = [r for r in rows if r.get("ms")]
    best = min(timed, key=lambda r: r["ms"])["config"] if timed else None  # type: ignore[arg-type, return-value]
    label = (torch.cuda.get_device_name(0) if args.mode == "gpu"
             else f"mtia-sim:{args.gen} (simulated)")
    summary = {
        "device": label, "size": n, "best": best, "rows": rows,
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "triton": triton.__version__},
        "command": "python " + " ".join(shlex.quote(x) for x in sys.argv),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    stem = f"tiling_{args.mode}_{n}"
    (args.out / f"{stem}.json").write_text(json.dumps(summary, indent=2))
    lines = [f"# 11_matmul_bf16 tilings on {label}", "",
             f"- size: {n}^3 bf16; command: `{summary['command']}`; date: {summary['date']}",
             f"- versions: {summary['versions']}", "",
             "| BLOCK_M x BLOCK_N x BLOCK_K, warps, stages | ms | TFLOP/s | note |",
             "|---|---|---|---|"]
    for r in rows:
        note = r.get("limiting_resource") or ("illegal: " + "; ".join(r["illegal"])
                                              if r.get("illegal") else f"CV {r.get('cv', 0):.2%}")
        ms = f"{r['ms']:.4f}" if r.get("ms") else "-"
        tf = f"{r['tflops']:.1f}" if r.get("tflops") else "-"
        lines.append(f"| {r['config']} | {ms} | {tf} | {note} |")
    lines.append(f"\nbest: {best}")
    (args.out / f"{stem}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
