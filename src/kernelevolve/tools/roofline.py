"""Roofline: the device's ceilings, measured once and cached per device name, the work one forward
does (FLOPs and bytes), and the fraction of the roofline it attains.

Ceilings are measured, not taken from data sheets: a large device-to-device copy for the memory
bandwidth, large matrix products for the FLOP rates (bf16, TF32 and plain fp32), and a loop of
empty Triton launches for the launch overhead. They are what a kernel can actually reach on this
machine, so "near the roof" means near what the best library code achieves.

Worker-side parts (:func:`measure_ceilings`, :func:`count_work`, :func:`run`) import torch and
triton lazily; the arithmetic (:func:`derive`) and the cache are standard library only.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from kernelevolve.tools.metrics import metric

INSTRUMENT = "roofline"
CACHE_VERSION = 1
# Sizes of the ceiling measurements: the copy is far larger than any L2 (H200: 60 MB); the
# products are large enough for cuBLAS to reach its steady rate.
COPY_BYTES = 1 << 30
MATMUL_N = 8192
_LOW_PRECISION = {"bfloat16", "float16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                  "float8_e5m2fnuz"}


# -- ceilings (worker-side) -------------------------------------------------------------------

def _median_ms(fn: Any, reps: int) -> float:
    import torch

    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def _copy_ms() -> float:
    import torch

    src = torch.empty(COPY_BYTES // 4, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    return _median_ms(lambda: dst.copy_(src), 20)


def _launch_overhead_us(launches: int = 2000) -> float:
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def empty_kernel(x_ptr, N: tl.constexpr):
        if tl.program_id(0) < 0:
            tl.store(x_ptr, N)

    x = torch.empty(1, device="cuda", dtype=torch.int32)
    empty_kernel[(1,)](x, N=1)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(launches):
        empty_kernel[(1,)](x, N=1)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / launches * 1e6


def measure_ceilings() -> dict[str, Any]:
    """Measure this CUDA device's ceilings (a few seconds)."""
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    copy_ms = _copy_ms()
    rates = {}
    tf32 = torch.backends.cuda.matmul.allow_tf32
    try:
        for label, dtype, allow_tf32 in (("bf16", torch.bfloat16, False),
                                         ("tf32", torch.float32, True),
                                         ("fp32", torch.float32, False)):
            torch.backends.cuda.matmul.allow_tf32 = allow_tf32
            a = torch.randn(MATMUL_N, MATMUL_N, device="cuda").to(dtype)
            b = torch.randn(MATMUL_N, MATMUL_N, device="cuda").to(dtype)
            ms = _median_ms(lambda a=a, b=b: torch.mm(a, b), 10 if label == "bf16" else 4)
            rates[label] = 2 * MATMUL_N**3 / (ms * 1e-3) / 1e12
            del a, b
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.cuda.empty_cache()
    return {
        "device": props.name,
        "peak_bandwidth": 2 * COPY_BYTES / (copy_ms * 1e-3) / 1e9,
        "peak_tflops_bf16": rates["bf16"], "peak_tflops_tf32": rates["tf32"],
        "peak_tflops_fp32": rates["fp32"],
        "launch_overhead": _launch_overhead_us(),
        "sm_count": props.multi_processor_count,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "torch": torch.__version__,
        "method": f"copy of {COPY_BYTES >> 20} MiB (read + write counted); torch.mm at "
                  f"{MATMUL_N}^3; empty Triton launches timed on the host",
    }


def load_ceilings(path: Path, device: str) -> dict[str, Any] | None:
    """The cached ceilings of ``device``, or None."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if data.get("version") != CACHE_VERSION:
        return None
    entry = data.get("devices", {}).get(device)
    return entry if isinstance(entry, dict) else None


def store_ceilings(path: Path, ceilings: dict[str, Any]) -> None:
    """Add ``ceilings`` to the cache under their device name (atomic replace)."""
    try:
        data = json.loads(path.read_text())
        if data.get("version") != CACHE_VERSION:
            data = {}
    except (OSError, ValueError):
        data = {}
    data["version"] = CACHE_VERSION
    data.setdefault("devices", {})[ceilings["device"]] = ceilings
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)


def ceilings_for(path: Path | None, remeasure: bool = False) -> tuple[dict[str, Any], str]:
    """This device's ceilings from the cache, else measured now (and cached); with a note."""
    import torch

    device = torch.cuda.get_device_name(torch.cuda.current_device())
    if path is not None and not remeasure:
        cached = load_ceilings(path, device)
        if cached is not None:
            return cached, f"ceilings of {device} from the cache {path} ({cached['measured_at']})"
    ceilings = measure_ceilings()
    if path is not None:
        store_ceilings(path, ceilings)
    return ceilings, f"ceilings of {device} measured now" + (f", cached in {path}" if path else "")


# -- the forward's work (worker-side) ---------------------------------------------------------

def _tensors(value: Any) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


def count_work(reference: Any, model: Any, inputs: list[Any], outputs: Any) -> dict[str, Any]:
    """Matrix-product FLOPs of the reference's forward (torch's FlopCounterMode counts mm, bmm,
    convolutions and attention; elementwise work is not counted), the bytes of the inputs,
    parameters and outputs (what any implementation must move at least once), and the dtype
    that picks the compute ceiling."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    flops = 0
    if reference is not None:
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            reference(*inputs)
        flops = counter.get_total_flops()
    state = list(model.parameters()) + list(model.buffers())
    io = _tensors(inputs) + _tensors(outputs) + state
    nbytes = sum(t.numel() * t.element_size() for t in io)
    floating = [str(t.dtype).removeprefix("torch.") for t in _tensors(inputs) + state
                if t.is_floating_point()]
    low = [d for d in floating if d in _LOW_PRECISION]
    dtype = low[0] if low else (floating[0] if floating else "float32")
    return {"flops": float(flops), "bytes": float(nbytes), "dtype": dtype}


def run(ctx: Any, opts: Any) -> dict[str, Any]:
    """The roofline pass: ceilings (cached per device) and the forward's work."""
    from kernelevolve.tools.profiling import unavailable

    work = count_work(ctx.reference, ctx.model, ctx.inputs, ctx.forward())
    facts = {"dtype": work["dtype"]}
    metrics = [metric("reference_flops", work["flops"] / 1e9),
               metric("io_bytes", work["bytes"] / 1e6)]
    if ctx.forward_ms is not None:
        metrics.append(metric("forward_time", ctx.forward_ms * 1e3))
        facts["forward_time_source"] = "harness timing (median, L2 flushed)"
    if ctx.device_type != "cuda":
        report = unavailable(INSTRUMENT, "ceilings are measured on CUDA devices only")
        report.update(metrics=metrics, facts=facts)
        return report
    path = Path(opts.ceilings_path) if opts.ceilings_path else None
    ceilings, note = ceilings_for(path, opts.remeasure_ceilings)
    metrics += [metric(k, ceilings[k]) for k in ("peak_bandwidth", "peak_tflops_bf16",
                                                  "peak_tflops_tf32", "peak_tflops_fp32",
                                                  "launch_overhead") if k in ceilings]
    facts["device"] = ceilings["device"]
    return {"instrument": INSTRUMENT, "unavailable": None, "metrics": metrics, "kernels": [],
            "notes": [note], "facts": facts}


# -- the roofline (stdlib) --------------------------------------------------------------------

def peak_tflops(values: dict[str, float], dtype: str, achieved_tflops: float | None = None
                ) -> tuple[float | None, str]:
    """The compute ceiling for ``dtype``: bf16 tensor-core rate for 16- and 8-bit floats; for
    fp32, the plain fp32 rate unless the forward beat it (then it used TF32 tensor cores)."""
    if dtype in _LOW_PRECISION:
        return values.get("peak_tflops_bf16"), "bf16 tensor cores"
    fp32 = values.get("peak_tflops_fp32")
    if fp32 and achieved_tflops and achieved_tflops > fp32 and values.get("peak_tflops_tf32"):
        return values["peak_tflops_tf32"], "TF32 tensor cores (faster than plain fp32)"
    return fp32, "fp32 CUDA cores"


def derive(values: dict[str, float], dtype: str, flops_g: float, bytes_mb: float,
           kernel_time_us: float) -> dict[str, float]:
    """Arithmetic intensity, achieved rates and roofline fractions from the ceilings in
    ``values`` (peak_bandwidth, peak_tflops_*) and one forward's work and kernel time."""
    out: dict[str, float] = {}
    seconds = kernel_time_us * 1e-6
    bw = values.get("peak_bandwidth")
    if bytes_mb > 0:
        out["arithmetic_intensity"] = flops_g * 1e9 / (bytes_mb * 1e6)
    if seconds <= 0:
        return out
    out["achieved_bandwidth"] = bytes_mb * 1e6 / seconds / 1e9
    out["achieved_tflops"] = flops_g * 1e9 / seconds / 1e12
    peak, _ = peak_tflops(values, dtype, out["achieved_tflops"])
    if bw:
        out["bandwidth_fraction"] = out["achieved_bandwidth"] / bw
    if peak:
        out["compute_fraction"] = out["achieved_tflops"] / peak
    if bw and peak:
        out["ridge_point"] = peak * 1e12 / (bw * 1e9)
    # Below the ridge the memory roof binds and the attained fraction is the bandwidth fraction;
    # above it, the compute fraction: the larger of the two is always the binding roof's.
    fractions = [out[k] for k in ("bandwidth_fraction", "compute_fraction") if k in out]
    if fractions:
        out["roofline_fraction"] = max(fractions)
    return out
