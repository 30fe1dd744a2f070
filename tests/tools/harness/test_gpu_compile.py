"""The interpreter targets also compile every launched kernel for a GPU (sm_90), with Triton's
own compiler and bundled ptxas, in a fresh process: a kernel the interpreter runs but the
compiler refuses is a compile_error, one it accepts passes the check. Every specialization
launched is compiled (at every shape checked, with no cap on the launches), and every config of
an autotuned kernel, run or not."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelevolve.config import EvalConfig
from kernelevolve.tools.harness.pool import WorkerPool

DATA = Path(__file__).resolve().parents[2] / "data" / "gpu_compile"
PROBLEM = DATA / "matmul_problem.py"
SCALE = DATA / "scale_problem.py"
INTERPRETER = DATA.parent / "interpreter"
RELU = INTERPRETER / "relu_mul_add_problem.py"


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


@pytest.mark.parametrize("candidate", ["specialization_other_shapes", "launch_after_64",
                                       "autotune_pruned_config_no_compile"])
def test_every_specialization_and_autotune_config_is_compiled(pool, candidate):
    # A tail specialization launched only at the other shapes; a kernel launched after 64
    # others; an autotune config pruned away at these sizes: each right in the interpreter,
    # none compiles for sm_90.
    r = pool.evaluate(RELU, INTERPRETER / f"{candidate}.py")
    assert r.status.value == "compile_error", r.message
    assert "relu_mul_add_kernel" in r.message and "is of type int32" in r.message
    assert any(c.name == "correct on other shapes" and c.passed for c in r.checks)


def test_an_autotune_config_a_gpu_autotuner_would_skip_is_not_an_error(tmp_path):
    # A config no launch ran that fails a static assertion is one a GPU's autotuner times as
    # infinitely slow (Autotuner._bench), not an error; the same config run is one.
    from kernelevolve.tools.harness.gpu_compile import compile_specs

    source = (INTERPRETER / "autotune_configs_agree.py").read_text().replace(
        "    offs = tl.program_id(0)", "    tl.static_assert(BLOCK <= 256)\n    offs = tl.program_id(0)")
    path = tmp_path / "static_assert_config.py"
    path.write_text(source)
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32",
                 "BLOCK": "constexpr"}
    spec = {"kernel": "relu_mul_add_kernel", "signature": signature,
            "constexprs": {"BLOCK": 512}, "options": {"num_warps": 8}}
    assert compile_specs(path, [{**spec, "autotune_only": True}], 90, timeout_s=120) == []
    (error,) = compile_specs(path, [spec], 90, timeout_s=120)
    assert "CompileTimeAssertionFailure" in error


def test_the_simulated_runs_launches_at_full_size_are_compiled_too():
    # mtia-sim checks shrunk sizes, then simulates the forward at the problem's own: a
    # specialization only that size launches is compiled after the simulated timing.
    with WorkerPool("mtia-sim:2i", EvalConfig(n_input_sets=1), workers=1) as p:
        r = p.evaluate(INTERPRETER / "relu_mul_add_large_problem.py",
                       INTERPRETER / "specialization_full_size.py")
    assert r.status.value == "compile_error", r.message
    assert "is of type int32" in r.message
    assert any(c.name == "simulated on MTIA" for c in r.checks)
