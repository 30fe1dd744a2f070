"""The search tree on its own: selection, memory operators, rewards, restarts and stop rules."""

from __future__ import annotations

import random

import pytest

from kernelevolve.config import SearchConfig
from kernelevolve.graph.search import (
    ROOT,
    Node,
    SearchTree,
    choose_operator,
    select_mcts,
    select_tournament,
    stop_reason,
)


def add(tree: SearchTree, nid: str, parent: str, status: str = "ok", speedup: float | None = 1.0,
        round_: int = 1, repair_of: str | None = None) -> Node:
    node = tree.add(Node(id=nid, parent=parent, status=status, speedup=speedup,
                         source="# code", round=round_, repair_of=repair_of))
    tree.record(node, goal=2.0, round_=round_)
    return node


def test_best_follows_the_fastest_verified_node_and_rewards_backpropagate():
    tree = SearchTree.new(timed=True)
    add(tree, "a", ROOT, speedup=1.2)
    add(tree, "b", "a", status="mismatch", speedup=None, round_=2)
    add(tree, "c", "a", speedup=1.8, round_=3)
    assert tree.best_id == "c" and tree.last_improvement_round == 3
    assert tree.nodes["a"].visits == 3 and tree.nodes[ROOT].visits == 3
    assert tree.reward(tree.nodes["b"], 2.0) == 0.0
    assert tree.reward(tree.nodes["c"], 1.8) == pytest.approx(1.0)
    assert [n.id for n in tree.lineage("c")] == ["a", "c"]


def test_a_slower_candidate_never_replaces_the_best():
    tree = SearchTree.new(timed=True)
    add(tree, "a", ROOT, speedup=1.5)
    assert not tree.record(tree.add(Node(id="b", parent="a", status="ok", speedup=1.4)), 2.0, 2)
    assert tree.best_id == "a"


def test_untimed_target_rewards_any_verified_kernel():
    tree = SearchTree.new(timed=False)
    node = add(tree, "a", ROOT, speedup=None)
    assert tree.best_id == "a" and tree.reward(node, 1.5) == 1.0
    reason = stop_reason(tree, 1, SearchConfig(), 1.5, 0.0, 0)
    assert reason is not None and "not timed" in reason
    # an interactive run (chat) goes on, pausing each round: the user or the budget ends it
    assert stop_reason(tree, 1, SearchConfig(), 1.5, 0.0, 0, interactive=True) is None
    assert "rounds" in stop_reason(tree, 12, SearchConfig(), 1.5, 0.0, 0, interactive=True)


def test_mcts_widens_the_root_then_descends_by_uct():
    cfg = SearchConfig(max_children=2, uct_c=0.0)
    tree = SearchTree.new(timed=True)
    assert select_mcts(tree, cfg).id == ROOT
    add(tree, "a", ROOT, speedup=1.1)
    assert select_mcts(tree, cfg).id == ROOT  # one child < max_children
    add(tree, "b", ROOT, speedup=1.9)
    assert select_mcts(tree, cfg).id == "b"  # exploitation only (c = 0): the better child


def test_mcts_does_not_descend_into_failed_nodes():
    cfg = SearchConfig(max_children=1)
    tree = SearchTree.new(timed=True)
    add(tree, "a", ROOT, status="compile_error", speedup=None)
    assert select_mcts(tree, cfg).id == ROOT
    add(tree, "b", ROOT, speedup=1.3, repair_of="a")  # a repair is a sibling of what it fixed
    assert select_mcts(tree, cfg).id == "b"


def test_tournament_picks_the_best_of_its_sample():
    cfg = SearchConfig(strategy="evolutionary", tournament_k=3)
    tree = SearchTree.new(timed=True)
    assert select_tournament(tree, cfg, random.Random(0)).id == ROOT
    for i, s in enumerate([1.1, 1.4, 1.2]):
        add(tree, f"n{i}", ROOT, speedup=s)
    assert select_tournament(tree, cfg, random.Random(0)).id == "n1"


def test_memory_operators():
    tree = SearchTree.new(timed=True)
    assert choose_operator(tree, tree.nodes[ROOT], random.Random(0)) == ("fresh", None)
    add(tree, "a", ROOT, speedup=1.2)
    assert choose_operator(tree, tree.nodes["a"], random.Random(0)) == ("inherit", None)
    add(tree, "b", ROOT, speedup=1.5)
    add(tree, "a1", "a", speedup=1.1)
    seen = {choose_operator(tree, tree.nodes["a"], random.Random(i)) for i in range(40)}
    assert {op for op, _ in seen} == {"inherit", "compare", "combine"}
    assert ("combine", "b") in seen  # the partner is the best node outside a's lineage


def test_stop_rules():
    cfg = SearchConfig(rounds=5, wall_s=100, tokens=1000, stagnation_rounds=2, max_restarts=1)
    tree = SearchTree.new(timed=True)
    assert stop_reason(tree, 0, cfg, 2.0, 0.0, 0) is None
    assert "rounds" in stop_reason(tree, 5, cfg, 2.0, 0.0, 0)
    assert "wall" in stop_reason(tree, 1, cfg, 2.0, 100.0, 0)
    assert "tokens" in stop_reason(tree, 1, cfg, 2.0, 0.0, 1000)
    assert stop_reason(tree, 2, cfg, 2.0, 0.0, 0) is None  # stagnant, but a restart is left
    tree.epoch = 1
    assert "stalled" in stop_reason(tree, 2, cfg, 2.0, 0.0, 0)
    add(tree, "a", ROOT, speedup=2.5)
    assert "goal reached" in stop_reason(tree, 1, cfg, 2.0, 0.0, 0)


def test_nothing_to_gain_stops_where_eager_is_at_the_memory_roofline():
    cfg = SearchConfig(rounds=12)
    tree = SearchTree.new(timed=True)
    node = add(tree, "a", ROOT, speedup=1.01)
    assert stop_reason(tree, 1, cfg, 2.0, 0.0, 0) is None  # no roofline figure: go on
    node.eager_roofline = 0.85
    assert stop_reason(tree, 1, cfg, 2.0, 0.0, 0) is None  # headroom left
    node.eager_roofline = 0.93
    reason = stop_reason(tree, 1, cfg, 2.0, 0.0, 0)
    assert reason is not None and reason.startswith("nothing to gain")
    assert "93%" in reason and "1.01x" in reason
    assert stop_reason(tree, 1, SearchConfig(rounds=12, nothing_to_gain=0), 2.0, 0.0, 0) is None
