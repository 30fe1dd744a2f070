"""The offline synthesizer's kernels at several points of their parameter space, on the GPU, at
KernelBench's own sizes: what each variant's error and latency are beside eager (and
torch.compile where asked), so the templates' defaults and the fp32 matmul's and
convolution's precision (``tf32x3`` tensor-core products vs ``ieee`` FMA) are chosen from
measurements.

This is a quick sweep by ``triton.testing.do_bench`` (L2 flushed between runs) in one process,
to choose defaults; the figures the project reports come from ``kernelevolve bench`` through
the judge. Each variant's error is checked by the harness's own comparison
(``compare_outputs``, with the float64 reference as truth) against the fp32 eager output.

    python benchmarks/probes/offline_variants_gpu.py ../shared/kernelbench/level1 --only 1_ 2_ 23_ \\
        --variants 6 --compile --out /tmp/variants

``--allow-op conv2d ...`` plans as ``tune --allow-op`` does (the library op kept, the rest
fused), so a level-2 file's two paths can be timed side by side (one ``--out`` each).
``--points '[{"CHANNELS_LAST": 2}, ...]'`` times those points (each over the default) in place
of the template's built-in list.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

MATMUL_EXTRA = [  # fp32 tensor-core tilings tried beside the template's default
    {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 32, "num_warps": 8, "num_stages": 3},
    {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 4, "num_stages": 4},
    {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 4, "num_stages": 4},
    {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 16, "num_warps": 8, "num_stages": 4},
    {"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 8, "num_stages": 3},
    # split once (the operands' TF32 parts written before the GEMM), two accumulators
    {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 8, "num_stages": 3, "TF32X3": 2},
    {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 8, "num_stages": 2, "TF32X3": 2},
]

GEMV_EXTRA = [  # matrix-vector tiles (rows per program, K chunk, warps) and splits of K
    {"BLOCK": 4, "BLOCK_K": 1024, "num_warps": 4}, {"BLOCK": 16, "BLOCK_K": 256, "num_warps": 4},
    {"BLOCK": 2, "BLOCK_K": 2048, "num_warps": 4}, {"BLOCK": 8, "BLOCK_K": 512, "num_warps": 8},
    {"BLOCK": 1, "BLOCK_K": 2048, "num_warps": 8}, {"SPLIT_K": 1}, {"SPLIT_K": 2},
    {"SPLIT_K": 8}, {"SPLIT_K": 16},
]
POOL_EXTRA = [  # window-span loads or not, loads per program, warps
    {"WINDOW": 0}, {"WINDOW": 1}, {"BLOCK": 512}, {"BLOCK": 2048}, {"BLOCK": 4096},
    {"num_warps": 8}, {"BLOCK": 2048, "num_warps": 8}, {"num_warps": 2},
]
CONV_EXTRA = [  # the implicit GEMM over a channels-last input (or not), its tiles and warps
    {"CHANNELS_LAST": 0}, {"CHANNELS_LAST": 1},
    {"CHANNELS_LAST": 1, "BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 4},
    {"CHANNELS_LAST": 1, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 8},
    {"CHANNELS_LAST": 1, "BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4},
    {"CHANNELS_LAST": 1, "BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 16, "num_warps": 4},
    {"CHANNELS_LAST": 2}, {"CHANNELS_LAST": 2, "BLOCK_K": 16},
]
COPY_TBPS = 4.15  # the H200's measured copy bandwidth (benchmarks/results/kernelbench_l1_h200)


def run_meta(script: str) -> dict[str, str]:
    """Where and how this run happens: device, versions, date and the command line (``script``
    under ``benchmarks/``), for a result file's header."""
    import triton

    return {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
            "triton": triton.__version__, "python": platform.python_version(),
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "command": f"python benchmarks/{script} " + " ".join(sys.argv[1:])}


def select_files(problems: Path, only: list[str] | None) -> list[Path]:
    """The problem files of ``problems`` (as ``kernelevolve bench`` takes them), those whose
    names start with one of ``only`` where given."""
    from kernelevolve.bench import problem_files

    files = problem_files(problems)
    return [p for p in files if any(p.name.startswith(o) for o in only)] if only else files


def _import(source: str, tag: str) -> Any:
    path = Path(tempfile.mkdtemp(prefix="kev_variant_")) / f"{tag}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"kev_variant_{tag}", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _variants(plan: Any, n: int, rng: random.Random, default_only: bool = False,
              points: list[dict[str, int]] | None = None) -> list[dict[str, int]]:
    base = plan.default_params()
    out = [base]
    if default_only:
        return out
    if points is not None:
        for point in points:
            cand = {**base, **point}
            if cand not in out and all(cand[k] in plan.space.get(k, ()) for k in cand) and (
                    plan.feasible(cand) is None):
                out.append(cand)
        return out
    if "TF32X3" in plan.space and "CHANNELS_LAST" not in plan.space:  # ieee beside tf32x3
        out.append({**base, "TF32X3": 0})
    if plan.operator_class == "matmul" and "TF32X3" in plan.space:
        for extra in MATMUL_EXTRA:
            cand = {**base, **extra}
            if all(cand[k] in plan.space[k] for k in cand) and plan.feasible(cand) is None:
                out.append(cand)
    extra = []
    if plan.operator_class == "matmul" and "BLOCK_K" in plan.space and "BLOCK" in plan.space:
        extra = GEMV_EXTRA  # the matrix-vector template
    elif plan.operator_class == "pooling":
        extra = POOL_EXTRA
    elif "CHANNELS_LAST" in plan.space:
        extra = CONV_EXTRA
    for point in extra:
        cand = {**base, **point}
        if cand not in out and all(cand[k] in plan.space[k] for k in cand) and (
                plan.feasible(cand) is None):
            out.append(cand)
    want = len(out) + n
    for _ in range(200):
        if len(out) >= want:
            break
        cand = {k: rng.choice(v) for k, v in plan.space.items()}
        if "TF32X3" in cand:
            cand["TF32X3"] = 1
        if cand not in out and plan.feasible(cand) is None:
            out.append(cand)
    return out


def _to(values: list[Any], dtype: torch.dtype | None = None) -> list[Any]:
    res = []
    for v in values:
        if isinstance(v, torch.Tensor):
            v = v.cuda()
            if dtype is not None and v.is_floating_point():
                v = v.to(dtype)
        res.append(v)
    return res


def kernel_times(fn: Any, calls: int = 5) -> list[dict[str, Any]]:
    """The CUDA kernels ``fn`` launches (after a warm call) and each one's mean time per call of
    ``fn`` in microseconds, by torch.profiler: where a variant's time goes (a split pass, a
    layout copy, the GEMM, a second pass)."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    rows = [{"kernel": e.key[:90], "launches": e.count / calls,
             "us": e.self_device_time_total / calls}
            for e in prof.key_averages() if e.self_device_time_total > 0]
    return sorted(rows, key=lambda r: -r["us"])


def one(path: Path, n_variants: int, with_compile: bool, rng: random.Random,
        default_only: bool = False, allow_ops: list[str] | None = None,
        points: list[dict[str, int]] | None = None, kernels: bool = False) -> dict[str, Any]:
    from triton.testing import do_bench

    from kernelevolve.problem import call_factory, load_problem
    from kernelevolve.synth.offline.analyze import analyze
    from kernelevolve.synth.offline.plan import Unsupported
    from kernelevolve.tools.harness.compare import compare_outputs

    row: dict[str, Any] = {"problem": path.stem, "variants": []}
    problem = load_problem(path).allowing(allow_ops or [])
    try:
        plan = analyze(problem)
    except Unsupported as exc:
        row["unsupported"] = str(exc)
        return row
    row["operator_class"], row["plan"] = plan.operator_class, plan.description
    module, model, _ = problem.instantiate(seed=0)
    model = model.cuda().eval()
    torch.manual_seed(1)
    with torch.device("cuda"):  # generated where they are used (a 6 GB randn on the host is slow)
        inputs = _to(call_factory(module, "get_inputs", path))
    with torch.no_grad():
        expected = model(*inputs)
        # The memory roofline: every input read once and every output written once.
        moved = sum(t.numel() * t.element_size() for t in [*inputs, expected]
                    if isinstance(t, torch.Tensor))
        row["roofline_ms"] = moved / (COPY_TBPS * 1e12) * 1e3
        try:
            truth = model.double()(*_to(inputs, torch.float64))
            model.float()
        except Exception:  # some models do not run in float64: compare without truth
            truth = None
            model.float()
        row["eager_ms"] = do_bench(lambda: model(*inputs), warmup=50, rep=300)
        if kernels:
            row["eager_kernels"] = kernel_times(lambda: model(*inputs))
        if with_compile:
            try:
                compiled = torch.compile(model)
                compiled(*inputs)
                row["compile_ms"] = do_bench(lambda: compiled(*inputs), warmup=50, rep=300)
            except Exception as exc:
                row["compile_error"] = f"{type(exc).__name__}: {exc}"[:300]
    for i, params in enumerate(_variants(plan, n_variants, rng, default_only, points)):
        rec: dict[str, Any] = {"params": params}
        try:
            mod = _import(plan.render(params), f"{path.stem.split('_')[0]}_{i}")
            init = call_factory(module, "get_init_inputs", path)
            torch.manual_seed(0)
            cand = mod.ModelNew(*init).cuda().eval()
            cand.load_state_dict(model.state_dict())
            with torch.no_grad():
                out = cand(*inputs)
                errors, why = compare_outputs(expected, out, truth=truth)
                rec["ok"] = why is None
                rec["why"] = why
                rec["max_abs"] = max((e.max_abs_error for e in errors), default=None)
                rec["max_rel"] = max((e.max_rel_error for e in errors), default=None)
                rec["ms"] = do_bench(lambda c=cand: c(*inputs), warmup=50, rep=300)
                if kernels:
                    rec["kernels"] = kernel_times(lambda c=cand: c(*inputs))
                rec["vs_eager"] = row["eager_ms"] / rec["ms"]
                rec["roofline"] = row["roofline_ms"] / rec["ms"]
                if "compile_ms" in row:
                    rec["vs_compile"] = row["compile_ms"] / rec["ms"]
        except Exception as exc:
            rec["ok"], rec["why"] = False, f"{type(exc).__name__}: {exc}"[:400]
        row["variants"].append(rec)
        print(f"  {path.stem} {params} -> {rec.get('ms', '-')} ms ok={rec['ok']} "
              f"{rec.get('why') or ''}", flush=True)
    inputs.clear()
    torch.cuda.empty_cache()
    return row


def markdown(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [f"# Offline kernels' variants on {meta['device']}", "",
             f"`{meta['command']}`; torch {meta['torch']}, Triton {meta['triton']}, "
             f"{meta['date']}. do_bench medians (L2 flushed), one process; the error check is "
             f"the harness's `compare_outputs` with the float64 reference as truth.", "",
             f"Roofline: the fraction of the memory roofline (inputs read and outputs written "
             f"once at {COPY_TBPS} TB/s) the eager reference / the variant reach.", "",
             "| problem | class | eager ms | compile ms | variant | ms | vs eager | vs compile "
             "| roofline eager / variant | ok | max rel err |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "unsupported" in r:
            lines.append(f"| {r['problem']} | - | - | - | unsupported: {r['unsupported'][:80]} "
                         f"| | | | | | |")
            continue
        for v in r["variants"]:
            p = ", ".join(f"{k}={x}" for k, x in v["params"].items())
            lines.append(
                f"| {r['problem']} | {r['operator_class']} | {r.get('eager_ms', 0):.3f} | "
                f"{r.get('compile_ms', float('nan')):.3f} | {p} | {v.get('ms', float('nan')):.3f}"
                f" | {v.get('vs_eager', float('nan')):.2f}x | "
                f"{v.get('vs_compile', float('nan')):.2f}x | "
                f"{r.get('roofline_ms', float('nan')) / r.get('eager_ms', float('nan')):.2f} / "
                f"{v.get('roofline', float('nan')):.2f} | {'yes' if v['ok'] else 'no'} | "
                f"{v.get('max_rel') if v.get('max_rel') is not None else (v.get('why') or '')}"
                f" |")
    timed = [r for r in rows if "eager_kernels" in r]
    if timed:
        lines += ["", "## Where the time goes (torch.profiler, mean us per call)", ""]
    for r in timed:
        lines += [f"- **{r['problem']}** eager: " + "; ".join(
            f"`{k['kernel'][:60]}` x{k['launches']:g} {k['us']:.0f}" for k in r["eager_kernels"])]
        for v in r["variants"]:
            p = ", ".join(f"{k}={x}" for k, x in v["params"].items())
            lines += [f"  - {p}: " + "; ".join(
                f"`{k['kernel'][:60]}` x{k['launches']:g} {k['us']:.0f}"
                for k in v.get("kernels", []))]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("problems", type=Path)
    ap.add_argument("--only", nargs="*", default=None, help="file-name prefixes, e.g. 1_ 23_")
    ap.add_argument("--variants", type=int, default=4, help="random variants beside the default")
    ap.add_argument("--compile", action="store_true", help="time torch.compile too")
    ap.add_argument("--default-only", action="store_true",
                    help="time each plan's default parameters only")
    ap.add_argument("--allow-op", nargs="*", default=[], metavar="OP",
                    help="library ops a kernel may call, as tune --allow-op (e.g. conv2d)")
    ap.add_argument("--points", type=json.loads, default=None,
                    help="a JSON list of parameter points to time over each default")
    ap.add_argument("--kernels", action="store_true",
                    help="each variant's (and eager's) CUDA kernels and their times, profiled")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    files = select_files(args.problems, args.only)
    rng = random.Random(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    meta = run_meta("probes/offline_variants_gpu.py")
    rows = []
    args.out.mkdir(parents=True, exist_ok=True)
    for path in files:
        t0 = time.monotonic()
        try:
            row = one(path, args.variants, args.compile, rng, args.default_only, args.allow_op,
                      args.points, args.kernels)
        except Exception as exc:
            row = {"problem": path.stem, "unsupported": f"bench error {type(exc).__name__}: {exc}"}
        row["wall_s"] = time.monotonic() - t0
        rows.append(row)
        (args.out / "variants.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
        (args.out / "variants.md").write_text(markdown(rows, meta))
    print(markdown(rows, meta))


if __name__ == "__main__":
    main()
