"""All the wiring: the only module that knows the graph's edges.

    START -> planner -> retrieve -> coder -> evaluate -> distill -> planner ...
    planner -> evaluate       (warm start: a best known kernel of an earlier run)
    planner -> END            (goal met | budget spent | stalled | stopped by the user)
    coder -> coder            (no usable code: re-ask, bounded)   coder -> planner (gave up)
    evaluate -> debugger      (failed, repairs left)              evaluate -> planner (failed)
    debugger -> evaluate      (repaired draft)                    debugger -> planner (no code)

With ``search.batch`` > 1 a round fans out instead (graph/batch.py):

    planner -> Send(candidate, slot) x batch -> gather -> distill -> planner ...
    gather -> Send(candidate, slot) x failed  (repairs left: a repair wave) -> gather
"""

from __future__ import annotations

import functools
from typing import Literal

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Send

from kernelevolve.agents import coder, debugger, librarian, planner, profiler_analyst
from kernelevolve.graph import batch
from kernelevolve.graph.runtime import Deps
from kernelevolve.graph.state import RunState


def make_after_planner(batch: int):
    def after_planner(state: RunState) -> Literal["retrieve", "evaluate", "__end__"] | list[Send]:
        if state.get("stop_reason"):
            return "__end__"  # END
        if batch > 1:
            return fan_out(state)
        draft = state.get("draft")
        if draft is not None and draft.origin == "seed":
            return "evaluate"  # a warm-start kernel needs no synthesis, only verification
        return "retrieve"
    return after_planner


def fan_out(state: RunState) -> list[Send]:
    """One branch per slot of the batch; LangGraph runs them in one superstep, in parallel."""
    return [Send("candidate", slot) for slot in state.get("batch", [])]


def after_gather(state: RunState) -> Literal["distill"] | list[Send]:
    return fan_out(state) if state.get("batch") else "distill"


def make_after_coder(max_reply_retries: int):
    def after_coder(state: RunState) -> Literal["evaluate", "coder", "planner"]:
        draft = state.get("draft")
        assert draft is not None
        if draft.source is not None:
            return "evaluate"
        return "coder" if draft.attempt < max_reply_retries else "planner"
    return after_coder


def make_after_evaluate(max_repairs: int):
    def after_evaluate(state: RunState) -> Literal["distill", "debugger", "planner"]:
        tree = state["tree"]
        assert tree.last_id is not None
        node = tree.nodes[tree.last_id]
        if node.ok:
            return "distill"
        if debugger.repairs_so_far(tree, node.id) < max_repairs:
            return "debugger"
        return "planner"
    return after_evaluate


def after_debugger(state: RunState) -> Literal["evaluate", "planner"]:
    draft = state.get("draft")
    return "evaluate" if draft is not None and draft.source is not None else "planner"


def build_graph(deps: Deps, checkpointer: BaseCheckpointSaver | None = None
                ) -> CompiledStateGraph:
    g: StateGraph = StateGraph(RunState)
    g.add_node("planner", functools.partial(planner.plan, deps=deps))
    g.add_node("retrieve", functools.partial(librarian.retrieve, deps=deps))
    g.add_node("coder", functools.partial(coder.code, deps=deps))
    g.add_node("evaluate", functools.partial(profiler_analyst.evaluate, deps=deps))
    g.add_node("debugger", functools.partial(debugger.repair, deps=deps))
    g.add_node("distill", functools.partial(librarian.distill, deps=deps))
    g.add_node("candidate", functools.partial(batch.candidate, deps=deps))
    g.add_node("gather", functools.partial(batch.gather, deps=deps))
    g.add_edge(START, "planner")
    g.add_conditional_edges("planner", make_after_planner(deps.settings.search.batch),
                            ["retrieve", "evaluate", "candidate", END])
    g.add_edge("candidate", "gather")
    g.add_conditional_edges("gather", after_gather, ["candidate", "distill"])
    g.add_edge("retrieve", "coder")
    g.add_conditional_edges("coder", make_after_coder(deps.settings.search.max_reply_retries))
    g.add_conditional_edges("evaluate", make_after_evaluate(deps.settings.search.max_repairs))
    g.add_conditional_edges("debugger", after_debugger)
    g.add_edge("distill", "planner")
    return g.compile(checkpointer=checkpointer)


def recursion_limit(deps: Deps) -> int:
    """Graph steps the budget can need (LangGraph stops a run past this)."""
    s = deps.settings.search
    per_round = 4 + (s.max_reply_retries + 1) + 2 * s.max_repairs
    return s.rounds * per_round + 20
