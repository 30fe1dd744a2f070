"""Which code launched each kernel a forward ran on the GPU, as the device profiler saw it.

The candidate's process records the aten ops a forward runs (``OpRecorder``, a Python dispatch
mode) and counts Triton launches (``LaunchCounter``, a wrapper on ``JITFunction.run``): both
live in Python, beside the candidate's code. This is a third account, from below Python: one
forward under ``torch.profiler``, whose CPU ops are recorded by PyTorch's C++ RecordFunction
callbacks and whose kernels by CUPTI. A kernel belongs to the innermost torch op whose time span
holds its launch call (matched by CUPTI's correlation id, on the launching thread); a kernel no
op launched is the candidate's own only where its name is one of the candidate's Triton
functions or ``__global__`` functions of its CUDA source. So a GEMM that cuBLAS ran for an
``aten::mm`` hidden from the Python recorder, or a library kernel reached from C++, is seen.

:func:`trace_forward` runs in the candidate's process (after the timing: CUPTI is never active
while a timed call runs); :func:`launched_by` and :func:`refusal` are pure, so CI tests them on
traces.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable, Collection, Iterable
from typing import Any

# The trace's categories (Kineto's Chrome trace): kernels, the host calls that launch them,
# and the torch ops recorded on the host.
_KERNEL = "kernel"
_LAUNCH = {"cuda_runtime", "cuda_driver"}
_OP = "cpu_op"


def trace_forward(forward: Callable[[], Any]) -> tuple[Any, list[list[Any]] | None]:
    """``forward()`` (which synchronizes) under the profiler: its result, and each kernel it ran
    as ``[name, innermost op or None]`` in launch order; None where the profiler failed or saw
    no kernel at all (CUPTI unavailable), so the caller can tell an unmeasured forward from a
    clean one. The forward's own exceptions pass through; the profiler's never do."""
    from torch.profiler import ProfilerActivity, profile

    prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
    try:
        prof.__enter__()
    except Exception:  # the profiler could not start: the forward runs unprofiled
        return forward(), None
    try:
        out = forward()
    finally:
        try:
            prof.__exit__(None, None, None)
            stopped = True
        except Exception:
            stopped = False
    if not stopped:
        return out, None
    fd, path = tempfile.mkstemp(suffix=".json", prefix="kernelevolve-kernels-")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    except (OSError, ValueError, RuntimeError):
        return out, None
    finally:
        os.unlink(path)
    kernels = launched_by(trace)
    return out, [list(k) for k in kernels] if kernels else None


def launched_by(trace: dict[str, Any]) -> list[tuple[str, str | None]]:
    """Each kernel of a Chrome trace with the innermost op whose span holds its launch call on
    the same thread (None: no op, or no launch call found for it), in launch order."""
    events = [e for e in trace.get("traceEvents", []) if isinstance(e, dict)]
    launches = {}
    for e in events:
        if e.get("cat") in _LAUNCH and _corr(e) is not None:
            launches[_corr(e)] = e
    ops: dict[Any, list[tuple[float, float, str]]] = {}
    for e in events:
        if e.get("cat") == _OP and "dur" in e:
            ts = float(e["ts"])
            ops.setdefault(e.get("tid"), []).append((ts, ts + float(e["dur"]), str(e["name"])))
    found = []
    for k in sorted((e for e in events if e.get("cat") == _KERNEL),
                    key=lambda e: float(e.get("ts", 0))):
        launch = launches.get(_corr(k))
        op = None
        if launch is not None:
            at = float(launch["ts"])
            spans = [s for s in ops.get(launch.get("tid"), []) if s[0] <= at <= s[1]]
            if spans:
                op = max(spans, key=lambda s: (s[0], -s[1]))[2]  # the latest start: innermost
        found.append((str(k.get("name", "")), op))
    return found


def _corr(event: dict[str, Any]) -> Any:
    args = event.get("args") or {}
    return args.get("correlation", args.get("correlation id"))


def own_kernel_names(source: str) -> set[str]:
    """The names the candidate's own kernels can run under: its Triton functions (as the static
    check finds them) and the ``__global__`` functions of CUDA source in its strings."""
    from kernelevolve.tools.harness.static import jit_function_names

    bare = re.sub(r"__launch_bounds__\s*\([^)]*\)", " ", source)
    return jit_function_names(source) | set(re.findall(r"__global__\s+[^(;{]*?\b(\w+)\s*\(",
                                                       bare))


def is_own(kernel: str, names: Iterable[str]) -> bool:
    """Whether a kernel's name is one of ``names``: as Triton names it (the function's name), or
    a C++ ``__global__`` function's name as CUPTI gives it, demangled (``void name<...>(...)``,
    ``name(...)``) or not (``_Z<len><name>...``). A prefix alone is not enough: a function named
    ``sm90`` must not claim cuBLAS's ``sm90_xmma_gemm_...``."""
    for n in names:
        if not n:
            continue
        if kernel == n or any(kernel.startswith(f"{lead}{n}{sep}") for lead in ("", "void ")
                              for sep in ("(", "<")) or kernel.startswith(f"_Z{len(n)}{n}"):
            return True
    return False


def refusal(kernels: list[tuple[str, str | None]], own: Collection[str],
            allowed_ops: Collection[str]) -> str | None:
    """Why these kernels show torch or a library doing the work (None: they do not): a kernel
    launched by a torch op outside ``allowed_ops``, a kernel no op launched that is not the
    candidate's own, or no kernel of the candidate's own at all."""
    foreign_ops: dict[str, str] = {}
    strays: list[str] = []
    mine = 0
    for name, op in kernels:
        if op is not None:
            bare = op.split("::", 1)[-1].split(".", 1)[0]
            if bare not in allowed_ops:
                foreign_ops.setdefault(op, name)
        elif is_own(name, own):
            mine += 1
        else:
            strays.append(name)
    if foreign_ops:
        shown = "; ".join(f"{op} ran {_short(k)}" for op, k in sorted(foreign_ops.items())[:4])
        return (f"torch ops launched kernels that do the work: {shown} (seen by the device "
                f"profiler below Python; only allocation, view and copy ops may, unless the "
                f"user allows named library ops with eval.allowed_ops)")
    if strays:
        return (f"kernels ran that neither a torch op nor the candidate's own Triton or CUDA "
                f"functions launched: {', '.join(sorted({_short(s) for s in strays})[:4])} (seen "
                f"by the device profiler): a library reached past torch does the work")
    if mine == 0:
        return ("none of the kernels the device ran was the candidate's own (seen by the device "
                "profiler): a candidate must compute with its own Triton or CUDA kernels")
    return None


def _short(name: str, limit: int = 80) -> str:
    return name if len(name) <= limit else name[:limit] + "..."
