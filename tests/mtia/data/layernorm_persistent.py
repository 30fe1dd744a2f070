"""LayerNorm over the last dim, persistent: one program per PE loads weight and bias once and
strides over the rows (each row read once, written once)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

PROGRAMS = 64


@triton.jit
def layernorm_persistent_kernel(
    # Pointers
    x_ptr, w_ptr, b_ptr, out_ptr,
    # Sizes
    n_rows, n_cols, eps,
    # Strides
    stride_xm, stride_om,
    # Meta-parameters
    BLOCK_N: tl.constexpr, PROGRAMS: tl.constexpr,
):
    offs_n = tl.arange(0, BLOCK_N)
    mask = offs_n < n_cols
    w = tl.load(w_ptr + offs_n, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs_n, mask=mask, other=0.0)
    for row in range(tl.program_id(0), n_rows, PROGRAMS):
        x = tl.load(x_ptr + row * stride_xm + offs_n, mask=mask, other=0.0)
        mean = tl.sum(x, axis=0) / n_cols
        xc = tl.where(mask, x - mean, 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(xc * xc, axis=0) / n_cols + eps)
        tl.store(out_ptr + row * stride_om + offs_n, xc * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=1e-5)

    def forward(self, x):
        if x.dtype != torch.float32:
            raise ValueError(f"expected fp32, got {x.dtype}")
        n_cols = x.shape[-1]
        x2 = x.contiguous().view(-1, n_cols)
        out = torch.empty_like(x2)
        programs = min(PROGRAMS, x2.shape[0])
        layernorm_persistent_kernel[(programs,)](
            x2, self.norm.weight, self.norm.bias, out, x2.shape[0], n_cols, self.norm.eps,
            x2.stride(0), out.stride(0), BLOCK_N=triton.next_power_of_2(n_cols), PROGRAMS=programs)
        return out.view(x.shape)
