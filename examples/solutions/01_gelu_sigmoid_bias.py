import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gelu_sigmoid_bias_kernel(
    # Pointers
    x_ptr, y_ptr, bias_ptr, out_ptr,
    # Sizes
    n_cols,
    # Strides (row strides; columns are contiguous)
    stride_xm, stride_ym, stride_om,
    # Meta-parameters
    BLOCK_SIZE: tl.constexpr,
):
    # Rows on axis 0 (no 65535 limit), column blocks on axis 1: the bias index is the
    # column offset itself, so no per-element division is needed.
    row = tl.program_id(0).to(tl.int64)
    offs_n = tl.program_id(1) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs_n < n_cols
    x = tl.load(x_ptr + row * stride_xm + offs_n, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + row * stride_ym + offs_n, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(bias_ptr + offs_n, mask=mask, other=0.0).to(tl.float32)
    gelu = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    sig = 1.0 / (1.0 + tl.exp(-y))
    out = gelu * sig + b
    tl.store(out_ptr + row * stride_om + offs_n, out.to(out_ptr.dtype.element_ty), mask=mask)


def gelu_sigmoid_bias(x: torch.Tensor, y: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    if x.shape != y.shape or x.dtype != y.dtype:
        raise ValueError(f"x {x.dtype}{list(x.shape)} and y {y.dtype}{list(y.shape)} must match")
    if bias.dim() != 1 or bias.shape[0] != x.shape[-1]:
        raise ValueError(f"bias shape {list(bias.shape)} does not match last dim {x.shape[-1]}")
    n_cols = x.shape[-1]
    x2 = x.contiguous().view(-1, n_cols)
    y2 = y.contiguous().view(-1, n_cols)
    bias = bias.contiguous()
    out = torch.empty_like(x2)
    n_rows = x2.shape[0]
    if out.numel() == 0:
        return out.view(x.shape)
    BLOCK_SIZE = min(1024, triton.next_power_of_2(n_cols))
    grid = (n_rows, triton.cdiv(n_cols, BLOCK_SIZE))
    gelu_sigmoid_bias_kernel[grid](
        x2, y2, bias, out,
        n_cols,
        x2.stride(0), y2.stride(0), out.stride(0),
        BLOCK_SIZE=BLOCK_SIZE, num_warps=4,
    )
    return out.view(x.shape)


class ModelNew(nn.Module):
    """GELU(x) * sigmoid(y) + bias in one fused Triton pass."""

    def __init__(self, dim):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(dim))

    def forward(self, x, y):
        return gelu_sigmoid_bias(x, y, self.bias)
