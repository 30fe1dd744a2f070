import torch
import torch.nn as nn
import triton
import triton.language as tl

# Widest row kept whole in registers; wider rows take two passes over memory.
MAX_BLOCK = 8192


@triton.jit
def rmsnorm_kernel(
    # Pointers
    x_ptr, weight_ptr, out_ptr,
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
        rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
        w = tl.load(weight_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_row + offs, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)
    else:
        acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
        for start in range(0, n_cols, BLOCK_SIZE):
            mask = start + offs < n_cols
            x = tl.load(x_row + start + offs, mask=mask, other=0.0).to(tl.float32)
            acc += x * x
        rstd = tl.rsqrt(tl.sum(acc, axis=0) / n_cols + eps)
        for start in range(0, n_cols, BLOCK_SIZE):
            mask = start + offs < n_cols
            x = tl.load(x_row + start + offs, mask=mask, other=0.0).to(tl.float32)
            w = tl.load(weight_ptr + start + offs, mask=mask, other=0.0).to(tl.float32)
            tl.store(out_row + start + offs, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    n_cols = x.shape[-1]
    if weight.shape != (n_cols,):
        raise ValueError(f"weight shape {list(weight.shape)} must be [{n_cols}]")
    x2 = x.contiguous().view(-1, n_cols)
    out = torch.empty_like(x2)
    n_rows = x2.shape[0]
    if out.numel() == 0:
        return out.view(x.shape)
    BLOCK_SIZE = min(MAX_BLOCK, triton.next_power_of_2(n_cols))
    num_warps = 4 if BLOCK_SIZE <= 1024 else (8 if BLOCK_SIZE <= 4096 else 16)
    rmsnorm_kernel[(n_rows,)](
        x2, weight.contiguous(), out,
        n_cols,
        x2.stride(0), out.stride(0),
        float(eps),
        BLOCK_SIZE=BLOCK_SIZE, SINGLE_PASS=n_cols <= BLOCK_SIZE, num_warps=num_warps,
    )
    return out.view(x.shape)


class ModelNew(nn.Module):
    """RMSNorm over the last dimension, one program per row, weight fused."""

    def __init__(self, hidden, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)
