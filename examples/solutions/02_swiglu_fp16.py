import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def swiglu_kernel(
    # Pointers
    x_ptr, out_ptr,
    # Sizes
    hidden,
    # Strides (row strides; columns are contiguous)
    stride_xm, stride_om,
    # Meta-parameters
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    offs_n = tl.program_id(1) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs_n < hidden
    gate_ptrs = x_ptr + row * stride_xm + offs_n
    # Half precision in memory, fp32 in registers.
    gate = tl.load(gate_ptrs, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(gate_ptrs + hidden, mask=mask, other=0.0).to(tl.float32)
    out = gate / (1.0 + tl.exp(-gate)) * up
    tl.store(out_ptr + row * stride_om + offs_n, out.to(out_ptr.dtype.element_ty), mask=mask)


def swiglu(x: torch.Tensor) -> torch.Tensor:
    if x.dim() < 1 or x.shape[-1] % 2 != 0:
        raise ValueError(f"last dimension must be even, got shape {list(x.shape)}")
    hidden = x.shape[-1] // 2
    x2 = x.contiguous().view(-1, 2 * hidden)
    n_rows = x2.shape[0]
    out = torch.empty((n_rows, hidden), dtype=x.dtype, device=x.device)
    out_shape = (*x.shape[:-1], hidden)
    if out.numel() == 0:
        return out.view(out_shape)
    BLOCK_SIZE = min(2048, triton.next_power_of_2(hidden))
    grid = (n_rows, triton.cdiv(hidden, BLOCK_SIZE))
    swiglu_kernel[grid](
        x2, out,
        hidden,
        x2.stride(0), out.stride(0),
        BLOCK_SIZE=BLOCK_SIZE, num_warps=4,
    )
    return out.view(out_shape)


class ModelNew(nn.Module):
    """silu(gate) * up over the two halves of the last dimension, fused in one Triton pass."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return swiglu(x)
