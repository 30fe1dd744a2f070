"""Slack, a reduction that cancels: KL divergence answered by a near-zero value that still
depends on the input (1e-6 of the first prediction, so the outputs differ across input sets
and no "does not depend on the input" check fires). The truth is ~5e-3 and the fp32 error ~1e-7:
the slack must not reach the result itself."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def tiny_kernel(p_ptr, out_ptr):
    p = tl.load(p_ptr)
    tl.store(out_ptr, p * 1e-6)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        predictions = predictions.contiguous()
        out = torch.empty((), dtype=predictions.dtype, device=predictions.device)
        tiny_kernel[(1,)](predictions, out)
        return out
