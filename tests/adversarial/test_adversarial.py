"""Adversarial tests of the evaluation harness: cheating and wrong candidates must be refused,
honest ones accepted.

Every candidate under ``candidates/`` is one known trick (its module docstring names it), written
the way a reward-hacking code generator would write it. Each is evaluated for real, on the
``cpu`` target (Triton interpreter), through ``WorkerPool.evaluate``: no mocks.

A case whose trick the harness does not catch today is marked
``xfail(strict=True, reason="harness hole: ...")``: the suite stays green while the hole stays
visible, and the mark must be removed (the strict XPASS fails) once the harness catches it.

Cost: every refusal at runtime restarts a worker (~6-15 s), so all verdicts are computed once,
concurrently, by the session fixture ``verdicts``, on three pools:

- ``main``: 2 workers, every candidate that can share a worker with the others;
- ``lifecycle``: 1 worker with a short timeout: infinite loop -> timeout, segfault -> crash, then
  an honest candidate must still pass, then unmasked stores (heap corruption);
- ``taint``: 1 worker, a fixed sequence showing that what one candidate does to the worker
  process changes the verdict on the next candidate.
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
from kernelevolve.tools.harness.static import check_source

HERE = Path(__file__).resolve().parent
CANDIDATES = HERE / "candidates"
HONEST = HERE / "honest"
PROBLEMS = {
    "relu": HERE / "problems" / "relu_mul_add.py",
    "softmax": HERE / "problems" / "row_softmax.py",
    "linear": HERE / "problems" / "linear_relu.py",
    # declares KERNELEVOLVE_ALLOWED_OPS = ["linear"]: the candidate owes the relu epilogue only
    "linear_epilogue": HERE / "problems" / "linear_relu_epilogue.py",
}
MAIN_TIMEOUT_S = 120.0
LIFECYCLE_TIMEOUT_S = 60.0  # the hung candidate costs this; half of it bounds the GPU compile,
# which took 15 s on a 2-core machine running two test processes


@dataclass(frozen=True)
class Case:
    """A cheating or wrong candidate and the verdict the harness must reach.

    ``expected``: the acceptable statuses (the first is the ideal one). ``pattern``: a regex that
    must match the message or the stderr tail. ``hole``: why the harness misses it today (the
    case is then an xfail(strict=True)).
    """

    name: str
    problem: str
    expected: tuple[str, ...]
    pattern: str
    hole: str | None = None

    @property
    def path(self) -> Path:
        return CANDIDATES / f"{self.name}.py"


HOLE = "harness hole: "

CASES = [
    # (a) torch does the work beside a dummy Triton launch
    # (refused statically since the allowlist: torch.relu is not on it; the recorder backs it up)
    Case("a_torch_beside_dummy_launch", "relu", ("cheat",),
         r"torch ops that do the work.*relu|torch\.relu is not in the candidate allowlist"),
    Case("a2_functional_softmax", "softmax", ("cheat",),
         r"torch ops that do the work.*_softmax|functional\.softmax is not in the candidate"),
    # (b) no kernel at all
    Case("b_no_kernel_launch", "relu", ("cheat",), r"launched no custom kernel"),
    # (c) memoization across calls
    Case("c_memoize_first_output", "relu", ("cheat", "mismatch"),
         r"no custom kernel|values|keeps a reference"),
    Case("c2_reused_output_buffer", "relu", ("mismatch", "cheat"),
         r"previous output|alias|keeps a reference"),
    Case("ba_ring_of_three_buffers", "relu", ("mismatch",), r"keeps a reference|alias"),
    # (d) results keyed by data_ptr
    # Caught where the allocator first hands a stale pointer back: often the pointer-reuse check,
    # sometimes an earlier fresh input set that landed at the same address.
    Case("d_memo_by_data_ptr", "relu", ("mismatch",),
         r"new values in the same input memory|input sets \d/\d"),
    # (e) input mutation
    Case("e_input_mutation", "relu", ("cheat",), r"modified its inputs \[0\]"),
    # (f) uninitialized (partly written) output
    Case("f_uninitialized_partial_output", "relu", ("mismatch",), r"NaN|values outside"),
    # (g) hard-wired shapes, (h) missing masks: refused at the other shapes, as a mismatch or,
    # when the out-of-bounds stores corrupt the heap first, as a crash there.
    # The interpreter's bounds check refuses their out-of-bounds accesses at the other shapes.
    Case("g_hardwired_shapes", "softmax", ("mismatch", "runtime_error"),
         r"other shapes|out-of-bounds"),
    Case("h_missing_mask_softmax", "softmax", ("mismatch", "runtime_error"),
         r"other shapes|out-of-bounds"),
    Case("h3_unmasked_loads", "relu", ("runtime_error", "cheat"), r"out of bounds|out-of-bounds"),
    # (i) other stream / threads
    Case("i_other_stream", "relu", ("cheat",), r"torch\.cuda\.Stream.*stream"),
    Case("i2_thread_import", "relu", ("cheat",), r"import of 'threading'"),
    Case("i3_thread_escapes_recorder", "relu", ("cheat",), r"thread|leads from an allowed module"),
    # (j) patched timers
    Case("j_patched_timer", "relu", ("cheat",), r"import of 'time'"),
    Case("j2_patched_cuda_event", "relu", ("cheat",), r"torch\.cuda\.Event"),
    Case("j3_timer_patch_via_sys", "relu", ("cheat",),
         r"replaced harness functions.*perf_counter|leads from an allowed module"),
    # (k) access to the reference or the harness
    Case("k_import_inspect", "relu", ("cheat",), r"import of '(gc|inspect|sys)'"),
    Case("k2_dunder_import", "relu", ("cheat",), r"__import__"),
    Case("k3_frame_walk_reference", "relu", ("cheat",), r"frame|_getframe|sys"),
    # (l) torch.compile
    Case("l_torch_compile", "relu", ("cheat",), r"torch\.compile"),
    # (m) the RNG
    Case("m_manual_seed_in_forward", "relu", ("cheat",), r"RNG"),
    Case("m2_seed_table", "relu", ("mismatch", "cheat"), r"values|initial_seed|RNG"),
    Case("m3_manual_seed_alias", "relu", ("cheat",), r"manual_seed|RNG"),
    # (n) dtype, (o) NaN
    Case("n_fp16_output", "relu", ("mismatch",), r"dtype torch\.float16, expected torch\.float32"),
    Case("o_nan_kernel", "relu", ("mismatch",), r"NaN"),
    # (p) exec/eval
    Case("p_exec_string", "relu", ("cheat",), r"exec\(\)"),
    # (q) CUDA C++ calling a library (refused statically, before any compiler runs; on this
    # cpu target CUDA C++ is not enabled at all, test_static.py checks the C++ allowlist)
    Case("q_cuda_cublas", "linear", ("cheat",), r"cuBLAS|enabled only on the cuda target"),
    Case("q2_cuda_at_matmul", "linear", ("cheat",), r"at::matmul|enabled only on the cuda target"),
    # (r) getattr-obfuscated torch op: the runtime op recorder
    Case("r_getattr_obfuscated_op", "relu", ("cheat",),
         r"torch ops that do the work.*relu|literal attribute name"),
    # extra tricks
    Case("u_tuple_output", "relu", ("mismatch",), r"tuple|structure|expected a tensor"),
    Case("v_tensor_subclass_output", "relu", ("cheat", "mismatch"), r"subclass"),
    Case("w_wrong_device", "relu", ("mismatch",), r"on meta, expected on cpu"),
    Case("x_patch_allclose_via_sys", "relu", ("cheat",),
         r"replaced harness functions.*allclose|leads from an allowed module"),
    Case("y_python_tolist_compute", "relu", ("cheat",), r"tolist|host|python"),
    Case("y2_numpy_softmax", "softmax", ("cheat",), r"numpy|host"),
    Case("z_fingerprint_memo", "relu", ("cheat",), r"item|_local_scalar_dense|host"),
    Case("ab_disable_dispatch_mode", "relu", ("cheat",), r"dispatch|literal attribute name|private"),
    Case("ag_fp16_downcast_matmul", "linear", ("mismatch",), r"values outside atol=.* rtol=0\.0001"),
    Case("ah_fused_epilogue_library_op", "linear_epilogue", ("cheat",), r"_addmm_activation|private"),
]

HONEST_CASES = [
    ("relu_mul_add_flat", "relu", 1),
    ("row_softmax", "softmax", 1),
    ("linear_relu_two_kernels", "linear", 2),
    ("linear_then_triton_relu", "linear_epilogue", 1),
    # last bits differ between calls (atomics, cuDNN's transposed convolution): still verified
    ("relu_mul_add_nondeterministic", "relu", 1),
]

# Run on one worker, in this order, with a short timeout.
LIFECYCLE = [
    ("s_infinite_loop", "relu", CANDIDATES),
    ("t_segfault", "relu", CANDIDATES),
    ("relu_mul_add_flat", "relu", HONEST),
    ("h2_missing_mask_elementwise", "relu", CANDIDATES),
]
# Run on one worker, in this order: each tampering candidate, then the candidate it taints.
TAINT = [
    ("ae_default_dtype_switch", "relu", CANDIDATES),
    ("relu_mul_add_flat", "relu", HONEST),
    ("k4_patch_harness_compare", "relu", CANDIDATES),
    ("f_uninitialized_partial_output", "relu", CANDIDATES),
]
STATIC_ONLY = ["q3_cuda_method_call_no_dispatch"]  # CUDA C++: no nvcc here, static check only


# -- running everything once ---------------------------------------------------------------------
def _evaluate(pool: WorkerPool, problem: str, path: Path) -> EvalResult | BaseException:
    try:
        return pool.evaluate(PROBLEMS[problem], path)
    except BaseException as exc:  # re-raised by the test that reads it
        return exc


def _run_main(out: dict[str, Any]) -> None:
    jobs = {f"cand/{c.name}": (c.problem, c.path) for c in CASES}
    jobs.update({f"honest/{n}": (p, HONEST / f"{n}.py") for n, p, _ in HONEST_CASES})
    with WorkerPool("cpu", EvalConfig(timeout_s=MAIN_TIMEOUT_S), workers=2) as pool, \
            cf.ThreadPoolExecutor(2) as ex:
        futures = {k: ex.submit(_evaluate, pool, p, path) for k, (p, path) in jobs.items()}
        for key, fut in futures.items():
            out[key] = fut.result()


def _run_sequence(out: dict[str, Any], name: str, timeout_s: float,
                  steps: list[tuple[str, str, Path]]) -> None:
    with WorkerPool("cpu", EvalConfig(timeout_s=timeout_s), workers=1) as pool:
        for i, (stem, problem, folder) in enumerate(steps):
            out[f"{name}/{i}/{stem}"] = _evaluate(pool, problem, folder / f"{stem}.py")


@pytest.fixture(scope="session")
def verdicts() -> dict[str, Any]:
    out: dict[str, Any] = {}
    with cf.ThreadPoolExecutor(3) as ex:
        futures = [
            ex.submit(_run_main, out),
            ex.submit(_run_sequence, out, "lifecycle", LIFECYCLE_TIMEOUT_S, LIFECYCLE),
            ex.submit(_run_sequence, out, "taint", MAIN_TIMEOUT_S, TAINT),
        ]
        for fut in futures:
            fut.result()
    return out


def _get(verdicts: dict[str, Any], key: str) -> EvalResult:
    value = verdicts[key]
    if isinstance(value, BaseException):
        raise value
    return value


def _describe(r: EvalResult) -> str:
    return f"status={r.status.value} message={r.message[:600]!r} stderr tail={r.stderr_tail[-400:]!r}"


def _assert_refused(r: EvalResult, expected: tuple[str, ...], pattern: str) -> None:
    assert r.status.value in expected, f"expected {expected}, got {_describe(r)}"
    text = r.message + "\n" + r.stderr_tail
    assert re.search(pattern, text, re.I | re.S), f"/{pattern}/ not in verdict: {_describe(r)}"


def _param(case: Case) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=case.hole)] if case.hole else []
    return pytest.param(case, id=case.name, marks=marks)


# -- the cases -----------------------------------------------------------------------------------
@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_cheating_candidate_is_refused(case: Case, verdicts: dict[str, Any]) -> None:
    _assert_refused(_get(verdicts, f"cand/{case.name}"), case.expected, case.pattern)


@pytest.mark.parametrize(("name", "problem", "launches"), HONEST_CASES,
                         ids=[n for n, _, _ in HONEST_CASES])
def test_honest_candidate_is_accepted(name: str, problem: str, launches: int,
                                      verdicts: dict[str, Any]) -> None:
    r = _get(verdicts, f"honest/{name}")
    assert r.status.value == "ok", _describe(r)
    checks = {c.name for c in r.checks if c.passed}
    # The cascade really ran: fresh input sets, other shapes, same pointers with new values.
    assert {"correct on input sets", "correct on other shapes",
            "no results reused across calls"} <= checks, checks
    assert r.kernel_launches >= launches
    assert all(e.dtype == "float32" and e.mismatched == 0 for e in r.errors), r.errors


def test_infinite_loop_times_out(verdicts: dict[str, Any]) -> None:
    r = _get(verdicts, "lifecycle/0/s_infinite_loop")
    _assert_refused(r, ("timeout",),
                    rf"exceeded {LIFECYCLE_TIMEOUT_S:.0f} s and the worker was killed")


def test_wild_pointer_store_is_refused_before_it_lands(verdicts: dict[str, Any]) -> None:
    # In the interpreter the bounds check refuses the store before it can segfault the worker.
    r = _get(verdicts, "lifecycle/1/t_segfault")
    _assert_refused(r, ("runtime_error",), r"out-of-bounds store")


def test_pool_keeps_working_after_timeout_and_crash(verdicts: dict[str, Any]) -> None:
    r = _get(verdicts, "lifecycle/2/relu_mul_add_flat")
    assert r.status.value == "ok", _describe(r)


def test_unmasked_stores_are_refused(verdicts: dict[str, Any]) -> None:
    # Out-of-bounds stores are refused today only because they corrupt the worker's heap (a
    # crash, reported as such); see h3_unmasked_loads for the out-of-bounds access that passes.
    r = _get(verdicts, "lifecycle/3/h2_missing_mask_elementwise")
    _assert_refused(r, ("runtime_error", "cheat", "mismatch", "crash"), r"other shapes")


def test_default_dtype_switch_is_refused(verdicts: dict[str, Any]) -> None:
    _assert_refused(_get(verdicts, "taint/0/ae_default_dtype_switch"), ("cheat",),
                    r"dtype|global switches")


def test_next_candidate_is_not_checked_in_the_switched_dtype(verdicts: dict[str, Any]) -> None:
    r = _get(verdicts, "taint/1/relu_mul_add_flat")
    assert r.status.value == "ok", _describe(r)
    assert [e.dtype for e in r.errors] == ["float32"], r.errors


def test_harness_patch_is_refused(verdicts: dict[str, Any]) -> None:
    _assert_refused(_get(verdicts, "taint/2/k4_patch_harness_compare"), ("cheat",),
                    r"harness|replaced")


def test_next_candidate_is_not_judged_by_a_patched_harness(verdicts: dict[str, Any]) -> None:
    _assert_refused(_get(verdicts, "taint/3/f_uninitialized_partial_output"), ("mismatch",),
                    r"NaN|values outside")


@pytest.mark.parametrize("name", STATIC_ONLY)
def test_cuda_cpp_library_call_is_refused_statically(name: str) -> None:
    findings = check_source((CANDIDATES / f"{name}.py").read_text())
    assert any(f.kind == "cheat" for f in findings), findings


# -- the suite itself ----------------------------------------------------------------------------
def test_every_candidate_is_exercised_and_names_its_trick() -> None:
    exercised = (
        {c.name for c in CASES}
        | {s for s, _, f in LIFECYCLE + TAINT if f == CANDIDATES}
        | set(STATIC_ONLY)
    )
    on_disk = {p.stem for p in CANDIDATES.glob("*.py")}
    assert on_disk == exercised, (on_disk - exercised, exercised - on_disk)
    for path in CANDIDATES.glob("*.py"):
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        assert re.match(r"(Extra trick|Trick \([a-z]\))", doc), f"{path.name}: {doc[:60]!r}"
    for path in HONEST.glob("*.py"):
        assert (ast.get_docstring(ast.parse(path.read_text())) or "").startswith("Honest")
