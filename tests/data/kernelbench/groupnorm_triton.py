"""An honest Triton candidate for KernelBench level1/35_GroupNorm_: one program per (sample,
group), mean and variance over the group's channels x spatial elements, then the per-channel
affine transform."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def groupnorm_kernel(
    # Pointers
    x_ptr, weight_ptr, bias_ptr, out_ptr,
    # Sizes
    group_numel, spatial, channels_per_group, num_groups,
    # Scalars
    eps,
    # Meta-parameters
    BLOCK_SIZE: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)
    group = pid % num_groups
    base = pid * group_numel
    offs = tl.arange(0, BLOCK_SIZE)
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, group_numel, BLOCK_SIZE):
        mask = start + offs < group_numel
        acc += tl.load(x_ptr + base + start + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / group_numel
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, group_numel, BLOCK_SIZE):
        mask = start + offs < group_numel
        x = tl.load(x_ptr + base + start + offs, mask=mask, other=0.0).to(tl.float32)
        xc = tl.where(mask, x - mean, 0.0)
        acc += xc * xc
    rstd = tl.rsqrt(tl.sum(acc, axis=0) / group_numel + eps)
    for start in range(0, group_numel, BLOCK_SIZE):
        mask = start + offs < group_numel
        x = tl.load(x_ptr + base + start + offs, mask=mask, other=0.0).to(tl.float32)
        channel = group * channels_per_group + (start + offs) // spatial
        w = tl.load(weight_ptr + channel, mask=mask, other=0.0)
        b = tl.load(bias_ptr + channel, mask=mask, other=0.0)
        tl.store(out_ptr + base + start + offs, (x - mean) * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, num_groups: int):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n, c = x.shape[0], x.shape[1]
        groups = self.gn.num_groups
        spatial = x.numel() // (n * c)
        out = torch.empty_like(x)
        group_numel = (c // groups) * spatial
        groupnorm_kernel[(n * groups,)](
            x, self.gn.weight, self.gn.bias, out,
            group_numel, spatial, c // groups, groups,
            float(self.gn.eps),
            BLOCK_SIZE=1024,
        )
        return out
