"""Planner: decides whether the run goes on, which node to expand, with which memory operator and
intent (from the node's diagnosis), and when to restart from scratch. In interactive runs it
pauses between rounds (``interrupt``) and takes the user's guidance."""

from __future__ import annotations

from typing import Any

from langgraph.types import interrupt

from kernelevolve.graph.runtime import Deps
from kernelevolve.graph.search import (
    ROOT,
    DiagnosisInfo,
    MemoryOperator,
    Node,
    SearchTree,
    choose_operator,
    select_batch,
    select_mcts,
    select_tournament,
    stagnated,
    stop_reason,
)
from kernelevolve.graph.state import (
    Draft,
    Event,
    EventKind,
    Expansion,
    RunState,
    Slot,
    Usage,
    prompt_state,
)

# What each bound asks the next candidate to do (the knowledge base's playbooks say how).
ACTIONS = {
    "memory-bound": "cut the bytes moved: fuse passes, keep data in registers, load wider "
                    "contiguous tiles, avoid re-reading inputs",
    "compute-bound": "raise math throughput: fewer instructions per element (reuse values, "
                     "cheaper math), tl.dot on tensor cores with larger tiles and more "
                     "pipelining stages for matrix products",
    "occupancy-bound": "hide latency: fewer registers or smaller tiles per program, more "
                       "programs in flight, independent loads issued early",
    "launch-bound": "launch fewer kernels: fuse everything into one launch (a persistent "
                    "kernel if needed), no host work between launches",
}

STOP_WORDS = {"stop", "quit", "exit", "done", "enough"}


def summary(state: RunState) -> dict[str, Any]:
    """What the user sees when an interactive run pauses."""
    tree = state["tree"]
    best = tree.best
    this_round = sum(1 for n in tree.nodes.values() if n.round == state["round"] and n.id != ROOT)
    return {
        "round": state["round"],
        "nodes": len(tree.nodes) - 1,
        "best": None if best is None else {
            "node": best.id, "speedup": best.speedup, "latency_ms": best.latency_ms,
            "intent": best.intent},
        "last": [{"node": n.id, "status": n.status, "speedup": n.speedup, "intent": n.intent}
                 for n in list(tree.nodes.values())[-max(3, this_round):] if n.id != ROOT],
        "usage": state["usage"].model_dump(),
    }


def parse_guidance(answer: Any) -> tuple[bool, str]:
    """(stop?, note) from what the user typed or sent: a string, or {"action", "note"}."""
    if isinstance(answer, dict):
        action = str(answer.get("action", "continue")).strip().lower()
        note = str(answer.get("note", "") or "").strip()
        return action in STOP_WORDS, note
    text = str(answer or "").strip()
    if text.lower() in STOP_WORDS:
        return True, ""
    return False, "" if text.lower() in ("", "continue", "go", "c") else text


def intent_for(op: MemoryOperator, parent: Node, partner: Node | None,
               diagnosis: DiagnosisInfo | None, restart: bool) -> str:
    if op == "fresh":
        return ("start over from scratch (memoryless restart after stagnation): a different "
                "kernel design than before" if restart
                else "write a first correct kernel that fuses the whole forward")
    why = (f"{parent.id} is {diagnosis.kind}" + (f" ({diagnosis.evidence[0]})"
                                                  if diagnosis.evidence else "")
           if diagnosis is not None else f"{parent.id} has no diagnosis")
    action = ACTIONS.get(diagnosis.kind, "") if diagnosis is not None else \
        "make it faster without breaking correctness"
    if op == "inherit":
        return f"improve {parent.id}: {why}; {action}"
    if op == "compare":
        return f"compare {parent.id}'s children, keep what made the fastest fast; {why}; {action}"
    assert partner is not None
    return f"combine {parent.id} with {partner.id}: keep each one's strengths; {why}"


def plan(state: RunState, deps: Deps) -> dict[str, Any]:
    cfg = deps.settings.search
    round_ = state["round"]
    notes: list[str] = []
    events: list[Event] = []
    reason = stop_reason(state["tree"], round_, cfg, state["task"].goal, state["usage"].wall_s,
                         state["usage"].tokens)
    if reason is None and deps.interactive and round_ > 0:
        answer = interrupt(summary(state))  # the node re-runs from the top on resume
        deps.reset_clock()
        stop, note = parse_guidance(answer)
        if note:
            notes.append(note)
            events.append(deps.event(EventKind.guidance, round_, note, state["usage"]))
        if stop:
            reason = "stopped by the user"
    usage = deps.tick(state["usage"])
    if reason is None:
        reason = stop_reason(state["tree"], round_, cfg, state["task"].goal, usage.wall_s,
                             usage.tokens)
    if reason is not None:
        events.append(deps.event(EventKind.stop, round_, reason, usage))
        return {"stop_reason": reason, "usage": usage, "events": events, "user_notes": notes}
    tree = state["tree"].model_copy(deep=True)
    seeds = list(state.get("seeds") or [])
    if cfg.batch > 1:
        return plan_batch(state, deps, tree, seeds, usage, events, notes)
    if seeds:
        seed = seeds.pop(0)
        exp = Expansion(parent_id=ROOT, operator="fresh", intent=seed.intent)
        events.append(deps.event(EventKind.plan, round_ + 1, f"seed: {seed.intent}", usage))
        return {"round": round_ + 1, "expansion": exp, "tree": tree, "draft": seed,
                "seeds": seeds, "last_error": None, "diagnosis": None, "usage": usage,
                "events": events, "user_notes": notes}
    rng = deps.rng(round_, "plan")
    restart = stagnated(tree, round_, cfg) and round_ > 0
    if restart:
        tree.epoch += 1
        tree.last_improvement_round = round_
        events.append(deps.event(
            EventKind.restart, round_ + 1,
            f"no better kernel in {cfg.stagnation_rounds} rounds: memoryless restart "
            f"{tree.epoch} of {cfg.max_restarts}", usage))
        parent = tree.nodes[ROOT]
    elif cfg.strategy == "mcts":
        parent = select_mcts(tree, cfg)
    else:
        parent = select_tournament(tree, cfg, rng)
    op, partner_id = choose_operator(tree, parent, rng)
    partner = tree.nodes[partner_id] if partner_id else None
    diagnosis = parent.diagnosis
    intent = intent_for(op, parent, partner, diagnosis, restart)
    exp = Expansion(parent_id=parent.id, operator=op, intent=intent, partner_id=partner_id,
                    restart=restart)
    events.append(deps.event(EventKind.plan, round_ + 1, f"{op} from {parent.id}: {intent}",
                             usage, node_id=parent.id))
    return {
        "round": round_ + 1, "expansion": exp, "tree": tree, "draft": None, "last_error": None,
        "diagnosis": diagnosis, "knowledge": [] if restart else state.get("knowledge", []),
        "usage": usage, "events": events, "user_notes": notes,
    }


# What the second, third... candidate of a batch from the same node with the same memory
# operator varies first, so the concurrent calls do not all write the same kernel.
VARIANTS = (
    "the tile and block sizes and the launch grid",
    "num_warps and num_stages",
    "the memory access pattern: wider contiguous loads, fewer passes over the data",
    "the kernel's structure: what it fuses, the loop order, a persistent kernel",
)


def plan_batch(state: RunState, deps: Deps, tree: SearchTree, seeds: list[Draft], usage: Usage,
               events: list[Event], notes: list[str]) -> dict[str, Any]:
    """A round of ``search.batch`` candidates: that many warm-start seeds, or expansions spread
    over the tree by ``select_batch``; each becomes a Slot with its node id and prompt state,
    fanned out to its own branch by the graph (build.py)."""
    cfg = deps.settings.search
    done = state["round"]  # rounds so far; this one is done + 1
    round_ = done + 1
    ids = [f"n{len(tree.nodes) + i:04d}" for i in range(cfg.batch)]  # ids fixed here, per slot
    slots: list[Slot] = []
    if seeds:
        for node_id, seed in zip(ids, seeds, strict=False):
            exp = Expansion(parent_id=ROOT, operator="fresh", intent=seed.intent)
            events.append(deps.event(EventKind.plan, round_, f"{node_id} seed: {seed.intent}",
                                     usage))
            slots.append(Slot(node_id=node_id, round=round_, expansion=exp, seed=seed,
                              wall_s=usage.wall_s))
        return {"round": round_, "expansion": None, "tree": tree, "draft": None,
                "seeds": seeds[cfg.batch:], "batch": slots, "last_error": None,
                "diagnosis": None, "usage": usage, "events": events, "user_notes": notes}
    restart = stagnated(tree, done, cfg) and done > 0
    if restart:
        tree.epoch += 1
        tree.last_improvement_round = done
        events.append(deps.event(
            EventKind.restart, round_,
            f"no better kernel in {cfg.stagnation_rounds} rounds: memoryless restart "
            f"{tree.epoch} of {cfg.max_restarts}", usage))
    picks = select_batch(tree, cfg, deps.rng(done, "plan"), cfg.batch, restart=restart)
    # The prompt states see this call's guidance (the user_notes channel gets it after it).
    all_notes = [*state.get("user_notes", []), *notes]
    seen: dict[tuple[str, str], int] = {}
    for node_id, (parent, op, partner_id) in zip(ids, picks, strict=True):
        partner = tree.nodes[partner_id] if partner_id else None
        intent = intent_for(op, parent, partner, parent.diagnosis, restart)
        repeat = seen[parent.id, op] = seen.get((parent.id, op), -1) + 1
        if repeat:
            intent += (f"; variant {repeat + 1} of this round from {parent.id}: vary "
                       f"{VARIANTS[(repeat - 1) % len(VARIANTS)]} first")
        exp = Expansion(parent_id=parent.id, operator=op, intent=intent, partner_id=partner_id,
                        restart=restart)
        ps = prompt_state({**state, "tree": tree, "expansion": exp, "draft": None,
                           "knowledge": [], "diagnosis": parent.diagnosis,
                           "user_notes": all_notes})
        slots.append(Slot(node_id=node_id, round=round_, expansion=exp, prompt=ps,
                          wall_s=usage.wall_s))
        events.append(deps.event(EventKind.plan, round_,
                                 f"{node_id} <- {op} from {parent.id}: {intent}", usage,
                                 node_id=parent.id))
    return {"round": round_, "expansion": None, "tree": tree, "draft": None, "batch": slots,
            "last_error": None, "diagnosis": None, "usage": usage, "events": events,
            "user_notes": notes}
