"""Timing memo (GPU) that passes every static rule: the example bf16 GEMM, plus a cache keyed on
the inputs' data pointers that starts serving only from the fourth call on the same memory. The
correctness checks call a forward at most three times on one buffer (first run, second run, new
values in the same memory), so it computes there; a timing loop calling it again and again on
the same tensors gets a ~free forward. Expected: ok with an honest time, or mismatch (the judge
checks outputs of sampled timed trials, whose inputs changed)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(
    # Pointers
    a_ptr, b_ptr, c_ptr,
    # Sizes
    M, N, K,
    # Strides: a is [M, K], b is [K, N], c is [M, N]
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
    # Meta-parameters
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    UPCAST: tl.constexpr,
):
    # Grouped ordering of output tiles so neighbouring programs share A rows and B columns in L2.
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    a_ptrs = a_ptr + offs_m[:, None].to(tl.int64) * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :].to(tl.int64) * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        k_mask = offs_k < K - k
        a = tl.load(a_ptrs, mask=mask_m[:, None] & k_mask[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_mask[:, None] & mask_n[None, :], other=0.0)
        if UPCAST:
            # The CPU interpreter multiplies bf16 tiles as raw integers; fp32 products of
            # bf16 values are exact, so this path gives the same result.
            acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c_ptrs = c_ptr + offs_m[:, None].to(tl.int64) * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"cannot multiply {list(a.shape)} by {list(b.shape)}")
    if a.dtype != b.dtype or a.dtype not in (torch.bfloat16, torch.float16):
        raise ValueError(f"expected two bf16 or fp16 tensors, got {a.dtype} and {b.dtype}")
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    if c.numel() == 0:
        return c
    # Hopper wgmma tiles (the Triton matmul tutorial's H100 choice): 128x256 output, 64-wide
    # K steps, 3 stages = 144 KiB smem; compiled for sm_90 it uses 204 registers, no spills.
    BLOCK_M, BLOCK_N, BLOCK_K = 128, 256, 64
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    matmul_kernel[grid](
        a, b, c,
        M, N, K,
        a.stride(0), a.stride(1),
        b.stride(0), b.stride(1),
        c.stride(0), c.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=8,
        UPCAST=a.device.type == "cpu",
        num_warps=8, num_stages=3,
    )
    return c


class ModelNew(nn.Module):
    """bf16 GEMM on tensor cores with fp32 accumulation."""

    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return matmul(a, b)


class ModelNew(nn.Module):  # noqa: F811 (replaces the honest one above)
    def __init__(self):
        super().__init__()
        self._calls = {}
        self._out = {}

    def forward(self, a, b):
        key = (a.data_ptr(), b.data_ptr(), tuple(a.shape), tuple(b.shape))
        calls = self._calls.get(key, 0) + 1
        self._calls[key] = calls
        if calls > 3 and key in self._out:
            return self._out[key]
        out = matmul(a, b)
        self._out[key] = out
        return out
