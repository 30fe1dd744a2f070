import torch
import torch.nn as nn
import triton
import triton.language as tl

# Widest row kept whole in registers; wider rows take three passes over memory.
MAX_BLOCK = 8192


@triton.jit
def layernorm_kernel(
    # Pointers
    x_ptr, weight_ptr, bias_ptr, out_ptr,
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
        mean = tl.sum(x, axis=0) / n_cols
        xc = tl.where(mask, x - mean, 0.0)
        rstd = tl.rsqrt(tl.sum(xc * xc, axis=0) / n_cols + eps)
        w = tl.load(weight_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(bias_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_row + offs, (xc * rstd * w + b).to(out_ptr.dtype.element_ty), mask=mask)
    else:
        # Mean, then centred variance (two-pass: stable for large means), then normalize.
        acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
        for start in range(0, n_cols, BLOCK_SIZE):
            mask = start + offs < n_cols
            acc += tl.load(x_row + start + offs, mask=mask, other=0.0).to(tl.float32)
        mean = tl.sum(acc, axis=0) / n_cols
        acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
        for start in range(0, n_cols, BLOCK_SIZE):
            mask = start + offs < n_cols
            x = tl.load(x_row + start + offs, mask=mask, other=0.0).to(tl.float32)
            xc = tl.where(mask, x - mean, 0.0)
            acc += xc * xc
        rstd = tl.rsqrt(tl.sum(acc, axis=0) / n_cols + eps)
        for start in range(0, n_cols, BLOCK_SIZE):
            mask = start + offs < n_cols
            x = tl.load(x_row + start + offs, mask=mask, other=0.0).to(tl.float32)
            w = tl.load(weight_ptr + start + offs, mask=mask, other=0.0).to(tl.float32)
            b = tl.load(bias_ptr + start + offs, mask=mask, other=0.0).to(tl.float32)
            out = (x - mean) * rstd * w + b
            tl.store(out_row + start + offs, out.to(out_ptr.dtype.element_ty), mask=mask)


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> torch.Tensor:
    n_cols = x.shape[-1]
    if weight.shape != (n_cols,) or bias.shape != (n_cols,):
        raise ValueError(
            f"weight {list(weight.shape)} / bias {list(bias.shape)} must be [{n_cols}]"
        )
    x2 = x.contiguous().view(-1, n_cols)
    out = torch.empty_like(x2)
    n_rows = x2.shape[0]
    if out.numel() == 0:
        return out.view(x.shape)
    BLOCK_SIZE = min(MAX_BLOCK, triton.next_power_of_2(n_cols))
    num_warps = 4 if BLOCK_SIZE <= 1024 else (8 if BLOCK_SIZE <= 4096 else 16)
    layernorm_kernel[(n_rows,)](
        x2, weight.contiguous(), bias.contiguous(), out,
        n_cols,
        x2.stride(0), out.stride(0),
        float(eps),
        BLOCK_SIZE=BLOCK_SIZE, SINGLE_PASS=n_cols <= BLOCK_SIZE, num_warps=num_warps,
    )
    return out.view(x.shape)


class ModelNew(nn.Module):
    """LayerNorm over the last dimension, one program per row, affine fused."""

    def __init__(self, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=1e-5)

    def forward(self, x):
        return layer_norm(x, self.norm.weight, self.norm.bias, self.norm.eps)
