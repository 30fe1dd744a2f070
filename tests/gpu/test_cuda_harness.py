"""The harness on a real GPU: CUDA C++ candidates, device faults, timing and the suspicious-speedup
path. Marked ``gpu``: skipped where no CUDA device is visible (CI); run on the GPU machine with
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
# Small sizes: the unmodified KernelBench file holds 1.6e9 elements, minutes per check.
RELU = DATA / "relu_bf16_small.py"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

CUDA_RELU = r'''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = """
#include <torch/extension.h>
#include <cuda_bf16.h>

__global__ void relu_kernel(const __nv_bfloat16* x, __nv_bfloat16* out, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = __bfloat162float(x[i]);
        out[i] = __float2bfloat16(v > 0.f ? v : 0.f);
    }
}

torch::Tensor relu(torch::Tensor x) {
    auto out = torch::empty_like(x);
    long n = x.numel();
    relu_kernel<<<(n + 255) / 256, 256>>>(
        reinterpret_cast<const __nv_bfloat16*>(x.data_ptr()),
        reinterpret_cast<__nv_bfloat16*>(out.data_ptr()), n);
    return out;
}
"""
cpp_src = "torch::Tensor relu(torch::Tensor x);"
ext = load_inline("relu_inline_ext", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["relu"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.relu(x.contiguous())
'''


@pytest.fixture(scope="module")
def pool():
    with WorkerPool("cuda", EvalConfig(n_input_sets=2, min_trials=20, min_time_s=0.2,
                                       timeout_s=600)) as p:
        yield p


def test_cuda_cpp_candidate_is_verified_and_timed(pool):
    result = pool.evaluate(RELU, CUDA_RELU)
    assert result.status == "ok", result.message + result.stderr_tail
    assert result.kernel_launches == 1
    t = result.timing
    assert t is not None and not t.simulated and t.candidate.median_ms > 0
    assert t.speedup_vs_eager and t.speedup_vs_eager > 0
    assert t.compiled is not None or t.compile_error


def test_illegal_memory_access_ends_that_evaluation_only(pool):
    bad = (DATA / "relu_triton.py").read_text().replace(
        "tl.store(out_ptr + offs,", "tl.store(out_ptr + offs + (1 << 40),")
    result = pool.evaluate(RELU, bad)
    assert result.status in ("runtime_error", "crash"), result.message
    assert pool.evaluate(RELU, DATA / "relu_triton.py").status == "ok"


def test_suspicious_speedup_is_reverified():
    config = EvalConfig(n_input_sets=2, min_trials=20, min_time_s=0.2, suspicious_speedup=1.0001)
    name = "06_rmsnorm.py"
    with WorkerPool("cuda", config, workers=1) as p:
        result = p.evaluate(EXAMPLES / "problems" / name, EXAMPLES / "solutions" / name)
    assert result.status == "ok", result.message
    if result.speedup and result.speedup > 1.0001:
        assert any("re-verified" in f for f in result.flags)
        assert any(c.name == "correct on fresh other shapes" for c in result.checks)
