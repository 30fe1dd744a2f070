"""Baselines at PyTorch's defaults and the precision contract on a real GPU (issue #46): an fp32
convolution, which cuDNN computes in TF32 at PyTorch's default flags, judged with one TF32
product, with fp32 products, and with bf16 products; a matmul, which PyTorch computes in full
fp32 by default, judged with one TF32 product. Marked ``gpu``: run on the GPU machine with
``python -m pytest -m gpu tests/gpu``."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kernelevolve.config import EvalConfig
from kernelevolve.tools.harness.pool import WorkerPool

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

DATA = Path(__file__).resolve().parents[1] / "data"
CONV = DATA / "conv2d_small.py"
CONV_CANDIDATE = (DATA / "conv2d_small_candidate.py").read_text()
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def conv_candidate(precision: str) -> str:
    return CONV_CANDIDATE.replace('PRECISION = "ieee"', f'PRECISION = "{precision}"')


def config(**kw) -> EvalConfig:
    return EvalConfig(n_input_sets=2, min_trials=30, min_time_s=0.3, timeout_s=600, **kw)


@pytest.fixture(scope="module")
def baseline_pool():
    with WorkerPool("cuda", config()) as p:
        yield p


@pytest.fixture(scope="module")
def fp32_pool():
    with WorkerPool("cuda", config(precision="fp32")) as p:
        yield p


def test_tf32_convolution_passes_under_the_baseline_contract(baseline_pool):
    result = baseline_pool.evaluate(CONV, conv_candidate("tf32"))
    assert result.status == "ok", result.message + result.stderr_tail
    assert result.precision is not None and "convolution" in result.precision.inexact_ops
    assert result.precision.passed_under_it, "the fp32 rule alone passed a TF32 convolution"
    t = result.timing
    assert t is not None and t.baseline.startswith("PyTorch defaults")
    other = t.other_baseline
    assert other is not None and not other.same_ops and other.baseline.startswith("fp32")
    print("tf32 conv:", t.speedup_line())
    print("tf32 conv: eager at defaults", t.eager.median_ms, "ms, at fp32",
          other.eager.median_ms, "ms")
    assert result.memory is not None and result.memory.judge_peak_bytes > 0
    assert result.memory.footprint_bytes > 0


def test_tf32_convolution_is_refused_under_the_fp32_contract(fp32_pool):
    result = fp32_pool.evaluate(CONV, conv_candidate("tf32"))
    assert result.status == "mismatch", result.message


def test_bf16_convolution_is_refused(baseline_pool):
    result = baseline_pool.evaluate(CONV, conv_candidate("bf16"))
    assert result.status == "mismatch", result.message
    assert "baseline's precision contract" in result.message


def test_fp32_convolution_passes_the_fp32_rule(baseline_pool):
    result = baseline_pool.evaluate(CONV, conv_candidate("ieee"))
    assert result.status == "ok", result.message + result.stderr_tail
    assert result.precision is not None and not result.precision.passed_under_it


def test_tf32_matmul_is_refused_at_defaults(baseline_pool):
    """PyTorch's default matmul precision is 'highest': the baseline is full fp32 there, and a
    TF32 product is held to the fp32 rule."""
    source = (EXAMPLES / "solutions" / "10_linear_bias_gelu.py").read_text()
    assert 'input_precision="ieee"' in source
    result = baseline_pool.evaluate(EXAMPLES / "problems" / "10_linear_bias_gelu.py",
                                    source.replace('input_precision="ieee"',
                                                   'input_precision="tf32"'))
    assert result.status == "mismatch", result.message
    assert result.precision is None or not result.precision.inexact_ops
    assert result.timing is None
