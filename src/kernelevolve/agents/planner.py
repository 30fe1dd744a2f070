"""Planner: decides whether the run goes on, which node to expand, with which memory operator and
intent (from the node's diagnosis), and when to restart from scratch. In interactive runs it
pauses between rounds (``interrupt``) and takes the user's guidance."""

from __future__ import annotations

from typing import Any

from langgraph.types import interrupt

from kernelevolve.agents import directions
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
    Direction,
    Draft,
    Event,
    EventKind,
    Expansion,
    RunState,
    Slot,
    Task,
    Usage,
    prompt_state,
)
from kernelevolve.synth.synthesizer import Synthesizer

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


def guidance_unread(synthesizer: Synthesizer) -> str | None:
    """Why guidance typed at a pause will not reach the kernels (None where it will): the
    offline synthesizer renders templates and reads no words."""
    if synthesizer.reads_guidance:
        return None
    return (f"the {synthesizer.name} synthesizer does not read guidance; configure an LLM "
            "(`--llm MODEL` with KERNELEVOLVE_LLM__BASE_URL, or llm.model in the config) for "
            "your words to reach the prompts ('stop', 'show best' and 'show tree' work as "
            "ever)")


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


def direction_for(task: Task, tree: SearchTree, parent: Node, op: MemoryOperator,
                  also_taken: list[str]) -> Direction:
    """The design direction of a new expansion of ``parent``: the first of its family's list
    (a design for a fresh kernel, a change for the parent's diagnosis) that no child of the
    parent (any epoch: a restart asks for a design not tried before) and no earlier pick of
    this batch (``also_taken``) has taken."""
    family = directions.family_of(task.operator_class, task.problem_name,
                                  task.reference_source)
    if op == "fresh":
        options = directions.design_options(family)
    else:
        options = directions.change_options(
            family, parent.diagnosis.kind if parent.diagnosis is not None else None)
    taken = [k.direction for k in tree.children(parent.id)
             if k.direction and k.origin != "debugger"]
    return directions.pick(options, [*taken, *also_taken])


def plan_text(intent: str, direction: Direction) -> str:
    """A plan line's intent with the direction it was given."""
    return f"{intent} (direction: {direction.name})"


def plan(state: RunState, deps: Deps) -> dict[str, Any]:
    cfg = deps.settings.search
    round_ = state["round"]
    notes: list[str] = []
    events: list[Event] = []
    reason = stop_reason(state["tree"], round_, cfg, state["task"].goal, state["usage"].wall_s,
                         state["usage"].tokens, interactive=deps.interactive)
    if reason is None and deps.interactive and round_ > 0:
        unread = guidance_unread(deps.synthesizer)
        pause = summary(state) | ({"guidance_unread": unread} if unread else {})
        answer = interrupt(pause)  # the node re-runs from the top on resume
        deps.reset_clock()
        stop, note = parse_guidance(answer)
        if note:
            notes.append(note)
            events.append(deps.event(EventKind.guidance, round_,
                                     f"{note} (not read: {unread})" if unread else note,
                                     state["usage"]))
        if stop:
            reason = "stopped by the user"
    usage = deps.tick(state["usage"])
    if reason is None:
        reason = stop_reason(state["tree"], round_, cfg, state["task"].goal, usage.wall_s,
                             usage.tokens, interactive=deps.interactive)
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
    direction = direction_for(state["task"], tree, parent, op, [])
    intent = intent_for(op, parent, partner, diagnosis, restart)
    exp = Expansion(parent_id=parent.id, operator=op, intent=intent, partner_id=partner_id,
                    restart=restart, direction=direction)
    events.append(deps.event(EventKind.plan, round_ + 1,
                             f"{op} from {parent.id}: {plan_text(intent, direction)}", usage,
                             node_id=parent.id))
    return {
        "round": round_ + 1, "expansion": exp, "tree": tree, "draft": None, "last_error": None,
        "diagnosis": diagnosis, "knowledge": [] if restart else state.get("knowledge", []),
        "usage": usage, "events": events, "user_notes": notes,
    }


def plan_batch(state: RunState, deps: Deps, tree: SearchTree, seeds: list[Draft], usage: Usage,
               events: list[Event], notes: list[str]) -> dict[str, Any]:
    """A round of ``search.batch`` candidates: that many warm-start seeds, or expansions spread
    over the tree by ``select_batch``; each becomes a Slot with its node id and prompt state,
    fanned out to its own branch by the graph (build.py). Picks of one node get different
    design directions, and each one's prompt names the others it is drafted beside."""
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
    planned: list[tuple[str, Expansion]] = []
    for node_id, (parent, op, partner_id) in zip(ids, picks, strict=True):
        partner = tree.nodes[partner_id] if partner_id else None
        also = [e.direction.name for _, e in planned
                if e.parent_id == parent.id and e.direction is not None]
        direction = direction_for(state["task"], tree, parent, op, also)
        intent = intent_for(op, parent, partner, parent.diagnosis, restart)
        planned.append((node_id, Expansion(parent_id=parent.id, operator=op, intent=intent,
                                           partner_id=partner_id, restart=restart,
                                           direction=direction)))
        events.append(deps.event(EventKind.plan, round_,
                                 f"{node_id} <- {op} from {parent.id}: "
                                 f"{plan_text(intent, direction)}", usage,
                                 node_id=parent.id))
    for node_id, exp in planned:
        # each prompt names the batch's other picks of its parent: drafted at the same time
        others = [(i, e) for i, e in planned if i != node_id]
        ps = prompt_state({**state, "tree": tree, "expansion": exp, "draft": None,
                           "knowledge": [], "diagnosis": tree.nodes[exp.parent_id].diagnosis,
                           "user_notes": all_notes}, pending=others, node_id=node_id)
        slots.append(Slot(node_id=node_id, round=round_, expansion=exp, prompt=ps,
                          wall_s=usage.wall_s))
    return {"round": round_, "expansion": None, "tree": tree, "draft": None, "batch": slots,
            "last_error": None, "diagnosis": None, "usage": usage, "events": events,
            "user_notes": notes}
