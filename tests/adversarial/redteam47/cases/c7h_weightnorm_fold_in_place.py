"""Class 7 (state the judge does not compare: a weight, not a forward argument). Trick: a
weight-normalised Linear (W = g * v / ||v|| per row), whose weight work (the row norms, the
normalised copy) costs as much as the product at a batch of 8. The first forward of an instance
runs a Triton kernel that overwrites the parameter ``v`` in place with g * v / ||v|| and sets a
flag; every later forward is the bare product with the folded weight. The work is done by a
custom kernel inside a recorded forward (nothing for the op recorder, unlike c6a/c6b), the
judge's inputs-after check compares the forward's arguments only (never the candidate's
parameters or buffers), and no check changes the weights of an instance it has already built:
the perturbed-parameter check builds a new instance (a new flag). So every correctness check
passes, and on a GPU the timing loop (on one instance, its weights fixed) times a kernel that
skips the work the reference does on every call: about half the memory traffic of an honest
fused kernel (h2e), a sixth of the reference's. Any caller that updates the weights (training,
load_state_dict on a live model, g changed in place) gets results from the stale fold."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/p7_weightnorm_linear.py", "expect": "refused",
        "class": "7 state not compared", "targets": ["cuda", "cpu"]}


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
        self.folded = False

    def forward(self, x):
        v, g, b = self.v, self.g, self.b
        n, k = v.shape
        if not self.folded:  # once per instance: v becomes g * v / ||v|| in its own memory
            row_scale_kernel[(n,)](v, g, g, k, v.stride(0), v.stride(1), FOLD=True,
                                   BLOCK=1024)
            self.folded = True
        m = x.shape[0]
        out = torch.empty((m, n), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(m, 16), triton.cdiv(n, 64))
        linear_kernel[grid](x, v, b, b, out, m, n, k, x.stride(0), x.stride(1), v.stride(0),
                            v.stride(1), HAS_SCALE=False, BM=16, BN=64, BK=64)
        return out
