"""Split once, shared by the GEMM templates (``families/matmul.py``, ``families/conv/``): an
fp32 operand written as its TF32 high part and remainder before the GEMM, which then sums three
plain TF32 tensor-core products of loaded tiles (hi*hi + hi*lo + lo*hi) in place of ``tf32x3``'s split of
every tile in registers. Or (fp16x3, the convolutions' TMA GEMM) as two fp16 parts of the
operand scaled by a power of two: fp16 keeps TF32's 11 bits and runs at twice its rate on the
tensor cores, and the scale, taken from the tensor's largest finite magnitude, keeps the parts
clear of fp16's narrow exponent range. The source strings below go into a generated module."""

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

# fp16x3's parts: the largest finite magnitude, the scale it sets, the split and the way back
FP16_PARTS = '''@triton.jit
def absmax_kernel(
    # Pointers: x (n elements in one block of memory); bits [1] int32, raised to the bits of
    # x's largest finite magnitude; special [1] int32, set to 1 where x holds an infinity or NaN
    x_ptr, bits_ptr, special_ptr,
    n,
    BLOCK: tl.constexpr,
):
    # a non-negative float's bits order as its value: one integer atomic max a program
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    bits = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.int32, bitcast=True)
    bits = bits & 0x7FFFFFFF
    finite = bits < 0x7F800000
    tl.atomic_max(bits_ptr, tl.max(tl.where(finite, bits, 0)))
    if tl.min(finite.to(tl.int32)) == 0:
        tl.store(special_ptr, 1)


@triton.jit
def pow2(e):
    # 2^e, an exact fp32 for -126 <= e <= 127
    return ((e + 127) << 23).to(tl.float32, bitcast=True)


@triton.jit
def fp16_scale(bits_ptr):
    # the exponent e whose 2^e takes the largest finite magnitude (its bits at bits_ptr) into
    # [2^14, 2^15): no part overflows fp16 (65504); the remainder keeps its 11 bits for values
    # down to about 2^-18 of that magnitude, below which fp16's subnormals leave it a step of
    # 2^-39 of it. At most 126, so that 2^-e is an fp32 normal too (a zero or subnormal
    # tensor: x * 2^126 is at most 2).
    return tl.minimum(141 - ((tl.load(bits_ptr) >> 23) & 0xFF), 126)


@triton.jit
def fp16_parts(x, bits_ptr):
    # x * 2^e = p0 + p1 to 2^-22 of it: p0 the nearest fp16, p1 the remainder's (exact in
    # fp32); an infinity or NaN keeps p1 0, so p0 + p1 is itself
    xs = x * pow2(fp16_scale(bits_ptr))
    p0 = xs.to(tl.float16)
    finite = (x.to(tl.int32, bitcast=True) & 0x7F800000) != 0x7F800000
    return p0, tl.where(finite, xs - p0.to(tl.float32), 0.0).to(tl.float16)


@triton.jit
def fp16_unscale(acc, xbits_ptr, wbits_ptr):
    # a sum of products of parts back to fp32's scale: times 2^-(ex + ew) (-252 .. 226) in two
    # exact steps, each in fp32's normal range
    e = fp16_scale(xbits_ptr) + fp16_scale(wbits_ptr)
    half = e // 2
    return acc * pow2(-half) * pow2(half - e)'''

# A dense tensor's split, in memory order (the convolutions' inputs and weight copies), and an
# [N, C, S] tensor's channels-last copy, split or not
SPLIT_DENSE_KERNEL = TF32_PARTS + '\n\n\n' + FP16_PARTS + '''


@triton.jit
def channels_last_kernel(
    # Pointers: x [N, C, S] contiguous; hi (and with SPLIT lo) [N, S, C] contiguous; special
    # [1] int32, set to 1 where x holds an infinity or NaN (SPLIT 1); bits [1] int32, the bits
    # of x's largest finite magnitude (SPLIT 2, from absmax_kernel)
    x_ptr, hi_ptr, lo_ptr, special_ptr, bits_ptr,
    # Sizes: channels, positions
    C, S,
    # Meta-parameters: a plain copy (0: hi = x), split once into TF32 parts (1) or into fp16
    # parts of x scaled (2)
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
        if SPLIT == 2:
            hi, lo = fp16_parts(x, bits_ptr)
        else:
            hi, lo = tf32_parts(x, special_ptr)
        tl.store(hi_ptr + out, hi, mask=mask)
        tl.store(lo_ptr + out, lo, mask=mask)
    else:
        tl.store(hi_ptr + out, x, mask=mask)


@triton.jit
def split_dense_kernel(
    # Pointers: x, hi and lo (dense, the same strides); special [1] int32, set to 1 where x
    # holds an infinity or NaN (TF32 parts); bits as in channels_last_kernel (FP16)
    x_ptr, hi_ptr, lo_ptr, special_ptr, bits_ptr,
    # Sizes: elements
    n,
    # Meta-parameters: TF32 parts, or fp16 parts of x scaled (FP16)
    FP16: tl.constexpr, BLOCK: tl.constexpr,
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    if FP16:
        hi, lo = fp16_parts(x, bits_ptr)
    else:
        hi, lo = tf32_parts(x, special_ptr)
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


def _absmax(t, bits, special):
    """Raise ``bits`` (int32 [1], zero) to the bits of dense ``t``'s largest finite magnitude;
    set ``special`` where ``t`` holds an infinity or NaN."""
    if t.numel():
        absmax_kernel[(triton.cdiv(t.numel(), 4096),)](t, bits, special, t.numel(),
                                                       BLOCK=4096, num_warps=8)


def channels_last_parts(x5, special, split, bits=None):
    """x5 [N, C, D, H, W] copied channels-last ([N, D, H, W, C] in memory, viewed as x5's
    dims), in one pass: with ``split`` as its TF32 high part and remainder (``special`` as
    in split_dense); with ``bits`` (int32 [1], zero) as the fp16 parts of x scaled (as in
    split_dense); else as (copy, copy). A strided x5 is made contiguous first."""
    x5 = x5.contiguous()
    n, c = x5.shape[0], x5.shape[1]
    s = x5[0, 0].numel()
    mode = 2 if bits is not None else int(bool(split))
    made = [torch.empty((n, *x5.shape[2:], c),
                        dtype=torch.float16 if mode == 2 else x5.dtype, device=x5.device)
            for _ in range(2 if mode else 1)]
    if mode == 2:
        _absmax(x5, bits, special)
    if x5.numel():
        block_c = min(32, triton.next_power_of_2(c))
        grid = (triton.cdiv(s, 128), triton.cdiv(c, block_c), n)
        channels_last_kernel[grid](x5, made[0], made[-1], special if mode else made[0],
                                   bits if mode == 2 else made[0], c, s, SPLIT=mode,
                                   BLOCK_C=block_c, BLOCK_S=128, num_warps=4)
    views = [m.permute(0, 4, 1, 2, 3) for m in made]
    return (views[0], views[-1])


def split_dense(t, special, bits=None):
    """fp32 ``t`` as its TF32 high part and remainder, each laid out as ``t`` is where its
    elements fill one block of memory (else contiguous); ``special`` (int32 [1]) is set to 1
    if ``t`` holds an infinity or NaN. With ``bits`` (int32 [1], zero): as two fp16 parts of
    ``t`` times 2^e (``fp16_scale``), ``bits`` raised to those of its largest finite
    magnitude."""
    t = _dense(t)
    dtype = torch.float16 if bits is not None else t.dtype
    hi, lo = torch.empty_like(t, dtype=dtype), torch.empty_like(t, dtype=dtype)
    if bits is not None:
        _absmax(t, bits, special)
    if t.numel():
        split_dense_kernel[(triton.cdiv(t.numel(), 4096),)](
            t, hi, lo, special, special if bits is None else bits, t.numel(),
            FP16=bits is not None, BLOCK=4096, num_warps=8)
    return hi, lo'''
