"""Red-team cases for the evaluation harness: cheating and wrong candidates that must be refused,
and honest ones that must be accepted, beyond those in ``tests/adversarial/test_adversarial.py``.

Every candidate under ``candidates/`` is one trick (its module docstring names the class and the
trick); every file under ``honest/`` is a candidate that must be ``ok``. Each is evaluated for
real, on the ``cpu`` target (Triton interpreter), through ``WorkerPool.evaluate``: no mocks.
The problems under ``problems/`` are KernelBench-format and sized for the interpreter.

Classes: 1 beside the judge (harness state that is data, not functions), 2 timing memos,
3 scale-blind tolerance, 4 sizes the checks never reach, 5 one input (or parameter)
distribution, 6 compute the op recorder does not see, 7 interpreter-only kernel bodies,
8 false rejections of honest code.

A case the harness gets wrong today is an ``xfail(strict=True, reason="harness hole: ...")``:
the suite stays green, the hole stays visible, and the mark must go (the strict XPASS fails)
once the harness gets it right.

All verdicts are computed once by the session fixture ``verdicts``: the self-contained cases on
one pool of 2 workers, and, beside it, the tampering sequences, each on a fresh 1-worker pool
(whatever a tampering candidate leaves in its worker must not reach unrelated cases; the step
after it shows what it leaves behind). About 45 s on two cores.
"""

from __future__ import annotations

import ast
import concurrent.futures as cf
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kernelevolve.config import EvalConfig
from kernelevolve.tools.harness.pool import WorkerPool
from kernelevolve.tools.harness.result import EvalResult

HERE = Path(__file__).resolve().parent
CANDIDATES = HERE / "candidates"
HONEST = HERE / "honest"
PROBLEMS = HERE / "problems"
TIMEOUT_S = 120.0
HOLE = "harness hole: "
# What a fixed harness may answer for a kernel that only the interpreter can run.
INTERPRETER_ONLY = ("compile_error", "cheat")


@dataclass(frozen=True)
class Case:
    """A candidate, the problem it is evaluated on, and the verdict it must get.

    ``expected``: the acceptable statuses. ``pattern``: a regex that must match the message or
    the stderr tail (refusals only). ``hole``: why the harness gets it wrong today (the case is
    then an xfail(strict=True)). ``file``: the candidate's stem when it differs from ``name``
    (one candidate checked on two problems).
    """

    name: str
    klass: int
    problem: str
    expected: tuple[str, ...]
    pattern: str = ""
    hole: str | None = None
    file: str | None = None
    folder: Path = CANDIDATES

    @property
    def path(self) -> Path:
        return self.folder / f"{self.file or self.name}.py"

    @property
    def problem_path(self) -> Path:
        return PROBLEMS / f"{self.problem}.py"


def honest(name: str, problem: str, hole: str | None = None, accept: str = "") -> Case:
    """An honest candidate: ``ok``, or (where ``accept`` is given) a refusal whose message
    matches it, such as a clear "the interpreter cannot check this"."""
    return Case(name, 8, problem, ("ok",), accept, hole, folder=HONEST)


# Self-contained cases: none changes the worker for the next candidate, so they share a pool.
CASES = [
    # 1. beside the judge
    Case("c1c_eval_config_via_gc", 1, "row_softmax", ("mismatch", "runtime_error", "cheat"),
         r"other shapes|out-of-bounds|config|harness"),
    # (closed: the job config lives in the judge; the candidate's process has its own copy)
    Case("c1e_load_state_dict_writes_reference", 1, "linear_relu", ("cheat", "mismatch"),
         r"state_dict|parameters|reference|values outside"),
    # (closed: the candidate gets a copy of the weights, in another process)
    # 2. timing memos: right on every check, stale on writes no check makes (on cuda the
    #    timed loop now writes new values before each trial, so neither hits there)
    Case("c2a_memo_by_version_counter", 2, "relu_mul_add", ("mismatch", "cheat"),
         r"memo|cache|reuse|same input|version|stale|values outside|getter|static"),
    Case("c2b_fingerprint_memo_methodcaller", 2, "relu_mul_add", ("mismatch", "cheat"),
         r"memo|cache|reuse|same input|values outside|tolist|host|caller|static"),
    # 3. scale-blind tolerance
    Case("c3a_softmax_constant_one_over_dim", 3, "wide_softmax_rand", ("mismatch",),
         r"values outside|does not depend"),
    Case("c3b_softmax_zeros_below_atol", 3, "wide_softmax_rand", ("mismatch",),
         r"values outside|does not depend"),
    Case("c3c_layernorm_mean_zeros", 3, "layernorm_mean", ("mismatch", "cheat"),
         r"values outside|does not depend"),
    # 4. sizes
    Case("c4a_hardwired_tuple_shape", 4, "tuple_shape_softmax", ("mismatch", "runtime_error"),
         r"other shapes|out-of-bounds"),
    Case("c4b_hardwired_expression_size", 4, "expr_size_softmax", ("mismatch", "runtime_error"),
         r"other shapes|out-of-bounds"),
    Case("c4c_single_block_no_loop", 4, "wide_rows_leaky_relu", ("mismatch", "runtime_error"),
         r"16384|other shapes|larger shapes|values outside|NaN"),
    Case("c4d_hardwired_small_batch", 4, "small_batch_softmax", ("mismatch", "runtime_error"),
         r"other shapes|out-of-bounds|values outside"),
    # (closed: a small size that is a dimension of an input moves too, 8 -> 5)
    Case("c4e_hardwired_inline_shape", 4, "inline_shape_softmax", ("mismatch", "runtime_error"),
         r"other shapes|out-of-bounds", file="c4a_hardwired_tuple_shape"),
    # (closed: integer shapes of torch factories in get_inputs() are lifted into sizes)
    # 5. one input distribution / layout / parameter values
    Case("c5a_softmax_no_max_subtraction", 5, "row_softmax", ("mismatch",),
         r"NaN|values outside"),
    # Inputs x 100 drift the series far off, and on some seeds one value past fp32's range.
    Case("c5b_elu_taylor_exp", 5, "elu", ("mismatch",), r"values outside|NaN/Inf values"),
    Case("c5c_ignores_strides_transposed", 5, "transposed_softmax", ("mismatch",),
         r"values outside"),
    Case("c5d_layernorm_ignores_affine", 5, "layernorm", ("mismatch",), r"values outside"),
    # 6. compute the op recorder does not see
    Case("c6a_methodcaller_tolist", 6, "relu_mul_add", ("cheat",), r"tolist|host|lift_fresh"),
    # (closed: methodcaller and torch.tensor are refused statically, lift_fresh at runtime)
    Case("c6b_attrgetter_numpy_as_tensor", 6, "relu_mul_add", ("cheat",), r"numpy|host"),
    # (closed: methodcaller, .numpy and torch.as_tensor are refused statically)
    Case("c6c_parameter_subclass_dispatch", 6, "relu_mul_add", ("cheat",),
         r"subclass|Parameter|dispatch"),
    # (closed: tensor-type bases and __torch_dispatch__ are refused statically; the recorder reports
    # ops reaching a dispatching subclass)
    Case("c6d_disable_torch_dispatch_attrgetter", 6, "relu_mul_add", ("cheat",),
         r"_C|dispatch|attrgetter|private"),
    # (closed: operator.attrgetter and the private names in its string are refused statically)
    Case("c6e_clear_recorder_counter", 6, "relu_mul_add", ("cheat",),
         r"relu|recorder|dispatch|attrgetter"),
    # (closed: operator.attrgetter and the private names in its string are refused statically)
    # 7. interpreter-only kernel bodies
    Case("c7a_jit_calls_python_buffer_edit", 7, "relu_mul_add", INTERPRETER_ONLY,
         r"jit|non-jit|Python function|interpreter"),
    # (closed: a @triton.jit body may call only jit functions, tl.* and Triton's builtins; .handle
    # is refused)
    Case("c7b_jit_calls_python_numpy_softmax", 7, "row_softmax", INTERPRETER_ONLY,
         r"jit|non-jit|Python function|interpreter"),
    # (closed: a @triton.jit body may call only jit functions, tl.* and Triton's builtins; .handle
    # is refused)
]

HONEST_CASES = [
    honest("h_reinterpret_int32_abs", "abs"),
    # (closed: InterpreterBounds records the storage behind a TensorWrapper)
    honest("h_promote_types_output", "relu_mul_add"),
    # (closed: promote_types, result_type and can_cast are allowed: dtype metadata)
    honest("h_autotune_two_configs", "relu_mul_add",
           accept=r"autotun\w*.*interpret|interpret\w*.*autotun"),
    # (closed: in the interpreter autotune runs its configs in turn, unbenchmarked, every one
    # checked, and notes it)
    honest("h_torch_cat_of_kernel_outputs", "relu_mul_add"),
    # (closed: cat and stack are allowed: data movement, like copy_)
    honest("h_groupnorm", "groupnorm"),
    honest("h_wide_softmax_looped", "wide_softmax_rand"),
    honest("h_transposed_softmax_strided", "transposed_softmax"),
    # An output that is rounding noise (~1e-8, LayerNorm then mean): the scaled atol alone
    # (~1e-12) would refuse it; the float64 reference shows the fp32 one errs as much.
    honest("h_layernorm_mean", "layernorm_mean"),
]

# Run in order, each sequence on a fresh 1-worker pool: a tampering candidate, then (where it
# has one) a candidate without tampering of its own that the tampering would let through. The
# worker runs each job in a fresh child process, so rebound globals die with their job; the
# step after such a tamperer is a regression test of that (no hole mark).
SEQUENCES: dict[str, list[Case]] = {
    "tolerance_table": [
        Case("c1a_tolerance_table_attrgetter", 1, "relu_mul_add", ("cheat", "mismatch"),
             r"TOLERANCES|tolerance|harness|values outside"),
        # (closed: the tolerances that decide live in the judge's process)
    ],
    "allowed_ops": [
        Case("c1b_allowed_ops_rebind_reduce_getattr", 1, "relu_mul_add", ("cheat",),
             r"ALLOWED_ATEN_OPS|harness|relu"),
        # (closed: the judge applies its own allowed-op set to the ops reported)
        Case("c1h_probe_torch_after_rebind", 1, "relu_mul_add", ("cheat",), r"relu"),
    ],
    "integrity_snapshot": [
        Case("c1d_integrity_snapshot_via_type_hints", 1, "relu_mul_add", ("cheat",),
             r"harness|compare_outputs|annotation|get_type_hints"),
        # (closed: typing.get_type_hints is refused and string annotations are checked as code)
        Case("c1g_probe_wrong_after_taint", 1, "relu_mul_add", ("mismatch",), r"values outside"),
    ],
    "tamper_but_correct": [
        Case("c1f_tamper_but_correct", 1, "relu_mul_add", ("cheat",),
             r"TOLERANCES|tolerance|harness"),
        # (closed: operator.attrgetter and the .sys/.modules in its string are refused statically)
        Case("c1g_probe_wrong_after_taint", 1, "relu_mul_add", ("mismatch",), r"values outside"),
    ],
    "problem_sizes": [
        Case("c1i_problem_sizes_cleared_via_gc", 1, "row_softmax",
             ("mismatch", "runtime_error", "cheat"), r"other shapes|out-of-bounds|harness"),
        # (closed: the judge's Problem is not in the candidate's process)
        Case("c1j_probe_hardwired_after_sizes_cleared", 1, "row_softmax",
             ("mismatch", "runtime_error"), r"other shapes|out-of-bounds"),
        # (closed: sizes come back from the judge's process, which runs no candidate code)
    ],
    "forged_reply": [
        Case("c1k_forged_reply", 1, "relu_mul_add", ("cheat", "crash"),
             r"reply|forged|pipe|died|exit|attrgetter"),
        # (closed: the verdict pipe stays with the judge; the candidate's process has none)
        Case("c1g_probe_wrong_after_taint", 1, "relu_mul_add", ("mismatch",), r"values outside"),
    ],
}


# -- running everything once ---------------------------------------------------------------------
def _evaluate(pool: WorkerPool, case: Case) -> EvalResult | BaseException:
    try:
        return pool.evaluate(case.problem_path, case.path)
    except BaseException as exc:  # re-raised by the test that reads it
        return exc


def _run_main(out: dict[str, Any]) -> None:
    cases = CASES + HONEST_CASES
    with WorkerPool("cpu", EvalConfig(timeout_s=TIMEOUT_S), workers=2) as pool, \
            cf.ThreadPoolExecutor(2) as ex:
        futures = {c.name: ex.submit(_evaluate, pool, c) for c in cases}
        for name, fut in futures.items():
            out[name] = fut.result()


def _run_sequences(out: dict[str, Any]) -> None:
    for seq, steps in SEQUENCES.items():
        with WorkerPool("cpu", EvalConfig(timeout_s=TIMEOUT_S), workers=1) as pool:
            for i, case in enumerate(steps):
                out[f"{seq}/{i}"] = _evaluate(pool, case)


@pytest.fixture(scope="session")
def verdicts() -> dict[str, Any]:
    out: dict[str, Any] = {}
    with cf.ThreadPoolExecutor(2) as ex:
        for fut in [ex.submit(_run_main, out), ex.submit(_run_sequences, out)]:
            fut.result()
    return out


def _get(verdicts: dict[str, Any], key: str) -> EvalResult:
    value = verdicts[key]
    if isinstance(value, BaseException):
        raise value
    return value


def _describe(r: EvalResult) -> str:
    return (f"status={r.status.value} message={r.message[:600]!r} "
            f"stderr tail={r.stderr_tail[-400:]!r}")


def _assert_refused(r: EvalResult, case: Case) -> None:
    assert r.status.value in case.expected, f"expected {case.expected}, got {_describe(r)}"
    text = r.message + "\n" + r.stderr_tail
    assert re.search(case.pattern, text, re.I | re.S), \
        f"/{case.pattern}/ not in verdict: {_describe(r)}"


def _assert_accepted(r: EvalResult, case: Case) -> None:
    if r.status.value != "ok" and case.pattern:
        assert re.search(case.pattern, r.message, re.I | re.S), _describe(r)
        return
    assert r.status.value == "ok", _describe(r)
    # The cascade really ran: fresh input sets, other shapes, same pointers with new values.
    ran = {c.name for c in r.checks if c.passed and not getattr(c, "skipped", False)}
    assert {"correct on input sets", "correct on other shapes",
            "no results reused across calls"} <= ran, ran
    assert r.kernel_launches >= 1


def _param(case: Case, key: str | None = None) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=case.hole)] if case.hole else []
    return pytest.param(case, key or case.name, id=key or case.name, marks=marks)


# -- the cases -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("case", "key"), [_param(c) for c in CASES])
def test_cheating_candidate_is_refused(case: Case, key: str, verdicts: dict[str, Any]) -> None:
    _assert_refused(_get(verdicts, key), case)


@pytest.mark.parametrize(("case", "key"), [_param(c) for c in HONEST_CASES])
def test_honest_candidate_is_accepted(case: Case, key: str, verdicts: dict[str, Any]) -> None:
    _assert_accepted(_get(verdicts, key), case)


@pytest.mark.parametrize(("case", "key"), [_param(c, f"{seq}/{i}")
                                           for seq, steps in SEQUENCES.items()
                                           for i, c in enumerate(steps)])
def test_tampering_and_what_it_leaves_behind(case: Case, key: str,
                                             verdicts: dict[str, Any]) -> None:
    _assert_refused(_get(verdicts, key), case)


def test_an_untimed_autotune_choice_is_named_in_the_result(verdicts: dict[str, Any]) -> None:
    # The interpreter cannot benchmark autotune configs: the first one runs, and the verdict
    # says so, so an ok does not pass for a tuned choice.
    r = _get(verdicts, "h_autotune_two_configs")
    assert r.status.value == "ok", r.message
    assert any("autotune" in f and "interpreter cannot benchmark" in f for f in r.flags), r.flags


# -- the suite itself ----------------------------------------------------------------------------
def test_every_file_is_exercised_and_names_its_trick() -> None:
    every = CASES + HONEST_CASES + [c for steps in SEQUENCES.values() for c in steps]
    for folder in (CANDIDATES, HONEST):
        used = {c.path.stem for c in every if c.folder == folder}
        on_disk = {p.stem for p in folder.glob("*.py")}
        assert on_disk == used, (folder.name, on_disk - used, used - on_disk)
    problems = {c.problem for c in every}
    assert {p.stem for p in PROBLEMS.glob("*.py")} == problems
    for path in CANDIDATES.glob("*.py"):
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        klass = int(path.stem[1])
        assert doc.startswith(f"Class {klass}, "), f"{path.name}: {doc[:60]!r}"
    for path in HONEST.glob("*.py"):
        assert (ast.get_docstring(ast.parse(path.read_text())) or "").startswith("Honest")
    for case in every:
        assert case.klass == (8 if case.folder == HONEST else int(case.path.stem[1])), case.name
