import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def leaky_relu_scale_clamp_kernel(
    # Pointers
    x_ptr, out_ptr,
    # Sizes
    n_elements,
    # Scalars
    negative_slope, scale, clamp_min, clamp_max,
    # Meta-parameters
    BLOCK_SIZE: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    x = tl.where(x >= 0.0, x, x * negative_slope) * scale
    x = tl.minimum(tl.maximum(x, clamp_min), clamp_max)
    tl.store(out_ptr + offs, x.to(out_ptr.dtype.element_ty), mask=mask)


def leaky_relu_scale_clamp(x, negative_slope, scale, clamp_min, clamp_max):
    if clamp_min > clamp_max:
        raise ValueError(f"clamp_min {clamp_min} > clamp_max {clamp_max}")
    x_flat = x.contiguous().view(-1)
    out = torch.empty_like(x_flat)
    n_elements = x_flat.numel()
    if n_elements == 0:
        return out.view(x.shape)
    BLOCK_SIZE = 2048
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    leaky_relu_scale_clamp_kernel[grid](
        x_flat, out,
        n_elements,
        float(negative_slope), float(scale), float(clamp_min), float(clamp_max),
        BLOCK_SIZE=BLOCK_SIZE, num_warps=8,
    )
    return out.view(x.shape)


class ModelNew(nn.Module):
    """clamp(leaky_relu(x) * scale, lo, hi) in one Triton pass."""

    def __init__(self, negative_slope, scale, clamp_min, clamp_max):
        super().__init__()
        self.negative_slope = negative_slope
        self.scale = scale
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x):
        return leaky_relu_scale_clamp(
            x, self.negative_slope, self.scale, self.clamp_min, self.clamp_max
        )
