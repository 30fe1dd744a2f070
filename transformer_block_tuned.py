"""transformer_block as a program of 20 parts (part 0: layer norm over dim 2 of a [8, 512, 768] fp32 tensor; part 1: addmm [8, 512, 768] @ [768, 2304] fp32 + bias; part 2: views; part 3: views; part 4: views; part 5: views; part 6: views; part 7: views; part 8: views; part 9: views; part 10: views; part 11: views; part 12: scaled dot-product attention over [8, 12, 512, 64] fp32 heads as one flash-attention kernel; part 13: views; part 14: views; part 15: views; part 16: addmm [8, 512, 768] @ [768, 768] fp32 + bias with a fused add epilogue; part 17: layer norm over dim 2 of a [8, 512, 768] fp32 tensor; part 18: addmm [8, 512, 768] @ [768, 3072] fp32 + bias with a fused gelu epilogue; part 19: addmm [8, 512, 3072] @ [3072, 768] fp32 + bias with a fused add epilogue).

Written by the kernelevolve offline synthesizer: each part from a template, composed into one ModelNew."""


import torch
import torch.nn as nn
import triton
import triton.language as tl
import math
from triton.tools.tensor_descriptor import TensorDescriptor


p0_BLOCK_M = 1


p0_BLOCK_N = 4096


p0_NUM_WARPS = 8


p0_N_PROGRAMS = 4096


@triton.jit
def p0_fused_layernorm_kernel(x_ptr, ln1_weight_ptr, ln1_bias_ptr, out_ptr, n_rows, n_cols, stride_x, ln1_eps, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, SINGLE_PASS: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < n_rows
    offs_n = tl.arange(0, BLOCK_N)
    if SINGLE_PASS:
        cols = offs_n
        mask = row_mask[:, None] & (cols[None, :] < n_cols)
        s0 = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        s1 = tl.sum(tl.where(mask, s0, 0.0), axis=1, keep_dims=True)
        s2 = s1 / n_cols
        s3 = s0 - s2
        s4 = s3 * s3
        s5 = tl.sum(tl.where(mask, s4, 0.0), axis=1, keep_dims=True)
        s6 = s5 / n_cols
        s7 = s6 + ln1_eps
        s8 = tl.rsqrt(s7)
        s9 = s3 * s8
        s10 = tl.load(ln1_weight_ptr + cols[None, :], mask=cols[None, :] < n_cols, other=0.0).to(tl.float32)
        s11 = s9 * s10
        s12 = tl.load(ln1_bias_ptr + cols[None, :], mask=cols[None, :] < n_cols, other=0.0).to(tl.float32)
        s13 = s11 + s12
        tl.store(out_ptr + rows[:, None] * n_cols + cols[None, :], s13.to(out_ptr.dtype.element_ty), mask=mask)
    else:
        cols = offs_n
        mask = row_mask[:, None] & (cols[None, :] < n_cols)
        h0_0 = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        r0 = tl.sum(tl.where(mask, h0_0, 0.0), axis=1, keep_dims=True) / tl.maximum(tl.sum(mask.to(tl.float32), axis=1, keep_dims=True), 1.0)
        r1 = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        r2 = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        for start in range(0, n_cols, BLOCK_N):
            cols = start + offs_n
            mask = row_mask[:, None] & (cols[None, :] < n_cols)
            p0_0 = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0).to(tl.float32)
            d0 = tl.where(mask, p0_0 - r0, 0.0)
            r1 = r1 + d0
            r2 = r2 + d0 * d0
        r3 = tl.sum(r1, axis=1, keep_dims=True)
        r4 = tl.sum(r2, axis=1, keep_dims=True)
        r5 = r0 + r3 / n_cols
        r6 = r5 * n_cols
        r7 = tl.maximum(r4 - r3 * (r3 / n_cols), 0.0, propagate_nan=tl.PropagateNan.ALL)
        r8 = r7 / n_cols
        r9 = r8 + ln1_eps
        r10 = tl.rsqrt(r9)
        for start in range(0, n_cols, BLOCK_N):
            cols = start + offs_n
            mask = row_mask[:, None] & (cols[None, :] < n_cols)
            o0 = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0).to(tl.float32)
            o1 = o0 - r5
            o2 = o1 * r10
            o3 = tl.load(ln1_weight_ptr + cols[None, :], mask=cols[None, :] < n_cols, other=0.0).to(tl.float32)
            o4 = o2 * o3
            o5 = tl.load(ln1_bias_ptr + cols[None, :], mask=cols[None, :] < n_cols, other=0.0).to(tl.float32)
            o6 = o4 + o5
            tl.store(out_ptr + rows[:, None] * n_cols + cols[None, :], o6.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def p0_fused_layernorm_split0_kernel(x_ptr, ln1_weight_ptr, ln1_bias_ptr, out_ptr, ws_ptr, n_rows, n_cols, n_splits, chunk, stride_x, ln1_eps, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_S: tl.constexpr):
    pid = tl.program_id(0)
    row_blocks = tl.cdiv(n_rows, BLOCK_M)
    split = pid // row_blocks
    rows = (pid % row_blocks).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < n_rows
    offs_n = tl.arange(0, BLOCK_N)
    offs_s = tl.arange(0, BLOCK_S)
    s_mask = row_mask[:, None] & (offs_s[None, :] < n_splits)
    cols = offs_n
    mask = row_mask[:, None] & (cols[None, :] < n_cols)
    h0_0 = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    r0 = tl.sum(tl.where(mask, h0_0, 0.0), axis=1, keep_dims=True) / tl.maximum(tl.sum(mask.to(tl.float32), axis=1, keep_dims=True), 1.0)
    r1 = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    r2 = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for col0 in range(split * chunk, split * chunk + chunk, BLOCK_N):
        cols = col0 + offs_n
        mask = row_mask[:, None] & (cols[None, :] < n_cols)
        p0_0 = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        d0 = tl.where(mask, p0_0 - r0, 0.0)
        r1 = r1 + d0
        r2 = r2 + d0 * d0
    r3 = tl.sum(r1, axis=1, keep_dims=True)
    r4 = tl.sum(r2, axis=1, keep_dims=True)
    tl.store(ws_ptr + ((0 * n_rows + rows[:, None]) * n_splits + split) * 3 + 0, r3, mask=row_mask[:, None])
    tl.store(ws_ptr + ((0 * n_rows + rows[:, None]) * n_splits + split) * 3 + 1, r4, mask=row_mask[:, None])
    tl.store(ws_ptr + ((0 * n_rows + rows[:, None]) * n_splits + split) * 3 + 2, r0, mask=row_mask[:, None])


@triton.jit
def p0_fused_layernorm_split1_kernel(x_ptr, ln1_weight_ptr, ln1_bias_ptr, out_ptr, ws_ptr, n_rows, n_cols, n_splits, chunk, stride_x, ln1_eps, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_S: tl.constexpr):
    pid = tl.program_id(0)
    row_blocks = tl.cdiv(n_rows, BLOCK_M)
    split = pid // row_blocks
    rows = (pid % row_blocks).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < n_rows
    offs_n = tl.arange(0, BLOCK_N)
    offs_s = tl.arange(0, BLOCK_S)
    s_mask = row_mask[:, None] & (offs_s[None, :] < n_splits)
    r0 = tl.load(ws_ptr + (0 * n_rows + rows[:, None]) * n_splits * 3 + 2, mask=row_mask[:, None], other=0.0)
    r1 = tl.load(ws_ptr + ((0 * n_rows + rows[:, None]) * n_splits + offs_s[None, :]) * 3 + 0, mask=s_mask, other=0.0)
    r2 = tl.sum(r1, axis=1, keep_dims=True)
    r3 = tl.load(ws_ptr + ((0 * n_rows + rows[:, None]) * n_splits + offs_s[None, :]) * 3 + 1, mask=s_mask, other=0.0)
    r4 = tl.sum(r3, axis=1, keep_dims=True)
    r5 = r0 + r2 / n_cols
    r6 = r5 * n_cols
    r7 = tl.maximum(r4 - r2 * (r2 / n_cols), 0.0, propagate_nan=tl.PropagateNan.ALL)
    r8 = r7 / n_cols
    r9 = r8 + ln1_eps
    r10 = tl.rsqrt(r9)
    for col0 in range(split * chunk, split * chunk + chunk, BLOCK_N):
        cols = col0 + offs_n
        mask = row_mask[:, None] & (cols[None, :] < n_cols)
        o0 = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        o1 = o0 - r5
        o2 = o1 * r10
        o3 = tl.load(ln1_weight_ptr + cols[None, :], mask=cols[None, :] < n_cols, other=0.0).to(tl.float32)
        o4 = o2 * o3
        o5 = tl.load(ln1_bias_ptr + cols[None, :], mask=cols[None, :] < n_cols, other=0.0).to(tl.float32)
        o6 = o4 + o5
        tl.store(out_ptr + rows[:, None] * n_cols + cols[None, :], o6.to(out_ptr.dtype.element_ty), mask=mask)


def p0_fused_layernorm(x, ln1_weight, ln1_bias, ln1_eps):
    """layer norm over dim 2 of a [8, 512, 768] fp32 tensor."""
    x = x.contiguous()
    ln1_weight = ln1_weight.contiguous()
    ln1_bias = ln1_bias.contiguous()
    if x.dim() != 3:
        raise ValueError(f'x: expected 3 dims, got {x.dim()}')
    n_cols = 1
    for size in x.shape[2:]:
        n_cols *= size
    n_rows = x.numel() // n_cols if n_cols else 0
    out = torch.empty(list(x.shape), dtype=x.dtype, device=x.device)
    if out.numel() == 0:
        return out
    if n_cols == 0:
        raise ValueError('cannot reduce over an empty row')
    x = x.view(n_rows, n_cols)
    if ln1_weight.numel() != n_cols:
        raise ValueError(f'ln1_weight has {ln1_weight.numel()} elements, expected {n_cols}')
    ln1_weight = ln1_weight.reshape(-1)
    if ln1_bias.numel() != n_cols:
        raise ValueError(f'ln1_bias has {ln1_bias.numel()} elements, expected {n_cols}')
    ln1_bias = ln1_bias.reshape(-1)
    block_n = min(p0_BLOCK_N, triton.next_power_of_2(n_cols))
    block_m = p0_BLOCK_M * (p0_BLOCK_N // block_n)
    block_m = max(p0_BLOCK_M, min(block_m, triton.next_power_of_2(n_rows), 256))
    row_blocks = triton.cdiv(n_rows, block_m)
    n_splits = 1
    if n_cols > block_n:
        n_splits = min(triton.cdiv(p0_N_PROGRAMS, row_blocks), triton.cdiv(n_cols, block_n), 1024)
    if n_splits > 1:
        chunk = triton.cdiv(triton.cdiv(n_cols, n_splits), block_n) * block_n
        n_splits = triton.cdiv(n_cols, chunk)
        ws = torch.empty((1, n_rows, n_splits, 3), dtype=torch.float32, device=x.device)
        meta = dict(BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_S=triton.next_power_of_2(n_splits), num_warps=p0_NUM_WARPS)
        p0_fused_layernorm_split0_kernel[row_blocks * n_splits,](x, ln1_weight, ln1_bias, out, ws, n_rows, n_cols, n_splits, chunk, x.stride(0), ln1_eps, **meta)
        p0_fused_layernorm_split1_kernel[row_blocks * n_splits,](x, ln1_weight, ln1_bias, out, ws, n_rows, n_cols, n_splits, chunk, x.stride(0), ln1_eps, **meta)
        return out
    p0_fused_layernorm_kernel[row_blocks,](x, ln1_weight, ln1_bias, out, n_rows, n_cols, x.stride(0), ln1_eps, BLOCK_M=block_m, BLOCK_N=block_n, SINGLE_PASS=n_cols <= block_n, num_warps=p0_NUM_WARPS)
    return out


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
def p1_fused_matmul_kernel(a_ptr, b_ptr, alo_ptr, blo_ptr, special_ptr, qkv_bias_ptr, out_ptr, ws_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_om, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, TF32X3: tl.constexpr, CHAINS: tl.constexpr, PHASE: tl.constexpr, SPLIT_K: tl.constexpr):
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
        e0 = tl.load(qkv_bias_ptr + offs_n[None, :], mask=mask_n[None, :], other=0.0).to(tl.float32)
        e1 = acc + e0
        out_ptrs = out_ptr + offs_m[:, None].to(tl.int64) * stride_om + offs_n[None, :]
        tl.store(out_ptrs, e1.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def p1_persistent_matmul_kernel(a_desc, b_desc, out_desc, qkv_bias_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, TF32X3: tl.constexpr, NUM_SMS: tl.constexpr):
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
        e0 = tl.load(qkv_bias_ptr + offs_n[None, :], mask=mask_n[None, :], other=0.0).to(tl.float32)
        e1 = acc + e0
        out_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], e1.to(out_desc.dtype))


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


def p1_fused_matmul(ln1, qkv_weight, qkv_bias):
    """addmm [8, 512, 768] @ [768, 2304] fp32 + bias."""
    if ln1.dim() != 3 or qkv_weight.dim() != 2:
        raise ValueError(f'expected 3-dim and 2-dim operands, got {list(ln1.shape)} and {list(qkv_weight.shape)}')
    if ln1.dtype != qkv_weight.dtype:
        raise ValueError(f'ln1 is {ln1.dtype} but qkv_weight is {qkv_weight.dtype}')
    a = ln1.flatten(0, -2)
    b = qkv_weight
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f'cannot multiply {list(ln1.shape)} by {list(qkv_weight.shape)}')
    M, K = (a.shape[-2], a.shape[-1])
    N = b.shape[-1]
    tma = bool(p1_PERSISTENT) and N * ln1.dtype.itemsize % 16 == 0 and (a.device.type == 'cpu' or torch.cuda.get_device_capability(a.device)[0] >= 9)
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
    out = torch.empty((M, N), dtype=ln1.dtype, device=a.device)
    out_shape = (*ln1.shape[:-1], N)
    if out.numel() == 0:
        return out.view(out_shape)
    qkv_bias = qkv_bias.contiguous()
    if qkv_bias.numel() != N:
        raise ValueError(f'qkv_bias has {qkv_bias.numel()} elements, expected {N}')
    qkv_bias = qkv_bias.reshape(-1)
    grid = (triton.cdiv(M, p1_BLOCK_M) * triton.cdiv(N, p1_BLOCK_N),)
    k_range = K if p1_SPLIT_K == 1 else triton.cdiv(triton.cdiv(K, p1_BLOCK_K), p1_SPLIT_K) * p1_BLOCK_K
    chains = min(max(triton.cdiv(k_range, p1_CHAIN_K), 1 + (k_range >= 4096)), 8) if p1_TF32X3 >= 2 else 1
    if tma:
        sms = torch.cuda.get_device_properties(a.device).multi_processor_count if a.device.type == 'cuda' else 4
        a_desc = TensorDescriptor.from_tensor(a, [p1_BLOCK_M, p1_BLOCK_K])
        b_desc = TensorDescriptor.from_tensor(b.transpose(-1, -2), [p1_BLOCK_N, p1_BLOCK_K])
        out_desc = TensorDescriptor.from_tensor(out, [p1_BLOCK_M, p1_BLOCK_N])
        p1_persistent_matmul_kernel[min(sms, grid[0]),](a_desc, b_desc, out_desc, qkv_bias, M, N, K, BLOCK_M=p1_BLOCK_M, BLOCK_N=p1_BLOCK_N, BLOCK_K=p1_BLOCK_K, GROUP_M=p1_GROUP_M, TF32X3=p1_TF32X3, NUM_SMS=sms, num_warps=p1_NUM_WARPS, num_stages=p1_NUM_STAGES)
        return out.view(out_shape)
    if p1_SPLIT_K > 1:
        ws = torch.empty((p1_SPLIT_K, M, N), dtype=torch.float32, device=a.device)
        p1_fused_matmul_kernel[grid[0], p1_SPLIT_K](a, b, a_lo, b_lo, special, qkv_bias, out, ws, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), BLOCK_M=p1_BLOCK_M, BLOCK_N=p1_BLOCK_N, BLOCK_K=p1_BLOCK_K, GROUP_M=p1_GROUP_M, TF32X3=p1_TF32X3, CHAINS=chains, PHASE=1, SPLIT_K=p1_SPLIT_K, num_warps=p1_NUM_WARPS, num_stages=p1_NUM_STAGES)
        p1_fused_matmul_kernel[grid](a, b, a_lo, b_lo, special, qkv_bias, out, ws, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), BLOCK_M=p1_BLOCK_M, BLOCK_N=p1_BLOCK_N, BLOCK_K=p1_BLOCK_K, GROUP_M=p1_GROUP_M, TF32X3=p1_TF32X3, CHAINS=chains, PHASE=2, SPLIT_K=p1_SPLIT_K, num_warps=p1_NUM_WARPS, num_stages=p1_NUM_STAGES)
    else:
        p1_fused_matmul_kernel[grid](a, b, a_lo, b_lo, special, qkv_bias, out, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), BLOCK_M=p1_BLOCK_M, BLOCK_N=p1_BLOCK_N, BLOCK_K=p1_BLOCK_K, GROUP_M=p1_GROUP_M, TF32X3=p1_TF32X3, CHAINS=chains, PHASE=0, SPLIT_K=1, num_warps=p1_NUM_WARPS, num_stages=p1_NUM_STAGES)
    return out.view(out_shape)


p12_BLOCK_M = 64


p12_BLOCK_N = 64


p12_BLOCK_D = 64


p12_BLOCK_DV = 128


p12_NUM_WARPS = 4


p12_TF32X3 = 1


@triton.jit
def p12_softmax_base(m):
    return tl.where(m == -float('inf'), 0.0, m)


@triton.jit
def p12_attention_kernel(q_ptr, k_ptr, v_ptr, out_ptr, L, S, D, DV, s_qb, s_ql, s_kb, s_ks, s_vb, s_vs, s_vd, s_ob, s_ol, scale, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr, UPCAST: tl.constexpr, PRECISION: tl.constexpr):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_v = tl.program_id(2) * BLOCK_DV + tl.arange(0, BLOCK_DV)
    offs_d = tl.arange(0, BLOCK_D)
    mask_m = offs_m < L
    mask_v = offs_v < DV
    q_rows = q_ptr + bh * s_qb + offs_m[:, None].to(tl.int64) * s_ql
    m_i = tl.full([BLOCK_M], -float('inf'), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_DV], tl.float32)
    for start in range(0, S, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        mask_n = offs_n < S
        k_cols = k_ptr + bh * s_kb + offs_n[None, :].to(tl.int64) * s_ks
        scores = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
        for d0 in range(0, D, BLOCK_D):
            dd = d0 + offs_d
            mask_d = dd < D
            q = tl.load(q_rows + dd[None, :], mask=mask_m[:, None] & mask_d[None, :], other=0.0)
            k = tl.load(k_cols + dd[:, None], mask=mask_d[:, None] & mask_n[None, :], other=0.0)
            if UPCAST:
                scores = tl.dot(q.to(tl.float32), k.to(tl.float32), scores, input_precision=PRECISION)
            else:
                scores = tl.dot(q, k, scores)
        scores = tl.where(mask_n[None, :], scores * scale, -float('inf'))
        m_new = tl.maximum(m_i, tl.max(scores, axis=1))
        m_use = p12_softmax_base(m_new)
        p = tl.exp(scores - m_use[:, None])
        alpha = tl.exp(m_i - m_use)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + bh * s_vb + offs_n[:, None].to(tl.int64) * s_vs + offs_v[None, :].to(tl.int64) * s_vd, mask=mask_n[:, None] & mask_v[None, :], other=0.0)
        if UPCAST:
            acc = acc * alpha[:, None] + tl.dot(p, v.to(tl.float32), input_precision=PRECISION)
        else:
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]
    out_ptrs = out_ptr + bh * s_ob + offs_m[:, None].to(tl.int64) * s_ol + offs_v[None, :]
    tl.store(out_ptrs, out.to(out_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_v[None, :])


def p12_kmajor_values(v):
    """``v`` [BH, S, DV] as a view of a copy whose key axis is contiguous, its rows of S padded
    to 16 elements: TF32 tensor-core products read p @ v's B operand K-major."""
    s = v.shape[1]
    rows = torch.empty((v.shape[0], v.shape[2], (s + 15) // 16 * 16), dtype=v.dtype, device=v.device)
    out = rows[..., :s]
    out.copy_(v.transpose(1, 2))
    return out.transpose(1, 2)


def p12_launch_heads(q3, k3, v3, o3, scale, precision, upcast):
    """One flash-attention kernel: a program per BLOCK_M queries, head and BLOCK_DV features."""
    L, D = (q3.shape[1], q3.shape[2])
    S, DV = (k3.shape[1], v3.shape[2])
    block_d = min(p12_BLOCK_D, max(16, triton.next_power_of_2(D)))
    block_dv = min(p12_BLOCK_DV, max(16, triton.next_power_of_2(DV)))
    grid = (triton.cdiv(L, p12_BLOCK_M), q3.shape[0], triton.cdiv(DV, block_dv))
    p12_attention_kernel[grid](q3, k3, v3, o3, L, S, D, DV, q3.stride(0), q3.stride(1), k3.stride(0), k3.stride(1), v3.stride(0), v3.stride(1), v3.stride(2), o3.stride(0), o3.stride(1), scale, BLOCK_M=p12_BLOCK_M, BLOCK_N=p12_BLOCK_N, BLOCK_D=block_d, BLOCK_DV=block_dv, UPCAST=upcast, PRECISION=precision, num_warps=p12_NUM_WARPS)


def p12_attention(q, k, v, scale):
    """softmax(q @ k^T * scale) @ v over the last two dims; the leading dims are heads."""
    if q.dim() < 2 or k.dim() != q.dim() or v.dim() != q.dim():
        raise ValueError(f'q, k, v must have the same number (>= 2) of dims, got {list(q.shape)}, {list(k.shape)}, {list(v.shape)}')
    if q.shape[:-2] != k.shape[:-2] or q.shape[:-2] != v.shape[:-2]:
        raise ValueError(f'q, k, v must share their leading (batch, head) dims, got {list(q.shape)}, {list(k.shape)}, {list(v.shape)}')
    if k.shape[-1] != q.shape[-1] or v.shape[-2] != k.shape[-2]:
        raise ValueError(f'k must be [..., S, {q.shape[-1]}] and v [..., S, DV], got {list(k.shape)} and {list(v.shape)}')
    if not q.dtype == k.dtype == v.dtype:
        raise ValueError(f'q, k, v have dtypes {q.dtype}, {k.dtype}, {v.dtype}')
    L, DV = (q.shape[-2], v.shape[-1])
    out = torch.empty((*q.shape[:-1], DV), dtype=q.dtype, device=q.device)
    if out.numel() == 0:
        return out
    if k.shape[-2] == 0:
        raise ValueError('attention over zero keys')
    q3, k3, v3 = (t.reshape(-1, t.shape[-2], t.shape[-1]) for t in (q, k, v))
    q3, k3 = (t if t.stride(-1) == 1 else t.contiguous() for t in (q3, k3))
    precision = 'tf32x3' if p12_TF32X3 and q.dtype == torch.float32 else 'ieee'
    if precision == 'tf32x3' and v.device.type == 'cuda' and (v3.stride(-2) != 1 or v3.stride(-1) % 16):
        v3 = p12_kmajor_values(v3)
    elif v3.stride(-1) != 1 and v3.stride(-2) != 1:
        v3 = v3.contiguous()
    p12_launch_heads(q3, k3, v3, out.view(-1, L, DV), float(scale), precision, q.device.type == 'cpu' or q.dtype == torch.float32)
    return out


p16_BLOCK_M = 128


p16_BLOCK_N = 128


p16_BLOCK_K = 32


p16_GROUP_M = 8


p16_NUM_WARPS = 8


p16_NUM_STAGES = 3


p16_TF32X3 = 3


p16_CHAIN_K = 4096


p16_SPLIT_K = 1


p16_PERSISTENT = 0


@triton.jit
def p16_round_tf32(x):
    bits = x.to(tl.int32, bitcast=True)
    up = bits + 4095 + (bits >> 13 & 1) & -8192
    special = bits & 2139095040 == 2139095040
    overflow = up & 2139095040 == 2139095040
    return tl.where(special, bits, tl.where(overflow, bits & -8192, up)).to(tl.float32, bitcast=True)


@triton.jit
def p16_tf32_parts(x, special_ptr):
    hi = p16_round_tf32(x)
    special = x.to(tl.int32, bitcast=True) & 2139095040 == 2139095040
    lo = tl.where(special, 0.0, p16_round_tf32(x - hi))
    if tl.max(special.to(tl.int32)) > 0:
        tl.store(special_ptr, 1)
    return (hi, lo)


@triton.jit
def p16_split_tf32_kernel(x_ptr, hi_ptr, lo_ptr, special_ptr, R, K, KP, s_xb, s_xr, s_xk, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    b = tl.program_id(2).to(tl.int64)
    mask = (rows < R)[:, None] & (cols < KP)[None, :]
    x = tl.load(x_ptr + (b * s_xb + rows[:, None].to(tl.int64) * s_xr + cols[None, :].to(tl.int64) * s_xk), mask=mask & (cols < K)[None, :], other=0.0)
    hi, lo = p16_tf32_parts(x, special_ptr)
    out = (b * R + rows[:, None].to(tl.int64)) * KP + cols[None, :]
    tl.store(hi_ptr + out, hi, mask=mask)
    tl.store(lo_ptr + out, lo, mask=mask)


@triton.jit
def p16_fused_matmul_kernel(a_ptr, b_ptr, alo_ptr, blo_ptr, special_ptr, proj_bias_ptr, x_ptr, out_ptr, ws_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_om, stride_x_m, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, TF32X3: tl.constexpr, CHAINS: tl.constexpr, PHASE: tl.constexpr, SPLIT_K: tl.constexpr):
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
        e0 = tl.load(x_ptr + offs_m[:, None].to(tl.int64) * stride_x_m + offs_n[None, :], mask=mask, other=0.0).to(tl.float32)
        e1 = tl.load(proj_bias_ptr + offs_n[None, :], mask=mask_n[None, :], other=0.0).to(tl.float32)
        e2 = acc + e1
        e3 = e0 + e2
        out_ptrs = out_ptr + offs_m[:, None].to(tl.int64) * stride_om + offs_n[None, :]
        tl.store(out_ptrs, e3.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def p16_persistent_matmul_kernel(a_desc, b_desc, out_desc, proj_bias_ptr, x_ptr, M, N, K, stride_x_m, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, TF32X3: tl.constexpr, NUM_SMS: tl.constexpr):
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
        e0 = tl.load(x_ptr + offs_m[:, None].to(tl.int64) * stride_x_m + offs_n[None, :], mask=mask, other=0.0).to(tl.float32)
        e1 = tl.load(proj_bias_ptr + offs_n[None, :], mask=mask_n[None, :], other=0.0).to(tl.float32)
        e2 = acc + e1
        e3 = e0 + e2
        out_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], e3.to(out_desc.dtype))


def p16_aligned_rows(t):
    """``t`` copied row-major into rows padded with zeros to a multiple of 16 elements (all of
    them: the GEMM may run K to the padded length, its k tiles' masks then provably whole in
    runs of 16, so the loads vectorize)."""
    k = t.shape[-1]
    rows = torch.empty((*t.shape[:-1], (k + 15) // 16 * 16), dtype=t.dtype, device=t.device)
    rows[..., :k].copy_(t)
    rows[..., k:].zero_()
    return rows


def p16_split_tf32(t, special):
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
        p16_split_tf32_kernel[grid](t3, hi, lo, special, t3.shape[1], k, kp, *t3.stride(), BLOCK_R=32, BLOCK_K=128, num_warps=4)
    return (hi, lo)


def p16_fused_matmul(view_3, proj_weight, proj_bias, x):
    """addmm [8, 512, 768] @ [768, 768] fp32 + bias with a fused add epilogue."""
    if view_3.dim() != 3 or proj_weight.dim() != 2:
        raise ValueError(f'expected 3-dim and 2-dim operands, got {list(view_3.shape)} and {list(proj_weight.shape)}')
    if view_3.dtype != proj_weight.dtype:
        raise ValueError(f'view_3 is {view_3.dtype} but proj_weight is {proj_weight.dtype}')
    a = view_3.flatten(0, -2)
    b = proj_weight
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f'cannot multiply {list(view_3.shape)} by {list(proj_weight.shape)}')
    M, K = (a.shape[-2], a.shape[-1])
    N = b.shape[-1]
    tma = bool(p16_PERSISTENT) and N * view_3.dtype.itemsize % 16 == 0 and (a.device.type == 'cpu' or torch.cuda.get_device_capability(a.device)[0] >= 9)
    a_lo, b_lo = (a, b)
    special = a
    if p16_TF32X3 == 2:
        special = torch.zeros(1, dtype=torch.int32, device=a.device)
        a, a_lo = p16_split_tf32(a, special)
        b, b_lo = (t.transpose(-1, -2) for t in p16_split_tf32(b.transpose(-1, -2), special))
    elif p16_TF32X3 == 3:
        special = torch.zeros(1, dtype=torch.int32, device=a.device)
        if a.stride(-1) != 1 or a.stride(-2) % 16 or K % 16:
            a = p16_aligned_rows(a)
        b, b_lo = (t.transpose(-1, -2) for t in p16_split_tf32(b.transpose(-1, -2), special))
    elif p16_TF32X3 and a.device.type == 'cuda' or tma:
        if a.stride(-1) != 1 or a.stride(-2) % 16 or K % 16 or a.data_ptr() % 16:
            a = p16_aligned_rows(a)
        if b.stride(-2) != 1 or b.stride(-1) % 16 or K % 16 or b.data_ptr() % 16:
            b = p16_aligned_rows(b.transpose(-1, -2)).transpose(-1, -2)
    K = a.shape[-1]
    out = torch.empty((M, N), dtype=view_3.dtype, device=a.device)
    out_shape = (*view_3.shape[:-1], N)
    if out.numel() == 0:
        return out.view(out_shape)
    proj_bias = proj_bias.contiguous()
    if proj_bias.numel() != N:
        raise ValueError(f'proj_bias has {proj_bias.numel()} elements, expected {N}')
    proj_bias = proj_bias.reshape(-1)
    x = x.contiguous()
    if x.numel() != out.numel():
        raise ValueError(f'x {list(x.shape)} does not match the result {list(out_shape)}')
    x = x.view(out.shape)
    grid = (triton.cdiv(M, p16_BLOCK_M) * triton.cdiv(N, p16_BLOCK_N),)
    k_range = K if p16_SPLIT_K == 1 else triton.cdiv(triton.cdiv(K, p16_BLOCK_K), p16_SPLIT_K) * p16_BLOCK_K
    chains = min(max(triton.cdiv(k_range, p16_CHAIN_K), 1 + (k_range >= 4096)), 8) if p16_TF32X3 >= 2 else 1
    if tma:
        sms = torch.cuda.get_device_properties(a.device).multi_processor_count if a.device.type == 'cuda' else 4
        a_desc = TensorDescriptor.from_tensor(a, [p16_BLOCK_M, p16_BLOCK_K])
        b_desc = TensorDescriptor.from_tensor(b.transpose(-1, -2), [p16_BLOCK_N, p16_BLOCK_K])
        out_desc = TensorDescriptor.from_tensor(out, [p16_BLOCK_M, p16_BLOCK_N])
        p16_persistent_matmul_kernel[min(sms, grid[0]),](a_desc, b_desc, out_desc, proj_bias, x, M, N, K, x.stride(0), BLOCK_M=p16_BLOCK_M, BLOCK_N=p16_BLOCK_N, BLOCK_K=p16_BLOCK_K, GROUP_M=p16_GROUP_M, TF32X3=p16_TF32X3, NUM_SMS=sms, num_warps=p16_NUM_WARPS, num_stages=p16_NUM_STAGES)
        return out.view(out_shape)
    if p16_SPLIT_K > 1:
        ws = torch.empty((p16_SPLIT_K, M, N), dtype=torch.float32, device=a.device)
        p16_fused_matmul_kernel[grid[0], p16_SPLIT_K](a, b, a_lo, b_lo, special, proj_bias, x, out, ws, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), x.stride(0), BLOCK_M=p16_BLOCK_M, BLOCK_N=p16_BLOCK_N, BLOCK_K=p16_BLOCK_K, GROUP_M=p16_GROUP_M, TF32X3=p16_TF32X3, CHAINS=chains, PHASE=1, SPLIT_K=p16_SPLIT_K, num_warps=p16_NUM_WARPS, num_stages=p16_NUM_STAGES)
        p16_fused_matmul_kernel[grid](a, b, a_lo, b_lo, special, proj_bias, x, out, ws, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), x.stride(0), BLOCK_M=p16_BLOCK_M, BLOCK_N=p16_BLOCK_N, BLOCK_K=p16_BLOCK_K, GROUP_M=p16_GROUP_M, TF32X3=p16_TF32X3, CHAINS=chains, PHASE=2, SPLIT_K=p16_SPLIT_K, num_warps=p16_NUM_WARPS, num_stages=p16_NUM_STAGES)
    else:
        p16_fused_matmul_kernel[grid](a, b, a_lo, b_lo, special, proj_bias, x, out, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), x.stride(0), BLOCK_M=p16_BLOCK_M, BLOCK_N=p16_BLOCK_N, BLOCK_K=p16_BLOCK_K, GROUP_M=p16_GROUP_M, TF32X3=p16_TF32X3, CHAINS=chains, PHASE=0, SPLIT_K=1, num_warps=p16_NUM_WARPS, num_stages=p16_NUM_STAGES)
    return out.view(out_shape)


p17_BLOCK_M = 1


p17_BLOCK_N = 4096


p17_NUM_WARPS = 8


p17_N_PROGRAMS = 4096


@triton.jit
def p17_fused_layernorm_kernel(add_ptr, ln2_weight_ptr, ln2_bias_ptr, out_ptr, n_rows, n_cols, stride_add, ln2_eps, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, SINGLE_PASS: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < n_rows
    offs_n = tl.arange(0, BLOCK_N)
    if SINGLE_PASS:
        cols = offs_n
        mask = row_mask[:, None] & (cols[None, :] < n_cols)
        s0 = tl.load(add_ptr + rows[:, None] * stride_add + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        s1 = tl.sum(tl.where(mask, s0, 0.0), axis=1, keep_dims=True)
        s2 = s1 / n_cols
        s3 = s0 - s2
        s4 = s3 * s3
        s5 = tl.sum(tl.where(mask, s4, 0.0), axis=1, keep_dims=True)
        s6 = s5 / n_cols
        s7 = s6 + ln2_eps
        s8 = tl.rsqrt(s7)
        s9 = s3 * s8
        s10 = tl.load(ln2_weight_ptr + cols[None, :], mask=cols[None, :] < n_cols, other=0.0).to(tl.float32)
        s11 = s9 * s10
        s12 = tl.load(ln2_bias_ptr + cols[None, :], mask=cols[None, :] < n_cols, other=0.0).to(tl.float32)
        s13 = s11 + s12
        tl.store(out_ptr + rows[:, None] * n_cols + cols[None, :], s13.to(out_ptr.dtype.element_ty), mask=mask)
    else:
        cols = offs_n
        mask = row_mask[:, None] & (cols[None, :] < n_cols)
        h0_0 = tl.load(add_ptr + rows[:, None] * stride_add + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        r0 = tl.sum(tl.where(mask, h0_0, 0.0), axis=1, keep_dims=True) / tl.maximum(tl.sum(mask.to(tl.float32), axis=1, keep_dims=True), 1.0)
        r1 = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        r2 = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        for start in range(0, n_cols, BLOCK_N):
            cols = start + offs_n
            mask = row_mask[:, None] & (cols[None, :] < n_cols)
            p0_0 = tl.load(add_ptr + rows[:, None] * stride_add + cols[None, :], mask=mask, other=0.0).to(tl.float32)
            d0 = tl.where(mask, p0_0 - r0, 0.0)
            r1 = r1 + d0
            r2 = r2 + d0 * d0
        r3 = tl.sum(r1, axis=1, keep_dims=True)
        r4 = tl.sum(r2, axis=1, keep_dims=True)
        r5 = r0 + r3 / n_cols
        r6 = r5 * n_cols
        r7 = tl.maximum(r4 - r3 * (r3 / n_cols), 0.0, propagate_nan=tl.PropagateNan.ALL)
        r8 = r7 / n_cols
        r9 = r8 + ln2_eps
        r10 = tl.rsqrt(r9)
        for start in range(0, n_cols, BLOCK_N):
            cols = start + offs_n
            mask = row_mask[:, None] & (cols[None, :] < n_cols)
            o0 = tl.load(add_ptr + rows[:, None] * stride_add + cols[None, :], mask=mask, other=0.0).to(tl.float32)
            o1 = o0 - r5
            o2 = o1 * r10
            o3 = tl.load(ln2_weight_ptr + cols[None, :], mask=cols[None, :] < n_cols, other=0.0).to(tl.float32)
            o4 = o2 * o3
            o5 = tl.load(ln2_bias_ptr + cols[None, :], mask=cols[None, :] < n_cols, other=0.0).to(tl.float32)
            o6 = o4 + o5
            tl.store(out_ptr + rows[:, None] * n_cols + cols[None, :], o6.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def p17_fused_layernorm_split0_kernel(add_ptr, ln2_weight_ptr, ln2_bias_ptr, out_ptr, ws_ptr, n_rows, n_cols, n_splits, chunk, stride_add, ln2_eps, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_S: tl.constexpr):
    pid = tl.program_id(0)
    row_blocks = tl.cdiv(n_rows, BLOCK_M)
    split = pid // row_blocks
    rows = (pid % row_blocks).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < n_rows
    offs_n = tl.arange(0, BLOCK_N)
    offs_s = tl.arange(0, BLOCK_S)
    s_mask = row_mask[:, None] & (offs_s[None, :] < n_splits)
    cols = offs_n
    mask = row_mask[:, None] & (cols[None, :] < n_cols)
    h0_0 = tl.load(add_ptr + rows[:, None] * stride_add + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    r0 = tl.sum(tl.where(mask, h0_0, 0.0), axis=1, keep_dims=True) / tl.maximum(tl.sum(mask.to(tl.float32), axis=1, keep_dims=True), 1.0)
    r1 = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    r2 = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for col0 in range(split * chunk, split * chunk + chunk, BLOCK_N):
        cols = col0 + offs_n
        mask = row_mask[:, None] & (cols[None, :] < n_cols)
        p0_0 = tl.load(add_ptr + rows[:, None] * stride_add + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        d0 = tl.where(mask, p0_0 - r0, 0.0)
        r1 = r1 + d0
        r2 = r2 + d0 * d0
    r3 = tl.sum(r1, axis=1, keep_dims=True)
    r4 = tl.sum(r2, axis=1, keep_dims=True)
    tl.store(ws_ptr + ((0 * n_rows + rows[:, None]) * n_splits + split) * 3 + 0, r3, mask=row_mask[:, None])
    tl.store(ws_ptr + ((0 * n_rows + rows[:, None]) * n_splits + split) * 3 + 1, r4, mask=row_mask[:, None])
    tl.store(ws_ptr + ((0 * n_rows + rows[:, None]) * n_splits + split) * 3 + 2, r0, mask=row_mask[:, None])


@triton.jit
def p17_fused_layernorm_split1_kernel(add_ptr, ln2_weight_ptr, ln2_bias_ptr, out_ptr, ws_ptr, n_rows, n_cols, n_splits, chunk, stride_add, ln2_eps, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_S: tl.constexpr):
    pid = tl.program_id(0)
    row_blocks = tl.cdiv(n_rows, BLOCK_M)
    split = pid // row_blocks
    rows = (pid % row_blocks).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < n_rows
    offs_n = tl.arange(0, BLOCK_N)
    offs_s = tl.arange(0, BLOCK_S)
    s_mask = row_mask[:, None] & (offs_s[None, :] < n_splits)
    r0 = tl.load(ws_ptr + (0 * n_rows + rows[:, None]) * n_splits * 3 + 2, mask=row_mask[:, None], other=0.0)
    r1 = tl.load(ws_ptr + ((0 * n_rows + rows[:, None]) * n_splits + offs_s[None, :]) * 3 + 0, mask=s_mask, other=0.0)
    r2 = tl.sum(r1, axis=1, keep_dims=True)
    r3 = tl.load(ws_ptr + ((0 * n_rows + rows[:, None]) * n_splits + offs_s[None, :]) * 3 + 1, mask=s_mask, other=0.0)
    r4 = tl.sum(r3, axis=1, keep_dims=True)
    r5 = r0 + r2 / n_cols
    r6 = r5 * n_cols
    r7 = tl.maximum(r4 - r2 * (r2 / n_cols), 0.0, propagate_nan=tl.PropagateNan.ALL)
    r8 = r7 / n_cols
    r9 = r8 + ln2_eps
    r10 = tl.rsqrt(r9)
    for col0 in range(split * chunk, split * chunk + chunk, BLOCK_N):
        cols = col0 + offs_n
        mask = row_mask[:, None] & (cols[None, :] < n_cols)
        o0 = tl.load(add_ptr + rows[:, None] * stride_add + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        o1 = o0 - r5
        o2 = o1 * r10
        o3 = tl.load(ln2_weight_ptr + cols[None, :], mask=cols[None, :] < n_cols, other=0.0).to(tl.float32)
        o4 = o2 * o3
        o5 = tl.load(ln2_bias_ptr + cols[None, :], mask=cols[None, :] < n_cols, other=0.0).to(tl.float32)
        o6 = o4 + o5
        tl.store(out_ptr + rows[:, None] * n_cols + cols[None, :], o6.to(out_ptr.dtype.element_ty), mask=mask)


def p17_fused_layernorm(add, ln2_weight, ln2_bias, ln2_eps):
    """layer norm over dim 2 of a [8, 512, 768] fp32 tensor."""
    add = add.contiguous()
    ln2_weight = ln2_weight.contiguous()
    ln2_bias = ln2_bias.contiguous()
    if add.dim() != 3:
        raise ValueError(f'add: expected 3 dims, got {add.dim()}')
    n_cols = 1
    for size in add.shape[2:]:
        n_cols *= size
    n_rows = add.numel() // n_cols if n_cols else 0
    out = torch.empty(list(add.shape), dtype=add.dtype, device=add.device)
    if out.numel() == 0:
        return out
    if n_cols == 0:
        raise ValueError('cannot reduce over an empty row')
    add = add.view(n_rows, n_cols)
    if ln2_weight.numel() != n_cols:
        raise ValueError(f'ln2_weight has {ln2_weight.numel()} elements, expected {n_cols}')
    ln2_weight = ln2_weight.reshape(-1)
    if ln2_bias.numel() != n_cols:
        raise ValueError(f'ln2_bias has {ln2_bias.numel()} elements, expected {n_cols}')
    ln2_bias = ln2_bias.reshape(-1)
    block_n = min(p17_BLOCK_N, triton.next_power_of_2(n_cols))
    block_m = p17_BLOCK_M * (p17_BLOCK_N // block_n)
    block_m = max(p17_BLOCK_M, min(block_m, triton.next_power_of_2(n_rows), 256))
    row_blocks = triton.cdiv(n_rows, block_m)
    n_splits = 1
    if n_cols > block_n:
        n_splits = min(triton.cdiv(p17_N_PROGRAMS, row_blocks), triton.cdiv(n_cols, block_n), 1024)
    if n_splits > 1:
        chunk = triton.cdiv(triton.cdiv(n_cols, n_splits), block_n) * block_n
        n_splits = triton.cdiv(n_cols, chunk)
        ws = torch.empty((1, n_rows, n_splits, 3), dtype=torch.float32, device=add.device)
        meta = dict(BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_S=triton.next_power_of_2(n_splits), num_warps=p17_NUM_WARPS)
        p17_fused_layernorm_split0_kernel[row_blocks * n_splits,](add, ln2_weight, ln2_bias, out, ws, n_rows, n_cols, n_splits, chunk, add.stride(0), ln2_eps, **meta)
        p17_fused_layernorm_split1_kernel[row_blocks * n_splits,](add, ln2_weight, ln2_bias, out, ws, n_rows, n_cols, n_splits, chunk, add.stride(0), ln2_eps, **meta)
        return out
    p17_fused_layernorm_kernel[row_blocks,](add, ln2_weight, ln2_bias, out, n_rows, n_cols, add.stride(0), ln2_eps, BLOCK_M=block_m, BLOCK_N=block_n, SINGLE_PASS=n_cols <= block_n, num_warps=p17_NUM_WARPS)
    return out


p18_BLOCK_M = 128


p18_BLOCK_N = 128


p18_BLOCK_K = 32


p18_GROUP_M = 8


p18_NUM_WARPS = 8


p18_NUM_STAGES = 3


p18_TF32X3 = 2


p18_CHAIN_K = 4096


p18_SPLIT_K = 1


p18_PERSISTENT = 0


@triton.jit
def p18_round_tf32(x):
    bits = x.to(tl.int32, bitcast=True)
    up = bits + 4095 + (bits >> 13 & 1) & -8192
    special = bits & 2139095040 == 2139095040
    overflow = up & 2139095040 == 2139095040
    return tl.where(special, bits, tl.where(overflow, bits & -8192, up)).to(tl.float32, bitcast=True)


@triton.jit
def p18_tf32_parts(x, special_ptr):
    hi = p18_round_tf32(x)
    special = x.to(tl.int32, bitcast=True) & 2139095040 == 2139095040
    lo = tl.where(special, 0.0, p18_round_tf32(x - hi))
    if tl.max(special.to(tl.int32)) > 0:
        tl.store(special_ptr, 1)
    return (hi, lo)


@triton.jit
def p18_split_tf32_kernel(x_ptr, hi_ptr, lo_ptr, special_ptr, R, K, KP, s_xb, s_xr, s_xk, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    b = tl.program_id(2).to(tl.int64)
    mask = (rows < R)[:, None] & (cols < KP)[None, :]
    x = tl.load(x_ptr + (b * s_xb + rows[:, None].to(tl.int64) * s_xr + cols[None, :].to(tl.int64) * s_xk), mask=mask & (cols < K)[None, :], other=0.0)
    hi, lo = p18_tf32_parts(x, special_ptr)
    out = (b * R + rows[:, None].to(tl.int64)) * KP + cols[None, :]
    tl.store(hi_ptr + out, hi, mask=mask)
    tl.store(lo_ptr + out, lo, mask=mask)


@triton.jit
def p18_fused_matmul_kernel(a_ptr, b_ptr, alo_ptr, blo_ptr, special_ptr, fc1_bias_ptr, out_ptr, ws_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_om, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, TF32X3: tl.constexpr, CHAINS: tl.constexpr, PHASE: tl.constexpr, SPLIT_K: tl.constexpr):
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
def p18_persistent_matmul_kernel(a_desc, b_desc, out_desc, fc1_bias_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, TF32X3: tl.constexpr, NUM_SMS: tl.constexpr):
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


def p18_aligned_rows(t):
    """``t`` copied row-major into rows padded with zeros to a multiple of 16 elements (all of
    them: the GEMM may run K to the padded length, its k tiles' masks then provably whole in
    runs of 16, so the loads vectorize)."""
    k = t.shape[-1]
    rows = torch.empty((*t.shape[:-1], (k + 15) // 16 * 16), dtype=t.dtype, device=t.device)
    rows[..., :k].copy_(t)
    rows[..., k:].zero_()
    return rows


def p18_split_tf32(t, special):
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
        p18_split_tf32_kernel[grid](t3, hi, lo, special, t3.shape[1], k, kp, *t3.stride(), BLOCK_R=32, BLOCK_K=128, num_warps=4)
    return (hi, lo)


def p18_fused_matmul(ln2, fc1_weight, fc1_bias):
    """addmm [8, 512, 768] @ [768, 3072] fp32 + bias with a fused gelu epilogue."""
    if ln2.dim() != 3 or fc1_weight.dim() != 2:
        raise ValueError(f'expected 3-dim and 2-dim operands, got {list(ln2.shape)} and {list(fc1_weight.shape)}')
    if ln2.dtype != fc1_weight.dtype:
        raise ValueError(f'ln2 is {ln2.dtype} but fc1_weight is {fc1_weight.dtype}')
    a = ln2.flatten(0, -2)
    b = fc1_weight
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f'cannot multiply {list(ln2.shape)} by {list(fc1_weight.shape)}')
    M, K = (a.shape[-2], a.shape[-1])
    N = b.shape[-1]
    tma = bool(p18_PERSISTENT) and N * ln2.dtype.itemsize % 16 == 0 and (a.device.type == 'cpu' or torch.cuda.get_device_capability(a.device)[0] >= 9)
    a_lo, b_lo = (a, b)
    special = a
    if p18_TF32X3 == 2:
        special = torch.zeros(1, dtype=torch.int32, device=a.device)
        a, a_lo = p18_split_tf32(a, special)
        b, b_lo = (t.transpose(-1, -2) for t in p18_split_tf32(b.transpose(-1, -2), special))
    elif p18_TF32X3 == 3:
        special = torch.zeros(1, dtype=torch.int32, device=a.device)
        if a.stride(-1) != 1 or a.stride(-2) % 16 or K % 16:
            a = p18_aligned_rows(a)
        b, b_lo = (t.transpose(-1, -2) for t in p18_split_tf32(b.transpose(-1, -2), special))
    elif p18_TF32X3 and a.device.type == 'cuda' or tma:
        if a.stride(-1) != 1 or a.stride(-2) % 16 or K % 16 or a.data_ptr() % 16:
            a = p18_aligned_rows(a)
        if b.stride(-2) != 1 or b.stride(-1) % 16 or K % 16 or b.data_ptr() % 16:
            b = p18_aligned_rows(b.transpose(-1, -2)).transpose(-1, -2)
    K = a.shape[-1]
    out = torch.empty((M, N), dtype=ln2.dtype, device=a.device)
    out_shape = (*ln2.shape[:-1], N)
    if out.numel() == 0:
        return out.view(out_shape)
    fc1_bias = fc1_bias.contiguous()
    if fc1_bias.numel() != N:
        raise ValueError(f'fc1_bias has {fc1_bias.numel()} elements, expected {N}')
    fc1_bias = fc1_bias.reshape(-1)
    grid = (triton.cdiv(M, p18_BLOCK_M) * triton.cdiv(N, p18_BLOCK_N),)
    k_range = K if p18_SPLIT_K == 1 else triton.cdiv(triton.cdiv(K, p18_BLOCK_K), p18_SPLIT_K) * p18_BLOCK_K
    chains = min(max(triton.cdiv(k_range, p18_CHAIN_K), 1 + (k_range >= 4096)), 8) if p18_TF32X3 >= 2 else 1
    if tma:
        sms = torch.cuda.get_device_properties(a.device).multi_processor_count if a.device.type == 'cuda' else 4
        a_desc = TensorDescriptor.from_tensor(a, [p18_BLOCK_M, p18_BLOCK_K])
        b_desc = TensorDescriptor.from_tensor(b.transpose(-1, -2), [p18_BLOCK_N, p18_BLOCK_K])
        out_desc = TensorDescriptor.from_tensor(out, [p18_BLOCK_M, p18_BLOCK_N])
        p18_persistent_matmul_kernel[min(sms, grid[0]),](a_desc, b_desc, out_desc, fc1_bias, M, N, K, BLOCK_M=p18_BLOCK_M, BLOCK_N=p18_BLOCK_N, BLOCK_K=p18_BLOCK_K, GROUP_M=p18_GROUP_M, TF32X3=p18_TF32X3, NUM_SMS=sms, num_warps=p18_NUM_WARPS, num_stages=p18_NUM_STAGES)
        return out.view(out_shape)
    if p18_SPLIT_K > 1:
        ws = torch.empty((p18_SPLIT_K, M, N), dtype=torch.float32, device=a.device)
        p18_fused_matmul_kernel[grid[0], p18_SPLIT_K](a, b, a_lo, b_lo, special, fc1_bias, out, ws, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), BLOCK_M=p18_BLOCK_M, BLOCK_N=p18_BLOCK_N, BLOCK_K=p18_BLOCK_K, GROUP_M=p18_GROUP_M, TF32X3=p18_TF32X3, CHAINS=chains, PHASE=1, SPLIT_K=p18_SPLIT_K, num_warps=p18_NUM_WARPS, num_stages=p18_NUM_STAGES)
        p18_fused_matmul_kernel[grid](a, b, a_lo, b_lo, special, fc1_bias, out, ws, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), BLOCK_M=p18_BLOCK_M, BLOCK_N=p18_BLOCK_N, BLOCK_K=p18_BLOCK_K, GROUP_M=p18_GROUP_M, TF32X3=p18_TF32X3, CHAINS=chains, PHASE=2, SPLIT_K=p18_SPLIT_K, num_warps=p18_NUM_WARPS, num_stages=p18_NUM_STAGES)
    else:
        p18_fused_matmul_kernel[grid](a, b, a_lo, b_lo, special, fc1_bias, out, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), BLOCK_M=p18_BLOCK_M, BLOCK_N=p18_BLOCK_N, BLOCK_K=p18_BLOCK_K, GROUP_M=p18_GROUP_M, TF32X3=p18_TF32X3, CHAINS=chains, PHASE=0, SPLIT_K=1, num_warps=p18_NUM_WARPS, num_stages=p18_NUM_STAGES)
    return out.view(out_shape)


p19_BLOCK_M = 128


p19_BLOCK_N = 128


p19_BLOCK_K = 32


p19_GROUP_M = 8


p19_NUM_WARPS = 8


p19_NUM_STAGES = 3


p19_TF32X3 = 3


p19_CHAIN_K = 4096


p19_SPLIT_K = 1


p19_PERSISTENT = 0


@triton.jit
def p19_round_tf32(x):
    bits = x.to(tl.int32, bitcast=True)
    up = bits + 4095 + (bits >> 13 & 1) & -8192
    special = bits & 2139095040 == 2139095040
    overflow = up & 2139095040 == 2139095040
    return tl.where(special, bits, tl.where(overflow, bits & -8192, up)).to(tl.float32, bitcast=True)


@triton.jit
def p19_tf32_parts(x, special_ptr):
    hi = p19_round_tf32(x)
    special = x.to(tl.int32, bitcast=True) & 2139095040 == 2139095040
    lo = tl.where(special, 0.0, p19_round_tf32(x - hi))
    if tl.max(special.to(tl.int32)) > 0:
        tl.store(special_ptr, 1)
    return (hi, lo)


@triton.jit
def p19_split_tf32_kernel(x_ptr, hi_ptr, lo_ptr, special_ptr, R, K, KP, s_xb, s_xr, s_xk, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    b = tl.program_id(2).to(tl.int64)
    mask = (rows < R)[:, None] & (cols < KP)[None, :]
    x = tl.load(x_ptr + (b * s_xb + rows[:, None].to(tl.int64) * s_xr + cols[None, :].to(tl.int64) * s_xk), mask=mask & (cols < K)[None, :], other=0.0)
    hi, lo = p19_tf32_parts(x, special_ptr)
    out = (b * R + rows[:, None].to(tl.int64)) * KP + cols[None, :]
    tl.store(hi_ptr + out, hi, mask=mask)
    tl.store(lo_ptr + out, lo, mask=mask)


@triton.jit
def p19_fused_matmul_kernel(a_ptr, b_ptr, alo_ptr, blo_ptr, special_ptr, fc2_bias_ptr, add_ptr, out_ptr, ws_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_om, stride_add_m, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, TF32X3: tl.constexpr, CHAINS: tl.constexpr, PHASE: tl.constexpr, SPLIT_K: tl.constexpr):
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
        e0 = tl.load(add_ptr + offs_m[:, None].to(tl.int64) * stride_add_m + offs_n[None, :], mask=mask, other=0.0).to(tl.float32)
        e1 = tl.load(fc2_bias_ptr + offs_n[None, :], mask=mask_n[None, :], other=0.0).to(tl.float32)
        e2 = acc + e1
        e3 = e0 + e2
        out_ptrs = out_ptr + offs_m[:, None].to(tl.int64) * stride_om + offs_n[None, :]
        tl.store(out_ptrs, e3.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def p19_persistent_matmul_kernel(a_desc, b_desc, out_desc, fc2_bias_ptr, add_ptr, M, N, K, stride_add_m, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, TF32X3: tl.constexpr, NUM_SMS: tl.constexpr):
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
        e0 = tl.load(add_ptr + offs_m[:, None].to(tl.int64) * stride_add_m + offs_n[None, :], mask=mask, other=0.0).to(tl.float32)
        e1 = tl.load(fc2_bias_ptr + offs_n[None, :], mask=mask_n[None, :], other=0.0).to(tl.float32)
        e2 = acc + e1
        e3 = e0 + e2
        out_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], e3.to(out_desc.dtype))


def p19_aligned_rows(t):
    """``t`` copied row-major into rows padded with zeros to a multiple of 16 elements (all of
    them: the GEMM may run K to the padded length, its k tiles' masks then provably whole in
    runs of 16, so the loads vectorize)."""
    k = t.shape[-1]
    rows = torch.empty((*t.shape[:-1], (k + 15) // 16 * 16), dtype=t.dtype, device=t.device)
    rows[..., :k].copy_(t)
    rows[..., k:].zero_()
    return rows


def p19_split_tf32(t, special):
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
        p19_split_tf32_kernel[grid](t3, hi, lo, special, t3.shape[1], k, kp, *t3.stride(), BLOCK_R=32, BLOCK_K=128, num_warps=4)
    return (hi, lo)


def p19_fused_matmul(gelu, fc2_weight, fc2_bias, add):
    """addmm [8, 512, 3072] @ [3072, 768] fp32 + bias with a fused add epilogue."""
    if gelu.dim() != 3 or fc2_weight.dim() != 2:
        raise ValueError(f'expected 3-dim and 2-dim operands, got {list(gelu.shape)} and {list(fc2_weight.shape)}')
    if gelu.dtype != fc2_weight.dtype:
        raise ValueError(f'gelu is {gelu.dtype} but fc2_weight is {fc2_weight.dtype}')
    a = gelu.flatten(0, -2)
    b = fc2_weight
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f'cannot multiply {list(gelu.shape)} by {list(fc2_weight.shape)}')
    M, K = (a.shape[-2], a.shape[-1])
    N = b.shape[-1]
    tma = bool(p19_PERSISTENT) and N * gelu.dtype.itemsize % 16 == 0 and (a.device.type == 'cpu' or torch.cuda.get_device_capability(a.device)[0] >= 9)
    a_lo, b_lo = (a, b)
    special = a
    if p19_TF32X3 == 2:
        special = torch.zeros(1, dtype=torch.int32, device=a.device)
        a, a_lo = p19_split_tf32(a, special)
        b, b_lo = (t.transpose(-1, -2) for t in p19_split_tf32(b.transpose(-1, -2), special))
    elif p19_TF32X3 == 3:
        special = torch.zeros(1, dtype=torch.int32, device=a.device)
        if a.stride(-1) != 1 or a.stride(-2) % 16 or K % 16:
            a = p19_aligned_rows(a)
        b, b_lo = (t.transpose(-1, -2) for t in p19_split_tf32(b.transpose(-1, -2), special))
    elif p19_TF32X3 and a.device.type == 'cuda' or tma:
        if a.stride(-1) != 1 or a.stride(-2) % 16 or K % 16 or a.data_ptr() % 16:
            a = p19_aligned_rows(a)
        if b.stride(-2) != 1 or b.stride(-1) % 16 or K % 16 or b.data_ptr() % 16:
            b = p19_aligned_rows(b.transpose(-1, -2)).transpose(-1, -2)
    K = a.shape[-1]
    out = torch.empty((M, N), dtype=gelu.dtype, device=a.device)
    out_shape = (*gelu.shape[:-1], N)
    if out.numel() == 0:
        return out.view(out_shape)
    fc2_bias = fc2_bias.contiguous()
    if fc2_bias.numel() != N:
        raise ValueError(f'fc2_bias has {fc2_bias.numel()} elements, expected {N}')
    fc2_bias = fc2_bias.reshape(-1)
    add = add.contiguous()
    if add.numel() != out.numel():
        raise ValueError(f'add {list(add.shape)} does not match the result {list(out_shape)}')
    add = add.view(out.shape)
    grid = (triton.cdiv(M, p19_BLOCK_M) * triton.cdiv(N, p19_BLOCK_N),)
    k_range = K if p19_SPLIT_K == 1 else triton.cdiv(triton.cdiv(K, p19_BLOCK_K), p19_SPLIT_K) * p19_BLOCK_K
    chains = min(max(triton.cdiv(k_range, p19_CHAIN_K), 1 + (k_range >= 4096)), 8) if p19_TF32X3 >= 2 else 1
    if tma:
        sms = torch.cuda.get_device_properties(a.device).multi_processor_count if a.device.type == 'cuda' else 4
        a_desc = TensorDescriptor.from_tensor(a, [p19_BLOCK_M, p19_BLOCK_K])
        b_desc = TensorDescriptor.from_tensor(b.transpose(-1, -2), [p19_BLOCK_N, p19_BLOCK_K])
        out_desc = TensorDescriptor.from_tensor(out, [p19_BLOCK_M, p19_BLOCK_N])
        p19_persistent_matmul_kernel[min(sms, grid[0]),](a_desc, b_desc, out_desc, fc2_bias, add, M, N, K, add.stride(0), BLOCK_M=p19_BLOCK_M, BLOCK_N=p19_BLOCK_N, BLOCK_K=p19_BLOCK_K, GROUP_M=p19_GROUP_M, TF32X3=p19_TF32X3, NUM_SMS=sms, num_warps=p19_NUM_WARPS, num_stages=p19_NUM_STAGES)
        return out.view(out_shape)
    if p19_SPLIT_K > 1:
        ws = torch.empty((p19_SPLIT_K, M, N), dtype=torch.float32, device=a.device)
        p19_fused_matmul_kernel[grid[0], p19_SPLIT_K](a, b, a_lo, b_lo, special, fc2_bias, add, out, ws, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), add.stride(0), BLOCK_M=p19_BLOCK_M, BLOCK_N=p19_BLOCK_N, BLOCK_K=p19_BLOCK_K, GROUP_M=p19_GROUP_M, TF32X3=p19_TF32X3, CHAINS=chains, PHASE=1, SPLIT_K=p19_SPLIT_K, num_warps=p19_NUM_WARPS, num_stages=p19_NUM_STAGES)
        p19_fused_matmul_kernel[grid](a, b, a_lo, b_lo, special, fc2_bias, add, out, ws, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), add.stride(0), BLOCK_M=p19_BLOCK_M, BLOCK_N=p19_BLOCK_N, BLOCK_K=p19_BLOCK_K, GROUP_M=p19_GROUP_M, TF32X3=p19_TF32X3, CHAINS=chains, PHASE=2, SPLIT_K=p19_SPLIT_K, num_warps=p19_NUM_WARPS, num_stages=p19_NUM_STAGES)
    else:
        p19_fused_matmul_kernel[grid](a, b, a_lo, b_lo, special, fc2_bias, add, out, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), add.stride(0), BLOCK_M=p19_BLOCK_M, BLOCK_N=p19_BLOCK_N, BLOCK_K=p19_BLOCK_K, GROUP_M=p19_GROUP_M, TF32X3=p19_TF32X3, CHAINS=chains, PHASE=0, SPLIT_K=1, num_warps=p19_NUM_WARPS, num_stages=p19_NUM_STAGES)
    return out.view(out_shape)


class ModelNew(nn.Module):
    """transformer_block in 20 parts."""

    def __init__(self, d_model, n_heads, d_ff):
        super().__init__()
        self.n_heads = n_heads
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)

    def _p0_forward(self, x):
        return p0_fused_layernorm(x, self.ln1.weight, self.ln1.bias, float(self.ln1.eps))

    def _p1_forward(self, ln1):
        return p1_fused_matmul(ln1, self.qkv.weight.t(), self.qkv.bias)

    def _p2_forward(self, qkv, x):
        getattr_1 = x.shape
        x = None
        getitem_2 = getattr_1[2]
        getattr_1 = None
        split = qkv.split(getitem_2, dim=2)
        qkv = getitem_2 = None
        return split

    def _p3_forward(self, split):
        getitem_3 = split[0]
        split = None
        return getitem_3

    def _p4_forward(self, split):
        getitem_4 = split[1]
        split = None
        return getitem_4

    def _p5_forward(self, split):
        getitem_5 = split[2]
        split = None
        return getitem_5

    def _p6_forward(self, getitem_3, x):
        n_heads = self.n_heads
        getattr_1 = x.shape
        x = None
        getitem = getattr_1[0]
        getitem_1 = getattr_1[1]
        getitem_2 = getattr_1[2]
        getattr_1 = None
        floordiv = getitem_2 // n_heads
        getitem_2 = None
        view = getitem_3.view(getitem, getitem_1, n_heads, floordiv)
        getitem_3 = getitem = getitem_1 = n_heads = floordiv = None
        return view

    def _p7_forward(self, view):
        transpose = view.transpose(1, 2)
        view = None
        return transpose

    def _p8_forward(self, getitem_4, x):
        n_heads = self.n_heads
        getattr_1 = x.shape
        x = None
        getitem = getattr_1[0]
        getitem_1 = getattr_1[1]
        getitem_2 = getattr_1[2]
        getattr_1 = None
        floordiv_1 = getitem_2 // n_heads
        getitem_2 = None
        view_1 = getitem_4.view(getitem, getitem_1, n_heads, floordiv_1)
        getitem_4 = getitem = getitem_1 = n_heads = floordiv_1 = None
        return view_1

    def _p9_forward(self, view_1):
        transpose_1 = view_1.transpose(1, 2)
        view_1 = None
        return transpose_1

    def _p10_forward(self, getitem_5, x):
        n_heads = self.n_heads
        getattr_1 = x.shape
        x = None
        getitem = getattr_1[0]
        getitem_1 = getattr_1[1]
        getitem_2 = getattr_1[2]
        getattr_1 = None
        floordiv_2 = getitem_2 // n_heads
        getitem_2 = None
        view_2 = getitem_5.view(getitem, getitem_1, n_heads, floordiv_2)
        getitem_5 = getitem = getitem_1 = n_heads = floordiv_2 = None
        return view_2

    def _p11_forward(self, view_2):
        transpose_2 = view_2.transpose(1, 2)
        view_2 = None
        return transpose_2

    def _p12_forward(self, transpose_1, transpose, x, transpose_2):
        return p12_attention(transpose, transpose_1, transpose_2, transpose.shape[-1] ** (-0.5))

    def _p13_forward(self, matmul_1):
        transpose_4 = matmul_1.transpose(1, 2)
        matmul_1 = None
        return transpose_4

    def _p14_forward(self, transpose_4):
        contiguous = transpose_4.contiguous()
        transpose_4 = None
        return contiguous

    def _p15_forward(self, contiguous, x):
        getattr_1 = x.shape
        x = None
        getitem = getattr_1[0]
        getitem_1 = getattr_1[1]
        getitem_2 = getattr_1[2]
        getattr_1 = None
        view_3 = contiguous.view(getitem, getitem_1, getitem_2)
        contiguous = getitem = getitem_1 = getitem_2 = None
        return view_3

    def _p16_forward(self, view_3, x):
        return p16_fused_matmul(view_3, self.proj.weight.t(), self.proj.bias, x)

    def _p17_forward(self, add):
        return p17_fused_layernorm(add, self.ln2.weight, self.ln2.bias, float(self.ln2.eps))

    def _p18_forward(self, ln2):
        return p18_fused_matmul(ln2, self.fc1.weight.t(), self.fc1.bias)

    def _p19_forward(self, gelu, add):
        return p19_fused_matmul(gelu, self.fc2.weight.t(), self.fc2.bias, add)

    def forward(self, x):
        ln1 = self._p0_forward(x)
        qkv = self._p1_forward(ln1)
        split = self._p2_forward(qkv, x)
        getitem_3 = self._p3_forward(split)
        getitem_4 = self._p4_forward(split)
        getitem_5 = self._p5_forward(split)
        view = self._p6_forward(getitem_3, x)
        transpose = self._p7_forward(view)
        view_1 = self._p8_forward(getitem_4, x)
        transpose_1 = self._p9_forward(view_1)
        view_2 = self._p10_forward(getitem_5, x)
        transpose_2 = self._p11_forward(view_2)
        matmul_1 = self._p12_forward(transpose_1, transpose, x, transpose_2)
        transpose_4 = self._p13_forward(matmul_1)
        contiguous = self._p14_forward(transpose_4)
        view_3 = self._p15_forward(contiguous, x)
        add = self._p16_forward(view_3, x)
        ln2 = self._p17_forward(add)
        gelu = self._p18_forward(ln2)
        add_1 = self._p19_forward(gelu, add)
        return add_1
