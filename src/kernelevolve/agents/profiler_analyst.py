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
    if limiting.startswith("pe:") and isinstance(occupancy, int | float) and occupancy < 0.5:
        kind = "occupancy-bound"
    else:
        kind = _MTIA_BOUNDS.get(limiting, "compute-bound" if limiting.startswith("pe:")
                                else "memory-bound")
    return DiagnosisInfo(kind=kind, evidence=evidence, source="mtia-sim")  # type: ignore[arg-type]


def diagnose(result: EvalResult) -> DiagnosisInfo | None:
    """The diagnosis of a verified candidate from its profile (GPU profilers or the simulator)."""
    reports = result.profile or []
    found = diagnosis_of(reports)
    if found is not None:
        return DiagnosisInfo(kind=found.kind.value, evidence=found.evidence[:4],  # type: ignore[arg-type]
                             roofline_fraction=found.roofline_fraction,
                             source=", ".join(found.instruments))
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
        intent=draft.intent or exp.intent, origin=draft.origin, repair_of=draft.repair_of,
        source=draft.source, params=draft.params, status=result.status.value,
        message=result.message, stderr_tail=result.stderr_tail[-2000:],
        speedup=timing.speedup_vs_eager if timing else None,
        latency_ms=timing.candidate.median_ms if timing else None,
        diagnosis=diagnose(result) if result.ok else None,
        result_json=result.model_dump_json(exclude={"stderr_tail"}), prompt=draft.prompt,
        reply=draft.reply, model=draft.model,
        tokens=draft.prompt_tokens + draft.completion_tokens, at_s=at_s)


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
        (deps.run_dir / "best.py").write_text(draft.source)
    events = [deps.event(EventKind.evaluate, state["round"], verdict_text(node, result), usage,
                         node_id=node.id)]
    if improved:
        events.append(deps.event(EventKind.improve, state["round"],
                                 f"new best {node.id}{speed_text(node, result)}", usage,
                                 node_id=node.id))
    return {"tree": tree, "usage": usage, "events": events,
            "last_error": error_of(node, result),
            "diagnosis": node.diagnosis if result.ok else state.get("diagnosis")}
