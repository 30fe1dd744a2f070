"""The worker pool against real worker subprocesses running Triton's interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernelevolve.config import EvalConfig
from kernelevolve.errors import CandidateError, ConfigError
from kernelevolve.tools.harness.pool import WorkerPool

DATA = Path(__file__).resolve().parents[2] / "data"
RELU = DATA / "kernelbench_relu.py"
RELU_TRITON = (DATA / "relu_triton.py").read_text()


def test_honest_candidate_is_verified_not_timed(cpu_pool):
    result = cpu_pool.evaluate(RELU, DATA / "relu_triton.py")
    assert result.status == "ok", result.message
    assert result.timing is None and "never timed" in result.not_timed_reason
    names = [c.name for c in result.checks]
    assert "correct on other shapes" in names and "no results reused across calls" in names
    assert result.kernel_launches == 1
    assert result.errors[0].dtype == "bfloat16" and result.errors[0].max_abs_error == 0.0


def test_wrong_answer_is_a_mismatch_with_figures(cpu_pool):
    wrong = RELU_TRITON.replace("tl.maximum(x, 0.0)", "tl.maximum(x, 0.1)")
    result = cpu_pool.evaluate(RELU, wrong)
    assert result.status == "mismatch"
    assert "outside atol" in result.message and result.errors[0].max_abs_error > 0.05


def test_hard_wired_shape_fails_on_other_shapes(cpu_pool):
    # Correct at the sizes first checked, wrong elsewhere: a grid fixed to the first size seen.
    hard = RELU_TRITON.replace("n = x.numel()\n", "n = self.n\n").replace(
        "    def forward(self, x):\n",
        "    def forward(self, x):\n        if not hasattr(self, 'n'):\n"
        "            self.n = x.numel()\n",
    )
    result = cpu_pool.evaluate(RELU, hard)
    # Out-of-bounds writes in the interpreter may also kill the worker: a crash, still caught.
    assert result.status in ("mismatch", "runtime_error", "crash"), result.message
    assert "other shapes" in result.message + result.stderr_tail


def test_import_error_is_a_compile_error(cpu_pool):
    result = cpu_pool.evaluate(RELU, RELU_TRITON + "\nundefined_name_at_import\n")
    assert result.status == "compile_error" and "NameError" in result.message


def test_kernel_error_is_a_runtime_error_with_traceback(cpu_pool):
    broken = RELU_TRITON.replace("mask=mask, other=0.0)", "mask=mask, other=0.0) + tl.load(x_ptr)"
                                 " * tl.zeros([7], dtype=tl.float32)")
    result = cpu_pool.evaluate(RELU, broken)
    assert result.status in ("runtime_error", "compile_error")
    assert "relu_kernel" in result.message or "relu_kernel" in result.stderr_tail


def test_static_refusal_never_starts_a_worker(cpu_pool):
    result = cpu_pool.evaluate(RELU, "import os\n" + RELU_TRITON)
    assert result.status == "cheat" and "static check" in result.message


def test_candidate_file_missing():
    with WorkerPool("cpu", EvalConfig(), workers=1) as pool, pytest.raises(CandidateError):
        pool.evaluate(RELU, Path("/nonexistent/candidate.py"))


def test_loose_fp32_tolerance_needs_consent():
    with pytest.raises(ConfigError, match="allow_loose_fp32"):
        WorkerPool("cpu", EvalConfig(atol=1e-2), workers=1)


def test_crash_and_timeout_end_that_evaluation_only():
    # The worker process dies mid-evaluation (SystemExit passes every except Exception).
    crash = RELU_TRITON.replace("        x = x.contiguous()\n", "        raise SystemExit(7)\n")
    hang = RELU_TRITON.replace("        x = x.contiguous()\n", "        while True:\n"
                               "            pass\n")
    # 45 s: the honest ReLU at the end must finish on a loaded 2-core machine (its checks now
    # include a run of forwards of unpredictable length)
    with WorkerPool("cpu", EvalConfig(n_input_sets=1, timeout_s=45), workers=1) as pool:
        crashed = pool.evaluate(RELU, crash)
        assert crashed.status == "crash", crashed.message
        assert "exit code 7" in crashed.message
        # An exception that escapes the candidate's own handling is named in the verdict.
        gave_up = RELU_TRITON.replace("        x = x.contiguous()\n",
                                      "        raise KeyboardInterrupt('gave up at 7 GiB')\n")
        died = pool.evaluate(RELU, gave_up)
        assert died.status == "crash"
        assert "exit code 70: KeyboardInterrupt: gave up at 7 GiB" in died.message
        timed_out = pool.evaluate(RELU, hang)
        assert timed_out.status == "timeout" and "45 s" in timed_out.message
        assert pool.evaluate(RELU, DATA / "relu_triton.py").status == "ok"


def test_out_of_bounds_access_is_refused_before_it_lands(cpu_pool):
    wild = RELU_TRITON.replace("tl.store(out_ptr + offs,", "tl.store(out_ptr + offs + (1 << 40),")
    result = cpu_pool.evaluate(RELU, wild)
    assert result.status == "runtime_error" and "out-of-bounds store" in result.message
    unmasked = RELU_TRITON.replace("mask=mask, other=0.0)", ")")  # loads past the end
    result = cpu_pool.evaluate(RELU, unmasked)
    assert result.status == "runtime_error" and "out-of-bounds load" in result.message
    assert cpu_pool.evaluate(RELU, DATA / "relu_triton.py").status == "ok"


def test_check_cli_json_and_exit_codes(tmp_path):
    ok = subprocess.run(
        [sys.executable, "-m", "kernelevolve.cli", "check", str(RELU), str(DATA / "relu_triton.py"),
         "--target", "cpu", "--json"], capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["status"] == "ok"
    bad = tmp_path / "bad.py"
    bad.write_text(RELU_TRITON.replace("tl.maximum(x, 0.0)", "-x"))
    fail = subprocess.run(
        [sys.executable, "-m", "kernelevolve.cli", "check", str(RELU), str(bad),
         "--target", "cpu", "--json"], capture_output=True, text=True, timeout=300)
    assert fail.returncode == 1 and json.loads(fail.stdout)["status"] == "mismatch"
    missing = subprocess.run(
        [sys.executable, "-m", "kernelevolve.cli", "check", "nope.py", str(bad)],
        capture_output=True, text=True, timeout=60)
    assert missing.returncode == 1 and "ProblemError: problem file nope.py" in missing.stderr
