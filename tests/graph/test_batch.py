"""Rounds of several candidates (``search.batch`` > 1): the branches of a round draft at the
same time and evaluate in the real pool, a bad reply in one branch leaves its siblings alone,
failed ones are repaired in one wave, a batch cut off by a failing branch resumes from the
SQLite checkpoint without redoing its finished siblings, and an interactive run still pauses
between rounds. The selection of a batch is tested without the graph; ``search.batch = 1`` runs
the sequential graph, which the other graph tests cover."""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from langchain_core.messages import BaseMessage
from rich.console import Console

from kernelevolve.agents import profiler_analyst
from kernelevolve.config import SearchConfig, Settings, load_settings
from kernelevolve.graph.runtime import Deps
from kernelevolve.graph.search import (
    ROOT,
    Node,
    SearchTree,
    choose_operator,
    select_batch,
    select_mcts,
    select_tournament,
)
from kernelevolve.graph.session import Session, TuneResult
from kernelevolve.graph.state import EventKind, RunState
from kernelevolve.synth.llm.chat import LLMSynthesizer
from kernelevolve.tools.harness.result import EvalResult
from tests.synth.llm.scripted import ScriptedChatModel

ROOT_DIR = Path(__file__).resolve().parents[2]
PROBLEM = ROOT_DIR / "examples" / "problems" / "03_leaky_relu_scale_clamp.py"
REPLIES = ROOT_DIR / "tests" / "synth" / "llm" / "replies"
RAISE = "raise"  # a script entry: the endpoint fails on this call


def reply(name: str) -> str:
    return (REPLIES / f"{name}.md").read_text()


class Replies:
    """A script for ScriptedChatModel that several branches may call at once: the Coder's and
    the Debugger's replies are handed out in order under a lock, every call takes ``delay_s``,
    and each call's start and end (monotonic seconds) and prompt are recorded."""

    def __init__(self, coder: Sequence[str], debugger: Sequence[str] = (),
                 delay_s: float = 0.0) -> None:
        self.coder, self.debugger = list(coder), list(debugger)
        self.delay_s = delay_s
        self.calls: list[tuple[float, float]] = []
        self.prompts: list[str] = []
        self.repair_prompts: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, messages: list[BaseMessage]) -> str:
        start = time.monotonic()
        text = messages[-1].text
        with self._lock:
            repair = text.lstrip().startswith("# Repair")
            (self.repair_prompts if repair else self.prompts).append(text)
            name = (self.debugger if repair else self.coder).pop(0)
        time.sleep(self.delay_s)
        with self._lock:
            self.calls.append((start, time.monotonic()))
        if name == RAISE:
            raise RuntimeError("the LLM endpoint went away")
        return reply(name)


def settings(tmp_path: Path, **search: object) -> Settings:
    return load_settings(
        search={"retrieve": False, "distill": False, "rounds": 1, "batch": 3,
                "max_reply_retries": 0, "max_repairs": 0, **search},
        # small inputs, one input set, no GPU compile: the tests are about the graph
        eval={"n_input_sets": 1, "cpu_max_elements": 4096, "gpu_compile_arch": None},
        runs={"dir": str(tmp_path / "runs")})


def synthesizer(script: Replies) -> LLMSynthesizer:
    return LLMSynthesizer(ScriptedChatModel(script), "scripted-coder")


def run(tmp_path: Path, script: Replies, **search: object
        ) -> tuple[Session, TuneResult, RunState]:
    session = Session.create(PROBLEM, target="cpu", settings=settings(tmp_path, **search),
                             synthesizer=synthesizer(script))
    with session:
        result = session.run()
        state = session.values()
    return session, result, state


def evaluated(state: RunState) -> list[str]:
    return [e.node_id or "" for e in state["events"] if e.kind == EventKind.evaluate]


# -- the graph -----------------------------------------------------------------------------------


def test_a_round_of_three_drafts_at_once_and_a_bad_reply_does_not_sink_its_siblings(
        tmp_path: Path) -> None:
    script = Replies(["good_block256", "compile_error", "no_code"], delay_s=1.0)
    session, result, state = run(tmp_path, script)
    tree = state["tree"]
    kids = tree.children(ROOT)
    assert [n.id for n in kids] == ["n0001", "n0002", "n0003"] and len(tree.nodes) == 4
    assert all(n.round == 1 for n in kids) and result.rounds == 1
    assert sorted(n.status for n in kids) == ["compile_error", "no_code", "ok"]
    # the three calls overlapped: each started before any of them ended
    assert len(script.calls) == 3
    assert max(s for s, _ in script.calls) < min(e for _, e in script.calls)
    # the budget and the best were updated once for the round
    ok = next(n for n in kids if n.ok)
    assert result.best_node == ok.id and "verified kernel found" in (result.stop_reason or "")
    assert result.usage.llm_calls == 3 and result.usage.evaluations == 2
    assert (Path(result.kernel_path or "")).read_text() == ok.source
    # the trace names each candidate with its round, in time order
    events = state["events"]
    assert sorted(evaluated(state)) == sorted(n.id for n in kids if n.status != "no_code")
    assert [e.node_id for e in events if e.kind == EventKind.no_code] == \
        [n.id for n in kids if n.status == "no_code"]
    plans = [e for e in events if e.kind == EventKind.plan]
    assert [e.round for e in plans] == [1, 1, 1]
    assert [e.text.split()[0] for e in plans] == ["n0001", "n0002", "n0003"]
    # three fresh kernels of the root, each with its own design direction
    directions = [e.text.rsplit("(direction: ", 1)[1] for e in plans]
    assert len(set(directions)) == 3, directions
    assert [e.at_s for e in events] == sorted(e.at_s for e in events)
    assert all((session.run_dir / "candidates" / f"{n}.py").is_file() for n in evaluated(state))
    # `kernelevolve trace` shows every candidate of the batch with its round
    from kernelevolve.graph.inspect import render_tree
    from kernelevolve.store import records_from_state

    record, candidates, _ = records_from_state(session.spec, state, session.run_dir)
    assert sorted((c.node_id, c.round) for c in candidates) == [
        ("n0001", 1), ("n0002", 1), ("n0003", 1)]
    console = Console(record=True, width=200)
    render_tree(record, candidates, console)
    text = console.export_text()
    assert all(f"{n.id}" in text for n in kids) and text.count(" r1 ") == 3


def test_the_failed_candidates_of_a_batch_are_repaired_in_one_wave(tmp_path: Path) -> None:
    script = Replies(["compile_error", "cheat_torch"], debugger=["repaired", "repaired"],
                     delay_s=0.5)
    _, result, state = run(tmp_path, script, batch=2, max_repairs=1)
    tree = state["tree"]
    first = [tree.nodes["n0001"], tree.nodes["n0002"]]
    assert sorted(n.status for n in first) in (["cheat", "compile_error"],
                                               ["cheat", "runtime_error"])
    repairs = [tree.nodes["n0003"], tree.nodes["n0004"]]
    assert [r.repair_of for r in repairs] == ["n0001", "n0002"]
    assert all(r.origin == "debugger" and r.round == 1 and r.parent == ROOT and r.ok
               for r in repairs)
    # each Debugger prompt carried its own candidate's failure; the two calls overlapped
    assert len(script.repair_prompts) == 2
    for node in first:
        assert sum(node.status in p and (node.source or "")[:200] in p
                   for p in script.repair_prompts) == 1
    (s1, e1), (s2, e2) = script.calls[2:]
    assert max(s1, s2) < min(e1, e2)
    assert result.usage.llm_calls == 4 and result.usage.evaluations == 4
    assert result.best_node == "n0003" and result.rounds == 1
    assert sorted(e.node_id or "" for e in state["events"] if e.kind == EventKind.repair) == \
        ["n0001", "n0002"]


def test_a_batch_cut_off_by_a_failing_branch_resumes_with_its_finished_siblings(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    evaluations: list[str] = []
    real = profiler_analyst.measure

    def counted(deps: Deps, source: str) -> EvalResult:
        evaluations.append(source)
        return real(deps, source)

    monkeypatch.setattr(profiler_analyst, "measure", counted)
    cfg = settings(tmp_path)
    first = Replies(["good_block256", "wrong_math", RAISE], delay_s=0.3)
    session = Session.create(PROBLEM, target="cpu", settings=cfg, synthesizer=synthesizer(first))
    with session, pytest.raises(RuntimeError, match="endpoint went away"):
        session.run()
    run_dir = session.run_dir
    assert len(evaluations) == 2  # the two siblings were evaluated before the run stopped
    finished = {p.stem for p in (run_dir / "candidates").glob("*.py")}
    assert len(finished) == 2

    second = Replies(["good_block1024"])
    with Session.open(run_dir, settings=cfg, synthesizer=synthesizer(second)) as again:
        snap = again.graph.get_state(again.config)
        failed = [t for t in snap.tasks if t.error is not None]
        assert snap.next == ("candidate",) and len(snap.tasks) == 3 and len(failed) == 1
        result = again.run()
        state = again.values()
    assert len(second.prompts) == 1 and len(evaluations) == 3  # only the cut-off branch again
    assert result.finished and result.rounds == 1 and result.usage.evaluations == 3
    assert result.usage.llm_calls == 3
    tree = state["tree"]
    assert sorted(tree.nodes) == ["n0001", "n0002", "n0003", ROOT]
    redone = ({"n0001", "n0002", "n0003"} - finished).pop()
    assert tree.nodes[redone].source is not None
    assert tree.nodes[redone].source.strip() in reply("good_block1024")
    assert sorted(evaluated(state)) == ["n0001", "n0002", "n0003"]  # each one evaluated once
    assert {tree.nodes[n].status for n in finished} == {"ok", "mismatch"}


# The child of the next test: a batch round whose process dies once every branch has saved its
# writes, before LangGraph writes the checkpoint that follows them.
_DIES_AFTER_THE_BRANCHES = """
import os, sys, time
from langgraph.checkpoint.sqlite import SqliteSaver
from tests.graph.test_batch import PROBLEM, Replies, settings, synthesizer
from kernelevolve.graph.session import Session

real = SqliteSaver.put

def put(self, config, checkpoint, metadata, new_versions):
    if checkpoint["channel_values"].get("outcomes"):
        time.sleep(1.0)  # the branches' writes land; their step's checkpoint never does
        os._exit(9)
    return real(self, config, checkpoint, metadata, new_versions)

SqliteSaver.put = put
script = Replies(["good_block256", "wrong_math", "compile_error"])
Session.create(PROBLEM, target="cpu", settings=settings(__import__("pathlib").Path(sys.argv[1])),
               synthesizer=synthesizer(script), run_dir=sys.argv[2]).run()
"""


def test_a_process_killed_after_the_branches_wrote_resumes_without_redoing_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import signal
    import subprocess
    import sys

    run_dir = tmp_path / "run"
    child = subprocess.Popen(
        [sys.executable, "-c", _DIES_AFTER_THE_BRANCHES, str(tmp_path), str(run_dir)],
        cwd=ROOT_DIR, env={**os.environ, "PYTHONPATH": str(ROOT_DIR)}, start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        output, _ = child.communicate(timeout=240)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)  # its harness workers
    assert child.returncode == 9, output[-3000:]
    measured: list[str] = []
    monkeypatch.setattr(profiler_analyst, "measure",
                        lambda deps, source: measured.append(source))  # must not be called
    script = Replies([])
    cfg = settings(tmp_path)
    with Session.open(run_dir, settings=cfg, synthesizer=synthesizer(script)) as session:
        snap = session.graph.get_state(session.config)
        assert snap.next == () and len(snap.tasks) == 3  # all three done, no checkpoint after
        assert not session.result().finished
        result = session.run()
        state = session.values()
    assert measured == [] and script.prompts == []
    assert result.finished and "verified kernel found" in (result.stop_reason or "")
    assert sorted(n.status for n in state["tree"].children(ROOT)) == \
        ["compile_error", "mismatch", "ok"]
    assert result.usage.evaluations == 3 and result.usage.llm_calls == 3


def test_an_interactive_batch_run_pauses_between_rounds_and_takes_guidance(tmp_path: Path
                                                                          ) -> None:
    script = Replies(["compile_error", "no_code", "good_block256", "good_block256"])
    session = Session.create(PROBLEM, target="cpu", interactive=True,
                             settings=settings(tmp_path, batch=2, rounds=3),
                             synthesizer=synthesizer(script))
    with session:
        first = session.run()
        assert not first.finished and first.paused is not None
        assert first.paused["round"] == 1 and first.paused["best"] is None
        assert [n["node"] for n in first.paused["last"]] == ["n0001", "n0002"]
        second = session.run("keep BLOCK_SIZE at 256")
        # an interactive run on an untimed target goes on past its first verified kernel,
        # pausing each round: the user ends it
        assert not second.finished and second.paused is not None
        assert second.paused["round"] == 2 and second.paused["best"]["node"] == "n0003"
        third = session.run("stop")
        state = session.values()
    assert third.finished and third.stop_reason == "stopped by the user"
    assert len(script.prompts) == 4
    assert all("keep BLOCK_SIZE at 256" in p for p in script.prompts[2:])
    assert not any("keep BLOCK_SIZE at 256" in p for p in script.prompts[:2])
    tree = state["tree"]
    assert [n.round for n in tree.nodes.values() if n.id != ROOT] == [1, 1, 2, 2]
    assert state["user_notes"] == ["keep BLOCK_SIZE at 256"]
    assert [e.round for e in state["events"] if e.kind == EventKind.guidance] == [1]


def test_an_offline_batch_writes_distinct_candidates(tmp_path: Path) -> None:
    with Session.create(PROBLEM, target="cpu", settings=settings(tmp_path)) as session:
        result = session.run()
        tree = session.values()["tree"]
    kids = tree.children(ROOT)
    assert result.synthesizer == "offline" and len(kids) == 3
    assert all(n.evaluated and n.round == 1 for n in kids)
    assert len({tuple(sorted((n.params or {}).items())) for n in kids}) == 3
    assert result.best_node is not None


def test_warm_start_seeds_are_verified_together_without_asking_the_model(tmp_path: Path
                                                                        ) -> None:
    from kernelevolve.graph.state import Draft
    from tests.synth.conftest import fenced_code

    seeds = [Draft(source=fenced_code(name), intent=f"warm start: {name}")
             for name in ("good_block256", "good_block1024")]
    script = Replies([])
    with Session.create(PROBLEM, target="cpu", settings=settings(tmp_path),
                        synthesizer=synthesizer(script), seeds=seeds) as session:
        result = session.run()
        tree = session.values()["tree"]
    kids = tree.children(ROOT)
    assert [(n.id, n.origin, n.round, n.ok) for n in kids] == [
        ("n0001", "seed", 1, True), ("n0002", "seed", 1, True)]
    assert script.prompts == [] and result.usage.evaluations == 2


# -- the selection of a batch --------------------------------------------------------------------


def _tree() -> SearchTree:
    tree = SearchTree.new(timed=True)
    for nid, speedup in (("a", 1.3), ("b", 1.2), ("c", 0.9)):
        node = tree.add(Node(id=nid, parent=ROOT, status="ok", speedup=speedup, source="# c"))
        tree.record(node, goal=2.0, round_=1)
    tree.add(Node(id="d", parent="a", status="mismatch", source="# c"))
    return tree


@pytest.mark.parametrize("strategy", ["mcts", "evolutionary"])
def test_a_batch_of_one_picks_what_a_sequential_round_picks(strategy: str) -> None:
    cfg = SearchConfig(strategy=strategy)  # type: ignore[arg-type]
    for seed in range(5):
        for tree in (SearchTree.new(timed=True), _tree()):
            rng = random.Random(seed)
            parent = select_mcts(tree, cfg) if strategy == "mcts" \
                else select_tournament(tree, cfg, rng)
            expected = (parent.id, *choose_operator(tree, parent, rng))
            [(got, op, partner)] = select_batch(tree, cfg, random.Random(seed), 1)
            assert (got.id, op, partner) == expected


def test_a_batch_spreads_over_the_frontier_and_varies_the_operator() -> None:
    tree = _tree()
    picks = select_batch(tree, SearchConfig(), random.Random(0), 4)
    assert {p.id for p, _, _ in picks} == {"a", "b", "c"}  # virtual loss: not all on the best
    same = [(p.id, op) for p, op, _ in picks]
    assert len(set(same)) == len(same)  # a node picked twice gets another operator
    assert len(tree.nodes) == 5 and tree.nodes["a"].visits == 1  # the tree is left as it was
    restart = select_batch(tree, SearchConfig(), random.Random(0), 3, restart=True)
    assert [(p.id, op) for p, op, _ in restart] == [(ROOT, "fresh")] * 3


def test_batch_is_bounded() -> None:
    from pydantic import ValidationError

    assert SearchConfig().batch == 1
    for bad in (0, 17):
        with pytest.raises(ValidationError):
            SearchConfig(batch=bad)
