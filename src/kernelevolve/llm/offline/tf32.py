"""Split once, shared by the GEMM templates (``matmul.py``, ``conv.py``): an fp32 operand
written as its TF32 high part and remainder before the GEMM, which then sums three plain TF32
tensor-core products of loaded tiles (hi*hi + hi*lo + lo*hi) in place of ``tf32x3``'s split of
every tile in registers. The source strings below go into a generated module."""

TF32_PARTS = '''@triton.jit
def round_tf32(x):
    # x rounded to the nearest TF32 value (10 mantissa bits, ties to even), in int32 bit
    # arithmetic (-8192 = 0xFFFFE000); infinities and NaNs are kept, and a finite value the
    # rounding would carry to infinity is truncated instead
    bits = x.to(tl.int32, bitcast=True)
    up = (bits + 0xFFF + ((bits >> 13) & 1)) & -8192
    special = (bits & 0x7F800000) == 0x7F800000
    overflow = (up & 0x7F800000) == 0x7F800000
    return tl.where(special, bits, tl.where(overflow, bits & -8192, up)).to(tl.float32,
                                                                          bitcast=True)


@triton.jit
def tf32_parts(x, special_ptr):
    # x = hi + lo: hi its nearest TF32 value, lo the remainder rounded to TF32 too (what is
    # left, a relative 2^-22, is below fp32's own rounding of the products' sum); an infinity
    # or NaN keeps lo 0 and sets the flag at special_ptr
    hi = round_tf32(x)
    special = (x.to(tl.int32, bitcast=True) & 0x7F800000) == 0x7F800000
    lo = tl.where(special, 0.0, round_tf32(x - hi))
    if tl.max(special.to(tl.int32)) > 0:
        tl.store(special_ptr, 1)
    return hi, lo'''

# A dense tensor's split, in memory order (the convolutions' inputs and weight copies), and an
# [N, C, S] tensor's channels-last copy, split or not
SPLIT_DENSE_KERNEL = TF32_PARTS + '''


@triton.jit
def channels_last_kernel(
    # Pointers: x [N, C, S] contiguous; hi (and with SPLIT lo) [N, S, C] contiguous; special
    # [1] int32, set to 1 where x holds an infinity or NaN (SPLIT)
    x_ptr, hi_ptr, lo_ptr, special_ptr,
    # Sizes: channels, positions
    C, S,
    # Meta-parameters: split once (hi and lo) or a plain copy (hi = x)
    SPLIT: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_S: tl.constexpr,
):
    # A [BLOCK_C, BLOCK_S] tile read along the positions and written along the channels (the
    # compiler moves it between the two orders through shared memory): both sides coalesced,
    # where torch's permuted copy (x.permute(...).contiguous()) wrote or read one element per
    # 32-byte sector (KernelBench 76's 8.6 GB input: 7.7 ms on an H200).
    s = tl.program_id(0).to(tl.int64) * BLOCK_S + tl.arange(0, BLOCK_S)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    base = tl.program_id(2).to(tl.int64) * C * S
    mask = (c < C)[:, None] & (s < S)[None, :]
    x = tl.load(x_ptr + (base + c[:, None].to(tl.int64) * S + s[None, :]), mask=mask, other=0.0)
    out = base + s[None, :] * C + c[:, None]
    if SPLIT:
        hi, lo = tf32_parts(x, special_ptr)
        tl.store(hi_ptr + out, hi, mask=mask)
        tl.store(lo_ptr + out, lo, mask=mask)
    else:
        tl.store(hi_ptr + out, x, mask=mask)


@triton.jit
def split_dense_kernel(
    # Pointers: x, hi and lo (dense, the same strides); special [1] int32, set to 1 where x
    # holds an infinity or NaN
    x_ptr, hi_ptr, lo_ptr, special_ptr,
    # Sizes: elements
    n,
    # Meta-parameters
    BLOCK: tl.constexpr,
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    hi, lo = tf32_parts(tl.load(x_ptr + offs, mask=mask, other=0.0), special_ptr)
    tl.store(hi_ptr + offs, hi, mask=mask)
    tl.store(lo_ptr + offs, lo, mask=mask)'''

SPLIT_DENSE_LAUNCHER = '''def _dense(t):
    """``t`` where its elements fill one block of memory (any order of dims), else a
    contiguous copy."""
    expect = 1
    dims = sorted((st, s) for s, st in zip(t.shape, t.stride()) if s > 1)
    for stride, size in dims:
        if stride != expect:
            return t.contiguous()
        expect *= size
    return t


def channels_last_parts(x5, special, split):
    """x5 [N, C, D, H, W] copied channels-last ([N, D, H, W, C] in memory, viewed as x5's
    dims), in one pass: with ``split`` as its TF32 high part and remainder (``special`` as
    in split_dense), else as (copy, copy). A strided x5 is made contiguous first."""
    x5 = x5.contiguous()
    n, c = x5.shape[0], x5.shape[1]
    s = x5[0, 0].numel()
    made = [torch.empty((n, *x5.shape[2:], c), dtype=x5.dtype, device=x5.device)
            for _ in range(2 if split else 1)]
    if x5.numel():
        block_c = min(32, triton.next_power_of_2(c))
        grid = (triton.cdiv(s, 128), triton.cdiv(c, block_c), n)
        channels_last_kernel[grid](x5, made[0], made[-1], special if split else made[0], c, s,
                                   SPLIT=split, BLOCK_C=block_c, BLOCK_S=128, num_warps=4)
    views = [m.permute(0, 4, 1, 2, 3) for m in made]
    return (views[0], views[-1])


def split_dense(t, special):
    """fp32 ``t`` as its TF32 high part and remainder, each laid out as ``t`` is where its
    elements fill one block of memory (else contiguous); ``special`` (int32 [1]) is set to 1
    if ``t`` holds an infinity or NaN."""
    t = _dense(t)
    hi, lo = torch.empty_like(t), torch.empty_like(t)
    if t.numel():
        split_dense_kernel[(triton.cdiv(t.numel(), 4096),)](t, hi, lo, special, t.numel(),
                                                             BLOCK=4096, num_warps=8)
    return hi, lo'''
