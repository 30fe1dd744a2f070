"""`kernelevolve chat`: a real interactive run (offline synthesizer, simulated MTIA) driven by
typed answers: guidance lands in the state, 'show best' / 'show tree' print, 'stop' ends."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from kernelevolve.cli import app
from kernelevolve.graph.session import read_run

PROBLEM = Path(__file__).resolve().parents[1] / "examples" / "problems" / \
    "03_leaky_relu_scale_clamp.py"


def test_chat_takes_guidance_shows_the_best_and_stops(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    answers = "try one program per row\nshow best\nshow tree\nstop\n"
    result = CliRunner().invoke(app, ["chat", str(PROBLEM), "--target", "mtia-sim:2i",
                                      "--no-kb", "--goal", "100", "--rounds", "5",
                                      "--run-dir", str(run_dir)], input=answers)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "round 1" in out and "round 2" in out
    assert "class ModelNew" in out  # show best printed the kernel
    assert "n0001" in out and "n0002" in out  # show tree listed the nodes
    stored = read_run(run_dir)
    assert stored.values is not None
    assert stored.values["user_notes"] == ["try one program per row"]
    assert stored.values["stop_reason"] == "stopped by the user"
    assert stored.values["round"] == 2


def test_chat_pauses_on_cpu_and_says_the_offline_synthesizer_reads_no_guidance(tmp_path: Path
                                                                             ) -> None:
    """On an untimed target a run stops at its first verified kernel, but an interactive one
    pauses like on any other target (the user ends it); with the offline synthesizer, guidance
    typed at the pause is said not to be read, never silently dropped."""
    run_dir = tmp_path / "run"
    answers = "try a persistent kernel\nstop\n"
    result = CliRunner().invoke(app, ["chat", str(PROBLEM), "--target", "cpu", "--no-kb",
                                      "--rounds", "3", "--run-dir", str(run_dir)],
                                input=answers, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    out = result.output
    assert "round 1: 1 candidates, best n0001" in out  # it paused after round 1
    assert "note: the offline synthesizer does not read guidance; configure an LLM" in out
    assert "not read: the offline synthesizer does not read guidance" in out
    stored = read_run(run_dir)
    assert stored.values is not None
    assert stored.values["stop_reason"] == "stopped by the user"
    assert stored.values["user_notes"] == ["try a persistent kernel"]
    guidance = [e.text for e in stored.values["events"] if e.kind.value == "guidance"]
    assert guidance and guidance[0].startswith("try a persistent kernel (not read: the offline")
