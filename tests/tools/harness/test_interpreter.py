"""Triton's interpreter made to compute what a GPU computes (interpreter.py): TF32 products, programs
in random order, every autotune config, tree-shaped scans and reductions. The rounding helpers are checked here; the patched
interpreter in a fresh process (the patches change Triton for the whole process); the verdicts
through the judge on the cpu target."""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kernelevolve.config import EvalConfig
from kernelevolve.tools.harness.interpreter import tf32_dot, tf32_rounded, tf32_truncated
from kernelevolve.tools.harness.pool import WorkerPool

DATA = Path(__file__).resolve().parents[2] / "data"
HERE = DATA / "interpreter"
MATMUL = DATA / "gpu_compile" / "matmul_problem.py"


def _bits(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=np.uint32).view(np.float32)


def test_tf32_cuts_or_rounds_the_low_13_mantissa_bits():
    x = _bits([0x3F801FFF, 0x3F801000, 0xBF803000, 0x3F800FFF])
    assert tf32_truncated(x).view(np.uint32).tolist() == [0x3F800000] * 2 + [0xBF802000,
                                                                              0x3F800000]
    # to nearest, ties away from zero (PTX cvt.rna.tf32.f32)
    assert tf32_rounded(x).view(np.uint32).tolist() == [0x3F802000, 0x3F802000, 0xBF804000,
                                                        0x3F800000]
    special = np.array([np.inf, -np.inf, np.nan, 3.4028235e38], dtype=np.float32)
    rounded = tf32_rounded(special)
    assert rounded[0] == np.inf and rounded[1] == -np.inf and np.isnan(rounded[2])
    assert rounded[3] == np.inf  # above TF32's largest finite value: rounds to infinity


def test_tf32_products_err_as_the_tensor_cores_do():
    rng = np.random.default_rng(0)
    a, b, acc = (rng.standard_normal(s).astype(np.float32) for s in ((32, 48), (48, 24), (32, 24)))
    exact = a.astype(np.float64) @ b.astype(np.float64) + acc
    scale = np.abs(exact).max()

    def err(out: np.ndarray) -> float:
        return float(np.abs(out - exact).max() / scale)

    assert 1e-4 < err(tf32_dot(a, b, acc, "TF32")) < 1e-2
    assert err(tf32_dot(a, b, acc, "TF32X3")) < 1e-6
    # an infinity's remainder is inf - inf: Triton's tf32x3 zeroes that NaN, the infinity stays
    a[0, 0] = np.inf
    out = tf32_dot(a, b, acc, "TF32X3")
    assert np.isinf(out[0]).all() and np.isfinite(out[1:]).all()


PATCHED = r'''
import json
import torch
import triton
import triton.language as tl
from kernelevolve.tools.harness import guard, interpreter
from kernelevolve.tools.harness.gpu_compile import LaunchLog

launches = guard.LaunchCounter()
launches.install()
guard.InterpreterBounds().install(launches)
out = {}


@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, N: tl.constexpr, HOW: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :])
    b = tl.load(b_ptr + r[:, None] * N + r[None, :])
    if HOW == "default":
        c = tl.dot(a, b)
    elif HOW == "allow_tf32=False":
        c = tl.dot(a, b, allow_tf32=False)
    else:
        c = tl.dot(a, b, input_precision=HOW)
    tl.store(c_ptr + r[:, None] * N + r[None, :], c)


torch.manual_seed(0)
a, b = torch.randn(32, 32), torch.randn(32, 32)
exact = a.double() @ b.double()
for how in ("default", "tf32", "tf32x3", "ieee", "allow_tf32=False"):
    c = torch.empty(32, 32)
    mm_kernel[(1,)](a, b, c, N=32, HOW=how)
    out[how] = float((c.double() - exact).abs().max() / exact.abs().max())
half = torch.randn(32, 32).half()
c = torch.empty(32, 32)
mm_kernel[(1,)](half, half, c, N=32, HOW="default")
out["fp16"] = bool(torch.allclose(c, half.float() @ half.float(), atol=1e-3))


@triton.jit
def order_kernel(out_ptr, counter_ptr, NY: tl.constexpr):
    slot = tl.atomic_add(counter_ptr, 1)
    tl.store(out_ptr + slot, tl.program_id(0) * NY + tl.program_id(1))


def order(grid):
    ran = torch.full((grid[0] * grid[1],), -1, dtype=torch.int32)
    order_kernel[grid](ran, torch.zeros(1, dtype=torch.int32), NY=grid[1])
    return ran.tolist()


out["orders"] = [order((4, 3)) for _ in range(3)]
interpreter.PROGRAM_ORDER.begin_forward()
out["first"] = order((4, 3))
interpreter.PROGRAM_ORDER.begin_forward(reverse=True)
out["reversed"] = order((4, 3))
interpreter.PROGRAM_ORDER.begin_forward(reverse=True)
out["twice"] = order((4, 3))


@triton.autotune(configs=[triton.Config({"ADD": 1}), triton.Config({"ADD": 1}, num_warps=8),
                          triton.Config({"ADD": 2}), triton.Config({"ADD": 3})], key=["n"])
@triton.jit
def tuned_kernel(x_ptr, n, ADD: tl.constexpr):
    offs = tl.arange(0, 8)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + ADD, mask=offs < n)


launches.log = LaunchLog()
out["turns"] = []
for turn in range(4):
    interpreter.AUTOTUNE.begin_forward(turn)
    x = torch.zeros(8)
    tuned_kernel[(1,)](x, 8)
    out["turns"].append(x[0].item())
out["most"] = interpreter.AUTOTUNE.most
out["logged"] = sorted((s["constexprs"]["ADD"], s["options"].get("num_warps", 4),
                        bool(s.get("autotune_only"))) for s in launches.log.specs.values())
out["notes"] = interpreter.AUTOTUNE.notes


@triton.jit
def affine(a1, b1, a2, b2):  # x -> a1 x + b1, then a2 x + b2: associative, not commutative
    return a1 * a2, b1 * a2 + b2


@triton.jit
def scan_kernel(a_ptr, b_ptr, sa_ptr, sb_ptr, ra_ptr, rb_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a, b = tl.load(a_ptr + r), tl.load(b_ptr + r)
    sa, sb = tl.associative_scan((a, b), 0, affine)
    tl.store(sa_ptr + r, sa)
    tl.store(sb_ptr + r, sb)
    ra, rb = tl.reduce((a, b), 0, affine)
    tl.store(ra_ptr, ra)
    tl.store(rb_ptr, rb)


a, b = torch.rand(256) + 0.5, torch.randn(256)
sa, sb, ra, rb = (torch.empty(n) for n in (256, 256, 1, 1))
scan_kernel[(1,)](a, b, sa, sb, ra, rb, N=256)
ea, eb = [1.0], [0.0]  # sequential, in float64
for x, y in zip(a.double().tolist(), b.double().tolist()):
    ea.append(ea[-1] * x)
    eb.append(eb[-1] * x + y)
ea, eb = torch.tensor(ea[1:]), torch.tensor(eb[1:])
out["scan_error"] = max(float(((sa.double() - ea).abs() / ea.abs()).max()),
                        float((sb.double() - eb).abs().max() / eb.abs().max()))
out["reduce_error"] = max(abs(ra.item() - ea[-1].item()) / abs(ea[-1].item()),
                          abs(rb.item() - eb[-1].item()) / eb.abs().max().item())


@triton.jit
def minmax_kernel(x_ptr, o_ptr):
    r = tl.arange(0, 4)
    x = tl.load(x_ptr + r)
    tl.store(o_ptr + r, tl.maximum(x, 0.0))
    tl.store(o_ptr + 4 + r, tl.minimum(x, 0.0))
    tl.store(o_ptr + 8 + r, tl.maximum(x, 0.0, propagate_nan=tl.PropagateNan.ALL))


mm = torch.empty(12)
minmax_kernel[(1,)](torch.tensor([float("nan"), -1.0, 2.0, float("nan")]), mm)
out["minmax"] = [None if v != v else v for v in mm.tolist()]
print("RESULT " + json.dumps(out))
'''


@pytest.fixture(scope="module")
def patched() -> dict:
    env = {**os.environ, "TRITON_INTERPRET": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", PATCHED], env=env, capture_output=True,
                          text=True, timeout=300)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    return json.loads(lines[-1].removeprefix("RESULT "))


def test_max_and_min_drop_nan_as_the_gpu_does_unless_asked(patched):
    """tl.maximum/minimum at the default propagate_nan are maxnum/minnum on the GPU (PTX
    max.f32: a NaN operand gives the other); the interpreter kept NaN, so a ReLU written so
    passed the NaN check on cpu that it fails on the GPU."""
    assert patched["minmax"] == [0.0, 0.0, 2.0, 0.0, 0.0, -1.0, 0.0, 0.0, None, 0.0, 2.0, None]


def test_scans_and_reductions_with_a_jit_combine_are_trees(patched):
    """The interpreter's element-by-element scan and reduce (12 s a forward for a cumprod over
    64 rows of 1024: red team 47's honest h07 timed out) are tree-shaped whole-block combines
    now, keeping the operands' order: a non-commutative combine (composing affine maps) gives
    the sequential answer up to fp32 rounding."""
    assert patched["scan_error"] < 1e-5
    assert patched["reduce_error"] < 1e-5


def test_fp32_dot_is_tf32_by_default_and_exact_at_ieee_and_tf32x3(patched):
    # Triton resolves no input_precision to "tf32" (TRITON_F32_DEFAULT unset), allow_tf32=False
    # to "ieee": the interpreter now errs as a GPU's tensor cores do, ~1e-3 of the output.
    assert 1e-4 < patched["default"] < 1e-2
    assert patched["tf32"] == patched["default"]
    for exact in ("tf32x3", "ieee", "allow_tf32=False"):
        assert patched[exact] < 1e-6, (exact, patched[exact])
    assert patched["fp16"] is True  # 16-bit operands: no TF32 involved


def test_programs_run_in_a_random_order_and_the_reverse_on_request(patched):
    ids = list(range(12))
    orders = patched["orders"]
    assert all(sorted(o) == ids for o in orders)
    assert any(o != ids for o in orders) and len({tuple(o) for o in orders}) > 1
    assert patched["reversed"] == patched["first"][::-1]
    assert patched["twice"] == patched["first"]  # the reverse of the reverse


def test_each_forward_turns_to_the_next_autotune_config_and_all_are_logged(patched):
    # Configs that differ in launch options only run alike in the interpreter: turned once.
    assert patched["turns"] == [1.0, 2.0, 3.0, 1.0]
    assert patched["most"] == 3
    # every config's specialization for the GPU compile, the one no launch ran marked so
    assert patched["logged"] == [[1, 4, False], [1, 8, True], [2, 4, False], [3, 4, False]]
    (note,) = patched["notes"]
    assert "tuned_kernel" in note and "3 configs" in note and "each checked" in note


# -- through the judge ---------------------------------------------------------------------------
JOBS = {
    "tf32_default": (MATMUL, HERE / "matmul_tf32_default.py"),
    "tf32x3": (MATMUL, HERE / "matmul_tf32x3.py"),
    "ieee": (MATMUL, DATA / "gpu_compile" / "matmul_dot_16x16.py"),
    "race": (HERE / "cumsum_problem.py", HERE / "cumsum_carry_race.py"),
    "atomics": (HERE / "row_sum_problem.py", HERE / "row_sum_atomic.py"),
    "autotune_wrong": (HERE / "relu_mul_add_problem.py", HERE / "autotune_second_config_wrong.py"),
    "autotune_agree": (HERE / "relu_mul_add_problem.py", HERE / "autotune_configs_agree.py"),
}


@pytest.fixture(scope="module")
def verdicts() -> dict:
    with WorkerPool("cpu", EvalConfig(n_input_sets=2), workers=2) as pool, \
            cf.ThreadPoolExecutor(2) as ex:
        futures = {k: ex.submit(pool.evaluate, *paths) for k, paths in JOBS.items()}
        return {k: f.result() for k, f in futures.items()}


def test_a_tf32_matmul_fails_the_fp32_tolerance_on_cpu(verdicts):
    r = verdicts["tf32_default"]
    assert r.status.value == "mismatch", r.message
    assert "input sets 1/2" in r.message and "rtol=0.0001" in r.message
    for exact in ("tf32x3", "ieee"):
        assert verdicts[exact].ok, verdicts[exact].message


def test_a_cross_program_race_is_refused_and_atomics_in_any_order_pass(verdicts):
    r = verdicts["race"]
    assert r.status.value == "mismatch", r.message
    r = verdicts["atomics"]
    assert r.ok, r.message
    assert {"correct on input sets", "correct on other shapes"} <= {c.name for c in r.checks}


def test_a_wrong_second_autotune_config_is_refused(verdicts):
    r = verdicts["autotune_wrong"]
    assert r.status.value == "mismatch", r.message
    assert "autotune turn 2 of 2" in r.message


def test_every_autotune_config_is_run_checked_and_compiled(verdicts):
    r = verdicts["autotune_agree"]
    assert r.ok, r.message
    checks = {c.name: c for c in r.checks}
    assert "3 turns" in checks["every autotune config on input sets"].detail
    assert "every autotune config on other shapes" in checks
    assert "sm_90: 3 kernel(s)" in checks["compiles for a GPU"].detail
    assert any("relu_mul_add_kernel" in f and "3 configs" in f for f in r.flags), r.flags
