"""Honest (must be accepted): frozen batch norm reading weight, bias and both running-statistics
buffers in the kernel."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/frozen_bn.py", "expect": "accepted", "class": "honest",
        "targets": ["cpu"]}


@triton.jit
def frozen_bn_kernel(x_ptr, w_ptr, b_ptr, mean_ptr, var_ptr, out_ptr, C, HW, n, eps,
                     BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    c = (offs // HW) % C
    w = tl.load(w_ptr + c, mask=mask)
    b = tl.load(b_ptr + c, mask=mask)
    mean = tl.load(mean_ptr + c, mask=mask)
    var = tl.load(var_ptr + c, mask=mask)
    scale = w / tl.sqrt(var + eps)
    shift = b - mean * scale
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * scale + shift, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(num_features))
        self.bias = nn.Parameter(torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))

    def forward(self, x):
        x = x.contiguous()
        B, C, H, W = x.shape
        out = torch.empty_like(x)
        n = x.numel()
        frozen_bn_kernel[(triton.cdiv(n, 1024),)](x, self.weight, self.bias, self.running_mean,
                                                  self.running_var, out, C, H * W, n, self.eps,
                                                  BLOCK=1024)
        return out
