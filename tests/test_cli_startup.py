"""The CLI starts in well under a second or two: `--help` and the commands that only read the run
store import none of torch, triton, LangGraph/LangChain or chromadb (each costs seconds), which
load only when a command needs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("torch", "triton", "langgraph", "langchain_core", "chromadb")

# Runs the CLI in this process and prints the heavy packages it loaded.
PROBE = f"""
import runpy, sys
sys.argv = ["kernelevolve", *sys.argv[1:]]
try:
    runpy.run_module("kernelevolve.cli", run_name="__main__")
except SystemExit:
    pass
heavy = {HEAVY!r}
print("LOADED", " ".join(sorted(m for m in heavy if m in sys.modules)))
"""


def _loaded(tmp_path: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELEVOLVE_")}
    env["KERNELEVOLVE_HOME"] = str(tmp_path / "home")
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True,
                          timeout=120, env=env)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("LOADED")), None)
    assert line is not None, proc.stdout + proc.stderr
    return line.removeprefix("LOADED").strip()


@pytest.mark.parametrize("args", [["--help"], ["kb", "--help"], ["aten", "--help"],
                                  ["llm", "--help"], ["tune", "--help"]])
def test_help_imports_no_heavy_package(tmp_path: Path, args: list[str]) -> None:
    assert _loaded(tmp_path, *args) == ""


def test_runs_reads_the_runs_directory_without_the_evaluation_stack(tmp_path: Path) -> None:
    # a run that never reached a checkpoint is read (and skipped) through graph/rundir.py
    run = tmp_path / "home" / "runs" / "20260101-000000-p-0000"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({
        "run_id": run.name, "problem_path": "p.py", "problem_digest": "0", "target": "cpu",
        "synthesizer": "offline", "settings": {}, "created": "2026-01-01 00:00:00 UTC"}))
    loaded = _loaded(tmp_path, "runs").split()
    assert "torch" not in loaded and "triton" not in loaded and "chromadb" not in loaded, loaded
