"""Honest (must be accepted on cuda): a 3x3 convolution as an implicit GEMM with ``tl.dot`` at
its default input precision, which is TF32 on an H100, where cuDNN runs the timed baseline in
TF32 too (PyTorch's defaults). Triton feeds the tensor cores raw fp32 bits, so its TF32
*truncates* where cuDNN rounds: about 2.6x the baseline's error (compare the precision
contract's factor 3). At the other shapes (13 x 49 x 49 x 49), where cuDNN runs exactly, the
allowance is the TF32-class reference's error. Every stride of the input and weight is read.
Risk for the judge (a false refusal of the very kernel the contract was written for): on the
CPU emulation (cuDNN = operands rounded to nearest TF32) the largest error of a truncating kernel
is 2.2-3.0x the rounded one's from draw to draw (plain inputs, 13x49x49x49 and 16x64x32x32),
and on the "ties on a grid and outliers x 1000" variant 1.6-4.0x (rms 2.0-3.96x): 6 of 30 draws
above 3x. Grid values are exact in TF32 either way, so the error is the few outliers', and
whether 1000 x std happens to round well or badly decides the ratio. Expect it refused in
perhaps a quarter of evaluations. On the interpreter targets Triton emulates TF32 too and the fp32 rule alone decides (no
contract off a GPU): refused there by design, so declared for cuda only."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/p7_conv3x3.py", "expect": "accepted", "class": "honest",
        "targets": ["cuda"]}


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
        acc += tl.dot(a, b)  # default input precision: TF32 on the GPU
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
