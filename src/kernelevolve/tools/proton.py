"""Proton wrapper: a Proton session around the candidate's forwards gives per-kernel device times
and launch counts (CUPTI), the FLOPs and bytes kernels declare in ``launch_metadata``, and, where
the installed Triton supports it and the candidate marks them (``triton.profiler.language.scope``
inside a kernel), intra-kernel scopes in cycles (Proton's instrumentation backend).

The session runs in a driver process (``profile_jobs``), never in the evaluation worker: Proton
and the PyTorch profiler both subscribe to CUPTI, and a crash in either must not take the worker
down. :func:`parse_hatchet` reads Proton's tree output with the standard library only.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelevolve.tools.metrics import metric

INSTRUMENT = "proton"
FORWARD_SCOPE = "kernelevolve.forward"
# Scopes Proton adds itself: launch-metadata computation, not kernels of the candidate.
_INTERNAL_FRAMES = {"__proton_launch_metadata"}
_INTRA_MARKERS = ("enter_scope", "exit_scope", "pl.scope", "language.scope")


# -- the session (driver-side: torch and triton) ----------------------------------------------

def enable_intra_kernel_scopes() -> bool:
    """Let Triton-DSL kernels carry Proton scopes (newer Tritons allow only Gluon by default).
    False where the installed Triton has no such switch."""
    try:
        import triton.profiler.language as pl
    except ImportError:
        return False
    enable = getattr(pl, "enable_semantic", None)
    if enable is None:
        return True  # older Tritons instrument Triton-DSL kernels without asking
    try:
        enable("triton")
    except (KeyError, ValueError):
        return False
    return True


def uses_intra_kernel_scopes(source: str) -> bool:
    return "triton.profiler" in source and any(m in source for m in _INTRA_MARKERS)


def session(out: Path, forward: Callable[[], Any], sync: Callable[[], None], iters: int,
            candidate: str) -> dict[str, Any]:
    """Profile ``iters`` forwards in a Proton session; write ``out/proton.hatchet`` and, for a
    candidate with intra-kernel scopes, ``out/proton_scopes.hatchet``. Returns status facts."""
    import triton
    import triton.profiler as proton

    status: dict[str, Any] = {"triton": triton.__version__, "iters": iters}
    proton.start(str(out / "proton"), hook="triton")
    for _ in range(iters):
        with proton.scope(FORWARD_SCOPE):
            forward()
        sync()
    proton.finalize()
    if uses_intra_kernel_scopes(Path(candidate).read_text()):
        try:
            proton.start(str(out / "proton_scopes"), backend="instrumentation")
            forward()
            sync()
            proton.finalize()
            status["intra_kernel"] = "recorded"
        except Exception as exc:  # recorded: this Triton cannot instrument the kernels
            status["intra_kernel"] = f"failed: {type(exc).__name__}: {exc}"
    else:
        status["intra_kernel"] = "the candidate marks no intra-kernel scopes"
    return status


# -- the pass (worker-side: stdlib) -----------------------------------------------------------

def run(ctx: Any, opts: Any) -> dict[str, Any]:
    """The proton pass (see ``profile_jobs``)."""
    from kernelevolve.tools.profiling import driver_env, keep_raw, unavailable

    if ctx.device_type != "cuda":
        return unavailable(INSTRUMENT, "Proton needs a CUDA device")
    out = ctx.workdir / "proton"
    cmd = ctx.driver_args("proton", out, opts.proton_iters)
    timeout = min(opts.proton_timeout_s, opts.timeout_s)
    proc = subprocess.Popen(cmd, cwd=ctx.workdir, env=driver_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return unavailable(INSTRUMENT, f"the Proton session did not finish within {timeout:.0f} s")
    status_file = out / "driver.json"
    status = json.loads(status_file.read_text()) if status_file.exists() else {}
    tree = out / "proton.hatchet"
    if not status.get("ok") or not tree.exists():
        reason = status.get("error") or f"the Proton driver exited with code {proc.returncode}"
        failed = unavailable(INSTRUMENT, reason, [status.get("traceback", "") or err[-2000:]])
        keep_raw(opts, status_file, "proton_driver.json", failed)
        return failed
    scopes = out / "proton_scopes.hatchet"
    report = parse_hatchet(load(tree), opts.proton_iters,
                           load(scopes) if scopes.exists() else None)
    report["notes"].append(f"intra-kernel scopes: {status.get('intra_kernel')}; "
                           f"Triton {status.get('triton')}")
    keep_raw(opts, tree, "proton.hatchet", report)
    keep_raw(opts, scopes, "proton_scopes.hatchet", report)
    keep_raw(opts, status_file, "proton_driver.json", report)
    return report


# -- parsing (stdlib) -------------------------------------------------------------------------

def load(path: Path) -> Any:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:  # type: ignore[operator]
        return json.load(f)


def _time_ns(metrics: dict[str, Any]) -> float:
    for key, value in metrics.items():
        if key.startswith("time") and "(inc)" not in key and isinstance(value, int | float):
            scale = {"(ns)": 1.0, "(us)": 1e3, "(ms)": 1e6, "(s)": 1e9}
            return float(value) * next((v for u, v in scale.items() if key.endswith(u)), 1.0)
    return 0.0


def _walk(node: dict[str, Any], path: tuple[str, ...], out: list[tuple[tuple[str, ...],
                                                                          dict[str, Any]]]) -> None:
    name = (node.get("frame") or {}).get("name", "")
    here = path + (name,)
    out.append((here, node.get("metrics") or {}))
    for child in node.get("children") or []:
        _walk(child, here, out)


def _kernel_nodes(tree: Any) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    """Nodes that carry device time, with their paths from the root."""
    roots = tree if isinstance(tree, list) else [tree]
    nodes: list[tuple[tuple[str, ...], dict[str, Any]]] = []
    if roots and isinstance(roots[0], dict) and "frame" in roots[0]:
        _walk(roots[0], (), nodes)
    return [(p, m) for p, m in nodes if _time_ns(m) > 0 and not _INTERNAL_FRAMES & set(p)
            and p[-1] not in ("ROOT", FORWARD_SCOPE)]


def parse_hatchet(tree: Any, iters: int, scopes_tree: Any = None) -> dict[str, Any]:
    """A proton report from Proton's hatchet output of ``iters`` forwards (each in a
    ``kernelevolve.forward`` scope) and, optionally, of an instrumented forward."""
    kernels: dict[str, dict[str, float]] = {}
    outside = 0
    for path, m in _kernel_nodes(tree):
        if FORWARD_SCOPE not in path:
            outside += 1
            continue
        entry = kernels.setdefault(path[-1], {"calls": 0.0, "time_ns": 0.0, "flops": 0.0,
                                              "bytes": 0.0})
        entry["calls"] += float(m.get("count", 1))
        entry["time_ns"] += _time_ns(m)
        entry["flops"] += sum(float(v) for k, v in m.items()
                              if k.startswith("flops") and isinstance(v, int | float))
        entry["bytes"] += float(m.get("bytes", 0) or 0)
    notes = []
    if outside:
        notes.append(f"{outside} kernel node(s) outside the forward scopes were left out")
    if not kernels:
        return {"instrument": INSTRUMENT, "unavailable": "Proton recorded no kernel in the "
                "forward scopes", "metrics": [], "kernels": [], "notes": notes}
    n = max(iters, 1)
    calls = sum(e["calls"] for e in kernels.values()) / n
    time_us = sum(e["time_ns"] for e in kernels.values()) / n / 1e3
    metrics = [metric("proton_kernels", calls), metric("proton_kernel_time", time_us),
               metric("proton_mean_kernel_time", time_us / calls if calls else 0.0)]
    flops = sum(e["flops"] for e in kernels.values()) / n
    nbytes = sum(e["bytes"] for e in kernels.values()) / n
    if flops:
        metrics.append(metric("proton_flops", flops / 1e9))
    if nbytes:
        metrics.append(metric("proton_bytes", nbytes / 1e6))
    rows = []
    for name, e in sorted(kernels.items(), key=lambda kv: -kv[1]["time_ns"]):
        rows.append({"name": name, "calls": e["calls"] / n, "time_us": e["time_ns"] / n / 1e3})
        metrics.append({**metric("proton_kernel_calls", e["calls"] / n), "kernel": name})
    if scopes_tree is not None:
        scope_metrics, scope_notes = intra_kernel_scopes(scopes_tree)
        metrics += scope_metrics
        notes += scope_notes
    notes.append(f"{iters} forward(s) profiled; figures are per forward")
    return {"instrument": INSTRUMENT, "unavailable": None, "metrics": metrics, "kernels": rows,
            "notes": notes}


def intra_kernel_scopes(tree: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """``proton_scope_cycles`` per intra-kernel scope (``kernel/scope``) of an instrumented run,
    and notes.

    Proton (Triton 3.6) records each scope in every warp: ``cycles`` is the sum over all warps
    of the grid, ``normalized_cycles`` that sum divided by the warps. The per-warp mean is the
    figure reported (it compares across grid sizes); older outputs with ``cycles`` alone report
    the sum, and the notes say which.
    """
    roots = tree if isinstance(tree, list) else [tree]
    nodes: list[tuple[tuple[str, ...], dict[str, Any]]] = []
    if roots and isinstance(roots[0], dict) and "frame" in roots[0]:
        _walk(roots[0], (), nodes)
    out = []
    per_warp, summed = [], []
    for path, m in nodes:
        cycles, normalized = m.get("cycles"), m.get("normalized_cycles")
        if not isinstance(cycles, int | float) or len(path) < 2:
            continue
        label = "/".join(p for p in path[1:] if p and p not in _INTERNAL_FRAMES)
        if isinstance(normalized, int | float) and normalized > 0:
            out.append({**metric("proton_scope_cycles", normalized), "kernel": label})
            per_warp.append(f"{label} {cycles / normalized:,.0f} warps, {cycles:,.0f} cycles "
                            f"in all")
        else:
            out.append({**metric("proton_scope_cycles", cycles), "kernel": label})
            summed.append(label)
    notes = []
    if per_warp:
        notes.append("intra-kernel scope cycles are means per warp (Proton's normalized_cycles): "
                      + "; ".join(per_warp))
    if summed:
        notes.append("intra-kernel scope cycles summed over all warps (no normalized_cycles): "
                     + ", ".join(summed))
    return out, notes
