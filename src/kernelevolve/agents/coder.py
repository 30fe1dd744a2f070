"""Coder: asks the synthesizer for a candidate for this round's expansion. A reply without usable
code, or one whose kernel is the parent's up to renaming and formatting (an AST-level no-op, not
worth an evaluation), is re-asked a bounded number of times (``search.max_reply_retries``; the
prompt says why), then recorded as a node that produced nothing, and the Planner moves on."""

from __future__ import annotations

from typing import Any

from kernelevolve.graph.compare import same_kernel
from kernelevolve.graph.runtime import Deps
from kernelevolve.graph.search import NO_CODE, Node
from kernelevolve.graph.state import (
    Draft,
    EventKind,
    Expansion,
    PromptState,
    RunState,
    Usage,
    prompt_state,
)


def spend(usage: Usage, draft: Draft) -> Usage:
    if not draft.model or draft.model == "offline":
        return usage
    return usage.model_copy(update={
        "llm_calls": usage.llm_calls + 1,
        "prompt_tokens": usage.prompt_tokens + draft.prompt_tokens,
        "completion_tokens": usage.completion_tokens + draft.completion_tokens,
    })


def no_code_node(node_id: str, parent_id: str, round_: int, exp: Expansion, draft: Draft,
                 at_s: float) -> Node:
    """The node of a reply that never held usable code (kept in the tree: the trace shows why)."""
    return Node(
        id=node_id, parent=parent_id, round=round_, operator=exp.operator,
        intent=draft.intent or exp.intent, origin=draft.origin,
        repair_of=draft.repair_of,
        direction=exp.direction.name if exp.direction is not None else "",
        status=NO_CODE, message=draft.problem, at_s=at_s, **draft.call_fields())


def gave_up_text(draft: Draft) -> str:
    return f"{draft.origin} gave up: {draft.problem}"


def unused_kind(draft: Draft) -> EventKind:
    """The trace's word for a reply that was not evaluated: a no-op, or no usable code."""
    return EventKind.noop if draft.noop_of is not None else EventKind.no_code


def noop_problem(node_id: str) -> str:
    return (f"the reply's kernel is {node_id}'s up to renaming, formatting and comments (an "
            f"AST-level no-op), so it was not evaluated")


def as_noop(draft: Draft, base_id: str, base_source: str | None) -> Draft:
    """``draft`` without its source when that is ``base_source`` up to renaming, formatting,
    comments and docstrings (a reply that changes nothing)."""
    if draft.source is None or base_source is None or not same_kernel(draft.source,
                                                                      base_source):
        return draft
    return draft.model_copy(update={"source": None, "noop_of": base_id,
                                    "problem": noop_problem(base_id)})


def record_no_code(state: RunState, deps: Deps, draft: Draft, usage: Usage, parent_id: str
                   ) -> dict[str, Any]:
    """Keep a reply that never held usable code in the tree (the trace shows why)."""
    tree = state["tree"].model_copy(deep=True)
    exp = state["expansion"]
    assert exp is not None
    node = tree.add(no_code_node(tree.next_id(), parent_id, state["round"], exp, draft,
                                 usage.wall_s))
    tree.record(node, state["task"].goal, state["round"])
    ev = deps.event(unused_kind(draft), state["round"], gave_up_text(draft), usage,
                    node_id=node.id)
    return {"tree": tree, "events": [ev]}


def ask(deps: Deps, ps: PromptState, attempt: int, retry: str = "") -> Draft:
    """One synthesizer call for a new candidate (``attempt``: re-asks so far, and ``retry``: why
    the last reply was not used; the prompt says both). A kernel that is the parent's (or, for
    combine, the partner's) up to renaming and formatting comes back as a no-op draft without
    source."""
    ps.attempt, ps.retry = attempt, retry if attempt else ""
    draft = deps.synthesizer.write(ps).model_copy(update={"attempt": attempt, "origin": "coder"})
    for base in [ps.parent, *(ps.siblings if ps.operator == "combine" else [])]:
        if base is not None:
            draft = as_noop(draft, base.node_id, base.source)
    return draft


def drafted_text(deps: Deps, draft: Draft) -> str:
    return f"{draft.model or deps.synthesizer.name}: {draft.intent or 'candidate'}"


def re_ask_text(draft: Draft) -> str:
    if draft.noop_of is not None:
        return f"{draft.problem}; asking again"
    return f"no usable code ({draft.problem}); asking again"


def code(state: RunState, deps: Deps) -> dict[str, Any]:
    previous = state.get("draft")
    attempt = previous.attempt + 1 if previous is not None and previous.source is None else 0
    draft = ask(deps, prompt_state(state), attempt,
                previous.problem if attempt and previous is not None else "")
    if attempt:
        draft = draft.after(previous)
    usage = spend(deps.tick(state["usage"]), draft)
    out: dict[str, Any] = {"draft": draft, "usage": usage}
    if draft.source is not None:
        out["events"] = [deps.event(EventKind.draft, state["round"], drafted_text(deps, draft),
                                    usage)]
        return out
    if attempt < deps.settings.search.max_reply_retries:
        out["events"] = [deps.event(unused_kind(draft), state["round"], re_ask_text(draft),
                                    usage)]
        return out
    exp = state["expansion"]
    assert exp is not None
    out.update(record_no_code(state, deps, draft, usage, exp.parent_id))
    return out
