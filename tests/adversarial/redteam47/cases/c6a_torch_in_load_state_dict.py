"""Class 6, own idea (torch computing outside the recorded forward). Trick: ModelNew overrides
``load_state_dict`` (which the candidate process calls with the reference's weights, outside any
recorder) and computes sigmoid(gate) * exp(log_scale) there with torch; the forward's kernel only
multiplies. The recorder watches forwards only, so part of the problem's work is done by torch
unrecorded (here a small part; for a problem whose cost is in its weights, most of it)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/gated_scale.py", "expect": "refused", "class": "6 outside the forward (own)",
        "targets": ["cpu"]}


@triton.jit
def scale_kernel(x_ptr, s_ptr, out_ptr, n, D, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    s = tl.load(s_ptr + offs % D, mask=mask)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * s, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.gate = nn.Parameter(torch.randn(dim))
        self.log_scale = nn.Parameter(torch.randn(dim) * 0.1)
        self.scale = None

    def load_state_dict(self, state_dict, strict=True, assign=False):
        result = super().load_state_dict(state_dict, strict=strict, assign=assign)
        with torch.no_grad():
            self.scale = (torch.sigmoid(self.gate) * torch.exp(self.log_scale)).contiguous()
        return result

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n, D = x.numel(), x.shape[-1]
        scale_kernel[(triton.cdiv(n, 1024),)](x, self.scale, out, n, D, BLOCK=1024)
        return out
