"""Agent pieces that need no graph: guidance parsing, intents, diagnoses from the simulator,
the evaluation settings of a search, the repair count."""

from __future__ import annotations

from kernelevolve.agents.debugger import repairs_so_far
from kernelevolve.agents.planner import intent_for, parse_guidance
from kernelevolve.agents.profiler_analyst import diagnose
from kernelevolve.config import load_settings
from kernelevolve.graph.search import ROOT, DiagnosisInfo, Node, SearchTree
from kernelevolve.graph.session import search_eval_config
from kernelevolve.targets import Target, get_target
from kernelevolve.tools.harness.result import EvalResult


def test_guidance_words():
    assert parse_guidance("stop") == (True, "")
    assert parse_guidance("  Continue ") == (False, "")
    assert parse_guidance("try a persistent kernel") == (False, "try a persistent kernel")
    assert parse_guidance({"action": "stop"}) == (True, "")
    assert parse_guidance({"note": "wider tiles"}) == (False, "wider tiles")


def test_intent_carries_the_diagnosis_and_its_evidence():
    parent = Node(id="n0003", parent=ROOT, status="ok", speedup=1.2)
    diag = DiagnosisInfo(kind="memory-bound", evidence=["DRAM 91% of peak"])
    text = intent_for("inherit", parent, None, diag, restart=False)
    assert "n0003 is memory-bound" in text and "DRAM 91% of peak" in text and "fuse" in text
    assert "start over" in intent_for("fresh", parent, None, None, restart=True)
    partner = Node(id="n0005", parent=ROOT, status="ok")
    assert "combine n0003 with n0005" in intent_for("combine", parent, partner, diag, False)


def _mtia_result(limiting: str, occupancy: float) -> EvalResult:
    return EvalResult.model_validate({"status": "ok", "profile": [{
        "instrument": "mtia-sim", "candidate": {
            "gen": "2i", "limiting_resource": limiting,
            "metrics": [{"name": "mtia_sim_pe_occupancy", "value": occupancy}]}}]})


def test_simulator_limiting_resource_becomes_a_diagnosis():
    assert diagnose(_mtia_result("dram", 1.0)).kind == "memory-bound"
    assert diagnose(_mtia_result("pe:dpe", 0.9)).kind == "compute-bound"
    assert diagnose(_mtia_result("pe:dpe", 0.2)).kind == "occupancy-bound"
    assert diagnose(_mtia_result("launch", 1.0)).kind == "launch-bound"
    d = diagnose(_mtia_result("sram", 0.5))
    assert d.source == "mtia-sim" and "time set by sram" in d.evidence[0]
    assert diagnose(EvalResult(status="ok")) is None


def test_search_profiles_on_cuda_unless_the_user_chose():
    cuda = Target(name="cuda", description="", timed=True, device="cuda", interpreter=False)
    assert search_eval_config(load_settings(), cuda).profile.enabled
    assert search_eval_config(load_settings(), cuda).profile.tools == ["torch"]
    chosen = load_settings(eval={"profile": {"enabled": False}})
    assert not search_eval_config(chosen, cuda).profile.enabled
    assert not search_eval_config(load_settings(), get_target("cpu")).profile.enabled


def test_repairs_follow_the_repair_links():
    tree = SearchTree.new(timed=True)
    tree.add(Node(id="a", parent=ROOT, status="compile_error"))
    tree.add(Node(id="b", parent=ROOT, status="mismatch", origin="debugger", repair_of="a"))
    tree.add(Node(id="c", parent=ROOT, status="ok", origin="debugger", repair_of="b"))
    assert [repairs_so_far(tree, n) for n in "abc"] == [0, 1, 2]


def test_a_repair_prompt_does_not_inherit_the_coders_re_asks():
    from kernelevolve.graph.search import SearchTree
    from kernelevolve.graph.state import Draft, ErrorInfo, Expansion, Task, prompt_state

    task = Task(problem_path="p.py", problem_name="p", reference_source="", target="cpu",
                target_description="", goal=1.5, timed=False)
    state = {"task": task, "tree": SearchTree.new(timed=False),
             "expansion": Expansion(parent_id=ROOT, operator="fresh", intent="x"),
             "draft": Draft(source="code", attempt=2),
             "last_error": ErrorInfo(node_id="n0001", status="compile_error", message="m",
                                     source="code")}
    assert prompt_state(state).attempt == 2
    assert prompt_state(state, repair=True).attempt == 0


def test_a_gpu_diagnosis_names_its_ceiling_and_the_time_at_it():
    """The evaluation of a copy captured on an H200 (ncu, Proton, the measured roofline)."""
    from pathlib import Path

    from kernelevolve.agents.profiler_analyst import diagnose
    from kernelevolve.tools.harness.result import EvalResult

    path = Path(__file__).resolve().parents[1] / "data/profiles/h200/harness/eval_result.json"
    d = diagnose(EvalResult.model_validate_json(path.read_text()))
    assert d is not None and d.kind == "memory-bound" and d.roofline_fraction is not None
    assert d.ceiling.startswith("measured memory bandwidth 4151 GB/s for the 1050 MB")
    # the forward's bytes at that bandwidth: 1050 MB / 4151 GB/s
    assert d.ceiling_ms is not None and abs(d.ceiling_ms - 1050.0 / 4151.0) < 0.01
