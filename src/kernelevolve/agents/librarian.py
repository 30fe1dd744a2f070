"""Librarian: retrieves knowledge for the round from the situation (target, operator class, the
reference's ops, diagnosis, last error, intent), and distils a skill after a child beat its
parent."""

from __future__ import annotations

import re
from typing import Any

from kernelevolve.errors import ProblemError
from kernelevolve.graph.runtime import Deps
from kernelevolve.graph.search import ROOT, DiagnosisInfo, Node, SearchTree
from kernelevolve.graph.state import ErrorInfo, Event, EventKind, Knowledge, RunState, Usage
from kernelevolve.kb import Improvement, Situation, kb_target
from kernelevolve.problem import Problem

# Calls in a reference's source, for when it cannot be traced: torch.softmax, F.gelu, nn.Linear.
_SOURCE_CALL = re.compile(r"\b(?:torch\.nn\.functional|torch\.nn|torch|nn|F)\.([A-Za-z_]\w*)\s*\(")
_NOT_OPS = {"module", "parameter", "randn", "rand", "randint", "empty", "zeros", "ones", "tensor",
            "arange", "manual_seed", "no_grad", "device", "sequential", "modulelist", "identity",
            "full", "linspace", "randn_like", "rand_like", "zeros_like", "ones_like", "empty_like"}


def _target_tag(deps: Deps) -> str:
    return kb_target(deps.target.name, deps.device_name)


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


# Problem digest -> its ops; a run asks for the same problem every round.
_OPS: dict[str, tuple[str, ...]] = {}


def reference_ops(problem: Problem) -> tuple[str, ...]:
    """The aten ops the reference runs, in graph order (``('convolution', 'native_group_norm',
    'mean')``), from the same ``make_fx`` trace the offline synthesizer reads; a reference that
    does not trace gives the torch calls its source names instead. Cached per source."""
    from kernelevolve.synth.offline import Unsupported
    from kernelevolve.synth.offline.frontend.fxgraph import calls, op_name
    from kernelevolve.synth.offline.frontend.trace import trace

    key = problem.digest
    if key not in _OPS:
        try:
            ops = tuple(dict.fromkeys(op_name(n) for n in calls(trace(problem))))
        except (Unsupported, ProblemError):
            # Untraceable (data-dependent control flow, a module that rejects the tracer's
            # marker values): the calls the source spells out name the same operators.
            names = (_snake(m.group(1)) for m in _SOURCE_CALL.finditer(problem.source))
            ops = tuple(dict.fromkeys(n for n in names if n not in _NOT_OPS))
        _OPS[key] = ops
    return _OPS[key]


def situation(target: str, task_class: str | None, ops: tuple[str, ...],
              diagnosis: DiagnosisInfo | None, error: ErrorInfo | None,
              intent: str | None) -> Situation:
    """The retrieval situation for a round, from what the state knows. ``target`` is the
    knowledge-base tag (``kb_target``). A reply without code (``no_code``) is no error the
    knowledge base explains."""
    failed = error is not None and error.status != "no_code"
    return Situation(
        target=target, operator_class=task_class, ops=ops,
        diagnosis=diagnosis.kind if diagnosis is not None else None,
        error_status=error.status if failed and error is not None else None,
        error_message=error.message[:4000] if failed and error is not None else None,
        intent=intent)


def lookup(deps: Deps, task_class: str | None, diagnosis: DiagnosisInfo | None,
           error: ErrorInfo | None, intent: str | None) -> list[Knowledge]:
    """Passages for a situation (empty without a knowledge base or with retrieval off)."""
    if deps.kb is None or not deps.settings.search.retrieve \
            or not deps.synthesizer.reads_knowledge:
        return []
    found = situation(_target_tag(deps), task_class, reference_ops(deps.problem), diagnosis,
                      error, intent)
    return [Knowledge(title=h.title + (f" / {h.section}" if h.section else ""), tier=h.tier,
                      text=h.text, reason=h.reason, doc_id=h.doc_id)
            for h in deps.kb.retrieve(found)]


def retrieve(state: RunState, deps: Deps) -> dict[str, Any]:
    exp = state["expansion"]
    assert exp is not None
    knowledge = lookup(deps, state["task"].operator_class, state.get("diagnosis"), None,
                       exp.intent)
    usage = deps.tick(state["usage"])
    titles = ", ".join(k.title for k in knowledge) or "nothing"
    ev = deps.event(EventKind.retrieve, state["round"], f"retrieved {len(knowledge)}: {titles}",
                    usage)
    return {"knowledge": knowledge, "usage": usage, "events": [ev]}


def distill(state: RunState, deps: Deps) -> dict[str, Any]:
    """After a round: for each verified candidate of it that beat its (verified) parent by the
    configured margin, write the lesson to the knowledge base's skills (one candidate a round,
    or several with ``search.batch``)."""
    tree = state["tree"]
    usage = deps.tick(state["usage"])
    events = []
    for node in [n for n in tree.nodes.values() if n.round == state["round"] and n.ok]:
        ev = _distill_one(state, deps, tree, node, usage)
        if ev is not None:
            events.append(ev)
    return {"usage": usage, "events": events} if events else {"usage": usage}


def _distill_one(state: RunState, deps: Deps, tree: SearchTree, node: Node, usage: Usage
                 ) -> Event | None:
    if (deps.kb is None or not deps.settings.search.distill
            or node.parent in (None, ROOT) or node.latency_ms is None):
        return None
    parent = tree.nodes[node.parent] if node.parent else None
    if parent is None or not parent.ok or parent.latency_ms is None or parent.source is None \
            or node.source is None:
        return None
    if parent.latency_ms / node.latency_ms - 1 < deps.settings.kb.skill_min_gain:
        return None  # no lesson (and no need to open the knowledge base)
    improvement = Improvement(
        target=_target_tag(deps), operator_class=state["task"].operator_class or "unknown",
        diagnosis=parent.diagnosis.kind if parent.diagnosis is not None else None,
        parent_id=parent.id, child_id=node.id, parent_source=parent.source,
        child_source=node.source, parent_latency_ms=parent.latency_ms,
        child_latency_ms=node.latency_ms, intent=node.intent[:200],
        run_id=deps.run_dir.name)
    write = deps.kb.distill_improvement(improvement)
    if write is None:
        return None
    return deps.event(EventKind.distill, state["round"],
                      f"skill {write.skill.id} {write.action}: "
                      f"{parent.id} -> {node.id} ({parent.latency_ms / node.latency_ms:.2f}x)",
                      usage, node_id=node.id)
