"""Red-team cases for two judge changes: the slack against the float64 truth that now also
takes the fp32 reference on nudged inputs (``compare_outputs(truth=, nudged=)``,
``Evaluation.reference_nudged``), and the dead candidate's exception note in the crash verdict
(``fork_child(note_fd=)``, ``read_note``).

Every file under ``judge_changes/candidates/`` names its trick in its docstring: ``s_*`` the
slack (with an honest control beside each cheat it targets), ``n_*`` the note. Each is
evaluated for real, on the ``cpu`` target (Triton interpreter), through ``WorkerPool.evaluate``.

A case the harness gets wrong is an ``xfail(strict=True, reason="harness hole: ...")``: the
suite stays green, the hole stays visible, and the mark must go once the harness gets it right.
The seven found when this file was written are closed: the nudged reference's allowance is per
element (one element at a pole or a step loosens that element only); the note is read without
blocking, as one line of blanked control characters; the candidate's process keeps no end of the
judge's note pipe nor the read end of its own; ``torch.serialization`` is refused statically;
a verdict's message is cut at ``MESSAGE_CHARS``. About 40 s on two cores.
"""

from __future__ import annotations

import concurrent.futures as cf
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kernelevolve.config import EvalConfig
from kernelevolve.tools.harness.candidate import MESSAGE_CHARS
from kernelevolve.tools.harness.pool import WorkerPool
from kernelevolve.tools.harness.result import EvalResult

HERE = Path(__file__).resolve().parent
CANDIDATES = HERE / "judge_changes" / "candidates"
PROBLEMS = HERE / "judge_changes" / "problems"
SHARED_PROBLEMS = HERE / "problems"
TIMEOUT_S = 120.0
# The one case whose hole is a hang: its own pool, and a timeout that keeps the suite short.
HANG_TIMEOUT_S = 15.0
HOLE = "harness hole: "
# The note is at most 600 characters (NOTE_BYTES); the crash message wraps it in ~120 more.
NOTE_MESSAGE_MAX = 800
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # newlines, escapes, NULs (tabs pass)


@dataclass(frozen=True)
class Case:
    """A candidate, its problem, and the statuses it must get (``pattern`` must then match
    the message). ``hole``: why the harness gets the status wrong today (an xfail)."""

    name: str
    problem: str
    expected: tuple[str, ...]
    pattern: str = ""
    hole: str | None = None

    @property
    def path(self) -> Path:
        return CANDIDATES / f"{self.name}.py"

    @property
    def problem_path(self) -> Path:
        local = PROBLEMS / f"{self.problem}.py"
        return local if local.exists() else SHARED_PROBLEMS / f"{self.problem}.py"


SLACK_CASES = [
    Case("s_tan_plus_sigmoid_honest", "tan_plus_sigmoid", ("ok",)),
    Case("s_tan_skips_sigmoid_term", "tan_plus_sigmoid", ("mismatch",), r"values outside"),
    Case("s_pair_skews_well_conditioned_output", "tan_and_sigmoid_pair", ("mismatch",),
         r"output 1: .*values outside"),
    Case("s_floor_honest", "floor_of_integer_floats", ("ok",)),
    Case("s_floor_truncates_toward_zero", "floor_of_integer_floats", ("mismatch",),
         r"values outside"),
    Case("s_kl_tiny_input_dependent", "kl_div_shifted", ("mismatch",), r"values outside"),
]

NOTE_CASES = [
    Case("n_systemexit_forged_verdict", "relu_mul_add", ("crash",), r"exit code 70"),
    Case("n_huge_baseexception_named_ok", "relu_mul_add", ("crash",), r"exit code 70"),
    Case("n_note_pipe_written_via_proc_fd", "relu_mul_add", ("cheat",),
         r"serialization|save|file"),
    Case("n_note_written_then_lives", "relu_mul_add", ("ok", "cheat")),
    Case("n_runtime_error_unbounded", "relu_mul_add", ("runtime_error",), r"ValueError"),
]

# (refused statically since the allowlist: torch.utils.data is not on it)
HANG_CASE = Case(
    "n_grandchild_holds_note_pipe", "relu_mul_add", ("mismatch", "cheat"),
    r"values outside|process|DataLoader|torch\.utils\.data")

# What each note case's message must not carry past the judge, and the hole where it does.
NOTE_HOLES: dict[str, str] = {}  # the holes found here are closed (see the module docstring)


# -- running everything once ---------------------------------------------------------------------
def _evaluate(pool: WorkerPool, case: Case) -> EvalResult | BaseException:
    try:
        return pool.evaluate(case.problem_path, case.path)
    except BaseException as exc:  # re-raised by the test that reads it
        return exc


def _run_pool(cases: list[Case], timeout_s: float, workers: int, out: dict[str, Any]) -> None:
    with WorkerPool("cpu", EvalConfig(timeout_s=timeout_s), workers=workers) as pool, \
            cf.ThreadPoolExecutor(workers) as ex:
        futures = {c.name: ex.submit(_evaluate, pool, c) for c in cases}
        for name, fut in futures.items():
            out[name] = fut.result()


@pytest.fixture(scope="session")
def verdicts() -> dict[str, Any]:
    out: dict[str, Any] = {}
    # The slowest cases first, so the two workers finish together.
    main = sorted(SLACK_CASES + NOTE_CASES, key=lambda c: not c.name.startswith("s_floor"))
    with cf.ThreadPoolExecutor(2) as ex:
        jobs = [ex.submit(_run_pool, main, TIMEOUT_S, 2, out),
                ex.submit(_run_pool, [HANG_CASE], HANG_TIMEOUT_S, 1, out)]
        for fut in jobs:
            fut.result()
    return out


def _get(verdicts: dict[str, Any], name: str) -> EvalResult:
    value = verdicts[name]
    if isinstance(value, BaseException):
        raise value
    return value


def _describe(r: EvalResult) -> str:
    return f"status={r.status.value} message={r.message[:600]!r}"


def _param(case: Case, hole: str | None = None) -> Any:
    reason = hole if hole is not None else case.hole
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(case, id=case.name, marks=marks)


# -- the cases -----------------------------------------------------------------------------------
@pytest.mark.parametrize("case", [_param(c) for c in SLACK_CASES + NOTE_CASES + [HANG_CASE]])
def test_verdict(case: Case, verdicts: dict[str, Any]) -> None:
    r = _get(verdicts, case.name)
    assert r.status.value in case.expected, f"expected {case.expected}, got {_describe(r)}"
    if case.pattern and r.status.value != "ok":
        assert re.search(case.pattern, r.message, re.I | re.S), _describe(r)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in NOTE_CASES + [HANG_CASE]])
def test_a_note_never_turns_into_ok(case: Case, verdicts: dict[str, Any]) -> None:
    # Whatever the candidate writes, raises or leaves running, only the judge says ok, and an
    # ok is only for the one candidate here that computes the right answer.
    r = _get(verdicts, case.name)
    if case.name != "n_note_written_then_lives":
        assert r.status.value != "ok", _describe(r)
    assert "FORGED-NOTE" not in r.message, _describe(r)


@pytest.mark.parametrize("case", [_param(c, NOTE_HOLES.get(c.name, "")) for c in NOTE_CASES
                                  if c.expected not in (("ok", "cheat"), ("runtime_error",))])
def test_the_failure_message_is_one_bounded_line(case: Case, verdicts: dict[str, Any]) -> None:
    r = _get(verdicts, case.name)
    assert len(r.message) <= NOTE_MESSAGE_MAX, f"{len(r.message)} chars: {_describe(r)}"
    assert not _CONTROL.search(r.message), _describe(r)


def test_a_runtime_error_message_is_cut_to_its_bound(verdicts: dict[str, Any]) -> None:
    # A traceback keeps its lines; a 6 MB str(exc) is cut to the verdict's bound.
    r = _get(verdicts, "n_runtime_error_unbounded")
    assert r.status.value == "runtime_error", _describe(r)
    assert len(r.message) <= MESSAGE_CHARS + 100 and "characters cut" in r.message, _describe(r)


def test_the_huge_note_is_cut_to_its_bound(verdicts: dict[str, Any]) -> None:
    r = _get(verdicts, "n_huge_baseexception_named_ok")
    assert r.status.value == "crash", _describe(r)
    assert "verified: ok ok" in r.message and len(r.message) <= NOTE_MESSAGE_MAX, _describe(r)


def test_every_file_is_exercised() -> None:
    every = SLACK_CASES + NOTE_CASES + [HANG_CASE]
    assert {p.stem for p in CANDIDATES.glob("*.py")} == {c.name for c in every}
    assert {p.stem for p in PROBLEMS.glob("*.py")} <= {c.problem for c in every}
