import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_gelu_kernel(
    # Pointers
    x_ptr, w_ptr, bias_ptr, out_ptr,
    # Sizes
    M, N, K,
    # Strides: x is [M, K], w is [N, K] (nn.Linear layout, read as its transpose), out is [M, N]
    stride_xm, stride_xk,
    stride_wn, stride_wk,
    stride_om, stride_on,
    # Meta-parameters
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    # Grouped ordering of output tiles so neighbouring programs share x rows and w columns in L2.
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    x_ptrs = x_ptr + offs_m[:, None].to(tl.int64) * stride_xm + offs_k[None, :] * stride_xk
    w_ptrs = w_ptr + offs_k[:, None] * stride_wk + offs_n[None, :].to(tl.int64) * stride_wn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        k_mask = offs_k < K - k
        a = tl.load(x_ptrs, mask=mask_m[:, None] & k_mask[None, :], other=0.0)
        b = tl.load(w_ptrs, mask=k_mask[:, None] & mask_n[None, :], other=0.0)
        # fp32 inputs: "ieee" keeps full fp32 products (TF32 would miss the 1e-3 tolerance).
        acc = tl.dot(a, b, acc, input_precision="ieee")
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk

    bias = tl.load(bias_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)
    acc = acc + bias[None, :]
    out = 0.5 * acc * (1.0 + tl.math.erf(acc * 0.7071067811865476))
    out_ptrs = out_ptr + offs_m[:, None].to(tl.int64) * stride_om + offs_n[None, :] * stride_on
    tl.store(out_ptrs, out.to(out_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])


def linear_gelu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    if weight.dim() != 2 or x.shape[-1] != weight.shape[1]:
        raise ValueError(f"x {list(x.shape)} does not match weight {list(weight.shape)}")
    if bias.shape != (weight.shape[0],):
        raise ValueError(f"bias {list(bias.shape)} does not match weight {list(weight.shape)}")
    if x.dtype != weight.dtype:
        raise ValueError(f"x is {x.dtype} but weight is {weight.dtype}")
    K = x.shape[-1]
    N = weight.shape[0]
    x2 = x.reshape(-1, K)
    M = x2.shape[0]
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    out_shape = (*x.shape[:-1], N)
    if out.numel() == 0:
        return out.view(out_shape)
    # fp32 FMA tiles for Hopper: 128x128 output tile, 32-wide K steps, 3 stages (96 KiB smem).
    BLOCK_M, BLOCK_N, BLOCK_K = 128, 128, 32
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    linear_gelu_kernel[grid](
        x2, weight, bias, out,
        M, N, K,
        x2.stride(0), x2.stride(1),
        weight.stride(0), weight.stride(1),
        out.stride(0), out.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=8,
        num_warps=8, num_stages=3,
    )
    return out.view(out_shape)


class ModelNew(nn.Module):
    """x @ W^T + b with the bias and exact GELU fused into the matmul epilogue."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return linear_gelu(x, self.linear.weight, self.linear.bias)
