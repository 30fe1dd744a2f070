import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv_epilogue_kernel(
    # Pointers (y is the conv output without its bias)
    y_ptr, conv_bias_ptr, scale_ptr, bias_ptr, out_ptr,
    # Sizes
    n_channels, plane_size,
    # Meta-parameters
    BLOCK_SIZE: tl.constexpr,
    HAS_CONV_BIAS: tl.constexpr,
):
    # Axis 0 walks (image, channel) planes, so the per-channel constants are three scalar loads
    # per program instead of a gather per element.
    plane = tl.program_id(0)
    channel = plane % n_channels
    offs = tl.program_id(1) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < plane_size
    plane_start = plane.to(tl.int64) * plane_size
    y = tl.load(y_ptr + plane_start + offs, mask=mask, other=0.0).to(tl.float32)
    if HAS_CONV_BIAS:
        y = y + tl.load(conv_bias_ptr + channel).to(tl.float32)
    scale = tl.load(scale_ptr + channel).to(tl.float32)
    shift = tl.load(bias_ptr + channel).to(tl.float32)
    out = tl.maximum(y, 0.0) * scale + shift
    tl.store(out_ptr + plane_start + offs, out.to(out_ptr.dtype.element_ty), mask=mask)


def conv2d_relu_scale_bias(x, conv: nn.Conv2d, scale, bias):
    if x.dim() != 4:
        raise ValueError(f"expected an NCHW tensor, got shape {list(x.shape)}")
    c_out = conv.out_channels
    if scale.numel() != c_out or bias.numel() != c_out:
        raise ValueError(f"scale {list(scale.shape)} / bias {list(bias.shape)} need {c_out} values")
    # The convolution itself is the library op (allowed for this problem); its bias is added in
    # the fused epilogue instead of by a separate pass over the conv output.
    y = torch.nn.functional.conv2d(
        x, conv.weight, None, conv.stride, conv.padding, conv.dilation, conv.groups
    ).contiguous()
    n, c, h, w = y.shape
    plane_size = h * w
    out = torch.empty_like(y)
    if out.numel() == 0:
        return out
    BLOCK_SIZE = min(2048, triton.next_power_of_2(plane_size))
    grid = (n * c, triton.cdiv(plane_size, BLOCK_SIZE))
    has_conv_bias = conv.bias is not None
    conv_epilogue_kernel[grid](
        y, conv.bias if has_conv_bias else y, scale.contiguous(), bias.contiguous(), out,
        c, plane_size,
        BLOCK_SIZE=BLOCK_SIZE, HAS_CONV_BIAS=has_conv_bias, num_warps=4,
    )
    return out


class ModelNew(nn.Module):
    """Library conv2d, then conv bias + ReLU + per-channel scale and bias in one Triton pass."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.scale = nn.Parameter(torch.ones(out_channels, 1, 1))
        self.bias = nn.Parameter(torch.zeros(out_channels, 1, 1))

    def forward(self, x):
        return conv2d_relu_scale_bias(x, self.conv, self.scale, self.bias)
