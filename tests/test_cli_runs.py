"""``kernelevolve runs | trace | show | export | import`` on one real run (tests/store/real_run.py),
through typer's CliRunner, with KERNELEVOLVE_HOME in a temporary directory."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelevolve.cli import app
from kernelevolve.errors import StoreError
from tests.store.real_run import RealRun, real_run

runner = CliRunner()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> RealRun:
    return real_run(tmp_path_factory)


@pytest.fixture(autouse=True)
def _no_user_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("KERNELEVOLVE_"):
            monkeypatch.delenv(key)


def cli(home: Path, *args: str, ok: bool = True):
    result = runner.invoke(app, list(args), env={"KERNELEVOLVE_HOME": str(home),
                                                 "COLUMNS": "250"})
    if ok:
        assert result.exit_code == 0, (result.output, result.exception)
    return result


def test_runs_lists_the_run_from_the_runs_directory(run: RealRun) -> None:
    out = cli(run.home, "runs").output
    row = next(line for line in out.splitlines() if run.spec.run_id in line)
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    assert cells == [run.spec.run_id, "03_leaky_relu_scale_clamp", "mtia-sim:2i",
                     "openai:scripted-coder", f"{run.result.best_speedup:.2f}x sim", "2",
                     "3 (2 ok)", "budget spent", run.spec.created]
    data = json.loads(cli(run.home, "runs", "--json").output)
    assert [(r["run_id"], r["best_node"], r["candidates"]) for r in data] == [
        (run.spec.run_id, "n0003", 3)]


def test_trace_draws_the_tree_and_lists_the_events(run: RealRun) -> None:
    out = cli(run.home, "trace", run.spec.run_id).output
    lines = out.splitlines()
    n1 = next(line for line in lines if "n0001" in line and "ok" in line)
    n2 = next(line for line in lines if "n0002" in line and "compile_error" in line)
    n3 = next(line for line in lines if "n0003" in line and "repair of n0002" in line)
    assert lines.index(n1) < lines.index(n2) < lines.index(n3)
    assert n1.startswith("└── n0001") and n2.lstrip("│ ").startswith("├── n0002")
    assert "fresh" in n1 and "inherit" in n2 and "<- best" in n3 and "<- best" not in n1
    assert f"{run.state['tree'].nodes['n0001'].speedup:.2f}x sim" in n1
    assert "root" in lines[1] and "budget spent: 2 rounds" in lines[0]
    assert "best: n0003" in out and "events" not in out

    out = cli(run.home, "trace", str(run.run_dir), "--events").output
    assert "events" in out
    assert "evaluate  n0002: compile_error" in out and "repair    repairing n0002" in out
    assert out.rstrip().splitlines()[-1].endswith("stop      budget spent: 2 rounds")


def test_show_prints_code_prompt_reply_result_diagnosis_and_the_diff(run: RealRun) -> None:
    prefix = run.spec.run_id[:20]  # a unique prefix names the run
    out = cli(run.home, "show", prefix, "3").output
    node = run.state["tree"].nodes["n0003"]
    assert out.startswith(f"n0003 of {run.spec.run_id}  ok")
    assert "repair of       n0002" in out and "origin          debugger" in out
    for section in ("code", "prompt", "reply", "evaluation", "diagnosis",
                    "diff against repair of n0002"):
        assert any(line.startswith(f"{section} ─") for line in out.splitlines()), section
    assert "def fused_act_kernel(" in out  # the code
    assert "# Repair" in out and "Failed candidate (n0002)" in out  # the rendered prompt
    assert node.reply is not None and node.reply.splitlines()[0] in out  # the reply
    assert "verified (simulated time)" in out and "timing (simulated)" in out  # EvalResult
    # the simulated chip's roofline: the fraction and the ceiling (issue #18)
    assert re.search(r"memory-bound, \d+% of the roofline  \(from mtia-sim\)", out)
    assert "ceiling: simulated MTIA 2i: on-chip SRAM bandwidth" in out
    assert "--- repair of n0002" in out and "+++ n0003" in out
    assert "-    y = tl.where(x > 0, x, x * negative_slop)" in out
    assert "+    y = tl.where(x > 0, x, x * negative_slope)" in out

    out = cli(run.home, "show", run.spec.run_id, "n0002").output
    assert "compile_error" in out and "negative_slop" in out
    assert "--- parent n0001" in out and "+++ n0002" in out

    out = cli(run.home, "show", run.spec.run_id, "n0001").output
    assert "--- the reference (root)" in out and "-class Model(nn.Module):" in out

    out = cli(run.home, "show", run.spec.run_id, "root").output
    assert "the reference" in out and "class Model(nn.Module)" in out


def test_show_of_an_unknown_node_or_run_says_what_exists(run: RealRun) -> None:
    result = cli(run.home, "show", run.spec.run_id, "n0042", ok=False)
    assert isinstance(result.exception, StoreError)
    assert "n0042" in str(result.exception) and "n0001, n0002, n0003" in str(result.exception)
    result = cli(run.home, "trace", "no-such-run", ok=False)
    assert isinstance(result.exception, StoreError)
    assert "kernelevolve runs" in str(result.exception)


def test_export_then_import_into_another_home(run: RealRun, tmp_path: Path) -> None:
    out = tmp_path / "runs.json"
    assert "exported 1 run(s)" in cli(run.home, "export", run.spec.run_id, "--out",
                                      str(out)).output
    doc = json.loads(out.read_text())
    assert [r["run"]["run_id"] for r in doc["runs"]] == [run.spec.run_id]

    other = tmp_path / "other-home"  # no runs directory: everything comes from the store
    result = cli(other, "import", str(out))
    assert "imported 1 run(s)" in result.output and run.spec.run_id in result.output
    assert run.spec.run_id in cli(other, "runs").output
    tree = cli(other, "trace", run.spec.run_id).output
    assert "repair of n0002" in tree and "<- best" in tree
    shown = cli(other, "show", run.spec.run_id, "n0003").output
    assert "+    y = tl.where(x > 0, x, x * negative_slope)" in shown

    everything = tmp_path / "all.json"
    cli(run.home, "export", "--out", str(everything))
    assert len(json.loads(everything.read_text())["runs"]) == 1


def test_a_damaged_store_stops_the_command_with_the_fix(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "store.sqlite").write_bytes(b"garbage, not SQLite\n" * 100)
    result = cli(home, "runs", ok=False)
    assert result.exit_code != 0 and isinstance(result.exception, StoreError)
    assert str(home / "store.sqlite") in str(result.exception)
