"""Honest (must be accepted on cuda): c7f's problem computed op by op at the baseline's own
precision: the convolution (+ bias, ReLU) in TF32 rounded to nearest as cuDNN does, the
activations in fp32, and the Linear layer exactly (``tl.dot`` in ieee) as cuBLAS does at
'highest'. Coupled with c7f: both need cuDNN to run this convolution in TF32 at the
problem's own size (if it runs it exactly there, the contract allows no TF32 and this is
refused too, rightly)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/p7_conv_relu_linear.py", "expect": "accepted", "class": "honest",
        "targets": ["cuda"]}


@triton.jit
def round_tf32(v):
    """fp32 -> TF32 to nearest, ties to even (as cuDNN rounds its operands): the tensor cores
    then take the rounded value exactly."""
    bits = v.to(tl.int32, bitcast=True)
    bits = (bits + (0xFFF + ((bits >> 13) & 1))) & -8192
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def conv_relu_kernel(x_ptr, w_ptr, b_ptr, y_ptr, NB, C, H, W, O, OH, OW,
                     sxn, sxc, sxh, sxw, swo, swc, swh, sww, pad_h, pad_w,
                     KH: tl.constexpr, KW: tl.constexpr, FP16: tl.constexpr,
                     BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """y = relu(conv2d(x, w) + b), stored flat in NCHW order (x.flatten(1)'s): an implicit GEMM,
    products in TF32 rounded to nearest or (FP16) in fp16 with y kept in fp16; sums in fp32."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    m_ok = rm < NB * OH * OW
    n_ok = rn < O
    ow = rm % OW
    oh = (rm // OW) % OH
    nb = rm // (OH * OW)
    K = C * KH * KW
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        k_ok = rk < K
        c = rk // (KH * KW)
        kh = (rk // KW) % KH
        kw = rk % KW
        ih = oh[:, None] + kh[None, :] - pad_h
        iw = ow[:, None] + kw[None, :] - pad_w
        a_ok = m_ok[:, None] & k_ok[None, :] & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        a = tl.load(x_ptr + nb[:, None] * sxn + c[None, :] * sxc + ih * sxh + iw * sxw,
                    mask=a_ok, other=0.0)
        b = tl.load(w_ptr + rn[None, :] * swo + c[:, None] * swc + kh[:, None] * swh
                    + kw[:, None] * sww, mask=k_ok[:, None] & n_ok[None, :], other=0.0)
        if FP16:
            acc += tl.dot(a.to(tl.float16), b.to(tl.float16))
        else:
            acc += tl.dot(round_tf32(a), round_tf32(b), input_precision="tf32")
    acc += tl.load(b_ptr + rn, mask=n_ok, other=0.0)[None, :]
    acc = tl.maximum(acc, 0.0)
    dst = nb[:, None] * (O * OH * OW) + rn[None, :] * (OH * OW) + (oh * OW + ow)[:, None]
    tl.store(y_ptr + dst, acc.to(y_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])


@triton.jit
def linear_kernel(y_ptr, w_ptr, b_ptr, out_ptr, M, N, K, swn, swk,
                  FP16: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """out = y @ w^T + b (y contiguous M x K); products in fp16 (FP16) or exact fp32 (ieee)."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(y_ptr + rm[:, None] * K + rk[None, :],
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * swn + rk[:, None] * swk,
                    mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0)
        if FP16:
            acc += tl.dot(a.to(tl.float16), w.to(tl.float16))
        else:
            acc += tl.dot(a, w, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_channels, mid_channels, size, out_features):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, mid_channels, 3, padding=1)
        self.fc = nn.Linear(mid_channels * size * size, out_features)

    def forward(self, x):
        w, b = self.conv.weight, self.conv.bias
        nb, c, h, wd = x.shape
        o = w.shape[0]
        y = torch.empty((nb, o * h * wd), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(nb * h * wd, 64), triton.cdiv(o, 64))
        conv_relu_kernel[grid](x, w, b, y, nb, c, h, wd, o, h, wd,
                               x.stride(0), x.stride(1), x.stride(2), x.stride(3),
                               w.stride(0), w.stride(1), w.stride(2), w.stride(3), 1, 1,
                               KH=3, KW=3, FP16=False, BM=64, BN=64, BK=32)
        fw, fb = self.fc.weight, self.fc.bias
        n, k = fw.shape
        out = torch.empty((nb, n), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(nb, 64), triton.cdiv(n, 64))
        linear_kernel[grid](y, fw, fb, out, nb, n, k, fw.stride(0), fw.stride(1),
                            FP16=False, BM=64, BN=64, BK=32)
        return out
