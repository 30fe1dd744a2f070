"""Coder: asks the synthesizer for a candidate for this round's expansion. A reply without usable
code is re-asked a bounded number of times (the prompt says so), then recorded as a node that
produced nothing, and the Planner moves on."""

from __future__ import annotations

from typing import Any

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
        intent=draft.intent or exp.intent, origin=draft.origin, repair_of=draft.repair_of,
        status=NO_CODE, message=draft.problem, prompt=draft.prompt, reply=draft.reply,
        model=draft.model, tokens=draft.prompt_tokens + draft.completion_tokens, at_s=at_s)


def gave_up_text(draft: Draft) -> str:
    return f"{draft.origin} gave up: {draft.problem}"


def record_no_code(state: RunState, deps: Deps, draft: Draft, usage: Usage, parent_id: str
                   ) -> dict[str, Any]:
    """Keep a reply that never held usable code in the tree (the trace shows why)."""
    tree = state["tree"].model_copy(deep=True)
    exp = state["expansion"]
    assert exp is not None
    node = tree.add(no_code_node(tree.next_id(), parent_id, state["round"], exp, draft,
                                 usage.wall_s))
    tree.record(node, state["task"].goal, state["round"])
    ev = deps.event(EventKind.no_code, state["round"], gave_up_text(draft), usage,
                    node_id=node.id)
    return {"tree": tree, "events": [ev]}


def ask(deps: Deps, ps: PromptState, attempt: int) -> Draft:
    """One synthesizer call for a new candidate (``attempt``: re-asks so far, the prompt says)."""
    ps.attempt = attempt
    return deps.synthesizer.write(ps).model_copy(update={"attempt": attempt, "origin": "coder"})


def drafted_text(deps: Deps, draft: Draft) -> str:
    return f"{draft.model or deps.synthesizer.name}: {draft.intent or 'candidate'}"


def re_ask_text(draft: Draft) -> str:
    return f"no usable code ({draft.problem}); asking again"


def code(state: RunState, deps: Deps) -> dict[str, Any]:
    previous = state.get("draft")
    attempt = previous.attempt + 1 if previous is not None and previous.source is None else 0
    draft = ask(deps, prompt_state(state), attempt)
    usage = spend(deps.tick(state["usage"]), draft)
    out: dict[str, Any] = {"draft": draft, "usage": usage}
    if draft.source is not None:
        out["events"] = [deps.event(EventKind.draft, state["round"], drafted_text(deps, draft),
                                    usage)]
        return out
    if attempt < deps.settings.search.max_reply_retries:
        out["events"] = [deps.event(EventKind.no_code, state["round"], re_ask_text(draft),
                                    usage)]
        return out
    exp = state["expansion"]
    assert exp is not None
    out.update(record_no_code(state, deps, draft, usage, exp.parent_id))
    return out
