"""The prompt loader and the Coder/Debugger templates rendered from one PromptState."""

from __future__ import annotations

import re

import pytest

from kernelevolve import prompts
from kernelevolve.errors import ConfigError
from kernelevolve.graph.state import Knowledge
from kernelevolve.synth.llm.reply import clip, coder_prompt, debugger_prompt, system_prompt

LEAKS = re.compile(r"\bNone\b|\[missing\]|Undefined|\{\{|\{%|\n\n\n")
FENCED = re.compile(r"^```\w*\n.*?^```$", re.MULTILINE | re.DOTALL)


def sections(text: str) -> list[str]:
    return re.findall(r"^#+ (.+)$", text, re.MULTILINE)


def assert_clean(text: str) -> None:
    """No placeholder, no Python None, no template syntax, at most one blank line in prose."""
    assert len(re.findall(r"^```", text, re.MULTILINE)) % 2 == 0
    prose = FENCED.sub("CODE", text)
    assert not LEAKS.search(prose), LEAKS.search(prose)


# -- loader -----------------------------------------------------------------------------------


def test_bundled_templates_render(monkeypatch):
    monkeypatch.delenv(prompts.ENV_VAR, raising=False)
    assert prompts.search_path() == [prompts.BUNDLED_DIR]
    for name in ("system.j2", "coder.j2", "debugger.j2"):
        assert (prompts.BUNDLED_DIR / name).is_file()


def test_override_directory_wins(tmp_path, monkeypatch, make_ps):
    (tmp_path / "system.j2").write_text("Custom role for {{ ps.task.problem_name }}.\n")
    monkeypatch.setenv(prompts.ENV_VAR, str(tmp_path))
    assert prompts.search_path() == [tmp_path, prompts.BUNDLED_DIR]
    ps = make_ps("fresh")
    assert system_prompt(ps) == "Custom role for 03_leaky_relu_scale_clamp.\n"
    # Templates the override directory lacks still come from the package.
    assert coder_prompt(ps).startswith("# Task\n")


def test_override_directory_must_exist(tmp_path, monkeypatch):
    monkeypatch.setenv(prompts.ENV_VAR, str(tmp_path / "nope"))
    with pytest.raises(ConfigError, match="is not a directory"):
        prompts.render("system.j2")


def test_missing_template_names_the_searched_directories(tmp_path, monkeypatch):
    monkeypatch.setenv(prompts.ENV_VAR, str(tmp_path))
    with pytest.raises(ConfigError) as info:
        prompts.render("planner.j2")
    assert "planner.j2" in str(info.value)
    assert str(tmp_path) in str(info.value) and str(prompts.BUNDLED_DIR) in str(info.value)


def test_missing_included_template_is_named(tmp_path, monkeypatch):
    (tmp_path / "coder.j2").write_text("{% include '_house_rules.j2' %}\n")
    monkeypatch.setenv(prompts.ENV_VAR, str(tmp_path))
    with pytest.raises(ConfigError, match="'_house_rules.j2' not found"):
        prompts.render("coder.j2", ps=None)


def test_strict_undefined_raises(tmp_path, monkeypatch):
    (tmp_path / "strict.j2").write_text("Intent: {{ ps.intent }} / {{ notes }}\n")
    monkeypatch.setenv(prompts.ENV_VAR, str(tmp_path))
    with pytest.raises(ConfigError, match="undefined") as info:
        prompts.render("strict.j2", ps=None)
    assert "strict.j2" in str(info.value)


def test_template_syntax_error_names_the_file(tmp_path, monkeypatch):
    (tmp_path / "coder.j2").write_text("{% if ps.parent %}never closed\n")
    monkeypatch.setenv(prompts.ENV_VAR, str(tmp_path))
    with pytest.raises(ConfigError, match="coder.j2"):
        prompts.render("coder.j2", ps=None)


def test_bundled_coder_prompt_with_override_of_one_template(tmp_path, monkeypatch, make_ps):
    (tmp_path / "_context.j2").write_text("\n## House rules\n- be brief\n")
    monkeypatch.setenv(prompts.ENV_VAR, str(tmp_path))
    text = coder_prompt(make_ps("fresh"))
    assert "## House rules" in text and "## Knowledge" not in text


# -- templates --------------------------------------------------------------------------------


def test_system_prompt_states_the_contract(make_ps):
    text = system_prompt(make_ps("fresh"))
    for phrase in ("class ModelNew(nn.Module)", "Model.__init__", "same names",
                   "@triton.jit", "state_dict", "fp32", "ONE fenced ```python block",
                   "no caching of outputs", "No extra streams or threads"):
        assert phrase in text, phrase
    assert "load_inline" not in text  # the cpu target runs Triton only
    assert "except these library ops" not in text
    assert_clean(text)


def test_system_prompt_on_cuda_with_allowed_ops(make_ps, task):
    cuda = task.model_copy(update={"target": "cuda", "allowed_ops": ["conv2d"]})
    text = system_prompt(make_ps("fresh", task=cuda))
    assert "load_inline" in text and "CUDA C++" in text
    assert "except these library ops the user allows: conv2d" in text


def test_fresh_shows_only_the_task(make_ps):
    text = coder_prompt(make_ps("fresh"))
    assert sections(text) == ["Task", "Reference program", "Rules", "Knowledge",
                              "Memory-bound playbook", "This round"]
    assert "class Model(nn.Module)" in text and "class ModelNew" not in text
    assert "from scratch" in text
    assert "correctness only" in text and "x the speed" not in text
    assert "previous reply" not in text
    assert text.rstrip().endswith("ONE ```python block.")
    assert_clean(text)


def test_inherit_shows_parent_code_and_trajectory(make_ps, diagnosis):
    text = coder_prompt(make_ps("inherit", diagnosis=diagnosis))
    assert "## Starting point: n0002 (ok, 1.21x vs eager, 0.412 ms)" in text
    assert "BLOCK_SIZE = 256" in text  # the parent's code
    assert "## How it got here" in text
    assert "- n0001: first Triton version -> ok, 0.95x vs eager" in text
    assert "## Diagnosis" in text and "memory-bound, at 42% of its roofline" in text
    assert "- DRAM throughput 78% of peak" in text
    assert "Siblings" not in text and "Candidate B" not in text
    assert_clean(text)


def test_compare_shows_siblings_with_results_and_their_diffs(make_ps):
    text = coder_prompt(make_ps("compare"))
    assert "## Parent: n0002" in text
    assert "### n0004: BLOCK_SIZE 1024, 4 warps -> ok, 1.40x vs eager" in text
    assert "### n0005: two elements per thread -> mismatch: max abs error 0.34" in text
    # each sibling as its unified diff against the parent, not its whole code
    assert text.count("```diff\n--- n0002\n") == 2
    assert "+    BLOCK_SIZE = 1024" in text
    assert "-        BLOCK_SIZE = 256\n+        BLOCK_SIZE = 128" in text
    assert text.count("```python\n") == 2  # the reference and the parent
    assert "How it got here" not in text
    assert_clean(text)


def test_combine_shows_both_candidates(make_ps):
    text = coder_prompt(make_ps("combine"))
    assert "## Candidate A: n0002" in text and "## Candidate B: n0007 (ok, 1.38x vs eager)" in text
    assert "Combine the strengths" in text
    assert text.count("```python\n") == 3  # reference, A, B
    assert_clean(text)


def test_operator_without_parent_falls_back_to_fresh(make_ps):
    text = coder_prompt(make_ps("inherit", parent=None, trajectory=[]))
    assert "from scratch" in text and "Starting point" not in text


def test_optional_sections_are_left_out(make_ps, task):
    timed = task.model_copy(update={"timed": True, "goal": 2.0, "operator_class": None,
                                    "target": "cuda", "target_description": "NVIDIA H200 x1"})
    ps = make_ps("inherit", task=timed, constraints=[], knowledge=[], intent="",
                 trajectory=[])
    ps.parent = ps.parent.model_copy(update={"speedup": None, "latency_ms": None, "intent": ""})
    text = coder_prompt(ps)
    assert sections(text) == ["Task", "Reference program", "Starting point: n0002 (ok)"]
    assert "Goal: 2.00x the speed of eager PyTorch." in text
    assert "(elementwise)" not in text and "It was written to" not in text
    assert_clean(text)


def test_user_notes_and_reask_line(make_ps):
    text = coder_prompt(make_ps("inherit", user_notes=["keep num_warps at 4"], attempt=1))
    assert "## Notes from the user\n- keep num_warps at 4" in text
    assert "Your previous reply held no usable code." in text


def test_long_knowledge_and_reference_are_clipped_visibly(make_ps, task):
    passage = "\n".join(f"line {i}: " + "coalesced loads matter. " * 3 for i in range(200))
    big_ref = task.reference_source + "\n" + "# padding\n" * 2000
    ps = make_ps("fresh", task=task.model_copy(update={"reference_source": big_ref}),
                 knowledge=[Knowledge(title="Long guide", tier="guides", text=passage)] * 8)
    text = coder_prompt(ps)
    assert text.count("### Long guide") == 5
    assert "more characters left out]" in text
    knowledge = text.split("### Long guide")[1]
    assert len(knowledge) < 1400
    assert len(text) < 16000
    assert ps.knowledge[0].text == passage  # the state itself is untouched


def test_clip_keeps_head_or_tail():
    text = "\n".join(f"row {i}" for i in range(100))
    head = clip(text, 60)
    assert head.startswith("row 0\n") and head.endswith("more characters left out]")
    tail = clip(text, 60, keep="tail")
    assert tail.startswith("[... ") and tail.endswith("row 99")
    assert clip("short", 60) == "short"


def test_debugger_prompt_shows_the_failure(make_ps, failed):
    ps = make_ps("inherit", last_error=failed,
                 knowledge=[Knowledge(title="Debugging runtime errors", tier="constraints",
                                      text="A NameError inside a kernel: a misspelt name.")])
    text = debugger_prompt(ps)
    assert text.startswith("# Repair\n")
    assert "failed with status runtime_error: it raised an error while running.\nThe error: " \
        "ModelNew.forward raised NameError: name 'negative_slop' is not defined\n\nTarget" in text
    assert "## Failed candidate (n0006)" in text
    assert "x * negative_slop)" in text  # the failed source itself
    assert "## Error\nModelNew.forward raised NameError" in text
    assert "## End of stderr\n```text\nTraceback" in text
    assert "### Debugging runtime errors" in text
    assert "Return the whole corrected file" in text
    assert "Starting point" not in text  # the Debugger sees the failed code, not the parent
    assert_clean(text)


def test_debugger_drops_a_stderr_that_repeats_the_message(make_ps, failed):
    tb = "Traceback (most recent call last):\nNameError: name 'negative_slop' is not defined"
    err = failed.model_copy(update={"message": "ModelNew.forward raised NameError\n" + tb,
                                    "stderr_tail": tb, "status": "weird_status"})
    text = debugger_prompt(make_ps("fresh", last_error=err))
    assert "End of stderr" not in text
    assert "failed with status weird_status." in text


def test_debugger_needs_the_failed_source(make_ps, failed):
    with pytest.raises(ValueError, match="last_error"):
        debugger_prompt(make_ps("fresh"))
    with pytest.raises(ValueError, match="last_error"):
        debugger_prompt(make_ps("fresh", last_error=failed.model_copy(update={"source": None})))


def test_optimization_prompt_carries_the_evidence_and_asks_for_one_change(make_ps, task,
                                                                          diagnosis):
    from kernelevolve.graph.state import Direction, Step

    timed = task.model_copy(update={"timed": True, "goal": 2.0, "target": "mtia-sim:2i",
                                    "simulated": True})
    diag = diagnosis.model_copy(update={
        "ceiling": "simulated MTIA 2i: on-chip SRAM bandwidth 2.7 TB/s for the 134 MB it moves",
        "ceiling_ms": 0.0507})
    skill = Knowledge(title="Skill: wider blocks on mtia-sim", tier="skills",
                      text="BLOCK_SIZE 256 -> 1024 gave 2.6x on a memory-bound chain.")
    tried = [Step(node_id="n0003", operator="inherit", intent="", status="ok", speedup=1.1,
                  latency_ms=0.45, direction="wider contiguous loads",
                  summary="--- n0002\n+++ n0003\n@@ -1 +1 @@\n-a\n+b"),
             Step(node_id="n0004", operator="inherit", intent="", status="pending",
                  direction="persistent kernel")]
    ps = make_ps("inherit", task=timed, diagnosis=diag, knowledge=[*make_ps().knowledge, skill],
                 tried=tried, direction=Direction(name="fewer bytes moved", how="fuse passes"))
    text = coder_prompt(ps)
    assert sections(text) == [
        "Task", "Reference program", "Rules", "Knowledge", "Memory-bound playbook",
        "Lessons from earlier runs (retrieved for a memory-bound kernel)",
        "Skill: wider blocks on mtia-sim", "Starting point: n0002 (ok, 1.21x vs eager, 0.412 ms)",
        "How it got here (oldest first)", "Siblings already tried from n0002", "Diagnosis",
        "This round"]
    assert "finds n0002 memory-bound, at 42% of its roofline bound." in text
    assert ("Ceiling: simulated MTIA 2i: on-chip SRAM bandwidth 2.7 TB/s for the 134 MB it "
            "moves: 0.0507 ms, where n0002 takes 0.412 ms.") in text
    assert "Eager PyTorch takes 0.4985 ms (simulated)." in text  # 0.412 ms x 1.21
    assert "- n0003 [wider contiguous loads]: ok, 1.10x vs eager, 0.45 ms\n```diff\n--- n0002" \
        in text
    assert "- n0004 [persistent kernel]: being written at the same time" in text
    assert "Direction for this candidate, fewer bytes moved: fuse passes." in text
    assert "Make ONE concrete change to n0002 along this direction" in text
    assert "Improve this kernel" not in text
    assert_clean(text)
    again = coder_prompt(ps.model_copy(update={"attempt": 2, "retry": "the reply's kernel is "
                                               "n0002's up to renaming (an AST-level no-op)"}))
    assert "Your previous reply was not used: the reply's kernel is n0002's" in again
    assert "This is re-ask 2" in again
