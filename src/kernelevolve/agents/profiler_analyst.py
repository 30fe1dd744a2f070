"""Profiler-Analyst: evaluates the draft on the target (the harness's cascade; profilers for
survivors where the config enables them), records the node, back-propagates its reward, and
writes the diagnosis the next round acts on."""

from __future__ import annotations

from typing import Any

from kernelevolve.graph.runtime import Deps
from kernelevolve.graph.search import DiagnosisInfo, Node
from kernelevolve.graph.state import Draft, ErrorInfo, EventKind, Expansion, RunState
from kernelevolve.tools.diagnosis import ProfileReport, diagnosis_of
from kernelevolve.tools.harness.result import EvalResult

# The MTIA simulator names the resource that set each launch's time; what that means as a bound.
_MTIA_BOUNDS = {"sram": "memory-bound", "dram": "memory-bound", "launch": "launch-bound",
                "pe:dma": "memory-bound", "pe:lm": "memory-bound"}


def _mtia_ceiling(cand: dict[str, Any]) -> tuple[float, str] | None:
    """The simulated chip's roofline for this forward: each launch's time if only its busiest
    chip-wide resource counted (SRAM or DRAM bandwidth for the bytes it moves, the dot-product
    engines' peak for its matrix work) plus the launch; and which resource that is, in words.
    The simulated time over this floor is what the PEs' own work (DMA commands, SIMD math,
    dispatch) adds: the room a better kernel has."""
    try:
        # imported here: kernelevolve.tools.mtia loads triton, which must not happen before a
        # caller has chosen the interpreter (TRITON_INTERPRET is read when triton is imported)
        from kernelevolve.tools.mtia.generations import get_generation

        gen = get_generation(str(cand.get("gen", "")))
    except ValueError:
        return None
    launches = [x for x in cand.get("launches", []) if isinstance(x, dict)]
    if not launches:
        return None
    floor_s = 0.0
    spent: dict[str, float] = {"sram": 0.0, "dram": 0.0, "dpe": 0.0}
    sram_bytes = dram_bytes = flops = 0.0
    for x in launches:
        parts = {"sram": float(x.get("sram_time_s", 0.0)),
                 "dram": float(x.get("dram_time_s", 0.0)),
                 "dpe": float(x.get("dpe_flops", 0.0)) / gen.dpe_chip_flops.value}
        bound = max(parts, key=lambda k: parts[k])
        spent[bound] += parts[bound]
        floor_s += float(x.get("launch_s", 0.0)) + parts[bound]
        sram_bytes += float(x.get("sram_bytes", 0.0))
        dram_bytes += float(x.get("dram_read_bytes", 0.0)) + float(x.get("dram_write_bytes", 0.0))
        flops += float(x.get("dpe_flops", 0.0))
    roof = max(spent, key=lambda k: spent[k])
    words = {
        "sram": f"on-chip SRAM bandwidth {gen.sram_bw.value / 1e12:.3g} TB/s for the "
                f"{sram_bytes / 1e6:.4g} MB it moves",
        "dram": f"DRAM bandwidth {gen.dram_bw_effective / 1e9:.4g} GB/s (after ECC) for the "
                f"{dram_bytes / 1e6:.4g} MB it moves",
        "dpe": f"dot-product engines' peak {gen.dpe_chip_flops.value / 1e12:.4g} TFLOPS for "
               f"its {flops / 1e9:.4g} GFLOP",
    }[roof]
    return floor_s, f"simulated MTIA {gen.name}: {words}, plus the launch"


def _traffic_mb(sim: Any) -> float | None:
    if not isinstance(sim, dict):
        return None
    for m in sim.get("metrics", []):
        if isinstance(m, dict) and m.get("name") == "mtia_sim_sram_traffic":
            value = m.get("value")
            return float(value) if isinstance(value, int | float) else None
    return None


def _mtia_diagnosis(report: ProfileReport) -> DiagnosisInfo | None:
    cand = report.detail.get("candidate")
    if not isinstance(cand, dict):
        return None
    limiting = str(cand.get("limiting_resource", ""))
    metrics = {m.get("name"): m.get("value") for m in cand.get("metrics", [])
               if isinstance(m, dict)}
    occupancy = metrics.get("mtia_sim_pe_occupancy")
    evidence = [f"simulated MTIA {cand.get('gen')}: time set by {limiting}"]
    if isinstance(occupancy, int | float):
        evidence.append(f"PE occupancy {occupancy:.0%}")
    mine, eager = _traffic_mb(cand), _traffic_mb(report.detail.get("eager_reference"))
    if mine is not None:
        evidence.append(f"on-chip traffic {mine:.4g} MB per forward"
                        + (f" (eager's unfused ops: {eager:.4g} MB)" if eager else ""))
    if limiting.startswith("pe:") and isinstance(occupancy, int | float) and occupancy < 0.5:
        kind = "occupancy-bound"
    else:
        kind = _MTIA_BOUNDS.get(limiting, "compute-bound" if limiting.startswith("pe:")
                                else "memory-bound")
    ceiling = _mtia_ceiling(cand)
    time_s = cand.get("time_s")
    fraction = floor_ms = None
    words = ""
    if ceiling is not None and isinstance(time_s, int | float) and time_s > 0:
        floor_ms, words = ceiling[0] * 1e3, ceiling[1]
        fraction = min(1.0, ceiling[0] / time_s)
    return DiagnosisInfo(kind=kind, evidence=evidence, source="mtia-sim",  # type: ignore[arg-type]
                         roofline_fraction=fraction, ceiling=words, ceiling_ms=floor_ms)


def _gpu_ceiling(reports: list[ProfileReport]) -> tuple[float | None, str]:
    """The measured roof a GPU forward is held against (the binding one of the roofline's
    memory and compute roofs) and the forward's time at it, from the roofline report."""
    roof = next((r for r in reports if r.instrument == "roofline"), None)
    if roof is None:
        return None, ""
    v = {m.name: m.value for m in roof.metrics if m.kernel is None}
    bw, comp = v.get("bandwidth_fraction"), v.get("compute_fraction")
    kernel_us = v.get("kernel_time")
    if bw is None and comp is None:
        return None, ""
    if comp is None or (bw is not None and bw >= comp):
        frac, words = bw, (f"measured memory bandwidth {v.get('peak_bandwidth', 0):.4g} GB/s "
                           f"for the {v.get('bytes', 0):.4g} MB it moves")
    else:
        frac, words = comp, f"measured matrix-product rate for its {v.get('flops', 0):.4g} GFLOP"
    floor = kernel_us * 1e-3 * frac if kernel_us is not None and frac is not None else None
    return floor, words


def diagnose(result: EvalResult) -> DiagnosisInfo | None:
    """The diagnosis of a verified candidate from its profile (GPU profilers or the simulator),
    with the roof it is held against (the roofline's ceiling; the simulated chip's)."""
    reports = result.profile or []
    found = diagnosis_of(reports)
    if found is not None:
        floor_ms, ceiling = _gpu_ceiling(reports)
        return DiagnosisInfo(kind=found.kind.value, evidence=found.evidence[:4],  # type: ignore[arg-type]
                             roofline_fraction=found.roofline_fraction,
                             source=", ".join(found.instruments), ceiling=ceiling,
                             ceiling_ms=floor_ms)
    for report in reports:
        if report.instrument == "mtia-sim":
            return _mtia_diagnosis(report)
    return None


def measure(deps: Deps, source: str) -> EvalResult:
    """The harness's verdict on ``source`` (the pool serializes GPU timing per GPU)."""
    result = deps.pool.evaluate(deps.problem, source)
    if result.device:
        deps.device_name = result.device
    return result


def node_of(node_id: str, round_: int, exp: Expansion, draft: Draft, result: EvalResult,
            at_s: float) -> Node:
    """The tree node of an evaluated draft (not yet in the tree). A repair is a sibling of what
    it repairs (same parent, linked by repair_of), so the design lineage runs through verified
    nodes only."""
    assert draft.source is not None
    timing = result.timing
    return Node(
        id=node_id, parent=exp.parent_id, round=round_, operator=exp.operator,
        intent=draft.intent or exp.intent, origin=draft.origin,
        repair_of=draft.repair_of,
        direction=exp.direction.name if exp.direction is not None else "",
        source=draft.source, params=draft.params, status=result.status.value,
        message=result.message, stderr_tail=result.stderr_tail[-2000:],
        speedup=timing.speedup_vs_eager if timing else None,
        latency_ms=timing.candidate.median_ms if timing else None,
        eager_roofline=timing.eager_roofline if timing and timing.roofline_beyond_l2 else None,
        diagnosis=diagnose(result) if result.ok else None,
        result_json=result.model_dump_json(exclude={"stderr_tail"}), at_s=at_s,
        **draft.call_fields())


def keep_candidate(deps: Deps, node_id: str, source: str) -> None:
    cand_dir = deps.run_dir / "candidates"
    cand_dir.mkdir(parents=True, exist_ok=True)
    (cand_dir / f"{node_id}.py").write_text(source)


def speed_text(node: Node, result: EvalResult) -> str:
    speed = f", {node.speedup:.2f}x vs eager" if node.speedup is not None else ""
    return speed + (" (simulated)" if result.timing is not None and result.timing.simulated
                    else "")


def verdict_text(node: Node, result: EvalResult) -> str:
    """The trace line of an evaluation."""
    return (f"{node.id}: {result.status.value}{speed_text(node, result)}"
            + (f": {result.message.splitlines()[0][:200]}"
               if not result.ok and result.message else "")
            + (f"; {node.diagnosis.kind}" if node.diagnosis else ""))


def error_of(node: Node, result: EvalResult) -> ErrorInfo | None:
    """What the Debugger starts from when ``node`` failed."""
    return None if result.ok else ErrorInfo(
        node_id=node.id, status=result.status.value, message=result.message,
        stderr_tail=result.stderr_tail[-3000:], source=node.source, params=node.params)


def evaluate(state: RunState, deps: Deps) -> dict[str, Any]:
    draft = state["draft"]
    exp = state["expansion"]
    assert draft is not None and draft.source is not None and exp is not None
    result = measure(deps, draft.source)
    usage = deps.tick(state["usage"])
    usage = usage.model_copy(update={"evaluations": usage.evaluations + 1})
    tree = state["tree"].model_copy(deep=True)
    node = tree.add(node_of(tree.next_id(), state["round"], exp, draft, result, usage.wall_s))
    improved = tree.record(node, state["task"].goal, state["round"])
    keep_candidate(deps, node.id, draft.source)
    if improved:
        deps.write_best(draft.source)
    events = [deps.event(EventKind.evaluate, state["round"], verdict_text(node, result), usage,
                         node_id=node.id)]
    if improved:
        events.append(deps.event(EventKind.improve, state["round"],
                                 f"new best {node.id}{speed_text(node, result)}", usage,
                                 node_id=node.id))
    return {"tree": tree, "usage": usage, "events": events,
            "last_error": error_of(node, result),
            "diagnosis": node.diagnosis if result.ok else state.get("diagnosis")}
