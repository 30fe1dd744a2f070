"""Honest (must be accepted): the weight-normalised Linear computed in full on every forward:
a kernel writes g / ||v|| per row into a fresh buffer, the product kernel (exact fp32, ieee)
scales each output column by it and adds the bias. Nothing is kept between calls."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/p7_weightnorm_linear.py", "expect": "accepted", "class": "honest",
        "targets": ["cuda", "cpu"]}


@triton.jit
def row_scale_kernel(v_ptr, g_ptr, s_ptr, K, svn, svk, FOLD: tl.constexpr,
                     BLOCK: tl.constexpr):
    """One row i of v: s = g[i] / ||v[i]||, written to s_ptr[i]; with FOLD, v[i] *= s in place
    instead (v then holds the normalised weight)."""
    i = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for k0 in range(0, K, BLOCK):
        k = k0 + tl.arange(0, BLOCK)
        v = tl.load(v_ptr + i * svn + k * svk, mask=k < K, other=0.0)
        acc += v * v
    s = tl.load(g_ptr + i) / tl.sqrt(tl.sum(acc, axis=0))
    if FOLD:
        for k0 in range(0, K, BLOCK):
            k = k0 + tl.arange(0, BLOCK)
            v = tl.load(v_ptr + i * svn + k * svk, mask=k < K, other=0.0)
            tl.store(v_ptr + i * svn + k * svk, v * s, mask=k < K)
    else:
        tl.store(s_ptr + i, s)


@triton.jit
def linear_kernel(x_ptr, w_ptr, s_ptr, b_ptr, out_ptr, M, N, K, sxm, sxk, swn, swk,
                  HAS_SCALE: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                  BK: tl.constexpr):
    """out = (x @ w^T) (* s per output column) + b, exact fp32 products (ieee)."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(x_ptr + rm[:, None] * sxm + rk[None, :] * sxk,
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * swn + rk[:, None] * swk,
                    mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0)
        acc += tl.dot(a, w, input_precision="ieee")
    if HAS_SCALE:
        acc = acc * tl.load(s_ptr + rn, mask=rn < N, other=0.0)[None, :]
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.v = nn.Parameter(torch.randn(out_features, in_features) / in_features ** 0.5)
        self.g = nn.Parameter(torch.rand(out_features) + 0.5)
        self.b = nn.Parameter(torch.randn(out_features) * 0.1)

    def forward(self, x):
        v, g, b = self.v, self.g, self.b
        n, k = v.shape
        scale = torch.empty((n,), dtype=v.dtype, device=v.device)
        row_scale_kernel[(n,)](v, g, scale, k, v.stride(0), v.stride(1), FOLD=False,
                               BLOCK=1024)
        m = x.shape[0]
        out = torch.empty((m, n), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(m, 16), triton.cdiv(n, 64))
        linear_kernel[grid](x, v, scale, b, out, m, n, k, x.stride(0), x.stride(1),
                            v.stride(0), v.stride(1), HAS_SCALE=True, BM=16, BN=64, BK=64)
        return out
