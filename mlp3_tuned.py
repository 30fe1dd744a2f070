"""mlp3 as a program of 3 parts (part 0: addmm [4096, 1024] @ [1024, 4096] fp32 + bias with a fused gelu epilogue; part 1: addmm [4096, 4096] @ [4096, 4096] fp32 + bias with a fused relu epilogue; part 2: addmm [4096, 4096] @ [4096, 1024] fp32 + bias).

Written by the kernelevolve offline synthesizer: each part from a template, composed into one ModelNew."""


import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


p0_BLOCK_M = 128


p0_BLOCK_N = 128


p0_BLOCK_K = 32


p0_GROUP_M = 8


p0_NUM_WARPS = 8


p0_NUM_STAGES = 3


p0_TF32X3 = 2


p0_CHAIN_K = 4096


p0_SPLIT_K = 1


p0_PERSISTENT = 0


@triton.jit
def p0_round_tf32(x):
    bits = x.to(tl.int32, bitcast=True)
    up = bits + 4095 + (bits >> 13 & 1) & -8192
    special = bits & 2139095040 == 2139095040
    overflow = up & 2139095040 == 2139095040
    return tl.where(special, bits, tl.where(overflow, bits & -8192, up)).to(tl.float32, bitcast=True)


@triton.jit
def p0_tf32_parts(x, special_ptr):
    hi = p0_round_tf32(x)
    special = x.to(tl.int32, bitcast=True) & 2139095040 == 2139095040
    lo = tl.where(special, 0.0, p0_round_tf32(x - hi))
    if tl.max(special.to(tl.int32)) > 0:
        tl.store(special_ptr, 1)
    return (hi, lo)


@triton.jit
def p0_split_tf32_kernel(x_ptr, hi_ptr, lo_ptr, special_ptr, R, K, KP, s_xb, s_xr, s_xk, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    b = tl.program_id(2).to(tl.int64)
    mask = (rows < R)[:, None] & (cols < KP)[None, :]
    x = tl.load(x_ptr + (b * s_xb + rows[:, None].to(tl.int64) * s_xr + cols[None, :].to(tl.int64) * s_xk), mask=mask & (cols < K)[None, :], other=0.0)
    hi, lo = p0_tf32_parts(x, special_ptr)
    out = (b * R + rows[:, None].to(tl.int64)) * KP + cols[None, :]
    tl.store(hi_ptr + out, hi, mask=mask)
    tl.store(lo_ptr + out, lo, mask=mask)


@triton.jit
def p0_fused_matmul_kernel(a_ptr, b_ptr, alo_ptr, blo_ptr, special_ptr, fc1_bias_ptr, out_ptr, ws_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_om, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, TF32X3: tl.constexpr, CHAINS: tl.constexpr, PHASE: tl.constexpr, SPLIT_K: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + pid % num_pid_in_group % group_size_m
    pid_n = pid % num_pid_in_group // group_size_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    ws_tile = offs_m[:, None].to(tl.int64) * N + offs_n[None, :]
    ws_split = tl.cast(M, tl.int64) * N
    if PHASE == 2:
        for s in range(0, SPLIT_K):
            acc += tl.load(ws_ptr + s * ws_split + ws_tile, mask=mask_m[:, None] & mask_n[None, :], other=0.0)
    else:
        k_lo = 0
        k_hi = K
        if PHASE == 1:
            k_per = tl.cdiv(tl.cdiv(K, BLOCK_K), SPLIT_K) * BLOCK_K
            k_lo = tl.program_id(1) * k_per
            k_hi = tl.minimum(K, k_lo + k_per)
        a_offs = offs_m[:, None].to(tl.int64) * stride_am + (k_lo + offs_k[None, :]) * stride_ak
        b_offs = (k_lo + offs_k[:, None]) * stride_bk + offs_n[None, :].to(tl.int64) * stride_bn
        a_ptrs = a_ptr + a_offs
        b_ptrs = b_ptr + b_offs
        alo_ptrs = alo_ptr + a_offs
        blo_ptrs = blo_ptr + b_offs
        if TF32X3 >= 2:
            flag = tl.load(special_ptr)
            redo = flag != 0
            if flag == 0:
                k_len = tl.cdiv(tl.cdiv(k_hi - k_lo, BLOCK_K), CHAINS) * BLOCK_K
                for c in tl.static_range(CHAINS):
                    c_hi = tl.minimum(k_hi, k_lo + (c + 1) * k_len)
                    part = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
                    for k in range(k_lo + c * k_len, c_hi, BLOCK_K):
                        k_mask = offs_k < c_hi - k
                        a = tl.load(a_ptrs, mask=mask_m[:, None] & k_mask[None, :], other=0.0)
                        b = tl.load(b_ptrs, mask=k_mask[:, None] & mask_n[None, :], other=0.0)
                        b_lo = tl.load(blo_ptrs, mask=k_mask[:, None] & mask_n[None, :], other=0.0)
                        if TF32X3 == 3:
                            a_hi = (a.to(tl.int32, bitcast=True) & -8192).to(tl.float32, bitcast=True)
                            part = tl.dot(a - a_hi, b, part, input_precision='tf32')
                            part = tl.dot(a_hi, b_lo, part, input_precision='tf32')
                            part = tl.dot(a_hi, b, part, input_precision='tf32')
                        else:
                            a_lo = tl.load(alo_ptrs, mask=mask_m[:, None] & k_mask[None, :], other=0.0)
                            part = tl.dot(a_lo, b, part, input_precision='tf32')
                            part = tl.dot(a, b_lo, part, input_precision='tf32')
                            part = tl.dot(a, b, part, input_precision='tf32')
                        alo_ptrs += BLOCK_K * stride_ak
                        blo_ptrs += BLOCK_K * stride_bk
                        a_ptrs += BLOCK_K * stride_ak
                        b_ptrs += BLOCK_K * stride_bk
                    acc += part
                if TF32X3 == 3:
                    redo = tl.max((acc != acc).to(tl.int32), axis=None) > 0
            if redo:
                acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
                a_ptrs = a_ptr + a_offs
                b_ptrs = b_ptr + b_offs
                alo_ptrs = alo_ptr + a_offs
                blo_ptrs = blo_ptr + b_offs
                for k in range(k_lo, k_hi, BLOCK_K):
                    k_mask = offs_k < k_hi - k
                    a = tl.load(a_ptrs, mask=mask_m[:, None] & k_mask[None, :], other=0.0)
                    b = tl.load(b_ptrs, mask=k_mask[:, None] & mask_n[None, :], other=0.0)
                    b_lo = tl.load(blo_ptrs, mask=k_mask[:, None] & mask_n[None, :], other=0.0)
                    if TF32X3 == 3:
                        acc = tl.dot(a, b + b_lo, acc, input_precision='ieee')
                    else:
                        a_lo = tl.load(alo_ptrs, mask=mask_m[:, None] & k_mask[None, :], other=0.0)
                        acc = tl.dot(a + a_lo, b + b_lo, acc, input_precision='ieee')
                    alo_ptrs += BLOCK_K * stride_ak
                    blo_ptrs += BLOCK_K * stride_bk
                    a_ptrs += BLOCK_K * stride_ak
                    b_ptrs += BLOCK_K * stride_bk
        else:
            for k in range(k_lo, k_hi, BLOCK_K):
                k_mask = offs_k < k_hi - k
                a = tl.load(a_ptrs, mask=mask_m[:, None] & k_mask[None, :], other=0.0)
                b = tl.load(b_ptrs, mask=k_mask[:, None] & mask_n[None, :], other=0.0)
                if TF32X3:
                    acc = tl.dot(a, b, acc, input_precision='tf32x3')
                else:
                    acc = tl.dot(a, b, acc, input_precision='ieee')
                a_ptrs += BLOCK_K * stride_ak
                b_ptrs += BLOCK_K * stride_bk
    mask = mask_m[:, None] & mask_n[None, :]
    if PHASE == 1:
        tl.store(ws_ptr + tl.program_id(1) * ws_split + ws_tile, acc, mask=mask)
    else:
        e0 = tl.load(fc1_bias_ptr + offs_n[None, :], mask=mask_n[None, :], other=0.0).to(tl.float32)
        e1 = acc + e0
        e2 = 0.5 * e1 * (1.0 + tl.math.erf(e1 * 0.7071067811865476))
        out_ptrs = out_ptr + offs_m[:, None].to(tl.int64) * stride_om + offs_n[None, :]
        tl.store(out_ptrs, e2.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def p0_persistent_matmul_kernel(a_desc, b_desc, out_desc, fc1_bias_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, TF32X3: tl.constexpr, NUM_SMS: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS, flatten=True):
        group_id = tile // num_pid_in_group
        first_pid_m = group_id * GROUP_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + tile % num_pid_in_group % group_size_m
        pid_n = tile % num_pid_in_group // group_size_m
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            a = a_desc.load([pid_m * BLOCK_M, ki * BLOCK_K])
            b = b_desc.load([pid_n * BLOCK_N, ki * BLOCK_K]).T
            if TF32X3:
                acc = tl.dot(a, b, acc, input_precision='tf32x3')
            else:
                acc = tl.dot(a, b, acc, input_precision='ieee')
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        mask_m = offs_m < M
        mask_n = offs_n < N
        mask = mask_m[:, None] & mask_n[None, :]
        e0 = tl.load(fc1_bias_ptr + offs_n[None, :], mask=mask_n[None, :], other=0.0).to(tl.float32)
        e1 = acc + e0
        e2 = 0.5 * e1 * (1.0 + tl.math.erf(e1 * 0.7071067811865476))
        out_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], e2.to(out_desc.dtype))


def p0_aligned_rows(t):
    """``t`` copied row-major into rows padded with zeros to a multiple of 16 elements (all of
    them: the GEMM may run K to the padded length, its k tiles' masks then provably whole in
    runs of 16, so the loads vectorize)."""
    k = t.shape[-1]
    rows = torch.empty((*t.shape[:-1], (k + 15) // 16 * 16), dtype=t.dtype, device=t.device)
    rows[..., :k].copy_(t)
    rows[..., k:].zero_()
    return rows


def p0_split_tf32(t, special):
    """``t`` [..., R, K] (2 or 3 dims, fp32, any strides) as its TF32 high part and remainder,
    each [..., R, KP]: rows padded with zeros to KP, a multiple of 16 elements; ``special``
    (int32 [1]) is set to 1 if ``t`` holds an infinity or NaN."""
    k = t.shape[-1]
    kp = (k + 15) // 16 * 16
    t3 = t if t.dim() == 3 else t.unsqueeze(0)
    hi = torch.empty((*t.shape[:-1], kp), dtype=torch.float32, device=t.device)
    lo = torch.empty_like(hi)
    if t.numel():
        grid = (triton.cdiv(t3.shape[1], 32), triton.cdiv(kp, 128), t3.shape[0])
        p0_split_tf32_kernel[grid](t3, hi, lo, special, t3.shape[1], k, kp, *t3.stride(), BLOCK_R=32, BLOCK_K=128, num_warps=4)
    return (hi, lo)


def p0_fused_matmul(x, fc1_weight, fc1_bias):
    """addmm [4096, 1024] @ [1024, 4096] fp32 + bias with a fused gelu epilogue."""
    if x.dim() != 2 or fc1_weight.dim() != 2:
        raise ValueError(f'expected 2-dim and 2-dim operands, got {list(x.shape)} and {list(fc1_weight.shape)}')
    if x.dtype != fc1_weight.dtype:
        raise ValueError(f'x is {x.dtype} but fc1_weight is {fc1_weight.dtype}')
    a = x
    b = fc1_weight
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f'cannot multiply {list(x.shape)} by {list(fc1_weight.shape)}')
    M, K = (a.shape[-2], a.shape[-1])
    N = b.shape[-1]
    tma = bool(p0_PERSISTENT) and N * x.dtype.itemsize % 16 == 0 and (a.device.type == 'cpu' or torch.cuda.get_device_capability(a.device)[0] >= 9)
    a_lo, b_lo = (a, b)
    special = a
    if p0_TF32X3 == 2:
        special = torch.zeros(1, dtype=torch.int32, device=a.device)
        a, a_lo = p0_split_tf32(a, special)
        b, b_lo = (t.transpose(-1, -2) for t in p0_split_tf32(b.transpose(-1, -2), special))
    elif p0_TF32X3 == 3:
        special = torch.zeros(1, dtype=torch.int32, device=a.device)
        if a.stride(-1) != 1 or a.stride(-2) % 16 or K % 16:
            a = p0_aligned_rows(a)
        b, b_lo = (t.transpose(-1, -2) for t in p0_split_tf32(b.transpose(-1, -2), special))
    elif p0_TF32X3 and a.device.type == 'cuda' or tma:
        if a.stride(-1) != 1 or a.stride(-2) % 16 or K % 16 or a.data_ptr() % 16:
            a = p0_aligned_rows(a)
        if b.stride(-2) != 1 or b.stride(-1) % 16 or K % 16 or b.data_ptr() % 16:
            b = p0_aligned_rows(b.transpose(-1, -2)).transpose(-1, -2)
    K = a.shape[-1]
    out = torch.empty((M, N), dtype=x.dtype, device=a.device)
    out_shape = out.shape
    if out.numel() == 0:
        return out.view(out_shape)
    fc1_bias = fc1_bias.contiguous()
    if fc1_bias.numel() != N:
        raise ValueError(f'fc1_bias has {fc1_bias.numel()} elements, expected {N}')
    fc1_bias = fc1_bias.reshape(-1)
    grid = (triton.cdiv(M, p0_BLOCK_M) * triton.cdiv(N, p0_BLOCK_N),)
    k_range = K if p0_SPLIT_K == 1 else triton.cdiv(triton.cdiv(K, p0_BLOCK_K), p0_SPLIT_K) * p0_BLOCK_K
    chains = min(max(triton.cdiv(k_range, p0_CHAIN_K), 1 + (k_range >= 4096)), 8) if p0_TF32X3 >= 2 else 1
    if tma:
        sms = torch.cuda.get_device_properties(a.device).multi_processor_count if a.device.type == 'cuda' else 4
        a_desc = TensorDescriptor.from_tensor(a, [p0_BLOCK_M, p0_BLOCK_K])
        b_desc = TensorDescriptor.from_tensor(b.transpose(-1, -2), [p0_BLOCK_N, p0_BLOCK_K])
        out_desc = TensorDescriptor.from_tensor(out, [p0_BLOCK_M, p0_BLOCK_N])
        p0_persistent_matmul_kernel[min(sms, grid[0]),](a_desc, b_desc, out_desc, fc1_bias, M, N, K, BLOCK_M=p0_BLOCK_M, BLOCK_N=p0_BLOCK_N, BLOCK_K=p0_BLOCK_K, GROUP_M=p0_GROUP_M, TF32X3=p0_TF32X3, NUM_SMS=sms, num_warps=p0_NUM_WARPS, num_stages=p0_NUM_STAGES)
        return out.view(out_shape)
    if p0_SPLIT_K > 1:
        ws = torch.empty((p0_SPLIT_K, M, N), dtype=torch.float32, device=a.device)
        p0_fused_matmul_kernel[grid[0], p0_SPLIT_K](a, b, a_lo, b_lo, special, fc1_bias, out, ws, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), BLOCK_M=p0_BLOCK_M, BLOCK_N=p0_BLOCK_N, BLOCK_K=p0_BLOCK_K, GROUP_M=p0_GROUP_M, TF32X3=p0_TF32X3, CHAINS=chains, PHASE=1, SPLIT_K=p0_SPLIT_K, num_warps=p0_NUM_WARPS, num_stages=p0_NUM_STAGES)
        p0_fused_matmul_kernel[grid](a, b, a_lo, b_lo, special, fc1_bias, out, ws, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), BLOCK_M=p0_BLOCK_M, BLOCK_N=p0_BLOCK_N, BLOCK_K=p0_BLOCK_K, GROUP_M=p0_GROUP_M, TF32X3=p0_TF32X3, CHAINS=chains, PHASE=2, SPLIT_K=p0_SPLIT_K, num_warps=p0_NUM_WARPS, num_stages=p0_NUM_STAGES)
    else:
        p0_fused_matmul_kernel[grid](a, b, a_lo, b_lo, special, fc1_bias, out, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), BLOCK_M=p0_BLOCK_M, BLOCK_N=p0_BLOCK_N, BLOCK_K=p0_BLOCK_K, GROUP_M=p0_GROUP_M, TF32X3=p0_TF32X3, CHAINS=chains, PHASE=0, SPLIT_K=1, num_warps=p0_NUM_WARPS, num_stages=p0_NUM_STAGES)
    return out.view(out_shape)


p1_BLOCK_M = 128


p1_BLOCK_N = 128


p1_BLOCK_K = 32


p1_GROUP_M = 8


p1_NUM_WARPS = 8


p1_NUM_STAGES = 3


p1_TF32X3 = 2


p1_CHAIN_K = 4096


p1_SPLIT_K = 1


p1_PERSISTENT = 0


@triton.jit
def p1_round_tf32(x):
    bits = x.to(tl.int32, bitcast=True)
    up = bits + 4095 + (bits >> 13 & 1) & -8192
    special = bits & 2139095040 == 2139095040
    overflow = up & 2139095040 == 2139095040
    return tl.where(special, bits, tl.where(overflow, bits & -8192, up)).to(tl.float32, bitcast=True)


@triton.jit
def p1_tf32_parts(x, special_ptr):
    hi = p1_round_tf32(x)
    special = x.to(tl.int32, bitcast=True) & 2139095040 == 2139095040
    lo = tl.where(special, 0.0, p1_round_tf32(x - hi))
    if tl.max(special.to(tl.int32)) > 0:
        tl.store(special_ptr, 1)
    return (hi, lo)


@triton.jit
def p1_split_tf32_kernel(x_ptr, hi_ptr, lo_ptr, special_ptr, R, K, KP, s_xb, s_xr, s_xk, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    b = tl.program_id(2).to(tl.int64)
    mask = (rows < R)[:, None] & (cols < KP)[None, :]
    x = tl.load(x_ptr + (b * s_xb + rows[:, None].to(tl.int64) * s_xr + cols[None, :].to(tl.int64) * s_xk), mask=mask & (cols < K)[None, :], other=0.0)
    hi, lo = p1_tf32_parts(x, special_ptr)
    out = (b * R + rows[:, None].to(tl.int64)) * KP + cols[None, :]
    tl.store(hi_ptr + out, hi, mask=mask)
    tl.store(lo_ptr + out, lo, mask=mask)


@triton.jit
def p1_fused_matmul_kernel(a_ptr, b_ptr, alo_ptr, blo_ptr, special_ptr, fc2_bias_ptr, out_ptr, ws_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_om, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, TF32X3: tl.constexpr, CHAINS: tl.constexpr, PHASE: tl.constexpr, SPLIT_K: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + pid % num_pid_in_group % group_size_m
    pid_n = pid % num_pid_in_group // group_size_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    ws_tile = offs_m[:, None].to(tl.int64) * N + offs_n[None, :]
    ws_split = tl.cast(M, tl.int64) * N
    if PHASE == 2:
        for s in range(0, SPLIT_K):
            acc += tl.load(ws_ptr + s * ws_split + ws_tile, mask=mask_m[:, None] & mask_n[None, :], other=0.0)
    else:
        k_lo = 0
        k_hi = K
        if PHASE == 1:
            k_per = tl.cdiv(tl.cdiv(K, BLOCK_K), SPLIT_K) * BLOCK_K
            k_lo = tl.program_id(1) * k_per
            k_hi = tl.minimum(K, k_lo + k_per)
        a_offs = offs_m[:, None].to(tl.int64) * stride_am + (k_lo + offs_k[None, :]) * stride_ak
        b_offs = (k_lo + offs_k[:, None]) * stride_bk + offs_n[None, :].to(tl.int64) * stride_bn
        a_ptrs = a_ptr + a_offs
        b_ptrs = b_ptr + b_offs
        alo_ptrs = alo_ptr + a_offs
        blo_ptrs = blo_ptr + b_offs
        if TF32X3 >= 2:
            flag = tl.load(special_ptr)
            redo = flag != 0
            if flag == 0:
                k_len = tl.cdiv(tl.cdiv(k_hi - k_lo, BLOCK_K), CHAINS) * BLOCK_K
                for c in tl.static_range(CHAINS):
                    c_hi = tl.minimum(k_hi, k_lo + (c + 1) * k_len)
                    part = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
                    for k in range(k_lo + c * k_len, c_hi, BLOCK_K):
                        k_mask = offs_k < c_hi - k
                        a = tl.load(a_ptrs, mask=mask_m[:, None] & k_mask[None, :], other=0.0)
                        b = tl.load(b_ptrs, mask=k_mask[:, None] & mask_n[None, :], other=0.0)
                        b_lo = tl.load(blo_ptrs, mask=k_mask[:, None] & mask_n[None, :], other=0.0)
                        if TF32X3 == 3:
                            a_hi = (a.to(tl.int32, bitcast=True) & -8192).to(tl.float32, bitcast=True)
                            part = tl.dot(a - a_hi, b, part, input_precision='tf32')
                            part = tl.dot(a_hi, b_lo, part, input_precision='tf32')
                            part = tl.dot(a_hi, b, part, input_precision='tf32')
                        else:
                            a_lo = tl.load(alo_ptrs, mask=mask_m[:, None] & k_mask[None, :], other=0.0)
                            part = tl.dot(a_lo, b, part, input_precision='tf32')
                            part = tl.dot(a, b_lo, part, input_precision='tf32')
                            part = tl.dot(a, b, part, input_precision='tf32')
                        alo_ptrs += BLOCK_K * stride_ak
                        blo_ptrs += BLOCK_K * stride_bk
                        a_ptrs += BLOCK_K * stride_ak
                        b_ptrs += BLOCK_K * stride_bk
                    acc += part
                if TF32X3 == 3:
                    redo = tl.max((acc != acc).to(tl.int32), axis=None) > 0
            if redo:
                acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
                a_ptrs = a_ptr + a_offs
                b_ptrs = b_ptr + b_offs
                alo_ptrs = alo_ptr + a_offs
                blo_ptrs = blo_ptr + b_offs
                for k in range(k_lo, k_hi, BLOCK_K):
                    k_mask = offs_k < k_hi - k
                    a = tl.load(a_ptrs, mask=mask_m[:, None] & k_mask[None, :], other=0.0)
                    b = tl.load(b_ptrs, mask=k_mask[:, None] & mask_n[None, :], other=0.0)
                    b_lo = tl.load(blo_ptrs, mask=k_mask[:, None] & mask_n[None, :], other=0.0)
                    if TF32X3 == 3:
                        acc = tl.dot(a, b + b_lo, acc, input_precision='ieee')
                    else:
                        a_lo = tl.load(alo_ptrs, mask=mask_m[:, None] & k_mask[None, :], other=0.0)
                        acc = tl.dot(a + a_lo, b + b_lo, acc, input_precision='ieee')
                    alo_ptrs += BLOCK_K * stride_ak
                    blo_ptrs += BLOCK_K * stride_bk
                    a_ptrs += BLOCK_K * stride_ak
                    b_ptrs += BLOCK_K * stride_bk
        else:
            for k in range(k_lo, k_hi, BLOCK_K):
                k_mask = offs_k < k_hi - k
                a = tl.load(a_ptrs, mask=mask_m[:, None] & k_mask[None, :], other=0.0)
                b = tl.load(b_ptrs, mask=k_mask[:, None] & mask_n[None, :], other=0.0)
                if TF32X3:
                    acc = tl.dot(a, b, acc, input_precision='tf32x3')
                else:
                    acc = tl.dot(a, b, acc, input_precision='ieee')
                a_ptrs += BLOCK_K * stride_ak
                b_ptrs += BLOCK_K * stride_bk
    mask = mask_m[:, None] & mask_n[None, :]
    if PHASE == 1:
        tl.store(ws_ptr + tl.program_id(1) * ws_split + ws_tile, acc, mask=mask)
    else:
        e0 = tl.load(fc2_bias_ptr + offs_n[None, :], mask=mask_n[None, :], other=0.0).to(tl.float32)
        e1 = acc + e0
        e2 = tl.maximum(e1, 0.0, propagate_nan=tl.PropagateNan.ALL)
        out_ptrs = out_ptr + offs_m[:, None].to(tl.int64) * stride_om + offs_n[None, :]
        tl.store(out_ptrs, e2.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def p1_persistent_matmul_kernel(a_desc, b_desc, out_desc, fc2_bias_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, TF32X3: tl.constexpr, NUM_SMS: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS, flatten=True):
        group_id = tile // num_pid_in_group
        first_pid_m = group_id * GROUP_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + tile % num_pid_in_group % group_size_m
        pid_n = tile % num_pid_in_group // group_size_m
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            a = a_desc.load([pid_m * BLOCK_M, ki * BLOCK_K])
            b = b_desc.load([pid_n * BLOCK_N, ki * BLOCK_K]).T
            if TF32X3:
                acc = tl.dot(a, b, acc, input_precision='tf32x3')
            else:
                acc = tl.dot(a, b, acc, input_precision='ieee')
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        mask_m = offs_m < M
        mask_n = offs_n < N
        mask = mask_m[:, None] & mask_n[None, :]
        e0 = tl.load(fc2_bias_ptr + offs_n[None, :], mask=mask_n[None, :], other=0.0).to(tl.float32)
        e1 = acc + e0
        e2 = tl.maximum(e1, 0.0, propagate_nan=tl.PropagateNan.ALL)
        out_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], e2.to(out_desc.dtype))


def p1_aligned_rows(t):
    """``t`` copied row-major into rows padded with zeros to a multiple of 16 elements (all of
    them: the GEMM may run K to the padded length, its k tiles' masks then provably whole in
    runs of 16, so the loads vectorize)."""
    k = t.shape[-1]
    rows = torch.empty((*t.shape[:-1], (k + 15) // 16 * 16), dtype=t.dtype, device=t.device)
    rows[..., :k].copy_(t)
    rows[..., k:].zero_()
    return rows


def p1_split_tf32(t, special):
    """``t`` [..., R, K] (2 or 3 dims, fp32, any strides) as its TF32 high part and remainder,
    each [..., R, KP]: rows padded with zeros to KP, a multiple of 16 elements; ``special``
    (int32 [1]) is set to 1 if ``t`` holds an infinity or NaN."""
    k = t.shape[-1]
    kp = (k + 15) // 16 * 16
    t3 = t if t.dim() == 3 else t.unsqueeze(0)
    hi = torch.empty((*t.shape[:-1], kp), dtype=torch.float32, device=t.device)
    lo = torch.empty_like(hi)
    if t.numel():
        grid = (triton.cdiv(t3.shape[1], 32), triton.cdiv(kp, 128), t3.shape[0])
        p1_split_tf32_kernel[grid](t3, hi, lo, special, t3.shape[1], k, kp, *t3.stride(), BLOCK_R=32, BLOCK_K=128, num_warps=4)
    return (hi, lo)


def p1_fused_matmul(gelu, fc2_weight, fc2_bias):
    """addmm [4096, 4096] @ [4096, 4096] fp32 + bias with a fused relu epilogue."""
    if gelu.dim() != 2 or fc2_weight.dim() != 2:
        raise ValueError(f'expected 2-dim and 2-dim operands, got {list(gelu.shape)} and {list(fc2_weight.shape)}')
    if gelu.dtype != fc2_weight.dtype:
        raise ValueError(f'gelu is {gelu.dtype} but fc2_weight is {fc2_weight.dtype}')
    a = gelu
    b = fc2_weight
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f'cannot multiply {list(gelu.shape)} by {list(fc2_weight.shape)}')
    M, K = (a.shape[-2], a.shape[-1])
    N = b.shape[-1]
    tma = bool(p1_PERSISTENT) and N * gelu.dtype.itemsize % 16 == 0 and (a.device.type == 'cpu' or torch.cuda.get_device_capability(a.device)[0] >= 9)
    a_lo, b_lo = (a, b)
    special = a
    if p1_TF32X3 == 2:
        special = torch.zeros(1, dtype=torch.int32, device=a.device)
        a, a_lo = p1_split_tf32(a, special)
        b, b_lo = (t.transpose(-1, -2) for t in p1_split_tf32(b.transpose(-1, -2), special))
    elif p1_TF32X3 == 3:
        special = torch.zeros(1, dtype=torch.int32, device=a.device)
        if a.stride(-1) != 1 or a.stride(-2) % 16 or K % 16:
            a = p1_aligned_rows(a)
        b, b_lo = (t.transpose(-1, -2) for t in p1_split_tf32(b.transpose(-1, -2), special))
    elif p1_TF32X3 and a.device.type == 'cuda' or tma:
        if a.stride(-1) != 1 or a.stride(-2) % 16 or K % 16 or a.data_ptr() % 16:
            a = p1_aligned_rows(a)
        if b.stride(-2) != 1 or b.stride(-1) % 16 or K % 16 or b.data_ptr() % 16:
            b = p1_aligned_rows(b.transpose(-1, -2)).transpose(-1, -2)
    K = a.shape[-1]
    out = torch.empty((M, N), dtype=gelu.dtype, device=a.device)
    out_shape = out.shape
    if out.numel() == 0:
        return out.view(out_shape)
    fc2_bias = fc2_bias.contiguous()
    if fc2_bias.numel() != N:
        raise ValueError(f'fc2_bias has {fc2_bias.numel()} elements, expected {N}')
    fc2_bias = fc2_bias.reshape(-1)
    grid = (triton.cdiv(M, p1_BLOCK_M) * triton.cdiv(N, p1_BLOCK_N),)
    k_range = K if p1_SPLIT_K == 1 else triton.cdiv(triton.cdiv(K, p1_BLOCK_K), p1_SPLIT_K) * p1_BLOCK_K
    chains = min(max(triton.cdiv(k_range, p1_CHAIN_K), 1 + (k_range >= 4096)), 8) if p1_TF32X3 >= 2 else 1
    if tma:
        sms = torch.cuda.get_device_properties(a.device).multi_processor_count if a.device.type == 'cuda' else 4
        a_desc = TensorDescriptor.from_tensor(a, [p1_BLOCK_M, p1_BLOCK_K])
        b_desc = TensorDescriptor.from_tensor(b.transpose(-1, -2), [p1_BLOCK_N, p1_BLOCK_K])
        out_desc = TensorDescriptor.from_tensor(out, [p1_BLOCK_M, p1_BLOCK_N])
        p1_persistent_matmul_kernel[min(sms, grid[0]),](a_desc, b_desc, out_desc, fc2_bias, M, N, K, BLOCK_M=p1_BLOCK_M, BLOCK_N=p1_BLOCK_N, BLOCK_K=p1_BLOCK_K, GROUP_M=p1_GROUP_M, TF32X3=p1_TF32X3, NUM_SMS=sms, num_warps=p1_NUM_WARPS, num_stages=p1_NUM_STAGES)
        return out.view(out_shape)
    if p1_SPLIT_K > 1:
        ws = torch.empty((p1_SPLIT_K, M, N), dtype=torch.float32, device=a.device)
        p1_fused_matmul_kernel[grid[0], p1_SPLIT_K](a, b, a_lo, b_lo, special, fc2_bias, out, ws, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), BLOCK_M=p1_BLOCK_M, BLOCK_N=p1_BLOCK_N, BLOCK_K=p1_BLOCK_K, GROUP_M=p1_GROUP_M, TF32X3=p1_TF32X3, CHAINS=chains, PHASE=1, SPLIT_K=p1_SPLIT_K, num_warps=p1_NUM_WARPS, num_stages=p1_NUM_STAGES)
        p1_fused_matmul_kernel[grid](a, b, a_lo, b_lo, special, fc2_bias, out, ws, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), BLOCK_M=p1_BLOCK_M, BLOCK_N=p1_BLOCK_N, BLOCK_K=p1_BLOCK_K, GROUP_M=p1_GROUP_M, TF32X3=p1_TF32X3, CHAINS=chains, PHASE=2, SPLIT_K=p1_SPLIT_K, num_warps=p1_NUM_WARPS, num_stages=p1_NUM_STAGES)
    else:
        p1_fused_matmul_kernel[grid](a, b, a_lo, b_lo, special, fc2_bias, out, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), BLOCK_M=p1_BLOCK_M, BLOCK_N=p1_BLOCK_N, BLOCK_K=p1_BLOCK_K, GROUP_M=p1_GROUP_M, TF32X3=p1_TF32X3, CHAINS=chains, PHASE=0, SPLIT_K=1, num_warps=p1_NUM_WARPS, num_stages=p1_NUM_STAGES)
    return out.view(out_shape)


p2_BLOCK_M = 128


p2_BLOCK_N = 128


p2_BLOCK_K = 32


p2_GROUP_M = 8


p2_NUM_WARPS = 8


p2_NUM_STAGES = 3


p2_TF32X3 = 3


p2_CHAIN_K = 4096


p2_SPLIT_K = 1


p2_PERSISTENT = 0


@triton.jit
def p2_round_tf32(x):
    bits = x.to(tl.int32, bitcast=True)
    up = bits + 4095 + (bits >> 13 & 1) & -8192
    special = bits & 2139095040 == 2139095040
    overflow = up & 2139095040 == 2139095040
    return tl.where(special, bits, tl.where(overflow, bits & -8192, up)).to(tl.float32, bitcast=True)


@triton.jit
def p2_tf32_parts(x, special_ptr):
    hi = p2_round_tf32(x)
    special = x.to(tl.int32, bitcast=True) & 2139095040 == 2139095040
    lo = tl.where(special, 0.0, p2_round_tf32(x - hi))
    if tl.max(special.to(tl.int32)) > 0:
        tl.store(special_ptr, 1)
    return (hi, lo)


@triton.jit
def p2_split_tf32_kernel(x_ptr, hi_ptr, lo_ptr, special_ptr, R, K, KP, s_xb, s_xr, s_xk, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    b = tl.program_id(2).to(tl.int64)
    mask = (rows < R)[:, None] & (cols < KP)[None, :]
    x = tl.load(x_ptr + (b * s_xb + rows[:, None].to(tl.int64) * s_xr + cols[None, :].to(tl.int64) * s_xk), mask=mask & (cols < K)[None, :], other=0.0)
    hi, lo = p2_tf32_parts(x, special_ptr)
    out = (b * R + rows[:, None].to(tl.int64)) * KP + cols[None, :]
    tl.store(hi_ptr + out, hi, mask=mask)
    tl.store(lo_ptr + out, lo, mask=mask)


@triton.jit
def p2_fused_matmul_kernel(a_ptr, b_ptr, alo_ptr, blo_ptr, special_ptr, fc3_bias_ptr, out_ptr, ws_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_om, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, TF32X3: tl.constexpr, CHAINS: tl.constexpr, PHASE: tl.constexpr, SPLIT_K: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + pid % num_pid_in_group % group_size_m
    pid_n = pid % num_pid_in_group // group_size_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    ws_tile = offs_m[:, None].to(tl.int64) * N + offs_n[None, :]
    ws_split = tl.cast(M, tl.int64) * N
    if PHASE == 2:
        for s in range(0, SPLIT_K):
            acc += tl.load(ws_ptr + s * ws_split + ws_tile, mask=mask_m[:, None] & mask_n[None, :], other=0.0)
    else:
        k_lo = 0
        k_hi = K
        if PHASE == 1:
            k_per = tl.cdiv(tl.cdiv(K, BLOCK_K), SPLIT_K) * BLOCK_K
            k_lo = tl.program_id(1) * k_per
            k_hi = tl.minimum(K, k_lo + k_per)
        a_offs = offs_m[:, None].to(tl.int64) * stride_am + (k_lo + offs_k[None, :]) * stride_ak
        b_offs = (k_lo + offs_k[:, None]) * stride_bk + offs_n[None, :].to(tl.int64) * stride_bn
        a_ptrs = a_ptr + a_offs
        b_ptrs = b_ptr + b_offs
        alo_ptrs = alo_ptr + a_offs
        blo_ptrs = blo_ptr + b_offs
        if TF32X3 >= 2:
            flag = tl.load(special_ptr)
            redo = flag != 0
            if flag == 0:
                k_len = tl.cdiv(tl.cdiv(k_hi - k_lo, BLOCK_K), CHAINS) * BLOCK_K
                for c in tl.static_range(CHAINS):
                    c_hi = tl.minimum(k_hi, k_lo + (c + 1) * k_len)
                    part = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
                    for k in range(k_lo + c * k_len, c_hi, BLOCK_K):
                        k_mask = offs_k < c_hi - k
                        a = tl.load(a_ptrs, mask=mask_m[:, None] & k_mask[None, :], other=0.0)
                        b = tl.load(b_ptrs, mask=k_mask[:, None] & mask_n[None, :], other=0.0)
                        b_lo = tl.load(blo_ptrs, mask=k_mask[:, None] & mask_n[None, :], other=0.0)
                        if TF32X3 == 3:
                            a_hi = (a.to(tl.int32, bitcast=True) & -8192).to(tl.float32, bitcast=True)
                            part = tl.dot(a - a_hi, b, part, input_precision='tf32')
                            part = tl.dot(a_hi, b_lo, part, input_precision='tf32')
                            part = tl.dot(a_hi, b, part, input_precision='tf32')
                        else:
                            a_lo = tl.load(alo_ptrs, mask=mask_m[:, None] & k_mask[None, :], other=0.0)
                            part = tl.dot(a_lo, b, part, input_precision='tf32')
                            part = tl.dot(a, b_lo, part, input_precision='tf32')
                            part = tl.dot(a, b, part, input_precision='tf32')
                        alo_ptrs += BLOCK_K * stride_ak
                        blo_ptrs += BLOCK_K * stride_bk
                        a_ptrs += BLOCK_K * stride_ak
                        b_ptrs += BLOCK_K * stride_bk
                    acc += part
                if TF32X3 == 3:
                    redo = tl.max((acc != acc).to(tl.int32), axis=None) > 0
            if redo:
                acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
                a_ptrs = a_ptr + a_offs
                b_ptrs = b_ptr + b_offs
                alo_ptrs = alo_ptr + a_offs
                blo_ptrs = blo_ptr + b_offs
                for k in range(k_lo, k_hi, BLOCK_K):
                    k_mask = offs_k < k_hi - k
                    a = tl.load(a_ptrs, mask=mask_m[:, None] & k_mask[None, :], other=0.0)
                    b = tl.load(b_ptrs, mask=k_mask[:, None] & mask_n[None, :], other=0.0)
                    b_lo = tl.load(blo_ptrs, mask=k_mask[:, None] & mask_n[None, :], other=0.0)
                    if TF32X3 == 3:
                        acc = tl.dot(a, b + b_lo, acc, input_precision='ieee')
                    else:
                        a_lo = tl.load(alo_ptrs, mask=mask_m[:, None] & k_mask[None, :], other=0.0)
                        acc = tl.dot(a + a_lo, b + b_lo, acc, input_precision='ieee')
                    alo_ptrs += BLOCK_K * stride_ak
                    blo_ptrs += BLOCK_K * stride_bk
                    a_ptrs += BLOCK_K * stride_ak
                    b_ptrs += BLOCK_K * stride_bk
        else:
            for k in range(k_lo, k_hi, BLOCK_K):
                k_mask = offs_k < k_hi - k
                a = tl.load(a_ptrs, mask=mask_m[:, None] & k_mask[None, :], other=0.0)
                b = tl.load(b_ptrs, mask=k_mask[:, None] & mask_n[None, :], other=0.0)
                if TF32X3:
                    acc = tl.dot(a, b, acc, input_precision='tf32x3')
                else:
                    acc = tl.dot(a, b, acc, input_precision='ieee')
                a_ptrs += BLOCK_K * stride_ak
                b_ptrs += BLOCK_K * stride_bk
    mask = mask_m[:, None] & mask_n[None, :]
    if PHASE == 1:
        tl.store(ws_ptr + tl.program_id(1) * ws_split + ws_tile, acc, mask=mask)
    else:
        e0 = tl.load(fc3_bias_ptr + offs_n[None, :], mask=mask_n[None, :], other=0.0).to(tl.float32)
        e1 = acc + e0
        out_ptrs = out_ptr + offs_m[:, None].to(tl.int64) * stride_om + offs_n[None, :]
        tl.store(out_ptrs, e1.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def p2_persistent_matmul_kernel(a_desc, b_desc, out_desc, fc3_bias_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, TF32X3: tl.constexpr, NUM_SMS: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS, flatten=True):
        group_id = tile // num_pid_in_group
        first_pid_m = group_id * GROUP_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + tile % num_pid_in_group % group_size_m
        pid_n = tile % num_pid_in_group // group_size_m
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            a = a_desc.load([pid_m * BLOCK_M, ki * BLOCK_K])
            b = b_desc.load([pid_n * BLOCK_N, ki * BLOCK_K]).T
            if TF32X3:
                acc = tl.dot(a, b, acc, input_precision='tf32x3')
            else:
                acc = tl.dot(a, b, acc, input_precision='ieee')
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        mask_m = offs_m < M
        mask_n = offs_n < N
        mask = mask_m[:, None] & mask_n[None, :]
        e0 = tl.load(fc3_bias_ptr + offs_n[None, :], mask=mask_n[None, :], other=0.0).to(tl.float32)
        e1 = acc + e0
        out_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], e1.to(out_desc.dtype))


def p2_aligned_rows(t):
    """``t`` copied row-major into rows padded with zeros to a multiple of 16 elements (all of
    them: the GEMM may run K to the padded length, its k tiles' masks then provably whole in
    runs of 16, so the loads vectorize)."""
    k = t.shape[-1]
    rows = torch.empty((*t.shape[:-1], (k + 15) // 16 * 16), dtype=t.dtype, device=t.device)
    rows[..., :k].copy_(t)
    rows[..., k:].zero_()
    return rows


def p2_split_tf32(t, special):
    """``t`` [..., R, K] (2 or 3 dims, fp32, any strides) as its TF32 high part and remainder,
    each [..., R, KP]: rows padded with zeros to KP, a multiple of 16 elements; ``special``
    (int32 [1]) is set to 1 if ``t`` holds an infinity or NaN."""
    k = t.shape[-1]
    kp = (k + 15) // 16 * 16
    t3 = t if t.dim() == 3 else t.unsqueeze(0)
    hi = torch.empty((*t.shape[:-1], kp), dtype=torch.float32, device=t.device)
    lo = torch.empty_like(hi)
    if t.numel():
        grid = (triton.cdiv(t3.shape[1], 32), triton.cdiv(kp, 128), t3.shape[0])
        p2_split_tf32_kernel[grid](t3, hi, lo, special, t3.shape[1], k, kp, *t3.stride(), BLOCK_R=32, BLOCK_K=128, num_warps=4)
    return (hi, lo)


def p2_fused_matmul(relu, fc3_weight, fc3_bias):
    """addmm [4096, 4096] @ [4096, 1024] fp32 + bias."""
    if relu.dim() != 2 or fc3_weight.dim() != 2:
        raise ValueError(f'expected 2-dim and 2-dim operands, got {list(relu.shape)} and {list(fc3_weight.shape)}')
    if relu.dtype != fc3_weight.dtype:
        raise ValueError(f'relu is {relu.dtype} but fc3_weight is {fc3_weight.dtype}')
    a = relu
    b = fc3_weight
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f'cannot multiply {list(relu.shape)} by {list(fc3_weight.shape)}')
    M, K = (a.shape[-2], a.shape[-1])
    N = b.shape[-1]
    tma = bool(p2_PERSISTENT) and N * relu.dtype.itemsize % 16 == 0 and (a.device.type == 'cpu' or torch.cuda.get_device_capability(a.device)[0] >= 9)
    a_lo, b_lo = (a, b)
    special = a
    if p2_TF32X3 == 2:
        special = torch.zeros(1, dtype=torch.int32, device=a.device)
        a, a_lo = p2_split_tf32(a, special)
        b, b_lo = (t.transpose(-1, -2) for t in p2_split_tf32(b.transpose(-1, -2), special))
    elif p2_TF32X3 == 3:
        special = torch.zeros(1, dtype=torch.int32, device=a.device)
        if a.stride(-1) != 1 or a.stride(-2) % 16 or K % 16:
            a = p2_aligned_rows(a)
        b, b_lo = (t.transpose(-1, -2) for t in p2_split_tf32(b.transpose(-1, -2), special))
    elif p2_TF32X3 and a.device.type == 'cuda' or tma:
        if a.stride(-1) != 1 or a.stride(-2) % 16 or K % 16 or a.data_ptr() % 16:
            a = p2_aligned_rows(a)
        if b.stride(-2) != 1 or b.stride(-1) % 16 or K % 16 or b.data_ptr() % 16:
            b = p2_aligned_rows(b.transpose(-1, -2)).transpose(-1, -2)
    K = a.shape[-1]
    out = torch.empty((M, N), dtype=relu.dtype, device=a.device)
    out_shape = out.shape
    if out.numel() == 0:
        return out.view(out_shape)
    fc3_bias = fc3_bias.contiguous()
    if fc3_bias.numel() != N:
        raise ValueError(f'fc3_bias has {fc3_bias.numel()} elements, expected {N}')
    fc3_bias = fc3_bias.reshape(-1)
    grid = (triton.cdiv(M, p2_BLOCK_M) * triton.cdiv(N, p2_BLOCK_N),)
    k_range = K if p2_SPLIT_K == 1 else triton.cdiv(triton.cdiv(K, p2_BLOCK_K), p2_SPLIT_K) * p2_BLOCK_K
    chains = min(max(triton.cdiv(k_range, p2_CHAIN_K), 1 + (k_range >= 4096)), 8) if p2_TF32X3 >= 2 else 1
    if tma:
        sms = torch.cuda.get_device_properties(a.device).multi_processor_count if a.device.type == 'cuda' else 4
        a_desc = TensorDescriptor.from_tensor(a, [p2_BLOCK_M, p2_BLOCK_K])
        b_desc = TensorDescriptor.from_tensor(b.transpose(-1, -2), [p2_BLOCK_N, p2_BLOCK_K])
        out_desc = TensorDescriptor.from_tensor(out, [p2_BLOCK_M, p2_BLOCK_N])
        p2_persistent_matmul_kernel[min(sms, grid[0]),](a_desc, b_desc, out_desc, fc3_bias, M, N, K, BLOCK_M=p2_BLOCK_M, BLOCK_N=p2_BLOCK_N, BLOCK_K=p2_BLOCK_K, GROUP_M=p2_GROUP_M, TF32X3=p2_TF32X3, NUM_SMS=sms, num_warps=p2_NUM_WARPS, num_stages=p2_NUM_STAGES)
        return out.view(out_shape)
    if p2_SPLIT_K > 1:
        ws = torch.empty((p2_SPLIT_K, M, N), dtype=torch.float32, device=a.device)
        p2_fused_matmul_kernel[grid[0], p2_SPLIT_K](a, b, a_lo, b_lo, special, fc3_bias, out, ws, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), BLOCK_M=p2_BLOCK_M, BLOCK_N=p2_BLOCK_N, BLOCK_K=p2_BLOCK_K, GROUP_M=p2_GROUP_M, TF32X3=p2_TF32X3, CHAINS=chains, PHASE=1, SPLIT_K=p2_SPLIT_K, num_warps=p2_NUM_WARPS, num_stages=p2_NUM_STAGES)
        p2_fused_matmul_kernel[grid](a, b, a_lo, b_lo, special, fc3_bias, out, ws, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), BLOCK_M=p2_BLOCK_M, BLOCK_N=p2_BLOCK_N, BLOCK_K=p2_BLOCK_K, GROUP_M=p2_GROUP_M, TF32X3=p2_TF32X3, CHAINS=chains, PHASE=2, SPLIT_K=p2_SPLIT_K, num_warps=p2_NUM_WARPS, num_stages=p2_NUM_STAGES)
    else:
        p2_fused_matmul_kernel[grid](a, b, a_lo, b_lo, special, fc3_bias, out, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), BLOCK_M=p2_BLOCK_M, BLOCK_N=p2_BLOCK_N, BLOCK_K=p2_BLOCK_K, GROUP_M=p2_GROUP_M, TF32X3=p2_TF32X3, CHAINS=chains, PHASE=0, SPLIT_K=1, num_warps=p2_NUM_WARPS, num_stages=p2_NUM_STAGES)
    return out.view(out_shape)


class ModelNew(nn.Module):
    """mlp3 in 3 parts."""

    def __init__(self, d_in, d_hidden, d_out):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, d_hidden)
        self.fc3 = nn.Linear(d_hidden, d_out)

    def _p0_forward(self, x):
        return p0_fused_matmul(x, self.fc1.weight.t(), self.fc1.bias)

    def _p1_forward(self, gelu):
        return p1_fused_matmul(gelu, self.fc2.weight.t(), self.fc2.bias)

    def _p2_forward(self, relu):
        return p2_fused_matmul(relu, self.fc3.weight.t(), self.fc3.bias)

    def forward(self, x):
        gelu = self._p0_forward(x)
        relu = self._p1_forward(gelu)
        fc3 = self._p2_forward(relu)
        return fc3
