"""`kernelevolve tune` and `resume` as a user meets them: the best kernel's file is always the
run's current best (tune writes it, resume writes it again where tune did, the summary says
where), a run with nothing to do leaves no directory, and a kernel slower than eager is a
warning."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from kernelevolve.cli import _finish, app
from kernelevolve.config import load_settings
from kernelevolve.errors import SynthesisError
from kernelevolve.graph.rundir import RunSpec, TuneResult
from kernelevolve.graph.session import Session

ROOT = Path(__file__).resolve().parents[1]
PROBLEM = ROOT / "examples" / "problems" / "03_leaky_relu_scale_clamp.py"
TUNED = "03_leaky_relu_scale_clamp_tuned.py"

runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_user_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("KERNELEVOLVE_") and key != "KERNELEVOLVE_HOME":
            monkeypatch.delenv(key)


def _says(output: str, key: str, value: object) -> bool:
    """The summary has the line ``key  value``, whole (never folded or cut)."""
    return any(line.startswith(key + " ") and line.split(maxsplit=len(key.split()))[-1]
               == str(value) for line in output.splitlines())


def _spec(run_dir: Path) -> RunSpec:
    return RunSpec.model_validate_json((run_dir / "run.json").read_text())


def test_tune_and_resume_keep_the_kernel_file_the_runs_best(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    work, elsewhere, run_dir = tmp_path / "work", tmp_path / "elsewhere", tmp_path / "run"
    work.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(work)
    result = runner.invoke(app, ["tune", str(PROBLEM), "--target", "cpu", "--no-kb",
                                 "--run-dir", str(run_dir)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    best = (run_dir / "best.py").read_text()
    assert (work / TUNED).read_text() == best
    assert _says(result.output, "kernel written to", work / TUNED)
    assert _spec(run_dir).kernel_out == str(work / TUNED)

    # A stale file (e.g. from before an interrupted run went on): resume, from another
    # directory, writes the run's best where tune kept it, and says so.
    (work / TUNED).write_text("# an older kernel\n")
    monkeypatch.chdir(elsewhere)
    result = runner.invoke(app, ["resume", str(run_dir), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["kernel_out"] == str(work / TUNED) and out["best_node"] == "n0001"
    assert (work / TUNED).read_text() == best and not (elsewhere / TUNED).exists()

    # --out moves it, and the run keeps it there from now on
    result = runner.invoke(app, ["resume", str(run_dir), "--out", "mine.py"])
    assert result.exit_code == 0, result.output
    assert (elsewhere / "mine.py").read_text() == best
    assert _spec(run_dir).kernel_out == str(elsewhere / "mine.py")


def test_resume_of_a_run_that_named_no_file_writes_the_default(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    """A run started from Python (or `chat`) named no kernel file: resume writes
    ./<problem>_tuned.py as tune would."""
    settings = load_settings(search={"retrieve": False, "distill": False, "warm_start": 0},
                             eval={"n_input_sets": 1})
    with Session.create(PROBLEM, target="cpu", settings=settings,
                        run_dir=tmp_path / "run") as session:
        session.run()
    assert _spec(tmp_path / "run").kernel_out is None
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["resume", str(tmp_path / "run")], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert (tmp_path / TUNED).read_text() == (tmp_path / "run" / "best.py").read_text()
    assert _says(result.output, "kernel written to", tmp_path / TUNED)


def test_a_run_with_nothing_to_do_leaves_no_run_directory(tmp_path: Path) -> None:
    refused = ROOT / "examples" / "problems" / "14_feature_hashing.py"
    result = runner.invoke(app, ["tune", str(refused), "--target", "cpu", "--no-kb"])
    assert isinstance(result.exception, SynthesisError)
    runs = Path(os.environ["KERNELEVOLVE_HOME"]) / "runs"
    assert not runs.exists() or not any(runs.iterdir())

    # a run closed before its first checkpoint goes too; an empty --run-dir the user made stays
    settings = load_settings(search={"retrieve": False, "distill": False, "warm_start": 0})
    Session.create(PROBLEM, target="cpu", settings=settings, run_dir=tmp_path / "r1").close()
    assert not (tmp_path / "r1").exists()
    (tmp_path / "r2").mkdir()
    Session.create(PROBLEM, target="cpu", settings=settings, run_dir=tmp_path / "r2").close()
    assert (tmp_path / "r2").is_dir() and not any((tmp_path / "r2").iterdir())


def _result(vs_eager: float, *, simulated: bool) -> TuneResult:
    from kernelevolve.tools.harness.result import EvalResult, Latency, Timing

    lat = Latency(median_ms=1.0, mean_ms=1.0, stdev_ms=0.0, iqr_ms=0.0, min_ms=1.0, max_ms=1.0,
                  cv=0.0, trials=10)
    timing = Timing(candidate=lat, eager=lat, speedup_vs_eager=vs_eager, simulated=simulated)
    return TuneResult(run_id="r", run_dir="d", problem="p", target="cuda", synthesizer="offline",
                      finished=True, best_node="n0001", best_speedup=vs_eager,
                      simulated=simulated, best_result=EvalResult(status="ok", timing=timing))


@pytest.mark.parametrize("simulated", [False, True])
def test_a_best_kernel_slower_than_eager_exits_0_with_a_warning(capsys, simulated: bool
                                                                ) -> None:
    with pytest.raises(typer.Exit) as info:
        _finish(_result(0.5, simulated=simulated), json_out=False)
    assert info.value.exit_code == 0  # a verified kernel was found
    warning = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("warning"))
    assert warning.startswith("warning: keep eager: it runs 2.00x faster than the best kernel")
    assert ("on the simulated chip" in warning) == simulated

    with pytest.raises(typer.Exit):
        _finish(_result(0.5, simulated=False), json_out=True)  # the JSON stays clean
    captured = capsys.readouterr()
    assert json.loads(captured.out)["best_node"] == "n0001"
    assert captured.err.startswith("warning: keep eager")

    with pytest.raises(typer.Exit):
        _finish(_result(1.3, simulated=simulated), json_out=False)
    assert "warning" not in capsys.readouterr().out
