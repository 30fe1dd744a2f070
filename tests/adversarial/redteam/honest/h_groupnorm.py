"""Honest: GroupNorm, one program per (sample, group): mean and variance over the group's
channels x length, then the per-channel affine. Needs channels divisible by groups, as
nn.GroupNorm does."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def groupnorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr,
                     group_channels, length, num_groups, eps,
                     BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    group = pid % num_groups
    n_group = group_channels * length
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_group
    base = pid * n_group
    x = tl.load(x_ptr + base + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_group
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / n_group
    channel = group * group_channels + offs // length
    w = tl.load(w_ptr + channel, mask=mask, other=1.0)
    b = tl.load(b_ptr + channel, mask=mask, other=0.0)
    tl.store(out_ptr + base + offs, diff / tl.sqrt(var + eps) * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_groups, num_channels):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups, num_channels)

    def forward(self, x):
        x = x.contiguous()
        batch, channels, length = x.shape
        groups = self.gn.num_groups
        out = torch.empty_like(x)
        n_group = channels // groups * length
        groupnorm_kernel[(batch * groups,)](x, self.gn.weight, self.gn.bias, out,
                                            channels // groups, length, groups, self.gn.eps,
                                            BLOCK_SIZE=triton.next_power_of_2(n_group))
        return out
