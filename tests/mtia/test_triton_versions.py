"""Timed mtia-sim evaluations through the worker on whichever Triton is installed.

The simulator's hooks and the worker's bounds check wrap the interpreter builder's methods, whose
signatures change between Triton versions (3.9 merged cache_modifier and eviction_policy into
cache_policy); CI runs this file against the newest Triton pyproject.toml allows as well.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelevolve.config import EvalConfig
from kernelevolve.tools.harness.pool import WorkerPool

PROBLEM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """x * sigmoid(x) (SiLU)."""

    def forward(self, x):
        return x * torch.sigmoid(x)


batch_size = 64
dim = 1024


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''

# Negation, exp, add, divide: on 3.9 -x is the builder's fneg, on 3.7 an fsub from zero.
SILU = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def silu_kernel(
    # pointers
    x_ptr, out_ptr,
    # sizes
    n_elements,
    # meta
    BLOCK_SIZE: tl.constexpr,
):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x / (1.0 + tl.exp(-x)), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        silu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK_SIZE=1024)
        return out
'''

# Tensor descriptors reach the builder's masked load and store with keyword arguments.
SILU_DESCRIPTORS = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def silu_kernel(
    # pointers
    x_ptr, out_ptr,
    # sizes
    n_elements,
    # meta
    BLOCK_SIZE: tl.constexpr,
):
    pid = tl.program_id(0)
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[n_elements], strides=[1],
                                       block_shape=[BLOCK_SIZE])
    out_desc = tl.make_tensor_descriptor(out_ptr, shape=[n_elements], strides=[1],
                                         block_shape=[BLOCK_SIZE])
    x = x_desc.load([pid * BLOCK_SIZE])
    out_desc.store([pid * BLOCK_SIZE], x / (1.0 + tl.exp(-x)))


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        silu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK_SIZE=1024)
        return out
'''


@pytest.fixture(scope="module")
def mtia_pool():
    with WorkerPool("mtia-sim:2i", EvalConfig(n_input_sets=2), workers=1) as pool:
        yield pool


@pytest.mark.parametrize("candidate", [SILU, SILU_DESCRIPTORS], ids=["pointers", "descriptors"])
def test_timed_mtia_sim_evaluation_gives_a_result(mtia_pool, tmp_path: Path, candidate: str):
    problem = tmp_path / "silu.py"
    problem.write_text(PROBLEM)
    result = mtia_pool.evaluate(problem, candidate)
    assert result.status == "ok", result.message
    t = result.timing
    assert t is not None and t.simulated
    assert t.candidate.median_ms > 0 and t.speedup_vs_eager > 0
    launch = result.profile[0].detail["candidate"]["launches"][0]
    assert launch["name"] == "silu_kernel" and launch["programs"] == 64
    # the hooks saw the kernel's traffic: one fp32 read and one write of the 64x1024 input
    assert launch["bytes_loaded"] == launch["bytes_stored"] == 64 * 1024 * 4
