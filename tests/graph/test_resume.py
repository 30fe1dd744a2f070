"""A run killed mid-way (SIGKILL of the whole process group) resumes from its SQLite checkpoint
through the CLI and loses nothing: one continuous trace, every node it had, the budget kept."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelevolve.config import load_settings
from kernelevolve.graph.session import Session
from tests.procs import CLI, alive, children

ROOT = Path(__file__).resolve().parents[2]
PROBLEM = ROOT / "examples" / "problems" / "03_leaky_relu_scale_clamp.py"


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELEVOLVE_")}
    env.update(KERNELEVOLVE_HOME=str(tmp_path / "home"), OMP_NUM_THREADS="1")
    return env


def _nodes(run_dir: Path) -> dict[str, tuple[str, str | None]]:
    settings = load_settings(search={"retrieve": False, "distill": False})
    with Session.open(run_dir, settings=settings) as s:
        tree = s.values()["tree"]
    return {n.id: (n.status, n.source) for n in tree.nodes.values()}


@pytest.mark.slow
def test_killed_run_resumes_with_one_continuous_trace(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "kernelevolve.cli", "tune", str(PROBLEM),
           "--target", "mtia-sim:2i", "--rounds", "4", "--goal", "100", "--no-kb", "--quiet",
           "--run-dir", str(run_dir), "--out", str(tmp_path / "first.py")]
    proc = subprocess.Popen(cmd, env=_env(tmp_path), start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 240
    while not (run_dir / "candidates" / "n0002.py").exists():
        assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
        assert time.monotonic() < deadline, "the run made no second candidate in time"
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (run_dir / "result.json").exists()
    before = _nodes(run_dir)
    assert "n0001" in before

    out = subprocess.run([sys.executable, "-m", "kernelevolve.cli", "resume", str(run_dir),
                          "--json", "--out", str(tmp_path / "best.py")],
                         env=_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout)
    assert result["finished"] and result["stop_reason"].startswith("budget spent: 4 rounds")
    assert result["rounds"] == 4
    after = _nodes(run_dir)
    assert all(after[k] == v for k, v in before.items()), "a node changed or vanished"
    assert len(after) > len(before)
    trace = json.loads((run_dir / "trace.json").read_text())
    plans = [e["round"] for e in trace if e["kind"] == "plan"]
    assert plans == [1, 2, 3, 4], plans  # every round planned exactly once, in order
    stamps = [e["at_s"] for e in trace]
    assert stamps == sorted(stamps)
    assert (tmp_path / "best.py").read_text() == (run_dir / "best.py").read_text()


def test_ctrl_c_stops_a_run_and_says_how_to_resume(tmp_path: Path) -> None:
    # SIGINT to the CLI alone (a notebook's interrupt; a terminal's Ctrl-C reaches the group)
    # while the harness evaluates the first candidate: exit 130, the way on, no worker left.
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(
        [*CLI, "tune", str(PROBLEM), "--target", "cpu",
         "--llm", "offline", "--no-kb", "--run-dir", str(run_dir)],
        env={**_env(tmp_path), "PYTHONUNBUFFERED": "1", "COLUMNS": "200"},
        start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        head = ""
        while " draft " not in head:  # the first candidate goes to the harness now
            line = proc.stdout.readline()
            assert line, head
            head += line
        time.sleep(1.0)
        workers = children(proc.pid)
        assert workers and proc.poll() is None, head
        os.kill(proc.pid, signal.SIGINT)
        output, _ = proc.communicate(timeout=60)
        output = head + output
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, output
    assert f"interrupted; the run is kept. Continue it with: kernelevolve resume {run_dir}" \
        in output
    assert "Traceback" not in output
    deadline = time.monotonic() + 20
    while any(map(alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(map(alive, workers)), "a harness worker outlived the interrupted run"
    assert " evaluate " not in output  # stopped inside the evaluation
    assert (run_dir / "checkpoints.sqlite").is_file() and not (run_dir / "result.json").exists()


TINY = PROBLEM.read_text().replace("batch_size = 4096", "batch_size = 256").replace(
    "dim = 4096", "dim = 512")


def test_the_kernel_file_follows_the_best_through_an_interrupt_and_a_resume(tmp_path: Path
                                                                          ) -> None:
    """Interrupted after round 1 (Ctrl-C), the kernel file holds round 1's best; resumed, it
    follows the better kernel of round 2: never the earlier one (issue 48)."""
    from kernelevolve.synth.llm.chat import LLMSynthesizer
    from tests.synth.llm.scripted import ScriptedChatModel

    replies = ROOT / "tests" / "synth" / "llm" / "replies"
    problem = tmp_path / "leaky_small.py"
    problem.write_text(TINY)
    out = tmp_path / "leaky_small_tuned.py"
    settings = load_settings(
        search={"retrieve": False, "distill": False, "warm_start": 0, "rounds": 2, "goal": 100.0},
        eval={"n_input_sets": 1, "extra_shapes": False, "gpu_compile_arch": None})

    def scripted(*names: str) -> LLMSynthesizer:
        chat = ScriptedChatModel([(replies / f"{n}.md").read_text() for n in names])
        return LLMSynthesizer(chat, "scripted-coder")

    def ctrl_c_at_round_2(event) -> None:
        if event.kind.value == "plan" and event.round == 2:
            raise KeyboardInterrupt

    with Session.create(problem, target="mtia-sim:2i", settings=settings, run_dir=tmp_path / "r",
                        synthesizer=scripted("good_block256"), kernel_out=out,
                        on_event=ctrl_c_at_round_2) as session:
        with pytest.raises(KeyboardInterrupt):
            session.run()
        first = session.values()["tree"].best
    assert first is not None and out.read_text() == first.source

    with Session.open(tmp_path / "r", settings=settings,
                      synthesizer=scripted("good_block1024")) as session:
        result = session.run()
        best = session.values()["tree"].best
    assert result.finished and best is not None and best.id == "n0002"
    assert (best.speedup or 0) > (first.speedup or 0)
    assert result.kernel_out == str(out) and out.read_text() == best.source
    assert (tmp_path / "r" / "best.py").read_text() == best.source
