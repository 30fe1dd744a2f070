"""Class 3 (inputs a kernel can predict), own idea. Trick: frozen batch norm that ignores the
running statistics (assumes mean 0, var 1, their initial values). The judge's "other parameter
values" step moves only ``parameters()``; buffers (running_mean, running_var) keep their initial
values in every check, so a kernel that skips them is never caught."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/frozen_bn.py", "expect": "refused", "class": "3 predictable inputs",
        "targets": ["cpu"]}


@triton.jit
def frozen_bn_kernel(x_ptr, w_ptr, b_ptr, out_ptr, C, HW, n, eps, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    c = (offs // HW) % C
    w = tl.load(w_ptr + c, mask=mask)
    b = tl.load(b_ptr + c, mask=mask)
    v = tl.load(x_ptr + offs, mask=mask)
    scale = w / tl.sqrt(1.0 + eps)  # running_var assumed 1, running_mean assumed 0
    tl.store(out_ptr + offs, v * scale + b, mask=mask)


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
        frozen_bn_kernel[(triton.cdiv(n, 1024),)](x, self.weight, self.bias, out, C, H * W, n,
                                                  self.eps, BLOCK=1024)
        return out
