"""``kernelevolve bench``: every problem of a directory through the whole system, then the
KernelBench figures. Two real problems on the cpu target: one the offline synthesizer writes
(verified, not timed), one it cannot write (not correct, with the reason)."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelevolve.bench import ProblemOutcome, markdown, summarize
from kernelevolve.cli import app

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "examples" / "problems"


@pytest.fixture(autouse=True)
def _no_user_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("KERNELEVOLVE_"):
            monkeypatch.delenv(key)


def test_bench_on_cpu_reports_correctness_and_says_not_timed(tmp_path: Path) -> None:
    problems = tmp_path / "problems"
    problems.mkdir()
    for name in ("03_leaky_relu_scale_clamp", "14_feature_hashing"):
        shutil.copy(PROBLEMS / f"{name}.py", problems)
    home, out = tmp_path / "home", tmp_path / "out"
    env = {"KERNELEVOLVE_HOME": str(home), "KERNELEVOLVE_EVAL__N_INPUT_SETS": "2",
           "COLUMNS": "250"}
    result = CliRunner().invoke(app, ["bench", str(problems), "--target", "cpu", "--rounds", "2",
                                      "--no-kb", "--out", str(out)], env=env)
    assert result.exit_code == 0, (result.output, result.exception)

    report = json.loads((out / "bench.json").read_text())
    assert (report["target"], report["timed"], report["simulated"]) == ("cpu", False, False)
    assert (report["n_problems"], report["n_correct"], report["correctness"]) == (2, 1, 0.5)
    assert report["fast_p"] == {"1.0": None, "1.5": None}  # cpu: nothing is timed
    assert report["geomean_speedup_vs_eager"] is None
    assert report["geomean_speedup_vs_compiled"] is None
    assert report["synthesizer"] == "offline" and report["rounds"] == 2
    good, bad = report["problems"]
    assert good["problem"] == "03_leaky_relu_scale_clamp" and good["correct"]
    assert good["best_node"] == "n0001" and good["reason"] == "" and good["run_id"]
    assert good["synthesizer"] == "offline" and bad["synthesizer"] is None
    assert Path(good["run_dir"]).parent == home / "runs"
    assert bad["problem"] == "14_feature_hashing" and not bad["correct"]
    assert bad["reason"].startswith("SynthesisError: the offline synthesizer cannot write")
    assert bad["run_id"] is None
    # the verdict's NaN and infinity checks reach the report (leaky relu + clamp keep them)
    assert good["nonfinite"] == "kept" and bad["nonfinite"] is None
    assert (report["n_nonfinite_checked"], report["n_nonfinite_kept"]) == (1, 1)

    md = (out / "bench.md").read_text()
    assert "- NaN and infinities as the reference: 1 of 1 verified kernels checked" in md
    assert "| 03_leaky_relu_scale_clamp | yes | not timed | not timed | - | kept |" in md
    assert "- correctness: 1/2 = 0.50" in md
    assert "- fast_1.0: not timed, fast_1.5: not timed" in md
    assert "| 14_feature_hashing | no | not timed | not timed |" in md
    assert "correctness 1/2 = 0.50" in result.output
    assert "not timed (the cpu target only verifies)" in result.output
    row = next(line for line in result.output.splitlines() if "14_feature_hashing" in line
               and "│" in line)
    assert "│ no " in row and "SynthesisError" in row

    runs = CliRunner().invoke(app, ["runs"], env=env)  # the bench's run is recorded as any run
    assert runs.exit_code == 0 and good["run_id"] in runs.output


def test_figures_on_a_timed_target() -> None:
    def outcome(name: str, correct: bool, eager: float | None = None,
                compiled: float | None = None) -> ProblemOutcome:
        return ProblemOutcome(problem=name, path=f"{name}.py", correct=correct,
                              reason="" if correct else "no verified kernel",
                              speedup_vs_eager=eager, speedup_vs_compiled=compiled)

    outcomes = [outcome("a", True, 2.0, 1.1), outcome("b", True, 1.2, 0.5),
                outcome("c", True, 0.5), outcome("d", False)]
    report = summarize(outcomes, problems_dir="p", target="cuda", timed=True, simulated=False,
                       synthesizer="offline", rounds=4)
    assert report.correctness == 0.75
    assert report.fast_p == {"1.0": 0.5, "1.5": 0.25}  # of all four problems
    assert report.geomean_speedup_vs_eager == pytest.approx((2.0 * 1.2 * 0.5) ** (1 / 3))
    assert report.n_speedup_vs_eager == 3
    assert report.geomean_speedup_vs_compiled == pytest.approx(math.sqrt(1.1 * 0.5))
    md = markdown(report)
    assert "fast_1.0 = 0.50, fast_1.5 = 0.25" in md and "(over 3)" in md

    sim = summarize(outcomes[:1], problems_dir="p", target="mtia-sim:2i", timed=True,
                    simulated=True, synthesizer="offline", rounds=4)
    assert "(simulated)" in markdown(sim) and sim.speed_note.startswith("simulated")


def test_roofline_fractions_and_the_first_failure_reach_the_table(tmp_path: Path) -> None:
    from kernelevolve.bench import _first_failure, roofline_cell

    at_roof = ProblemOutcome(problem="relu", path="relu.py", correct=True, speedup_vs_eager=1.0,
                             eager_roofline=0.97, kernel_roofline=0.99, roofline_beyond_l2=True)
    in_cache = ProblemOutcome(problem="tiny", path="tiny.py", correct=True,
                              speedup_vs_eager=1.2, eager_roofline=0.31, kernel_roofline=0.4)
    assert roofline_cell(at_roof) == "0.97 / 0.99"
    assert roofline_cell(in_cache) == "~0.31 / 0.40"  # within 4x the L2: no real floor
    report = summarize([at_roof, in_cache], problems_dir="p", target="cuda", timed=True,
                       simulated=False, synthesizer="offline", rounds=2)
    assert "| 0.97 / 0.99 |" in markdown(report)

    (tmp_path / "trace.json").write_text(json.dumps([
        {"kind": "evaluate", "text": "n0001: ok, 1.31x vs eager; memory-bound"},
        {"kind": "evaluate", "text": "n0002: compile_error: CompilationError: at 12:13"}]))
    assert _first_failure(tmp_path) == "; first failure: n0002: compile_error: " \
                                       "CompilationError: at 12:13"
    assert _first_failure(tmp_path / "missing") == ""


def test_an_internal_error_on_one_problem_costs_that_problem_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A bug of ours that raises out of one problem's tune (once: the Coder's render) must not end
    # the benchmark: the problem is recorded with the error, and the next one runs.
    import kernelevolve.graph.session as session
    from kernelevolve.bench import run_bench

    problems = tmp_path / "problems"
    problems.mkdir()
    for name in ("01_gelu_sigmoid_bias", "03_leaky_relu_scale_clamp"):
        shutil.copy(PROBLEMS / f"{name}.py", problems)
    real_tune = session.tune

    def tune(path, **kwargs):
        if Path(path).stem.startswith("01_"):
            raise ValueError("zip() argument 2 is longer than argument 1")
        return real_tune(path, **kwargs)

    monkeypatch.setattr(session, "tune", tune)
    monkeypatch.setenv("KERNELEVOLVE_HOME", str(tmp_path / "home"))
    from kernelevolve.config import load_settings

    settings = load_settings(search={"retrieve": False, "distill": False, "warm_start": 0},
                             eval={"n_input_sets": 2})
    report = run_bench(problems, target="cpu", rounds=1, settings=settings)
    broken, fine = report.problems
    assert not broken.correct and broken.reason.startswith("internal error (please report it)")
    assert "ValueError: zip() argument 2" in broken.reason
    assert fine.correct and report.n_correct == 1


def test_a_kernel_slower_than_a_reference_comes_with_the_advice_to_keep_it() -> None:
    from kernelevolve.graph.session import TuneResult
    from kernelevolve.tools.harness.result import EvalResult, Latency, Timing

    def result(vs_eager: float, vs_compiled: float | None) -> TuneResult:
        lat = Latency(median_ms=1.0, mean_ms=1.0, stdev_ms=0.0, iqr_ms=0.0, min_ms=1.0,
                      max_ms=1.0, cv=0.0, trials=10)
        timing = Timing(candidate=lat, eager=lat, speedup_vs_eager=vs_eager,
                        speedup_vs_compiled=vs_compiled)
        return TuneResult(run_id="r", run_dir="d", problem="p", target="cuda",
                          synthesizer="offline", finished=True, best_node="n0001",
                          best_speedup=vs_eager, best_result=EvalResult(status="ok",
                                                                        timing=timing))

    assert result(0.42, 1.10).advice == ("keep eager: it runs 2.38x faster than the best kernel "
                                         "(n0001, 0.42x of it)")
    assert result(1.30, 0.80).advice.startswith("keep torch.compile: it runs 1.25x faster")
    assert result(0.97, None).advice is None  # within 5%: no advice
    assert result(1.3, 1.01).advice is None
    slow = ProblemOutcome(problem="pool", path="pool.py", correct=True, speedup_vs_eager=0.42,
                          advice=result(0.42, 1.1).advice, stop_reason="budget spent: 2 rounds")
    report = summarize([slow], problems_dir="p", target="cuda", timed=True, simulated=False,
                       synthesizer="offline", rounds=2)
    assert "| keep eager: it runs 2.38x faster than the best kernel (n0001, 0.42x of it); " \
           "budget spent: 2 rounds |" in markdown(report)


def test_the_nan_and_infinity_checks_read_from_the_verdict() -> None:
    from kernelevolve.bench import nonfinite_outcome
    from kernelevolve.tools.harness.result import Check

    def checks(nan: bool, inf: bool, skipped: bool = False) -> list[Check]:
        return [Check(name="correct on input sets", passed=True),
                Check(name="NaN as the reference", passed=nan, skipped=skipped),
                Check(name="infinities as the reference", passed=inf, skipped=skipped)]

    assert nonfinite_outcome(checks(True, True)) == "kept"
    assert nonfinite_outcome(checks(False, True)) == "NaN differ"
    assert nonfinite_outcome(checks(False, False)) == "NaN and infinities differ"
    assert nonfinite_outcome(checks(True, True, skipped=True)) is None  # no floating inputs
    assert nonfinite_outcome([Check(name="correct on input sets", passed=True)]) is None  # off

    outcomes = [ProblemOutcome(problem=f"p{i}", path=f"p{i}.py", correct=ok, nonfinite=nf)
                for i, (ok, nf) in enumerate([(True, "kept"), (True, "NaN differ"), (True, None),
                                              (False, None)])]
    report = summarize(outcomes, problems_dir="d", target="cpu", timed=False, simulated=False,
                       synthesizer="offline", rounds=1)
    assert (report.n_nonfinite_checked, report.n_nonfinite_kept) == (2, 1)
    md = markdown(report)
    assert "- NaN and infinities as the reference: 1 of 2 verified kernels checked" in md
    assert "| NaN differ |" in md


def test_the_llm_loop_figures_reach_the_outcome_and_the_table(tmp_path: Path) -> None:
    """Where a model wrote the candidates, an outcome carries its calls and tokens (the run's
    usage) and the round and speedup of the first verified kernel (from the trace), and the
    table shows them beside the best; the offline table stays as it was."""
    import time

    from kernelevolve.bench import first_cell, outcome_of
    from kernelevolve.graph.rundir import TuneResult
    from kernelevolve.graph.state import Usage

    (tmp_path / "trace.json").write_text(json.dumps([
        {"kind": "evaluate", "round": "1", "node_id": "n0001",
         "text": "n0001: compile_error: CompilationError: at 3:4"},
        {"kind": "evaluate", "round": "2", "node_id": "n0002",
         "text": "n0002: ok, 0.41x vs eager; memory-bound"},
        {"kind": "evaluate", "round": "4", "node_id": "n0005",
         "text": "n0005: ok, 1.37x vs eager; memory-bound"}]))
    result = TuneResult(run_id="r1", run_dir=str(tmp_path), problem="p", target="cuda",
                        synthesizer="a-model", finished=True, best_node="n0005",
                        best_speedup=1.37, rounds=6, candidates=7, verified=2,
                        usage=Usage(llm_calls=9, prompt_tokens=30_000, completion_tokens=12_345))
    o = outcome_of(tmp_path / "p.py", result, time.monotonic())
    assert (o.llm_calls, o.tokens) == (9, 42_345)
    assert (o.first_verified_round, o.first_verified_speedup) == (2, 0.41)
    assert first_cell(o) == "2, 0.41x" and o.speedup_vs_eager == 1.37
    report = summarize([o], problems_dir="p", target="cuda", timed=True, simulated=False,
                       synthesizer="a-model", rounds=6)
    text = markdown(report)
    assert "first verified (round, vs eager) | calls / tokens |" in text
    assert "| 2, 0.41x | 9 / 42,345 |" in text
    assert "- model calls: 9, tokens 42,345; median round of the first verified kernel 2" in text
    offline = ProblemOutcome(problem="q", path="q.py", correct=True, speedup_vs_eager=1.1)
    assert "calls / tokens" not in markdown(summarize(
        [offline], problems_dir="p", target="cuda", timed=True, simulated=False,
        synthesizer="offline", rounds=2))
    (tmp_path / "trace.json").write_text(json.dumps([
        {"kind": "evaluate", "round": "1", "node_id": "n0001", "text": "n0001: ok"}]))
    untimed = outcome_of(tmp_path / "p.py", result, time.monotonic())
    assert (untimed.first_verified_round, untimed.first_verified_speedup) == (1, None)
    assert first_cell(untimed) == "1, not timed"
