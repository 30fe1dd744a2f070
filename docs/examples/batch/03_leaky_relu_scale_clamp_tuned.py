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
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = tl.where(x >= 0.0, x, x * negative_slope) * scale
    y = tl.minimum(tl.maximum(y, clamp_min), clamp_max)
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, negative_slope, scale, clamp_min, clamp_max):
        super().__init__()
        self.negative_slope = negative_slope
        self.scale = scale
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x):
        x_flat = x.contiguous().view(-1)
        out = torch.empty_like(x_flat)
        n_elements = x_flat.numel()
        BLOCK_SIZE = 256
        grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
        leaky_relu_scale_clamp_kernel[grid](
            x_flat, out,
            n_elements,
            float(self.negative_slope), float(self.scale),
            float(self.clamp_min), float(self.clamp_max),
            BLOCK_SIZE=BLOCK_SIZE, num_warps=2,
        )
        return out.view(x.shape)
