"""A round of several candidates (``search.batch`` > 1): one branch per candidate, fanned out by
the graph with LangGraph ``Send`` (build.py), folded back into the tree by one gather.

    planner --Send(Slot) x k--> candidate --> gather --Send(Slot) x j--> candidate --> gather
                                                     (failed ones: a repair wave)   --> distill

LangGraph runs the tasks of one superstep in parallel threads, so the branches' synthesizer
calls overlap and their evaluations reach the pool together (the pool keeps GPU timing serial
per GPU). A branch reads only its Slot and returns an Outcome; it never touches the tree, the
budget or the run's clock, which the gather updates once, in node-id order, so a batch's tree
does not depend on which branch finished first. Node ids are fixed when the round fans out.

Checkpoints: LangGraph saves each finished task's writes as it finishes, so a batch cut off
mid-way (a branch raised, the process was killed) resumes with its finished siblings kept;
only the branches without an outcome run again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from langgraph.types import Overwrite

from kernelevolve.agents import coder, debugger, profiler_analyst
from kernelevolve.agents.debugger import repairs_so_far
from kernelevolve.agents.librarian import lookup
from kernelevolve.graph.runtime import Deps
from kernelevolve.graph.search import finished
from kernelevolve.graph.state import (
    Draft,
    Event,
    EventKind,
    Expansion,
    Knowledge,
    Outcome,
    RunState,
    Slot,
    Usage,
    prompt_state,
)

# The knowledge base is opened lazily and its embedding model is not known to be thread-safe:
# the branches retrieve one at a time (milliseconds beside a synthesizer call).
_KB_LOCK = threading.Lock()
# The offline synthesizer's mutations share one random generator and a set of tried
# configurations; its calls are pure Python the GIL would serialize anyway.
_OFFLINE_LOCK = threading.Lock()


def candidate(slot: Slot, deps: Deps) -> dict[str, Any]:
    """One branch: draft the slot's candidate (Coder, with its bounded re-asks; Debugger for a
    repair; a warm-start seed as it is), evaluate it, and hand back what came of it."""
    events: list[Event] = []
    spent = Usage()
    knowledge: list[Knowledge] = []

    def event(kind: EventKind, text: str, node_id: str | None = None) -> None:
        events.append(deps.event(kind, slot.round, text, deps.stamp(slot.wall_s),
                                 node_id=node_id))

    if slot.seed is not None:
        draft = slot.seed
    elif slot.error is not None:
        draft, spent, knowledge = _repair(slot, deps, event)
    else:
        draft, spent, knowledge = _write(slot, deps, event)
    exp = slot.expansion
    if draft.source is None:
        node = coder.no_code_node(slot.node_id, exp.parent_id, slot.round, exp, draft,
                                  deps.stamp(slot.wall_s).wall_s)
        event(coder.unused_kind(draft), coder.gave_up_text(draft), node.id)
        return {"outcomes": [Outcome(node=node, events=events, usage=spent,
                                     knowledge=knowledge)]}
    result = profiler_analyst.measure(deps, draft.source)
    spent = spent.model_copy(update={"evaluations": spent.evaluations + 1})
    node = profiler_analyst.node_of(slot.node_id, slot.round, exp, draft, result,
                                    deps.stamp(slot.wall_s).wall_s)
    profiler_analyst.keep_candidate(deps, node.id, draft.source)
    event(EventKind.evaluate, profiler_analyst.verdict_text(node, result), node.id)
    return {"outcomes": [Outcome(node=node, events=events, usage=spent,
                                 error=profiler_analyst.error_of(node, result),
                                 speed=profiler_analyst.speed_text(node, result),
                                 knowledge=knowledge)]}


def _synthesize(deps: Deps, call: Callable[..., Draft], *args: Any) -> Draft:
    if deps.synthesizer.name == "offline":
        with _OFFLINE_LOCK:
            return call(*args)
    return call(*args)


def _write(slot: Slot, deps: Deps, event: Callable[..., None]) -> tuple[Draft, Usage, list[Knowledge]]:
    ps = slot.prompt
    assert ps is not None
    with _KB_LOCK:
        knowledge = lookup(deps, ps.task.operator_class, ps.diagnosis, None, ps.intent)
    titles = ", ".join(k.title for k in knowledge) or "nothing"
    event(EventKind.retrieve, f"retrieved {len(knowledge)}: {titles}")
    ps = ps.model_copy(update={"knowledge": knowledge})
    spent = Usage()
    retries = deps.settings.search.max_reply_retries
    earlier: Draft | None = None
    for attempt in range(retries + 1):
        retry = earlier.problem if earlier is not None else ""
        draft = _synthesize(deps, coder.ask, deps, ps, attempt, retry).after(earlier)
        earlier = draft
        spent = coder.spend(spent, draft)
        if draft.source is not None:
            event(EventKind.draft, coder.drafted_text(deps, draft))
            break
        if attempt < retries:
            event(coder.unused_kind(draft), coder.re_ask_text(draft))
    return draft, spent, knowledge


def _repair(slot: Slot, deps: Deps, event: Callable[..., None]) -> tuple[Draft, Usage, list[Knowledge]]:
    ps, error = slot.prompt, slot.error
    assert ps is not None and error is not None
    with _KB_LOCK:
        knowledge = lookup(deps, ps.task.operator_class, None, error, None)
    ps = ps.model_copy(update={"knowledge": knowledge})
    draft = _synthesize(deps, debugger.ask_repair, deps, ps, error)
    if draft.source is not None:
        event(EventKind.repair, debugger.repairing_text(error, draft), error.node_id)
    return draft, coder.spend(Usage(), draft), knowledge


def gather(state: RunState, deps: Deps) -> dict[str, Any]:
    """Fold a batch's outcomes into the tree (in node-id order), the budget and the trace, once;
    then the repairs the failed ones get (the next wave's slots, empty when there are none)."""
    outcomes = sorted(state.get("outcomes", []), key=lambda o: int(o.node.id.lstrip("n")))
    tree = state["tree"].model_copy(deep=True)
    round_, goal = state["round"], state["task"].goal
    usage = deps.tick(state["usage"])
    for o in outcomes:
        usage = usage.plus(o.usage)
    events = sorted((e for o in outcomes for e in o.events), key=lambda e: e.at_s)
    failed = []
    for o in outcomes:
        node = tree.add(o.node.model_copy())
        if tree.record(node, goal, round_):
            assert node.source is not None
            deps.write_best(node.source)
            events.append(deps.event(EventKind.improve, round_, f"new best {node.id}{o.speed}",
                                     usage, node_id=node.id))
        if o.error is not None:
            failed.append(o.error)
    repairs: list[Slot] = []
    # Once a sibling met the goal the run stops after this round: no repairs to wait for.
    for error in [] if finished(tree, goal) else failed:
        node = tree.nodes[error.node_id]
        if repairs_so_far(tree, node.id) >= deps.settings.search.max_repairs:
            continue
        assert node.parent is not None
        exp = Expansion(parent_id=node.parent, operator=node.operator, intent=node.intent)
        node_id = f"n{len(tree.nodes) + len(repairs):04d}"
        ps = prompt_state({**state, "tree": tree, "expansion": exp, "draft": None,
                           "knowledge": [], "last_error": error,
                           "diagnosis": tree.nodes[node.parent].diagnosis}, repair=True,
                          node_id=node_id)
        repairs.append(Slot(node_id=node_id, round=round_, expansion=exp, prompt=ps,
                            error=error, wall_s=usage.wall_s))
    # The round's knowledge as the report shows it: what this wave's branches retrieved.
    knowledge = list({(k.doc_id, k.title): k for o in outcomes for k in o.knowledge}.values())
    return {"tree": tree, "usage": usage, "events": events, "outcomes": Overwrite([]),
            "batch": repairs, "knowledge": knowledge}
