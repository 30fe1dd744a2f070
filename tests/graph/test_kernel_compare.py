"""How candidate sources compare (graph/compare.py) and the design directions siblings get
(agents/directions.py): pure functions, no graph."""

from __future__ import annotations

from kernelevolve.agents import directions
from kernelevolve.agents.planner import direction_for
from kernelevolve.graph.compare import same_kernel, summary, unified_diff
from kernelevolve.graph.search import ROOT, DiagnosisInfo, Node, SearchTree
from kernelevolve.graph.state import Task
from tests.synth.conftest import PROBLEM, fenced_code

GOOD = fenced_code("good_block256")


def test_renaming_reformatting_comments_and_docstrings_are_the_same_kernel() -> None:
    other = ('"""A docstring the parent lacks."""\n# a comment\n' + GOOD
             .replace("offs", "offsets").replace("x_flat", "flat")
             .replace("leaky_relu_scale_clamp_kernel", "chain_kernel")  # a kernel renamed
             .replace("BLOCK_SIZE", "BLOCK")  # a constexpr parameter and its launch keyword
             .replace("    pid = tl.program_id(0)", "    pid = tl.program_id(\n        0)"))
    assert same_kernel(GOOD, other)


def test_any_real_change_is_a_different_kernel() -> None:
    for old, new in [("num_warps=2", "num_warps=4"), ("BLOCK_SIZE = 256", "BLOCK_SIZE = 512"),
                     ("x * negative_slope", "x * negative_slope * 1.0"),
                     ("self.scale", "self.factor")]:  # an attribute is not a local
        assert old in GOOD, old
        assert not same_kernel(GOOD, GOOD.replace(old, new)), (old, new)
    # a changed expression is a change, whatever the names
    swapped = GOOD.replace("mask=mask, other", "mask=offs < 0, other")
    assert not same_kernel(GOOD, swapped)


def test_sources_that_do_not_parse_compare_by_their_text() -> None:
    broken = GOOD.replace("mask = offs < n_elements", "mask = (offs < n_elements")
    assert same_kernel(broken, broken.replace("\n\n\n", "\n\n"))
    assert not same_kernel(broken, GOOD)


def test_summary_and_diff() -> None:
    text = summary(fenced_code("good_block1024"))
    assert text.startswith("kernel leaky_relu_scale_clamp_kernel(x_ptr, out_ptr, n_elements")
    assert "BLOCK_SIZE: constexpr" in text and "BLOCK_SIZE = 1024" in text
    assert "num_warps = 4" in text and "grid = (triton.cdiv(n_elements, BLOCK_SIZE),)" in text
    assert summary("def f(:\n") == "(does not parse)"
    diff = unified_diff(GOOD, GOOD.replace("num_warps=2", "num_warps=4"), "n0001", "n0002")
    assert diff.startswith("--- n0001\n+++ n0002\n@@ ")
    assert "-            BLOCK_SIZE=BLOCK_SIZE, num_warps=2," in diff
    assert unified_diff(GOOD, GOOD, "a", "b") == ""
    long = unified_diff(GOOD, fenced_code("wrong_math") * 3, "a", "b", limit=400)
    assert len(long) < 500 and long.endswith("more diff lines left out]")


def _task(operator_class: str | None = "softmax", name: str = "04_row_softmax") -> Task:
    return Task(problem_path=str(PROBLEM), problem_name=name, reference_source="",
                target="mtia-sim:2i", target_description="simulated", goal=2.0, timed=True,
                operator_class=operator_class)


def test_families_and_their_lists() -> None:
    assert directions.family_of("rmsnorm") == "rows"
    assert directions.family_of(None, "13_attention") == "attention"
    assert directions.family_of(None, "x", "y = torch.softmax(q @ k.T, -1) @ v") == "attention"
    assert directions.family_of(None, "14_feature_hashing") == "general"
    for family, designs in directions.DESIGNS.items():
        assert len({d.name for d in designs}) == len(designs) >= 4, family
    rows = directions.change_options("rows", "memory-bound")
    assert rows[0].name == "single pass with online statistics"
    assert len({d.name for d in rows}) == len(rows)
    assert directions.change_options("rows", None) == directions.CHANGES[None]


def test_siblings_of_one_parent_get_distinct_directions_then_repeat_in_order() -> None:
    tree = SearchTree.new(timed=True)
    task = _task()
    designs = directions.design_options("rows")
    taken: list[str] = []
    for i in range(len(designs)):
        d = direction_for(task, tree, tree.nodes[ROOT], "fresh", taken)
        assert d.name not in taken
        taken.append(d.name)
        tree.add(Node(id=f"n{i + 1:04d}", parent=ROOT, status="ok", direction=d.name))
    assert taken == [d.name for d in designs]
    again = direction_for(task, tree, tree.nodes[ROOT], "fresh", [])
    assert again.name == designs[len(designs) % len(designs)].name
    # a verified child's expansions take changes for its diagnosis, not designs
    parent = tree.nodes["n0001"]
    parent.diagnosis = DiagnosisInfo(kind="memory-bound")
    first = direction_for(task, tree, parent, "inherit", [])
    second = direction_for(task, tree, parent, "inherit", [first.name])
    assert first.name == "single pass with online statistics" and second != first
