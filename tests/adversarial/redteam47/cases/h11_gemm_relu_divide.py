"""Honest (must be accepted): Linear + ReLU + divide, the GEMM as tl.dot in ieee precision, the
divisor taken from the constructor and passed to the kernel."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/gemm_relu_divide.py", "expect": "accepted",
        "class": "honest", "targets": ["cpu"]}


@triton.jit
def linear_relu_kernel(x_ptr, w_ptr, b_ptr, out_ptr, M, N, K, sxm, sxk, swn, swk, divisor,
                       BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
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
    bias = tl.load(b_ptr + rn, mask=rn < N, other=0.0)
    acc = tl.maximum(acc + bias[None, :], 0.0) / divisor
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, divisor):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.divisor = divisor

    def forward(self, x):
        M, K = x.shape
        w, b = self.linear.weight, self.linear.bias
        N = w.shape[0]
        out = torch.empty((M, N), dtype=x.dtype)
        grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
        linear_relu_kernel[grid](x, w, b, out, M, N, K, x.stride(0), x.stride(1), w.stride(0),
                                 w.stride(1), self.divisor, BM=32, BN=32, BK=32)
        return out
