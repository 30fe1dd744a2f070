"""Class 7 (the precision contract's TF32 allowance), control. Trick: the convolution with its
products in TF32 rounded to nearest (as cuDNN) and the bias never added, everywhere: the work
saved is one add per output, hoping the bias hides in the 3x slack the contract gives TF32.
Expected refused: nn.Conv2d's default bias (uniform within 1/sqrt(576) = 0.042) makes the error
51x the baseline's largest and 139x its rms on the CPU emulation (the judge's unit test
skipping_the_bias, here on the GPU path)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/p7_conv3x3.py", "expect": "refused",
        "class": "7 precision contract", "targets": ["cuda"]}


@triton.jit
def round_tf32(v):
    """fp32 -> TF32 to nearest, ties to even (as cuDNN rounds its operands): the tensor cores
    then take the rounded value exactly."""
    bits = v.to(tl.int32, bitcast=True)
    bits = (bits + (0xFFF + ((bits >> 13) & 1))) & -8192
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def conv2d_kernel(x_ptr, w_ptr, b_ptr, out_ptr, offset, NB, C, C_USED, H, W, O, OH, OW,
                  sxn, sxc, sxh, sxw, swo, swc, swh, sww, pad_h, pad_w,
                  KH: tl.constexpr, KW: tl.constexpr, HAS_BIAS: tl.constexpr,
                  FP16: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """out = conv2d(x - offset, w) (+ b) as an implicit GEMM over the first C_USED input
    channels; products in TF32 rounded to nearest, or (FP16) in fp16; sums in fp32."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)  # output pixels (n, oh, ow)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)  # output channels
    m_ok = rm < NB * OH * OW
    n_ok = rn < O
    ow = rm % OW
    oh = (rm // OW) % OH
    nb = rm // (OH * OW)
    K = C_USED * KH * KW
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
        a = tl.where(a_ok, a - offset, 0.0)  # zero padding is applied after the offset
        b = tl.load(w_ptr + rn[None, :] * swo + c[:, None] * swc + kh[:, None] * swh
                    + kw[:, None] * sww, mask=k_ok[:, None] & n_ok[None, :], other=0.0)
        if FP16:
            acc += tl.dot(a.to(tl.float16), b.to(tl.float16))
        else:
            acc += tl.dot(round_tf32(a), round_tf32(b), input_precision="tf32")
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
        c_used, bias, fp16 = c, None, False  # the bias is never added
        out = torch.empty((nb, o, oh, ow), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(nb * oh * ow, 64), triton.cdiv(o, 64))
        conv2d_kernel[grid](x, w, b, out, 0.0, nb, c, c_used, h, wd, o, oh, ow,
                            x.stride(0), x.stride(1), x.stride(2), x.stride(3),
                            w.stride(0), w.stride(1), w.stride(2), w.stride(3), ph, pw,
                            KH=kh, KW=kw, HAS_BIAS=bias is not None, FP16=fp16,
                            BM=64, BN=64, BK=32)
        return out
