"""Small Triton kernels the simulator tests run (imported after conftest sets TRITON_INTERPRET)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(
    # pointers
    x_ptr, y_ptr, out_ptr,
    # sizes
    n,
    # meta
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def add(x: torch.Tensor, y: torch.Tensor, block: int = 1024) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block)
    return out


@triton.jit
def empty_kernel(out_ptr):
    tl.store(out_ptr, 1.0)


@triton.jit
def matmul_kernel(
    # pointers
    a_ptr, b_ptr, c_ptr,
    # sizes
    M, N, K,
    # strides
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    # meta
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, UPCAST: tl.constexpr = False,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k * BLOCK_K), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k * BLOCK_K) & (offs_n[None, :] < N), other=0.0)
        if UPCAST:
            acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)


def matmul(a: torch.Tensor, b: torch.Tensor, bm: int = 128, bn: int = 128, bk: int = 64,
           upcast: bool = False) -> torch.Tensor:
    m, k = a.shape
    _, n = b.shape
    c = torch.empty((m, n), dtype=a.dtype)
    grid = (triton.cdiv(m, bm), triton.cdiv(n, bn))
    matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, UPCAST=upcast)
    return c


@triton.jit
def naive_matmul_kernel(
    # pointers
    a_ptr, b_ptr, c_ptr,
    # sizes
    M, N, K,
):
    pid = tl.program_id(0)
    row = pid // N
    col = pid % N
    acc = 0.0
    for k in range(0, K):
        a = tl.load(a_ptr + row * K + k)
        b = tl.load(b_ptr + k * N + col)
        acc += a.to(tl.float32) * b.to(tl.float32)
    tl.store(c_ptr + row * N + col, acc)


def naive_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    m, k = a.shape
    _, n = b.shape
    c = torch.empty((m, n), dtype=torch.float32)
    naive_matmul_kernel[(m * n,)](a, b, c, m, n, k)
    return c


@triton.jit
def softmax_kernel(
    # pointers
    x_ptr, out_ptr,
    # sizes and strides
    n_cols, stride_row,
    # meta
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * stride_row + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    y = e / tl.sum(e, axis=0)
    tl.store(out_ptr + row * stride_row + offs, y, mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty_like(x)
    softmax_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
    return out


@triton.jit
def copy_offset_kernel(x_ptr, out_ptr, n, SHIFT: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs + SHIFT, mask=mask)
    tl.store(out_ptr + offs, x, mask=mask)


@triton.jit
def exp_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.exp(x.to(tl.float32)).to(x.dtype), mask=mask)


@triton.jit
def big_tile_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = x * 2.0
    tl.store(out_ptr + offs, y + x)


@triton.jit
def scatter_kernel(x_ptr, idx_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    idx = tl.load(idx_ptr + offs, mask=mask)
    tl.store(out_ptr + idx, x, mask=mask)


@triton.jit
def gather_kernel(x_ptr, idx_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    idx = tl.load(idx_ptr + offs, mask=mask)
    x = tl.load(x_ptr + idx, mask=mask)
    tl.store(out_ptr + offs, x, mask=mask)


@triton.jit
def ragged_sum_kernel(
    # pointers
    x_ptr, out_ptr,
    # sizes: program p sums (p // DIV) % MOD + 1 blocks
    DIV, MOD,
    # meta
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    n = (pid // DIV) % MOD + 1
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, n):
        acc += tl.load(x_ptr + i * BLOCK + offs)
    tl.store(out_ptr + pid * BLOCK + offs, acc)


def ragged_sum(x: torch.Tensor, programs: int, div: int, mod: int, block: int = 256) -> torch.Tensor:
    out = torch.empty(programs * block, dtype=torch.float32)
    ragged_sum_kernel[(programs,)](x, out, div, mod, BLOCK=block)
    return out


@triton.jit
def persistent_softmax_kernel(
    # pointers
    x_ptr, out_ptr,
    # sizes and strides
    n_rows, n_cols, stride_row,
    # meta
    BLOCK: tl.constexpr, PROGRAMS: tl.constexpr,
):
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    for row in range(tl.program_id(0), n_rows, PROGRAMS):
        x = tl.load(x_ptr + row * stride_row + offs, mask=mask, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + row * stride_row + offs, e / tl.sum(e, axis=0), mask=mask)


def persistent_softmax(x: torch.Tensor, programs: int = 64) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty_like(x)
    persistent_softmax_kernel[(programs,)](x, out, rows, cols, x.stride(0),
                                           BLOCK=triton.next_power_of_2(cols), PROGRAMS=programs)
    return out


@triton.jit
def online_softmax_kernel(
    # pointers
    x_ptr, out_ptr,
    # sizes and strides
    n_cols, stride_row,
    # meta
    BLOCK: tl.constexpr,
):
    # Rows wider than a tile: max and sum of exp in one online pass, then the output pass.
    row_ptr = x_ptr + tl.program_id(0).to(tl.int64) * stride_row
    out_row = out_ptr + tl.program_id(0).to(tl.int64) * stride_row
    offs = tl.arange(0, BLOCK)
    m = -float("inf")
    s = 0.0
    for start in range(0, n_cols, BLOCK):
        x = tl.load(row_ptr + start + offs, mask=start + offs < n_cols, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for start in range(0, n_cols, BLOCK):
        mask = start + offs < n_cols
        x = tl.load(row_ptr + start + offs, mask=mask, other=-float("inf"))
        tl.store(out_row + start + offs, tl.exp(x - m) / s, mask=mask)


def online_softmax(x: torch.Tensor, block: int = 4096) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty_like(x)
    online_softmax_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=block)
    return out
