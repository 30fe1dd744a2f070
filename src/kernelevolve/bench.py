"""Benchmark the whole system on a directory of KernelBench-format problems: each problem tuned
with the configured settings, then the figures KernelBench reports: correctness rate, fast_p
(the fraction of problems with a verified kernel faster than p x eager) and geometric-mean
speedups vs eager and vs torch.compile, with a per-problem table, as JSON and Markdown.

A problem the synthesizer cannot write (or that does not load) counts as not correct, with the
reason. On an untimed target (cpu) the speed figures are None ("not timed"); on a simulated one
(mtia-sim) they are labelled simulated.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError
from rich.console import Console
from rich.markup import escape

from kernelevolve import __version__
from kernelevolve.config import Settings, load_settings
from kernelevolve.console import table_or_records
from kernelevolve.errors import ConfigError, KernelEvolveError, RepliesError, TargetError
from kernelevolve.graph.rundir import TuneResult
from kernelevolve.graph.state import Event
from kernelevolve.targets import get_target, tune_target
from kernelevolve.tools.harness.result import Check, reference_advice

FAST_P = (1.0, 1.5)
log = logging.getLogger(__name__)


class ProblemOutcome(BaseModel):
    """One problem's result in a benchmark."""

    problem: str
    path: str
    correct: bool = Field(description="a verified kernel was found")
    reason: str = Field("", description="why not (empty when correct)")
    run_id: str | None = None
    run_dir: str | None = None
    best_node: str | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_compiled: float | None = None
    latency_ms: float | None = None
    eager_roofline: float | None = Field(
        None, description="fraction of the memory roofline eager reaches (Timing.eager_roofline)")
    kernel_roofline: float | None = Field(
        None, description="the same fraction for the best kernel")
    roofline_beyond_l2: bool = Field(
        False, description="the traffic is at least 4x the L2: the roofline is a real floor")
    rounds: int = 0
    candidates: int = 0
    verified: int = 0
    stop_reason: str | None = None
    advice: str | None = Field(None, description="the faster reference to keep, where the best "
                                                 "kernel loses to it by more than 5%")
    wall_s: float = 0.0
    synthesizer: str | None = Field(None, description="what wrote the candidates")
    nonfinite: str | None = Field(
        None, description="the best kernel on inputs with NaN and infinities (eval.nonfinite): "
                          "'kept' where its outputs hold the reference's, else what differs "
                          "('NaN', 'infinities'); None where not checked")
    baseline: str | None = Field(None, description="the flags the speedups' references ran with")
    other_baseline: str | None = Field(None, description="the other preset's flags")
    speedup_vs_eager_other: float | None = Field(
        None, description="the same kernel against eager under the other preset's flags")
    speedup_vs_compiled_other: float | None = None
    flags_matter: bool | None = Field(
        None, description="the two presets' flags change one of the problem's ops (else one "
                          "timing stands for both)")
    precision: str | None = Field(None, description="the precision contract's summary")
    judge_peak_gib: float | None = Field(None, description="the judge's peak device memory")
    wall_per_call_ms: float | None = Field(
        None, description="the judge's wall clock per forward back to back (Timing)")
    footprint_gib: float | None = Field(
        None, description="the problem's inputs, outputs and weights at the timed sizes")
    awaiting: str | None = Field(
        None, description="batch mode: the run stopped for replies to this requests file")
    llm_calls: int = Field(0, description="the synthesizer's model calls (re-asks included)")
    tokens: int = Field(0, description="prompt and completion tokens of those calls")
    first_verified_round: int | None = Field(
        None, description="the round of the run's first verified kernel")
    first_verified_speedup: float | None = Field(
        None, description="that kernel's speedup vs eager as the search measured it (None "
                          "where not timed); speedup_vs_eager is the best's after the rounds")


class BenchReport(BaseModel):
    """A benchmark's figures; speed figures are None when the target is not timed."""

    problems_dir: str
    target: str
    timed: bool
    simulated: bool
    synthesizer: str = Field(description="'offline' or the LLM's model name")
    rounds: int
    created: str
    version: str = __version__
    n_problems: int
    n_correct: int
    correctness: float = Field(description="fraction of problems with a verified kernel")
    fast_p: dict[str, float | None] = Field(
        description="p -> fraction of all problems with a verified kernel faster than p x eager")
    geomean_speedup_vs_eager: float | None = Field(
        None, description="over the problems with a verified, timed kernel")
    n_speedup_vs_eager: int = 0
    geomean_speedup_vs_compiled: float | None = Field(
        None, description="over the problems whose torch.compile reference was timed")
    n_speedup_vs_compiled: int = 0
    n_nonfinite_checked: int = Field(0, description="verified kernels checked on NaN and "
                                                    "infinities (eval.nonfinite)")
    n_nonfinite_kept: int = Field(0, description="... of which keep the reference's")
    baseline: str | None = Field(None, description="the flags of the headline speedups' "
                                                   "references (eval.baseline)")
    other_baseline: str | None = None
    fast_p_other: dict[str, float | None] = Field(default_factory=dict)
    geomean_speedup_vs_eager_other: float | None = None
    geomean_speedup_vs_compiled_other: float | None = None
    classes: dict[str, int] = Field(
        default_factory=dict, description="verified, timed kernels against the better of eager "
                                          "and torch.compile: faster by >5%, within 5%, slower")
    classes_other: dict[str, int] = Field(default_factory=dict)
    wall_s: float = 0.0
    requests_file: str | None = Field(
        None, description="batch mode: every waiting run's requests, gathered into one file")
    problems: list[ProblemOutcome]

    @property
    def speed_note(self) -> str:
        if not self.timed:
            return f"not timed (the {self.target} target only verifies)"
        return "simulated (chip model, not a measurement)" if self.simulated else "measured"


def problem_files(problems_dir: str | Path) -> list[Path]:
    """The problem files of a directory: ``*.py``, not ``_private.py``, by name."""
    root = Path(problems_dir)
    if not root.is_dir():
        raise ConfigError(f"{root} is not a directory of KernelBench-format problems")
    files = sorted(p for p in root.glob("*.py") if not p.name.startswith("_"))
    if not files:
        raise ConfigError(f"{root} holds no problem files (*.py)")
    return files


def _geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def speed_class(vs_eager: float | None, vs_compiled: float | None) -> str | None:
    """'faster' (by more than 5% than the better of eager and torch.compile), 'within' (5%)
    or 'slower'; None untimed."""
    refs = [v for v in (vs_eager, vs_compiled) if v]
    if not refs:
        return None
    worst = min(refs)
    return "faster" if worst > 1.05 else "within" if worst >= 0.95 else "slower"


def _classes(pairs: list[tuple[float | None, float | None]]) -> dict[str, int]:
    out = {"faster": 0, "within": 0, "slower": 0}
    for e, c in pairs:
        k = speed_class(e, c)
        if k:
            out[k] += 1
    return out


def summarize(outcomes: list[ProblemOutcome], *, problems_dir: str, target: str, timed: bool,
              simulated: bool, synthesizer: str, rounds: int, wall_s: float = 0.0
              ) -> BenchReport:
    """The benchmark's figures from its per-problem outcomes."""
    n = len(outcomes)
    correct = [o for o in outcomes if o.correct]
    eager = [o.speedup_vs_eager for o in correct if o.speedup_vs_eager]
    compiled = [o.speedup_vs_compiled for o in correct if o.speedup_vs_compiled]
    fast: dict[str, float | None] = {
        f"{p:.1f}": (sum(1 for o in correct if (o.speedup_vs_eager or 0.0) > p) / n
                   if timed and n else None) for p in FAST_P}
    other = [o for o in correct if o.other_baseline]
    fast_other: dict[str, float | None] = {
        f"{p:.1f}": (sum(1 for o in other if (o.speedup_vs_eager_other or 0.0) > p) / n
                   if n else None) for p in FAST_P} if other and timed else {}
    return BenchReport(
        problems_dir=problems_dir, target=target, timed=timed, simulated=simulated,
        synthesizer=synthesizer, rounds=rounds, created=time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        n_problems=n, n_correct=len(correct), correctness=len(correct) / n if n else 0.0,
        fast_p=fast, geomean_speedup_vs_eager=_geomean(eager) if timed else None,
        n_speedup_vs_eager=len(eager) if timed else 0,
        geomean_speedup_vs_compiled=_geomean(compiled) if timed else None,
        n_speedup_vs_compiled=len(compiled) if timed else 0,
        n_nonfinite_checked=sum(1 for o in correct if o.nonfinite),
        n_nonfinite_kept=sum(1 for o in correct if o.nonfinite == "kept"),
        baseline=next((o.baseline for o in correct if o.baseline), None),
        other_baseline=next((o.other_baseline for o in other), None),
        fast_p_other=fast_other,
        geomean_speedup_vs_eager_other=_geomean(
            [o.speedup_vs_eager_other for o in other if o.speedup_vs_eager_other]),
        geomean_speedup_vs_compiled_other=_geomean(
            [o.speedup_vs_compiled_other for o in other if o.speedup_vs_compiled_other]),
        classes=_classes([(o.speedup_vs_eager, o.speedup_vs_compiled) for o in correct])
        if timed and not simulated else {},
        classes_other=_classes([(o.speedup_vs_eager_other, o.speedup_vs_compiled_other)
                                for o in other]) if other and timed else {},
        wall_s=wall_s, problems=outcomes)


def synthesizers(outcomes: list[ProblemOutcome]) -> str:
    """What wrote the candidates, as the runs said ('offline', 'local:<model>', the model)."""
    names = sorted({o.synthesizer for o in outcomes if o.synthesizer})
    return ", ".join(names) or "none (no problem reached the synthesizer)"


def _first_failure(run_dir: Path) -> str:
    """``; first failure: n0001: crash: ...`` from the run's trace, or "" (no trace)."""
    import json

    try:
        events = json.loads((run_dir / "trace.json").read_text())
    except (OSError, ValueError):
        return ""
    for ev in events:
        text = str(ev.get("text", ""))
        if ev.get("kind") == "evaluate" and not re.match(r"\S+: ok\b", text):
            return f"; first failure: {text[:400]}"
    return ""


def _first_verified(run_dir: Path) -> tuple[int | None, float | None]:
    """The round of the run's first verified kernel and its speedup vs eager as the search
    measured it, from the run's trace (``n0003: ok, 1.21x vs eager``); (None, None) without
    one."""
    import json

    try:
        events = json.loads((run_dir / "trace.json").read_text())
    except (OSError, ValueError):
        return None, None
    for ev in events:
        found = re.match(r"\S+: ok\b(?:, ([0-9.]+)x vs eager)?", str(ev.get("text", "")))
        if ev.get("kind") == "evaluate" and found:
            speedup = float(found.group(1)) if found.group(1) else None
            try:
                return int(ev.get("round")), speedup
            except (TypeError, ValueError):
                return None, speedup
    return None, None


def nonfinite_outcome(checks: list[Check]) -> str | None:
    """'kept', or what differs ('NaN', 'infinities', both), from a verdict's checks on inputs
    with NaN and infinities; None where they did not run."""
    from kernelevolve.tools.harness.compare import NONFINITE_CHECK

    ran = [c for c in checks if c.name.endswith(NONFINITE_CHECK) and not c.skipped]
    if not ran:
        return None
    differ = [c.name.removesuffix(NONFINITE_CHECK) for c in ran if not c.passed]
    return "kept" if not differ else " and ".join(differ) + " differ"


def bench_one(path: Path, *, target: str, settings: Settings,
              on_event: Callable[[Event], None] | None = None) -> ProblemOutcome:
    """Tune one problem; a problem that cannot be tuned is an outcome with the reason."""
    from kernelevolve.graph.session import tune

    start = time.monotonic()
    try:
        result = tune(path, target=target, settings=settings, on_event=on_event)
        return outcome_of(path, result, start)
    except (ConfigError, TargetError):
        raise  # wrong for every problem: stop the benchmark
    except KernelEvolveError as exc:  # this problem only: record why and go on
        return ProblemOutcome(problem=path.stem, path=str(path), correct=False,
                              reason=f"{type(exc).__name__}: {exc}",
                              wall_s=time.monotonic() - start)
    except Exception as exc:  # a bug of ours on this file: it costs this problem, not the bench
        log.exception("bench: tuning %s failed inside kernelevolve", path)
        return ProblemOutcome(problem=path.stem, path=str(path), correct=False,
                              reason=f"internal error (please report it): "
                                     f"{type(exc).__name__}: {exc}",
                              wall_s=time.monotonic() - start)


def outcome_of(path: Path, result: TuneResult, start: float) -> ProblemOutcome:
    """A problem's outcome from its run's result."""
    best = result.best_result
    timing = best.timing if best else None
    other = timing.other_baseline if timing else None
    memory = best.memory if best else None
    reason = "" if result.ok else (f"no verified kernel in {result.candidates} candidate(s): "
                                   f"{result.stop_reason or 'unfinished'}"
                                   f"{_first_failure(Path(result.run_dir))}")
    if result.awaiting is not None:
        reason = f"waiting for replies ({len(result.awaiting.custom_ids)} requests)"
    return ProblemOutcome(
        problem=path.stem, path=str(path), correct=result.ok, reason=reason,
        run_id=result.run_id, run_dir=result.run_dir, best_node=result.best_node,
        speedup_vs_eager=result.best_speedup,
        speedup_vs_compiled=timing.speedup_vs_compiled if timing else None,
        eager_roofline=timing.eager_roofline if timing else None,
        kernel_roofline=timing.candidate_roofline if timing else None,
        roofline_beyond_l2=bool(timing and timing.roofline_beyond_l2),
        latency_ms=result.best_latency_ms, rounds=result.rounds, candidates=result.candidates,
        verified=result.verified, stop_reason=result.stop_reason, advice=result.advice,
        wall_s=time.monotonic() - start, synthesizer=result.synthesizer,
        nonfinite=nonfinite_outcome(best.checks) if best else None,
        baseline=timing.baseline or None if timing else None,
        other_baseline=other.baseline if other else None,
        speedup_vs_eager_other=other.speedup_vs_eager if other else None,
        speedup_vs_compiled_other=other.speedup_vs_compiled if other else None,
        flags_matter=(not other.same_ops) if other else None,
        precision=best.precision.summary() if best and best.precision else None,
        judge_peak_gib=memory.judge_peak_bytes / 2**30 if memory else None,
        wall_per_call_ms=timing.wall_per_call_ms if timing else None,
        footprint_gib=memory.footprint_bytes / 2**30 if memory else None,
        awaiting=result.awaiting.requests_file if result.awaiting is not None else None,
        llm_calls=result.usage.llm_calls, tokens=result.usage.tokens,
        **dict(zip(("first_verified_round", "first_verified_speedup"),
                   _first_verified(Path(result.run_dir)), strict=True)))


def run_bench(problems_dir: str | Path, *, target: str | None = None, rounds: int | None = None,
              settings: Settings | None = None, out_dir: str | Path | None = None,
              on_problem: Callable[[int, int, Path], None] | None = None,
              on_outcome: Callable[[ProblemOutcome], None] | None = None,
              on_event: Callable[[Event], None] | None = None,
              replies: list[Path] | None = None) -> BenchReport:
    """Tune every problem in ``problems_dir`` on ``target`` (default: as ``tune``) with
    ``settings`` (``rounds`` overrides the search budget) and report the figures; with
    ``out_dir``, write ``bench.json`` and ``bench.md`` there. ``on_problem(i, n, path)`` is
    called before each problem and ``on_outcome`` after it (progress).

    Batch mode (``llm.mode = batch``): the runs that stop for replies have their requests
    gathered into one file, ``out_dir/requests-NNN.jsonl`` (``BenchReport.requests_file``);
    ``replies`` (the Batch API's output for it) continues the bench in ``out_dir``: each waiting
    run resumes with its own lines, the finished ones are kept."""
    if replies:
        if out_dir is None:
            raise ConfigError("--replies continues a batch-mode bench: name its --out directory")
        return _resume_bench(Path(out_dir), replies, on_problem=on_problem,
                             on_outcome=on_outcome, on_event=on_event)
    settings = settings or load_settings()
    if rounds is not None:
        search = settings.search.model_copy()
        try:
            search.rounds = rounds  # (sections validate assignments)
        except ValidationError as exc:
            raise ConfigError(f"invalid --rounds {rounds}: {exc}") from exc
        settings = settings.model_copy(update={"search": search})
    files = problem_files(problems_dir)
    tgt = get_target(target) if target else tune_target()
    start = time.monotonic()
    outcomes: list[ProblemOutcome] = []
    for i, path in enumerate(files):
        if on_problem is not None:
            on_problem(i, len(files), path)
        outcome = bench_one(path, target=tgt.name, settings=settings, on_event=on_event)
        outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
        if out_dir is not None and i + 1 < len(files):  # a bench cut off keeps what finished
            write_report(summarize(outcomes, problems_dir=str(problems_dir), target=tgt.name,
                                   timed=tgt.timed, simulated=tgt.simulated,
                                   synthesizer=synthesizers(outcomes),
                                   rounds=settings.search.rounds,
                                   wall_s=time.monotonic() - start), out_dir)
    report = summarize(outcomes, problems_dir=str(problems_dir), target=tgt.name,
                       timed=tgt.timed, simulated=tgt.simulated,
                       synthesizer=synthesizers(outcomes),
                       rounds=settings.search.rounds, wall_s=time.monotonic() - start)
    return _finish_bench(report, out_dir)


def _finish_bench(report: BenchReport, out_dir: str | Path | None) -> BenchReport:
    """Gather the waiting runs' requests into one file (batch mode), write the report."""
    waiting = [o for o in report.problems if o.awaiting]
    if waiting:
        if out_dir is None:
            raise ConfigError("a batch-mode bench needs an --out directory for its requests")
        folder = Path(out_dir)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"requests-{len(list(folder.glob('requests-*.jsonl'))) + 1:03d}.jsonl"
        path.write_text("".join(Path(o.awaiting).read_text() for o in waiting
                                if o.awaiting is not None))
        report = report.model_copy(update={"requests_file": str(path)})
    if out_dir is not None:
        write_report(report, out_dir)
    return report


def _resume_bench(out_dir: Path, replies: list[Path], *,
                  on_problem: Callable[[int, int, Path], None] | None,
                  on_outcome: Callable[[ProblemOutcome], None] | None,
                  on_event: Callable[[Event], None] | None) -> BenchReport:
    """Each waiting run of the bench in ``out_dir`` resumed with its lines of ``replies``."""
    from kernelevolve.batchapi import BatchReply, run_tag, tag_of
    from kernelevolve.batchapi.lines import read_lines, write_lines
    from kernelevolve.graph.session import resume

    try:
        report = BenchReport.model_validate_json((out_dir / "bench.json").read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{out_dir / 'bench.json'} is missing or damaged: {exc}") from exc
    lines = [line for f in replies for line in read_lines(f, BatchReply, "a Batch API output line")]
    tags = {run_tag(o.run_id) for o in report.problems if o.awaiting and o.run_id}
    strays = [line.custom_id for line in lines if tag_of(line.custom_id) not in tags]
    if strays:
        raise RepliesError(f"{len(strays)} replies answer no waiting run of the bench in "
                           f"{out_dir}: {', '.join(strays[:5])}; nothing was resumed")
    start = time.monotonic()
    outcomes: list[ProblemOutcome] = []
    for i, o in enumerate(report.problems):
        if on_problem is not None:
            on_problem(i, len(report.problems), Path(o.path))
        if not o.awaiting or o.run_id is None or o.run_dir is None:
            outcomes.append(o)
            continue
        mine = [line for line in lines if tag_of(line.custom_id) == run_tag(o.run_id)]
        split = out_dir / f"replies-{Path(report.requests_file or 'x').stem}-{o.problem}.jsonl"
        if mine:
            write_lines(split, mine)
        result = resume(o.run_dir, replies=[split] if mine else [], on_event=on_event)
        outcome = outcome_of(Path(o.path), result, start)
        outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
    report = summarize(outcomes, problems_dir=report.problems_dir, target=report.target,
                       timed=report.timed, simulated=report.simulated,
                       synthesizer=synthesizers(outcomes), rounds=report.rounds,
                       wall_s=report.wall_s + time.monotonic() - start)
    return _finish_bench(report, out_dir)


def _x(value: float | None, note: str) -> str:
    return f"{value:.2f}x" if value is not None else note


def roofline_cell(o: ProblemOutcome) -> str:
    """``0.93 / 0.95`` (eager / kernel), ``~`` in front where the traffic fits near the L2."""
    if o.eager_roofline is None:
        return "-"
    kernel = f"{o.kernel_roofline:.2f}" if o.kernel_roofline is not None else "-"
    return f"{'' if o.roofline_beyond_l2 else '~'}{o.eager_roofline:.2f} / {kernel}"


def memory_cell(o: ProblemOutcome) -> str:
    """``31.2 GiB / 6.4 GiB (4.9x)``: the judge's peak against the problem's own data."""
    if o.judge_peak_gib is None or not o.footprint_gib:
        return "-"
    return (f"{o.judge_peak_gib:.1f} / {o.footprint_gib:.1f} GiB "
            f"({o.judge_peak_gib / o.footprint_gib:.1f}x)")


def first_cell(o: ProblemOutcome) -> str:
    """``2, 0.41x``: the round of the first verified kernel and its speedup then."""
    if o.first_verified_round is None:
        return "-"
    return f"{o.first_verified_round}, {_x(o.first_verified_speedup, 'not timed')}"


def _classes_line(classes: dict[str, int], flags_label: str) -> str:
    return (f"- against the better of eager and torch.compile at {flags_label}: "
            f"{classes.get('faster', 0)} faster by >5%, {classes.get('within', 0)} within 5%, "
            f"{classes.get('slower', 0)} slower")


def markdown(report: BenchReport) -> str:
    """The report as Markdown: the figures, then one row per problem."""
    untimed = "not timed"
    sim = " (simulated)" if report.simulated else ""
    two = bool(report.other_baseline)  # both presets' columns
    mem = any(o.judge_peak_gib is not None for o in report.problems)
    fast = ", ".join(f"fast_{p} = {v:.2f}" if v is not None else f"fast_{p}: {untimed}"
                     for p, v in report.fast_p.items())
    compiled = (_x(report.geomean_speedup_vs_compiled, "no torch.compile reference")
                if report.timed else untimed)
    lines = [
        f"# kernelevolve bench: {report.problems_dir} on {report.target}", "",
        f"{report.n_problems} problems, synthesizer {report.synthesizer}, {report.rounds} rounds "
        f"each, {report.wall_s:.0f} s; kernelevolve {report.version}, {report.created}. "
        f"Speed: {report.speed_note}.", "",
        f"- correctness: {report.n_correct}/{report.n_problems} = {report.correctness:.2f}",
        f"- {fast}{sim if report.timed else ''}",
        f"- geometric-mean speedup vs eager: "
        f"{_x(report.geomean_speedup_vs_eager, untimed)}{sim if report.timed else ''}"
        + (f" (over {report.n_speedup_vs_eager})" if report.timed else ""),
        f"- geometric-mean speedup vs torch.compile: {compiled}"
        + (f" (over {report.n_speedup_vs_compiled})" if report.n_speedup_vs_compiled else ""),
    ]
    if report.n_nonfinite_checked:
        lines.append(f"- NaN and infinities as the reference: {report.n_nonfinite_kept} of "
                     f"{report.n_nonfinite_checked} verified kernels checked (eval.nonfinite)")
    llm = any(o.llm_calls for o in report.problems)
    if llm:
        firsts = sorted(o.first_verified_round for o in report.problems
                        if o.first_verified_round is not None)
        median = f"; median round of the first verified kernel {firsts[len(firsts) // 2]}" if (
            firsts) else ""
        lines.append(f"- model calls: {sum(o.llm_calls for o in report.problems)}, tokens "
                     f"{sum(o.tokens for o in report.problems):,}{median}")
    if report.baseline:
        lines.insert(3, f"Baselines: eager and torch.compile at **{report.baseline}**"
                        + (f"; the second column of each pair at {report.other_baseline}"
                           if report.other_baseline else "") + ". The truth kernels are "
                        "checked against is computed with TF32 off either way.")
        lines.insert(4, "")
    if report.classes:
        lines.append(_classes_line(report.classes, report.baseline or "these baselines"))
    if report.other_baseline and report.classes_other:
        lines.append(_classes_line(report.classes_other, report.other_baseline))
        fast_o = ", ".join(f"fast_{p} = {v:.2f}" for p, v in report.fast_p_other.items()
                           if v is not None)
        lines.append(f"- at {report.other_baseline}: {fast_o}; geometric-mean speedup "
                     f"{_x(report.geomean_speedup_vs_eager_other, '-')} vs eager, "
                     f"{_x(report.geomean_speedup_vs_compiled_other, '-')} vs torch.compile")
    lines += [
        "", "Roofline: the fraction of the memory roofline (every input read once and every "
        "output written once at the device's measured copy bandwidth) that eager and the kernel "
        "reach; `~` marks traffic within 4x the L2 cache, where it is no real floor; "
        "compute-bound operators sit far below 1 by nature.", "",
        "| problem | correct | vs eager | vs torch.compile | " + (
            "vs eager, other flags | vs torch.compile, other flags | " if two else "")
        + "roofline eager / kernel | NaN / inf | " + ("judge peak / data | " if mem else "")
        + ("first verified (round, vs eager) | calls / tokens | " if llm else "")
        + "rounds | candidates | run | why |",
        "|---|---|---|---|" + ("---|---|" if two else "") + "---|---|" + ("---|" if mem else "")
        + ("---|---|" if llm else "") + "---|---|---|---|",
    ]
    for o in report.problems:
        eager = _x(o.speedup_vs_eager, untimed if not report.timed else "-")
        comp = _x(o.speedup_vs_compiled, untimed if not report.timed else "-")
        advice = o.advice or (reference_advice(o.best_node, o.speedup_vs_eager,
                                               o.speedup_vs_compiled) if o.correct else None)
        why = o.reason or "; ".join(w for w in (advice, o.stop_reason) if w)
        why = why.replace("|", "/").replace("\n", " ")
        same = "" if o.flags_matter else " (same)"
        eager_o = _x(o.speedup_vs_eager_other, "-") + (same if o.other_baseline else "")
        comp_o = _x(o.speedup_vs_compiled_other, "-") + (same if o.other_baseline else "")
        lines.append(f"| {o.problem} | {'yes' if o.correct else 'no'} | {eager} | {comp} | "
                     + (f"{eager_o} | {comp_o} | " if two else "")
                     + f"{roofline_cell(o)} | {o.nonfinite or '-'} | "
                     + (f"{memory_cell(o)} | " if mem else "")
                     + (f"{first_cell(o)} | {o.llm_calls} / {o.tokens:,} | " if llm else "")
                     + f"{o.rounds} | {o.candidates} | {o.run_id or '-'} | {why} |")
    return "\n".join(lines) + "\n"


def write_report(report: BenchReport, out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``bench.json`` and ``bench.md`` into ``out_dir``; return their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / "bench.json", out / "bench.md"
    json_path.write_text(report.model_dump_json(indent=1))
    md_path.write_text(markdown(report))
    return json_path, md_path


def render_report(report: BenchReport, console: Console) -> None:
    """The report in the terminal: the figures, then the per-problem table."""
    untimed = "not timed"
    sim = " (simulated)" if report.simulated and report.timed else ""
    rows = [[escape(o.problem), "[green]yes[/green]" if o.correct else "[red]no[/red]",
             _x(o.speedup_vs_eager, "-" if report.timed else untimed),
             _x(o.speedup_vs_compiled, "-" if report.timed else untimed), roofline_cell(o),
             str(o.rounds), str(o.candidates),
             escape(o.run_id or "") if o.correct else escape(o.reason[:160])]
            for o in report.problems]
    # the run ids are copied into `trace` / `show`: records where the table does not fit; a
    # failure's reason wraps (never narrower than a run id)
    widest = max((len(o.run_id or "") for o in report.problems), default=0)
    table_or_records(console, ("problem", "correct", "vs eager" + sim, "vs torch.compile",
                               "roofline eager / kernel", "rounds", "candidates", "run / why"),
                     rows, wrap={7: max(60, widest)}, title=f"bench: {escape(str(report.problems_dir))} on {report.target}")
    fast = "  ".join(f"fast_{p} {v:.2f}" if v is not None else f"fast_{p} {untimed}"
                     for p, v in report.fast_p.items())
    console.print(f"correctness {report.n_correct}/{report.n_problems} = "
                  f"{report.correctness:.2f}  {fast}", highlight=False)
    if report.n_nonfinite_checked:
        console.print(f"NaN and infinities as the reference: {report.n_nonfinite_kept} of "
                      f"{report.n_nonfinite_checked} verified kernels", highlight=False)
    if report.timed:
        compiled = _x(report.geomean_speedup_vs_compiled, "no torch.compile reference")
        console.print(f"geomean speedup vs eager "
                      f"{_x(report.geomean_speedup_vs_eager, '-')}{sim}  vs torch.compile "
                      f"{compiled}", highlight=False)
    else:
        console.print(f"speed: {report.speed_note}", highlight=False)
