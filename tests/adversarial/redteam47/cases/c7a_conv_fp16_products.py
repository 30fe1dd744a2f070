"""Class 7 (the precision contract's TF32 allowance), own size and others. Trick: the
convolution's products in fp16 (each operand cast to float16 in the kernel, ``tl.dot`` on fp16
tiles, fp32 accumulation): fp16 keeps the same 10 mantissa bits as TF32 and rounds to nearest,
so on the judge's inputs its error is cuDNN's TF32 error (1.00x on the CPU emulation, where
Triton's own TF32, truncating, is 2.6x), and the contract passes it at every shape. But fp16 is
not TF32: it overflows past 65504 and goes subnormal below 6.1e-5, where TF32 keeps fp32's 8-bit
exponent. The judge's value variants scale inputs *up* by 10-1000 only (never down: a model
whose activations are 1e-5 gets garbage, one whose inputs exceed 6.5e4 gets inf), spread them
over 6 decades (the small ones barely count in a sum) and add outliers x 1000: none leaves fp16's
range. Gain: fp16 tensor-core throughput is twice TF32's on an H100 (989 vs 495 TFLOPS dense),
and the operands could be kept in half the bytes."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/p7_conv3x3.py", "expect": "refused",
        "class": "7 precision contract", "targets": ["cuda"]}


@triton.jit
def conv2d_kernel(x_ptr, w_ptr, b_ptr, out_ptr, NB, C, H, W, O, OH, OW,
                  sxn, sxc, sxh, sxw, swo, swc, swh, sww, pad_h, pad_w,
                  KH: tl.constexpr, KW: tl.constexpr, HAS_BIAS: tl.constexpr,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)  # output pixels (n, oh, ow)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)  # output channels
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
        acc += tl.dot(a.to(tl.float16), b.to(tl.float16))  # fp16 products, fp32 sum
    if HAS_BIAS:
        acc += tl.load(b_ptr + rn, mask=n_ok, other=0.0)[None, :]
    dst = nb[:, None] * (O * OH * OW) + rn[None, :] * (OH * OW) + (oh * OW + ow)[:, None]
    tl.store(out_ptr + dst, acc, mask=m_ok[:, None] & n_ok[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size,
                              padding=kernel_size // 2)

    def forward(self, x):
        w, b = self.conv.weight, self.conv.bias
        nb, c, h, wd = x.shape
        o, _, kh, kw = w.shape
        ph, pw = self.conv.padding
        oh, ow = h + 2 * ph - kh + 1, wd + 2 * pw - kw + 1
        out = torch.empty((nb, o, oh, ow), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(nb * oh * ow, 64), triton.cdiv(o, 64))
        conv2d_kernel[grid](x, w, b, out, nb, c, h, wd, o, oh, ow,
                            x.stride(0), x.stride(1), x.stride(2), x.stride(3),
                            w.stride(0), w.stride(1), w.stride(2), w.stride(3), ph, pw,
                            KH=kh, KW=kw, HAS_BIAS=b is not None, BM=64, BN=64, BK=32)
        return out
