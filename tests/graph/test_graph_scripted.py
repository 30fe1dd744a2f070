"""The whole graph driven by a scripted chat model through every path: a good kernel becomes the
best, a broken one is repaired by the Debugger, a cheat is rejected and the Debugger is told why,
a reply without code is re-asked, stagnation restarts, the goal stops the run, an interactive run
takes guidance. Real parts everywhere else: the LLM synthesizer and its prompts, the worker
subprocess and the Triton interpreter, the MTIA simulator, the SQLite checkpointer."""

from __future__ import annotations

from pathlib import Path

from kernelevolve.config import Settings, load_settings
from kernelevolve.graph.session import Session, TuneResult
from kernelevolve.graph.state import EventKind, RunState
from kernelevolve.synth.llm.chat import LLMSynthesizer
from tests.synth.llm.scripted import ScriptedChatModel

ROOT = Path(__file__).resolve().parents[2]
PROBLEM = ROOT / "examples" / "problems" / "03_leaky_relu_scale_clamp.py"
REPLIES = ROOT / "tests" / "synth" / "llm" / "replies"


def reply(name: str) -> str:
    return (REPLIES / f"{name}.md").read_text()


def settings(tmp_path: Path, **search: object) -> Settings:
    return load_settings(
        search={"retrieve": False, "distill": False, "rounds": 3, **search},
        eval={"n_input_sets": 2}, runs={"dir": str(tmp_path / "runs")})


def run(tmp_path: Path, replies: list[str], target: str = "cpu", **search: object
        ) -> tuple[TuneResult, RunState, ScriptedChatModel]:
    chat = ScriptedChatModel([reply(r) for r in replies])
    synth = LLMSynthesizer(chat, "scripted-coder")
    session = Session.create(PROBLEM, target=target, settings=settings(tmp_path, **search),
                             synthesizer=synth)
    with session:
        result = session.run()
        state = session.values()
    return result, state, chat


def human(chat: ScriptedChatModel, i: int) -> str:
    return chat.requests[i][-1].text


def kinds(state: RunState) -> list[str]:
    return [e.kind.value for e in state["events"]]


def test_good_kernel_becomes_the_best_and_reaching_the_goal_stops(tmp_path: Path) -> None:
    result, state, chat = run(tmp_path, ["good_block1024"], target="mtia-sim:2i", goal=1.2)
    assert result.best_node == "n0001" and result.best_speedup is not None
    assert result.best_speedup >= 1.2 and result.simulated
    assert result.stop_reason is not None and result.stop_reason.startswith("goal reached")
    assert result.rounds == 1 and len(chat.requests) == 1
    assert result.usage.llm_calls == 1 and result.usage.tokens > 0
    assert Path(result.kernel_path or "").read_text() in reply("good_block1024")
    assert "improve" in kinds(state)
    node = state["tree"].nodes["n0001"]
    assert node.diagnosis is not None and node.diagnosis.source == "mtia-sim"


def test_compile_error_is_repaired_by_the_debugger(tmp_path: Path) -> None:
    result, state, chat = run(tmp_path, ["compile_error", "repaired"])
    tree = state["tree"]
    broken, fixed = tree.nodes["n0001"], tree.nodes["n0002"]
    assert broken.status in ("compile_error", "runtime_error")
    assert fixed.ok and fixed.origin == "debugger" and fixed.repair_of == "n0001"
    assert fixed.parent == broken.parent  # a repair is a sibling of what it fixed
    debug_prompt = human(chat, 1)
    assert broken.source is not None and broken.source.strip()[:200] in debug_prompt
    assert broken.status in debug_prompt
    assert result.best_node == "n0002" and "verified kernel found" in (result.stop_reason or "")


def test_a_repair_that_returns_the_failed_code_unchanged_is_not_evaluated(tmp_path: Path
                                                                          ) -> None:
    echo = "The kernel looks right to me as it is:\n" + reply("compile_error").split("\n", 1)[1]
    chat = ScriptedChatModel([reply("compile_error"), echo, reply("good_block256")])
    with Session.create(PROBLEM, target="cpu", settings=settings(tmp_path),
                        synthesizer=LLMSynthesizer(chat, "scripted-coder")) as session:
        result = session.run()
        state = session.values()
    tree = state["tree"]
    echoed = tree.nodes["n0002"]
    assert echoed.origin == "debugger" and echoed.repair_of == "n0001"
    assert echoed.status == "no_code" and "unchanged" in echoed.message
    assert echoed.result_json is None and echoed.source is None  # never sent to the harness
    evaluated = [e.node_id for e in state["events"] if e.kind == EventKind.evaluate]
    assert evaluated == ["n0001", "n0003"]
    assert tree.nodes["n0003"].origin == "coder" and result.best_node == "n0003"


def test_cheating_kernel_is_rejected_and_the_debugger_is_told_why(tmp_path: Path) -> None:
    result, state, chat = run(tmp_path, ["cheat_torch", "good_block256"])
    tree = state["tree"]
    assert tree.nodes["n0001"].status == "cheat"
    assert "cheat" in human(chat, 1)
    assert tree.nodes["n0001"].message.split(":")[0] in human(chat, 1)
    assert result.best_node == "n0002"


def test_wrong_math_goes_to_the_debugger_with_the_mismatch(tmp_path: Path) -> None:
    result, state, chat = run(tmp_path, ["wrong_math", "good_block256"])
    assert state["tree"].nodes["n0001"].status == "mismatch"
    assert "mismatch" in human(chat, 1)
    assert result.best_node == "n0002"


def test_reply_without_code_is_asked_again(tmp_path: Path) -> None:
    result, state, chat = run(tmp_path, ["no_code", "truncated", "good_block256"])
    tree = state["tree"]
    assert len(chat.requests) == 3 and result.best_node == "n0001"
    assert len(tree.nodes) == 2  # the root and the one candidate: no node for the re-asks
    assert kinds(state).count("no_code") == 2
    assert human(chat, 1) != human(chat, 0)  # the re-ask says the last reply held no code


def test_replies_without_code_run_out_the_retries_and_the_planner_moves_on(tmp_path: Path
                                                                          ) -> None:
    result, state, chat = run(tmp_path, ["no_code", "no_code", "good_block256"],
                                max_reply_retries=1)
    tree = state["tree"]
    assert tree.nodes["n0001"].status == "no_code"
    assert tree.nodes["n0002"].ok and tree.nodes["n0002"].round == 2


def test_stagnation_restarts_then_stalls(tmp_path: Path) -> None:
    same = ["good_block256"] * 4
    result, state, chat = run(tmp_path, same, target="mtia-sim:2i", goal=100.0, rounds=10,
                                stagnation_rounds=1, max_restarts=1)
    events = state["events"]
    restarts = [e for e in events if e.kind == EventKind.restart]
    assert len(restarts) == 1
    assert result.stop_reason is not None and result.stop_reason.startswith("stalled")
    after = events[events.index(restarts[0]) + 1]
    assert after.kind == EventKind.plan and after.text.startswith("fresh from root: start over")
    # the restart is memoryless: its prompt carries no earlier kernel
    kernel_line = "def leaky_relu_scale_clamp_kernel"
    assert kernel_line in reply("good_block256")
    assert kernel_line not in human(chat, restarts[0].round - 1)


def test_interactive_run_pauses_takes_guidance_and_stops(tmp_path: Path) -> None:
    chat = ScriptedChatModel([reply("good_block256"), reply("good_block1024")])
    session = Session.create(PROBLEM, target="mtia-sim:2i",
                             settings=settings(tmp_path, goal=100.0, rounds=5),
                             synthesizer=LLMSynthesizer(chat, "scripted-coder"),
                             interactive=True)
    with session:
        first = session.run()
        assert not first.finished and first.paused is not None
        assert first.paused["round"] == 1 and first.paused["best"]["node"] == "n0001"
        second = session.run("try BLOCK_SIZE 1024 with 4 warps")
        assert not second.finished and second.paused is not None
        assert "try BLOCK_SIZE 1024 with 4 warps" in human(chat, 1)
        third = session.run("stop")
        notes = session.values()["user_notes"]
    assert third.finished and third.stop_reason == "stopped by the user"
    assert len(chat.requests) == 2
    assert notes == ["try BLOCK_SIZE 1024 with 4 warps"]


def test_librarian_retrieves_into_the_prompt_and_distils_a_skill(tmp_path: Path,
                                                                  indexed_store: Path) -> None:
    import shutil

    from kernelevolve.config import KBConfig
    from kernelevolve.kb import KnowledgeBase

    shutil.copytree(indexed_store, tmp_path / "kb")
    kb = KnowledgeBase.open(KBConfig(path=tmp_path / "kb"))
    chat = ScriptedChatModel([reply("good_block256"), reply("good_block1024")])
    cfg = settings(tmp_path, goal=100.0, rounds=2, max_children=1, retrieve=True, distill=True)
    with Session.create(PROBLEM, target="mtia-sim:2i", settings=cfg, kb=kb,
                        synthesizer=LLMSynthesizer(chat, "scripted-coder")) as session:
        result = session.run()
        state = session.values()
    tree = state["tree"]
    slow, fast = tree.nodes["n0001"], tree.nodes["n0002"]
    assert fast.parent == "n0001" and fast.operator in ("inherit", "compare")
    assert slow.latency_ms is not None and fast.latency_ms is not None
    assert fast.latency_ms < slow.latency_ms and result.best_node == "n0002"
    # round 1's prompt carried retrieved passages; round 2's the parent's diagnosis
    retrieved = [e for e in state["events"] if e.kind == EventKind.retrieve]
    assert retrieved and "retrieved 0" not in retrieved[0].text
    assert "mtia" in human(chat, 0).lower()
    assert slow.diagnosis is not None and slow.diagnosis.kind in human(chat, 1)
    # the improvement was distilled into a skill for this target
    assert any(e.kind == EventKind.distill for e in state["events"])
    skills = kb.skills(target="mtia-sim:2i")
    assert len(skills) == 1 and skills[0].gains and skills[0].gains[0] > 0.5


def test_seeds_are_verified_first_without_asking_the_model(tmp_path: Path) -> None:
    from kernelevolve.graph.state import Draft
    from tests.synth.conftest import fenced_code

    seed = Draft(source=fenced_code("good_block1024"), intent="warm start: run X's n0004")
    chat = ScriptedChatModel([reply("good_block256")])
    with Session.create(PROBLEM, target="cpu", settings=settings(tmp_path),
                        synthesizer=LLMSynthesizer(chat, "scripted-coder"),
                        seeds=[seed]) as session:
        result = session.run()
        state = session.values()
    node = state["tree"].nodes["n0001"]
    assert node.origin == "seed" and node.ok and node.intent.startswith("warm start")
    assert result.best_node == "n0001" and chat.requests == []


def test_a_new_run_of_a_known_problem_starts_from_the_best_known_kernel(tmp_path: Path) -> None:
    first, _, _ = run(tmp_path, ["good_block256"])
    assert first.best_node == "n0001"
    chat = ScriptedChatModel([])  # any request would fail: the seed must carry the run
    with Session.create(PROBLEM, target="cpu", settings=settings(tmp_path),
                        synthesizer=LLMSynthesizer(chat, "scripted-coder")) as session:
        second = session.run()
        node = session.values()["tree"].nodes["n0001"]
    assert node.origin == "seed" and first.run_id in node.intent and node.ok
    assert second.best_node == "n0001" and chat.requests == []
