"""The search tree: every candidate a node; selection by UCT (MCTS) or tournament (evolutionary);
the memory operator of each expansion; memoryless restarts on stagnation; the stop rules.

Pure Python on typed values, so it is tested without the graph. The root is the reference
itself (speedup 1.0, no code); a fresh expansion hangs off the root.
"""

from __future__ import annotations

import math
import random
from collections.abc import Collection
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kernelevolve.config import SearchConfig

MemoryOperator = Literal["inherit", "compare", "combine", "fresh"]
ROOT = "root"
# Statuses of a node besides the EvalResult statuses.
ROOT_STATUS, NO_CODE = "root", "no_code"


class Call(BaseModel):
    """One synthesizer call whose reply held no usable code (or only renamed and reformatted its
    parent: an AST-level no-op), so the Coder asked again: kept on the node it led to, so that
    every call is on record (``kernelevolve show``, the report, the training-data export)."""

    model_config = ConfigDict(extra="forbid")

    system: str | None = None
    prompt: str | None = None
    reply: str | None = None
    problem: str = Field("", description="why the reply held no usable code")
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_estimated: bool = Field(False, description="the endpoint reported no usage: the "
                                                      "counts are estimates (synth/llm/chat.py)")


class Node(BaseModel):
    """One candidate (or the root) and what became of it."""

    model_config = ConfigDict(extra="forbid")

    id: str
    parent: str | None
    depth: int = 0
    round: int = 0
    epoch: int = Field(0, description="restarts before this node was made")
    operator: MemoryOperator = "fresh"
    intent: str = ""
    direction: str = Field("", description="the design direction it was asked to take")
    origin: Literal["root", "coder", "debugger", "seed"] = "coder"
    repair_of: str | None = None
    source: str | None = None
    params: dict[str, int] | None = None
    status: str = "pending"
    message: str = ""
    stderr_tail: str = ""
    speedup: float | None = None
    latency_ms: float | None = None
    eager_roofline: float | None = Field(
        None, description="fraction of the memory roofline eager reached beside this node "
                          "(traffic beyond 4x the L2 only; Timing.eager_roofline)")
    diagnosis: DiagnosisInfo | None = None
    result_json: str | None = Field(None, description="the EvalResult, as JSON")
    system: str | None = Field(None, description="the system message of its synthesizer call")
    prompt: str | None = None
    reply: str | None = None
    model: str = ""
    tokens: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasks: list[Call] = Field(default_factory=list, description="earlier calls re-asked")
    tokens_estimated: bool = Field(False, description="the endpoint reported no usage: the "
                                                      "counts are estimates")
    visits: int = 0
    value_sum: float = 0.0
    at_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def evaluated(self) -> bool:
        return self.status not in ("pending", ROOT_STATUS)


class SearchTree(BaseModel):
    """The nodes by id, the best verified node, restarts and the round of the last improvement."""

    model_config = ConfigDict(extra="forbid")

    nodes: dict[str, Node] = Field(default_factory=dict)
    best_id: str | None = None
    last_id: str | None = Field(None, description="the node evaluated last")
    epoch: int = 0
    last_improvement_round: int = 0
    timed: bool = True

    @classmethod
    def new(cls, timed: bool) -> SearchTree:
        root = Node(id=ROOT, parent=None, origin="root", status=ROOT_STATUS, speedup=1.0,
                    intent="the reference (eager PyTorch)")
        return cls(nodes={ROOT: root}, timed=timed)

    # -- reading -----------------------------------------------------------------------------

    def next_id(self) -> str:
        return f"n{len(self.nodes):04d}"

    def children(self, node_id: str) -> list[Node]:
        return [n for n in self.nodes.values() if n.parent == node_id]

    def lineage(self, node_id: str) -> list[Node]:
        """The path from the root's first child down to ``node_id`` (root excluded)."""
        out: list[Node] = []
        cur: str | None = node_id
        while cur is not None and cur != ROOT:
            node = self.nodes[cur]
            out.append(node)
            cur = node.parent
        return out[::-1]

    @property
    def best(self) -> Node | None:
        return self.nodes[self.best_id] if self.best_id else None

    @property
    def best_speedup(self) -> float | None:
        best = self.best
        return best.speedup if best is not None else None

    def verified(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.ok]

    # -- writing -----------------------------------------------------------------------------

    def add(self, node: Node) -> Node:
        if node.id in self.nodes:
            raise ValueError(f"node {node.id} exists")
        if node.parent not in self.nodes:
            raise ValueError(f"parent {node.parent} of {node.id} is not in the tree")
        node.depth = self.nodes[node.parent].depth + 1
        node.epoch = self.epoch
        self.nodes[node.id] = node
        self.last_id = node.id
        return node

    def record(self, node: Node, goal: float, round_: int) -> bool:
        """Back-propagate the node's reward up its path; return whether it is the new best."""
        reward = self.reward(node, goal)
        cur: str | None = node.id
        while cur is not None:
            n = self.nodes[cur]
            n.visits += 1
            n.value_sum += reward
            cur = n.parent
        if not node.ok:
            return False
        best = self.best
        better = best is None or (node.speedup or 0.0) > (best.speedup or 0.0) * 1.0001
        if better:
            self.best_id = node.id
            self.last_improvement_round = round_
        return better

    def reward(self, node: Node, goal: float) -> float:
        """In [0, 1.5]: 0 for a failure, 1 at the goal; an untimed verified candidate scores 1."""
        if not node.ok:
            return 0.0
        if not self.timed or node.speedup is None:
            return 1.0
        return min(1.5, math.log1p(node.speedup) / math.log1p(goal))


def _uct(node: Node, parent_visits: int, c: float) -> float:
    if node.visits == 0:
        return math.inf
    return node.value_sum / node.visits + c * math.sqrt(math.log(max(parent_visits, 1))
                                                         / node.visits)


def select_mcts(tree: SearchTree, cfg: SearchConfig) -> Node:
    """Descend from the root by UCT among verified children, expanding the first node that has
    fewer than ``max_children`` children (progressive widening)."""
    cur = tree.nodes[ROOT]
    while True:
        kids = [k for k in tree.children(cur.id) if k.epoch == tree.epoch or cur.id != ROOT]
        good = [k for k in kids if k.ok]
        if len(kids) < cfg.max_children or not good:
            return cur
        cur = max(good, key=lambda k: _uct(k, cur.visits, cfg.uct_c))


def select_tournament(tree: SearchTree, cfg: SearchConfig, rng: random.Random) -> Node:
    """Tournament among this epoch's verified nodes (the root when there are none)."""
    pool = [n for n in tree.verified() if n.epoch == tree.epoch]
    if not pool:
        return tree.nodes[ROOT]
    picks = rng.sample(pool, min(cfg.tournament_k, len(pool)))
    return max(picks, key=lambda n: n.speedup or 0.0)


def choose_operator(tree: SearchTree, parent: Node, rng: random.Random,
                    avoid: Collection[MemoryOperator] = ()) -> tuple[MemoryOperator, str | None]:
    """The memory operator of an expansion of ``parent`` and, for combine, the partner; one in
    ``avoid`` (taken by another expansion of ``parent`` in this batch) only when nothing else
    applies."""
    if parent.id == ROOT:
        return "fresh", None
    lineage = {n.id for n in tree.lineage(parent.id)}
    partners = [n for n in tree.verified() if n.id not in lineage and n.epoch == tree.epoch]
    evaluated_kids = [k for k in tree.children(parent.id) if k.evaluated]
    options: list[MemoryOperator] = ["inherit", "inherit"]
    if evaluated_kids:
        options.append("compare")
    if partners:
        options.append("combine")
    op = rng.choice([o for o in options if o not in avoid] or options)
    if op == "combine":
        return op, max(partners, key=lambda n: n.speedup or 0.0).id
    return op, None


Pick = tuple[Node, MemoryOperator, str | None]  # parent, memory operator, combine partner


def select_batch(tree: SearchTree, cfg: SearchConfig, rng: random.Random, k: int,
                 restart: bool = False) -> list[Pick]:
    """``k`` expansions for one round. Each selection sees the earlier ones as pending children
    with a virtual loss (a zero reward on their path, as parallel MCTS does), so progressive
    widening and UCT spread a batch over the frontier rather than piling it on one node; a node
    picked again gets a memory operator not yet taken where it has one. The first pick is the
    one a round of one would make. A restart expands the root ``k`` times (memoryless)."""
    scratch = tree.model_copy(deep=True)
    picks: list[Pick] = []
    for i in range(k):
        if restart:
            parent = scratch.nodes[ROOT]
        elif cfg.strategy == "mcts":
            parent = select_mcts(scratch, cfg)
        else:
            parent = select_tournament(scratch, cfg, rng)
        taken = [op for p, op, _ in picks if p.id == parent.id]
        op, partner = choose_operator(scratch, parent, rng, avoid=taken)
        picks.append((tree.nodes[parent.id], op, partner))
        pending = scratch.add(Node(id=f"pending-{i}", parent=parent.id, operator=op))
        scratch.record(pending, goal=1.0, round_=0)  # not ok: reward 0, the best stays
    return picks


def stagnated(tree: SearchTree, round_: int, cfg: SearchConfig) -> bool:
    return round_ - tree.last_improvement_round >= cfg.stagnation_rounds


def finished(tree: SearchTree, goal: float) -> bool:
    """The search has what it came for: the goal speedup, or a verified kernel on a target that
    is not timed (the first two of ``stop_reason``'s rules)."""
    best = tree.best
    return best is not None and (not tree.timed or (best.speedup or 0.0) >= goal)


StopReason = Literal["goal", "rounds", "wall", "tokens", "stalled", "verified", "user",
                     "nothing-to-gain"]


def stop_reason(tree: SearchTree, round_: int, cfg: SearchConfig, goal: float, wall_s: float,
                tokens: int, *, interactive: bool = False) -> str | None:
    """Why the run stops before the next round, or None to go on. An ``interactive`` run on a
    target that is not timed goes on after its first verified kernel: there the user ends it
    (or the budget does), so it pauses after every round like on any other target."""
    best = tree.best
    if best is not None and tree.timed and (best.speedup or 0.0) >= goal:
        return f"goal reached: {best.speedup:.2f}x >= {goal:g}x ({best.id})"
    if best is not None and not tree.timed and not interactive:
        return f"verified kernel found ({best.id}); the target is not timed, so there is no " \
               "speedup to search for"
    if best is not None and cfg.nothing_to_gain and (best.eager_roofline or 0.0) >= (
            cfg.nothing_to_gain):
        return (f"nothing to gain: eager already runs at {best.eager_roofline:.0%} of this "
                f"device's memory roofline (reading the inputs and writing the outputs once at "
                f"the measured copy bandwidth), so no kernel can be much faster; best "
                f"{best.speedup or 0:.2f}x ({best.id})")
    if round_ >= cfg.rounds:
        return f"budget spent: {cfg.rounds} rounds"
    if wall_s >= cfg.wall_s:
        return f"budget spent: {wall_s:.0f} s of wall time (limit {cfg.wall_s:g} s)"
    if cfg.tokens and tokens >= cfg.tokens:
        return f"budget spent: {tokens} tokens (limit {cfg.tokens})"
    if stagnated(tree, round_, cfg) and tree.epoch >= cfg.max_restarts:
        return (f"stalled: no improvement in {cfg.stagnation_rounds} rounds after "
                f"{tree.epoch} restart(s)")
    return None


class DiagnosisInfo(BaseModel):
    """What bounds a candidate (profilers or the simulator), in words a prompt can carry."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["memory-bound", "compute-bound", "occupancy-bound", "launch-bound"]
    evidence: list[str] = Field(default_factory=list)
    roofline_fraction: float | None = None
    source: str = ""
    ceiling: str = Field("", description="the roof it is held against, in words (the measured "
                                         "bandwidth or FLOP rate; the simulated chip's)")
    ceiling_ms: float | None = Field(None, description="the time the kernel's work takes at "
                                                       "that ceiling (its floor)")


Node.model_rebuild()
