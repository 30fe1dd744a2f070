"""Debugger: repairs a failed candidate from its status, message and stderr, with the debugging
knowledge retrieved for that error; bounded by ``search.max_repairs`` per lineage. A reply
without code, or one that returns the failed candidate unchanged (up to renaming, formatting and
comments), is recorded as a node that produced nothing (not evaluated), and the Planner moves
on."""

from __future__ import annotations

from typing import Any

from kernelevolve.agents.coder import record_no_code, spend
from kernelevolve.agents.librarian import lookup
from kernelevolve.graph.compare import same_kernel
from kernelevolve.graph.runtime import Deps
from kernelevolve.graph.search import SearchTree
from kernelevolve.graph.state import (
    Draft,
    ErrorInfo,
    EventKind,
    PromptState,
    RunState,
    prompt_state,
)


def repairs_so_far(tree: SearchTree, node_id: str) -> int:
    """How many Debugger repairs led to ``node_id`` (0 for a Coder's candidate)."""
    n, node = 0, tree.nodes[node_id]
    while node.repair_of is not None:
        n += 1
        node = tree.nodes[node.repair_of]
    return n


def ask_repair(deps: Deps, ps: PromptState, error: ErrorInfo) -> Draft:
    """One synthesizer call to repair ``error``'s candidate; an unchanged echo counts as none."""
    draft = deps.synthesizer.repair(ps).model_copy(update={
        "origin": "debugger", "repair_of": error.node_id, "attempt": 0})
    if draft.source is not None and error.source is not None \
            and same_kernel(draft.source, error.source):
        # Evaluating it again would only fail again (small models often echo the input).
        draft = draft.model_copy(update={
            "source": None, "noop_of": error.node_id,
            "problem": "the reply returned the failed candidate unchanged (up to renaming, "
                       "formatting and comments)"})
    return draft


def repairing_text(error: ErrorInfo, draft: Draft) -> str:
    return f"repairing {error.node_id} ({error.status}): {draft.intent or 'fix'}"


def repair(state: RunState, deps: Deps) -> dict[str, Any]:
    error = state.get("last_error")
    assert error is not None
    knowledge = lookup(deps, state["task"].operator_class, None, error, None)
    ps = prompt_state({**state, "knowledge": knowledge}, repair=True)
    draft = ask_repair(deps, ps, error)
    usage = spend(deps.tick(state["usage"]), draft)
    out: dict[str, Any] = {"draft": draft, "usage": usage, "knowledge": knowledge}
    if draft.source is None:
        exp = state["expansion"]
        assert exp is not None
        out.update(record_no_code(state, deps, draft, usage, exp.parent_id))
        return out
    out["events"] = [deps.event(EventKind.repair, state["round"], repairing_text(error, draft),
                                usage, node_id=error.node_id)]
    return out
