import torch
import torch.nn as nn
import triton
import triton.language as tl

# Widest row kept whole in registers; wider rows take two passes over memory.
MAX_BLOCK = 8192


@triton.jit
def l2_normalize_kernel(
    # Pointers
    x_ptr, out_ptr,
    # Sizes
    n_cols,
    # Strides
    stride_xm, stride_om,
    # Scalars
    eps,
    # Meta-parameters
    BLOCK_SIZE: tl.constexpr,
    SINGLE_PASS: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_xm
    out_row = out_ptr + row * stride_om
    offs = tl.arange(0, BLOCK_SIZE)
    if SINGLE_PASS:
        mask = offs < n_cols
        x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
        inv = 1.0 / tl.maximum(tl.sqrt(tl.sum(x * x, axis=0)), eps)
        tl.store(out_row + offs, (x * inv).to(out_ptr.dtype.element_ty), mask=mask)
    else:
        acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
        for start in range(0, n_cols, BLOCK_SIZE):
            mask = start + offs < n_cols
            x = tl.load(x_row + start + offs, mask=mask, other=0.0).to(tl.float32)
            acc += x * x
        inv = 1.0 / tl.maximum(tl.sqrt(tl.sum(acc, axis=0)), eps)
        for start in range(0, n_cols, BLOCK_SIZE):
            mask = start + offs < n_cols
            x = tl.load(x_row + start + offs, mask=mask, other=0.0).to(tl.float32)
            tl.store(out_row + start + offs, (x * inv).to(out_ptr.dtype.element_ty), mask=mask)


def l2_normalize_rows(x: torch.Tensor, eps: float) -> torch.Tensor:
    if x.dim() != 2:
        raise ValueError(f"expected a 2-D tensor, got shape {list(x.shape)}")
    n_rows, n_cols = x.shape
    if x.stride(1) != 1:
        x = x.contiguous()
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    if out.numel() == 0:
        return out
    BLOCK_SIZE = min(MAX_BLOCK, triton.next_power_of_2(n_cols))
    num_warps = 4 if BLOCK_SIZE <= 1024 else (8 if BLOCK_SIZE <= 4096 else 16)
    l2_normalize_kernel[(n_rows,)](
        x, out,
        n_cols,
        x.stride(0), out.stride(0),
        float(eps),
        BLOCK_SIZE=BLOCK_SIZE, SINGLE_PASS=n_cols <= BLOCK_SIZE, num_warps=num_warps,
    )
    return out


class ModelNew(nn.Module):
    """x / max(||x||_2, eps) per row, one program per row."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return l2_normalize_rows(x, 1e-12)
