"""The verdict's NaN and infinity check (``eval.nonfinite``), for real: candidates evaluated on
the ``cpu`` target (Triton's interpreter) through ``WorkerPool.evaluate``.

A ReLU written as ``where(x > 0, x, 0)`` is right on every finite input and makes a NaN into 0;
torch's ReLU keeps it. A scaling done on a split of x into a high part and a remainder (as a
3xTF32 product does) is right on finite inputs and makes an infinity into NaN (its remainder
inf - inf). Each must be caught by its own check, and
the policy decides what the verdict does with it: 'require' refuses, 'report' keeps the verdict
with a failed check and a flag, 'off' does not look."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelevolve.config import EvalConfig
from kernelevolve.tools.harness.pool import WorkerPool

PROBLEM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return {body}


batch_size = 16
dim = 96


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''

CANDIDATE = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def unary_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, {expr}, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        unary_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
'''

KEEPS_NAN = "tl.maximum(x, 0.0, propagate_nan=tl.PropagateNan.ALL)"
DROPS_NAN = "tl.where(x > 0, x, 0.0)"
# x * 3 as its high part (the low 13 mantissa bits cleared) and remainder, each scaled: the
# remainder of an infinity is inf - inf = NaN; keeping it 0 where x is not finite is exact
HI = "(x.to(tl.int32, bitcast=True) & -8192).to(tl.float32, bitcast=True)"
SPLIT = f"{HI} * 3.0 + (x - {HI}) * 3.0"
SPLIT_GUARDED = f"{HI} * 3.0 + tl.where(tl.abs(x) < float('inf'), x - {HI}, 0.0) * 3.0"


def _files(tmp_path: Path, body: str, expr: str) -> tuple[Path, Path]:
    problem, cand = tmp_path / "problem.py", tmp_path / f"cand_{abs(hash(expr))}.py"
    problem.write_text(PROBLEM.format(body=body))
    cand.write_text(CANDIDATE.format(expr=expr))
    return problem, cand


def _evaluate(tmp_path: Path, body: str, expr: str, mode: str):
    problem, cand = _files(tmp_path, body, expr)
    with WorkerPool("cpu", EvalConfig(nonfinite=mode, timeout_s=120.0), workers=1) as pool:
        return pool.evaluate(problem, cand)


def _check(result, what: str):
    return next((c for c in result.checks if c.name == f"{what} as the reference"), None)


@pytest.fixture(scope="module")
def relu_results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("relu")
    return {(expr, mode): _evaluate(tmp, "torch.relu(x)", expr, mode)
            for expr, mode in [(KEEPS_NAN, "require"), (DROPS_NAN, "require"),
                               (DROPS_NAN, "report"), (DROPS_NAN, "off")]}


def test_a_relu_that_keeps_nan_passes_both_checks(relu_results):
    result = relu_results[(KEEPS_NAN, "require")]
    assert result.status == "ok", result.message
    for what in ("NaN", "infinities"):
        check = _check(result, what)
        assert check is not None and check.passed and not check.skipped, check
    assert "NaN" in _check(result, "NaN").detail


def test_require_refuses_a_relu_that_drops_nan(relu_results):
    result = relu_results[(DROPS_NAN, "require")]
    assert result.status == "mismatch"
    assert "inputs with NaN" in result.message
    assert "NaN/Inf values where the reference has none" in result.message


def test_report_keeps_the_verdict_and_says_why(relu_results):
    result = relu_results[(DROPS_NAN, "report")]
    assert result.status == "ok", result.message
    check = _check(result, "NaN")
    assert check is not None and not check.passed
    assert "NaN/Inf values" in check.detail
    assert any("where inputs hold NaN" in f and "'require'" in f for f in result.flags)
    assert _check(result, "infinities").passed  # relu(+-inf) is right either way
    # the reported error figures are those of finite inputs, not the NaN check's inf
    assert all(e.max_abs_error < 1e-3 for e in result.errors), result.errors


def test_off_does_not_look(relu_results):
    result = relu_results[(DROPS_NAN, "off")]
    assert result.status == "ok"
    assert _check(result, "NaN") is None and _check(result, "infinities") is None
    assert not any("NaN" in f for f in result.flags)


def test_a_split_that_makes_inf_into_nan_fails_the_infinity_check_only(tmp_path):
    bad = _evaluate(tmp_path, "x * 3.0", SPLIT, "report")
    assert bad.status == "ok", bad.message
    assert _check(bad, "NaN").passed
    assert not _check(bad, "infinities").passed
    good = _evaluate(tmp_path, "x * 3.0", SPLIT_GUARDED, "require")
    assert good.status == "ok", good.message
    assert _check(good, "infinities").passed


# A library's fp32 algorithm that spreads a NaN or infinity over its tile (cuDNN's FFT
# convolutions do, over whole transform tiles), modelled by a row: in float64 the reference
# computes directly, as the arithmetic says
SPREADING = """(x + 0.0 * x.sum(-1, keepdim=True)) * 2.0 if x.dtype == torch.float32 else x * 2.0"""


def test_where_the_fp32_reference_spreads_nan_the_float64_reference_decides(tmp_path):
    exact = _evaluate(tmp_path, SPREADING, "x * 2.0", "require")
    assert exact.status == "ok", exact.message
    for what in ("NaN", "infinities"):
        check = _check(exact, what)
        assert check.passed and "float64" in check.detail, check
    # matching neither reference (a NaN spread further, over its whole block) is still refused
    spread = "x * 2.0 + 0.0 * tl.sum(x, axis=0)"
    wrong = _evaluate(tmp_path, SPREADING, spread, "require")
    assert wrong.status == "mismatch" and "NaN" in wrong.message, wrong.message


def test_with_nonfinite_places_each_value_and_leaves_the_input():
    import torch

    from kernelevolve.tools.harness.compare import (
        INF_VALUES,
        NAN_VALUES,
        NONFINITE_COPIES,
        with_nonfinite,
    )

    x = torch.randn(64, 33)
    gen = torch.Generator().manual_seed(5)
    nan = with_nonfinite(x, gen, NAN_VALUES)
    inf = with_nonfinite(x.t(), gen, INF_VALUES)  # a non-contiguous input: a contiguous copy
    assert torch.isfinite(x).all()
    assert 1 <= int(nan.isnan().sum()) <= NONFINITE_COPIES
    assert inf.is_contiguous() and torch.equal(inf[torch.isfinite(inf)],
                                               x.t().contiguous()[torch.isfinite(inf)])
    assert int((inf == float("inf")).sum()) + int((inf == float("-inf")).sum()) >= 1
    again = with_nonfinite(x, torch.Generator().manual_seed(5), NAN_VALUES)
    assert torch.equal(again.isnan(), nan.isnan())  # the places follow the seed
