"""The holes the issue-47 red team (``redteam47/``) found in the hardened judge, each closed by
design, checked through the real harness on the ``cpu`` target (``WorkerPool.evaluate``, no
mocks): the red-team case that passed before must be refused now, and the honest kernels beside
it still accepted. The whole red team, on every target, is ``redteam47/run_redteam.py``.

All verdicts are computed once, by the module fixture ``verdicts``, on one pool of 2 workers.
"""

from __future__ import annotations

import concurrent.futures as cf
import re
from pathlib import Path
from typing import Any

import pytest

from kernelevolve.config import EvalConfig
from kernelevolve.tools.harness.pool import WorkerPool
from kernelevolve.tools.harness.result import EvalResult

HERE = Path(__file__).resolve().parent / "redteam47"
# h07 took 238 s of the judge's 300 before scans with a jit combine were trees (57 s after)
TIMEOUT_S = 150.0

# case -> (problem, the statuses it may get, a regex its message must match)
REFUSED = {
    "c3k_time_bomb_short": ("relu_mul_add", ("mismatch",), r"calls in a row"),
    "c5d_output_ring_of_five_views": ("relu_mul_add", ("mismatch",),
                                      r"still held by the candidate after the caller let"),
    # the second red team (c7*): weight work cached on the first call, output rings kept in a
    # buffer's or an input's storage by assigning .data
    "c7h_weightnorm_fold_in_place": ("p7_weightnorm_linear", ("mismatch",),
                                     r"new weights loaded into the instance already run"),
    "c7l_output_ring_in_buffer_via_data": ("relu_mul_add", ("cheat",), r"storage-rebind"),
    "c7m_output_ring_in_input_storage": ("relu_mul_add", ("cheat",), r"storage-rebind"),
}
ACCEPTED = {
    "h03_inplace_own_buffer": "relu_mul_add",
    "h07_cumprod_looped": "cumprod",
    "h2e_weightnorm_linear": "p7_weightnorm_linear",
}


@pytest.fixture(scope="module")
def verdicts() -> dict[str, EvalResult | BaseException]:
    jobs = {name: problem for name, (problem, _, _) in REFUSED.items()} | ACCEPTED
    out: dict[str, EvalResult | BaseException] = {}
    with WorkerPool("cpu", EvalConfig(n_input_sets=5, timeout_s=TIMEOUT_S), workers=2) as pool, \
            cf.ThreadPoolExecutor(2) as ex:
        futures = {ex.submit(pool.evaluate, HERE / "problems" / f"{problem}.py",
                             HERE / "cases" / f"{name}.py"): name
                   for name, problem in jobs.items()}
        for fut in cf.as_completed(futures):
            try:
                out[futures[fut]] = fut.result()
            except Exception as exc:  # reported by the test of that case
                out[futures[fut]] = exc
    return out


def _get(verdicts: dict[str, Any], name: str) -> EvalResult:
    r = verdicts[name]
    if isinstance(r, BaseException):
        raise r
    return r


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_hole_is_closed(name: str, verdicts: dict[str, Any]) -> None:
    _, statuses, pattern = REFUSED[name]
    r = _get(verdicts, name)
    assert r.status in statuses, f"{name}: {r.status}: {r.message[:400]}"
    assert re.search(pattern, r.message), f"{name}: {r.message[:400]}"


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_honest_kernel_is_accepted(name: str, verdicts: dict[str, Any]) -> None:
    r = _get(verdicts, name)
    assert r.status == "ok", f"{name}: {r.status}: {r.message[:400]}"
