"""The interpreter targets also compile every launched kernel for a GPU (sm_90), with Triton's
own compiler and bundled ptxas, in a fresh process: a kernel the interpreter runs but the
compiler refuses is a compile_error, one it accepts passes the check."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelevolve.config import EvalConfig
from kernelevolve.tools.harness.pool import WorkerPool

DATA = Path(__file__).resolve().parents[2] / "data" / "gpu_compile"
PROBLEM = DATA / "matmul_problem.py"
SCALE = DATA / "scale_problem.py"


@pytest.fixture(scope="module")
def pool():
    with WorkerPool("cpu", EvalConfig(n_input_sets=2), workers=1) as p:
        yield p


def test_a_kernel_only_the_interpreter_runs_is_a_compile_error(pool):
    r = pool.evaluate(SCALE, DATA / "scale_branch_types.py")
    assert r.status.value == "compile_error", r.message
    assert "do not compile for the GPU (sm_90" in r.message
    assert "Mismatched type for scale" in r.message
    # It was right in the interpreter first: the compile stage is what refused it.
    assert any(c.name == "correct on input sets" and c.passed for c in r.checks)


def test_a_kernel_that_compiles_passes_and_says_for_what(pool):
    r = pool.evaluate(PROBLEM, DATA / "matmul_dot_16x16.py")
    assert r.ok, r.message
    (check,) = [c for c in r.checks if c.name == "compiles for a GPU"]
    assert check.passed and "sm_90: 1 kernel(s) as launched" in check.detail


def test_the_stage_can_be_turned_off():
    with WorkerPool("cpu", EvalConfig(n_input_sets=2, gpu_compile_arch=None), workers=1) as p:
        r = p.evaluate(SCALE, DATA / "scale_branch_types.py")
    assert r.ok, r.message
    (check,) = [c for c in r.checks if c.name == "compiles for a GPU"]
    assert check.skipped and "gpu_compile_arch" in check.detail


def test_a_compile_that_outlives_its_limit_is_a_timeout_not_a_compile_error(tmp_path):
    # A loaded machine can take longer than the stage's limit (half of eval.timeout_s): that is
    # no evidence against the kernels, so it must not be reported as one.
    from kernelevolve.tools.harness.gpu_compile import CompileTimeout, compile_specs

    spec = {"kernel": "k", "signature": {}, "constexprs": {}, "options": {}}
    with pytest.raises(CompileTimeout, match="took more than"):
        compile_specs(DATA / "matmul_dot_16x16.py", [spec], 90, timeout_s=0.01)
