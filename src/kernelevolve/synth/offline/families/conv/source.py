"""The source the convolution template emits (``template.py`` plans it and says why it is shaped
so): the Triton kernels (the window table, the implicit GEMMs, the FMA kernel, the pointwise
GEMM, the direct depthwise kernel and the phase interleaving pass) and the launcher that picks
one per convolution and phase."""

from ...emit.tf32 import SPLIT_DENSE_KERNEL, SPLIT_DENSE_LAUNCHER

_GATHER = '''
        # The window table gives each k its input offset (row 0) and its window offsets (rows
        # 1-3, for the padding masks of conv_window)
        t_ptrs = tab_ptr + offs_k
        x_col = tl.load(t_ptrs, mask=mask_k, other=0)
        ok = conv_window(t_ptrs[None, :], mask_k[None, :], K, d0[:, None], h0[:, None],
                         w0[:, None], ID, IH, IW, ND)
        x_mask = mask_m[:, None] & mask_k[None, :] & ok
        x_offs = x_row[:, None] + x_col[None, :]'''

_WINDOW = '''@triton.jit
def conv_window(
    # Pointers into the window table (rows 1-3: window offsets per dim) and their mask
    t_ptrs, t_mask,
    # Sizes: the table's row length; the window's start per dim; the input's extents
    K, d0, h0, w0, ID, IH, IW,
    # Meta-parameters: spatial dims
    ND: tl.constexpr,
):
    # Whether each (position, k) reads an input element rather than the zero padding; only
    # the real spatial dims (the last ND) are checked.
    i_w = w0 + tl.load(t_ptrs + 3 * K, mask=t_mask, other=0)
    ok = (i_w >= 0) & (i_w < IW)
    if ND >= 2:
        i_h = h0 + tl.load(t_ptrs + 2 * K, mask=t_mask, other=0)
        ok = ok & (i_h >= 0) & (i_h < IH)
    if ND == 3:
        i_d = d0 + tl.load(t_ptrs + K, mask=t_mask, other=0)
        ok = ok & (i_d >= 0) & (i_d < ID)
    return ok'''

_HEAD = '''
    # Sizes: output rows N * OD * OH; K = input channels per group * window taps; channels
    # per group; spatial extents
    ROWS, K, C_IN_G, C_OUT_G, C_OUT, ID, IH, IW, OD, OH, OW,
    # Strides of x [N, C, D, H, W], of w along its output (standard) / input channels, of
    # the output [N, C, OD, OH, OW] (a transposed convolution's phase is a strided view) and of
    # the bias (a forward input may be a strided view)
    s_xn, s_xc, s_xd, s_xh, s_xw, s_wg, s_wo, s_on, s_oc, s_od, s_oh, s_ow, s_b,
    # Convolution hyper-parameters (a transposed convolution's phase: stride 1, padding 0)
    st_d, st_h, st_w, pad_d, pad_h, pad_w,
    # Meta-parameters: spatial dims; bias; transposed (weights [C_in, C_out / groups, ...])
    ND: tl.constexpr, HAS_BIAS: tl.constexpr, TRANSPOSED: tl.constexpr,'''

_ROW = '''
    # A program's BLOCK_M output positions: BLOCK_M // BLOCK_W output rows x BLOCK_W columns
    # (a power of two, at most the row's length rounded up), so the compiler sees runs of
    # BLOCK_W positions contiguous in the output and stores the tile coalesced. (Positions
    # decoded from one flat index may span rows anywhere; proving no contiguity along them, it
    # stored each output channel's values apart: 0.1x of eager at KernelBench 54's 1 GB
    # output.) A row is (n, od, oh), its columns ow; or, with FLAT_HW (short rows of a
    # contiguous (oh, ow) plane, which a power-of-two run would mostly pad), a row is (n, od)
    # and its columns the plane's oh * OW + ow.
    offs_m = tl.arange(0, BLOCK_M)
    if FLAT_HW:
        row_len = OH * OW
    else:
        row_len = OW
    tiles_w = tl.cdiv(row_len, BLOCK_W)
    row = (pid_m // tiles_w).to(tl.int64) * (BLOCK_M // BLOCK_W) + offs_m // BLOCK_W
    col = (pid_m % tiles_w) * BLOCK_W + offs_m % BLOCK_W
    mask_m = (col < row_len) & (row < ROWS)
    if FLAT_HW:
        oh = col // OW
        ow = col % OW
        od = row % OD
        n = row // OD
        o_row = n * s_on + od * s_od + col * s_ow
    else:
        ow = col
        oh = row % OH
        t = row // OH
        od = t % OD
        n = t // OD
        o_row = n * s_on + od * s_od + oh * s_oh + ow * s_ow'''

_DECODE = _ROW + '''
    # the input position each window starts from: output position * stride - padding
    d0 = od * st_d - pad_d
    h0 = oh * st_h - pad_h
    w0 = ow * st_w - pad_w
    x_row = n * s_xn + d0 * s_xd + h0 * s_xh + w0 * s_xw'''

# The GEMM kernels' program: its group and tile of the group's output channels (from n0)
_GROUP_TILE = '''
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    n_blocks_n = tl.cdiv(C_OUT_G, BLOCK_N)
    g = pid_n // n_blocks_n
    n0 = (pid_n % n_blocks_n) * BLOCK_N
    offs_n = n0 + tl.arange(0, BLOCK_N)
    mask_n = offs_n < C_OUT_G'''

# Both implicit GEMMs' last step of k: the tiles' loads (x_offs, x_mask, w_offs, w_mask)
# and their product
_DOT_STORE = '''
        x_tile = tl.load(x_ptr + x_offs, mask=x_mask, other=0.0).to(tl.float32)
        w_tile = tl.load(w_ptr + w_offs, mask=w_mask, other=0.0).to(tl.float32)
        if TF32X3 == 2:
            # split once: x and w hold TF32 high parts, xlo and wlo the remainders at the same
            # offsets: three plain TF32 products of loaded tiles. An infinity or NaN in either
            # (its remainder 0, and inf * 0 is NaN): the parts' sums on the FMA units.
            x_lo = tl.load(xlo_ptr + x_offs, mask=x_mask, other=0.0)
            w_lo = tl.load(wlo_ptr + w_offs, mask=w_mask, other=0.0)
            if special == 0:
                acc = tl.dot(x_lo, w_tile, acc, input_precision="tf32")
                acc = tl.dot(x_tile, w_lo, acc, input_precision="tf32")
                acc = tl.dot(x_tile, w_tile, acc, input_precision="tf32")
            else:
                acc = tl.dot(x_tile + x_lo, w_tile + w_lo, acc, input_precision="ieee")
        elif TF32X3 == 4:
            # one plain TF32 product (where TF32 is allowed: cuDNN's default for fp32). An
            # infinity or NaN gives torch's values: no remainder is taken, so no inf - inf
            acc = tl.dot(x_tile, w_tile, acc, input_precision="tf32")
        elif TF32X3:
            # fp32 as three TF32 tensor-core products of each tile split in registers
            # (hi*hi + hi*lo + lo*hi): fp32-level error; plain TF32 would miss the 1e-4 fp32
            # tolerance.
            acc = tl.dot(x_tile, w_tile, acc, input_precision="tf32x3")
        else:
            acc = tl.dot(x_tile, w_tile, acc, input_precision="ieee")'''


def _epilogue(row="o_row", mask="mask_m", indent=""):
    """The position x channel tiles' epilogue (the implicit GEMMs, the FMA kernel's phases):
    the bias, the store of the positions at ``row`` (offsets) where ``mask``."""
    return """
    co = g * C_OUT_G + offs_n
    if HAS_BIAS:
        acc += tl.load(b_ptr + co * s_b, mask=mask_n, other=0.0).to(tl.float32)[None, :]
    out_ptrs = out_ptr + (ROW[:, None] + co[None, :].to(tl.int64) * s_oc)
    tl.store(out_ptrs, acc.to(out_ptr.dtype.element_ty),
             mask=MASK[:, None] & mask_n[None, :])""".replace("ROW", row).replace(
        "MASK", mask).replace("\n    ", "\n    " + indent)


_EPILOGUE = _epilogue()

KERNELS = SPLIT_DENSE_KERNEL + '\n\n\n' + _WINDOW + f'''


@triton.jit
def conv_table_kernel(
    # Pointers: the window table [5, K] (int64)
    tab_ptr,
    # Sizes: K = C_IN_G * NKD * NKH * NKW taps (the window positions per dim that contribute)
    K, NKD, NKH, NKW,
    # Strides of x (channel, d, h, w) and of w (input channel, kd, kh, kw)
    s_xc, s_xd, s_xh, s_xw, s_wi, s_wd, s_wh, s_ww,
    # Per dim: the contributing window positions k0 + j * step, and the input offset of
    # window position k, (base + k * mul) // div (an exact division)
    k0_d, k0_h, k0_w, step_d, step_h, step_w, base_d, base_h, base_w,
    mul_d, mul_h, mul_w, div_d, div_h, div_w,
    # Meta-parameters
    BLOCK: tl.constexpr,
):
    # Row 0: the x offset of k's channel and window; rows 1-3: the window offset per dim;
    # row 4: k's w offset.
    offs_k = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs_k < K
    taps = NKD * NKH * NKW
    ci = (offs_k // taps).to(tl.int64)
    r = offs_k % taps
    kd = k0_d + (r // (NKH * NKW)) * step_d
    kh = k0_h + ((r // NKW) % NKH) * step_h
    kw = k0_w + (r % NKW) * step_w
    k_d = ((base_d + kd * mul_d) // div_d).to(tl.int64)
    k_h = ((base_h + kh * mul_h) // div_h).to(tl.int64)
    k_w = ((base_w + kw * mul_w) // div_w).to(tl.int64)
    tl.store(tab_ptr + offs_k, ci * s_xc + k_d * s_xd + k_h * s_xh + k_w * s_xw, mask=mask)
    tl.store(tab_ptr + K + offs_k, k_d, mask=mask)
    tl.store(tab_ptr + 2 * K + offs_k, k_h, mask=mask)
    tl.store(tab_ptr + 3 * K + offs_k, k_w, mask=mask)
    w_off = ci * s_wi + (kd * s_wd + kh * s_wh + kw * s_ww).to(tl.int64)
    tl.store(tab_ptr + 4 * K + offs_k, w_off, mask=mask)


@triton.jit
def conv_gemm_kernel(
    # Pointers
    x_ptr, w_ptr, b_ptr, tab_ptr, out_ptr,
    # split once (TF32X3 of 2): the remainders of x and w (their high parts at x and w), and a
    # flag set where either holds an infinity or NaN
    xlo_ptr, wlo_ptr, special_ptr,{_HEAD}
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_W: tl.constexpr,
    # fp32 products: 1 tf32x3, 2 split once, 4 one TF32 product, 0 ieee; w is a dense
    # [C_out, K] copy, K contiguous; rows are (n, od) planes (ROWS = N * OD)
    TF32X3: tl.constexpr, W_KMAJOR: tl.constexpr, FLAT_HW: tl.constexpr,
):
    # Implicit GEMM: a program owns BLOCK_M output positions x BLOCK_N output channels of one
    # group and walks the (input channel, kernel window) axis in BLOCK_K slices.{_GROUP_TILE}{_DECODE}
    x_row += (g * C_IN_G).to(tl.int64) * s_xc
    if W_KMAJOR:
        w_base = (g * C_OUT_G + offs_n).to(tl.int64) * K
    elif TRANSPOSED:
        w_base = g.to(tl.int64) * s_wg + offs_n.to(tl.int64) * s_wo
    else:
        w_base = (g * C_OUT_G + offs_n).to(tl.int64) * s_wo
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    special = 0
    if TF32X3 == 2:
        special = tl.load(special_ptr)
    for k0 in range(0, K, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        mask_k = offs_k < K{_GATHER}
        if W_KMAJOR:
            # k itself, not a table entry: the compiler sees K contiguous and lays the tile
            # K-major, as TF32 tensor-core products read it
            w_offs = w_base[None, :] + offs_k[:, None]
        else:
            w_off = tl.load(t_ptrs + 4 * K, mask=mask_k, other=0)
            w_offs = w_base[None, :] + w_off[:, None]
        w_mask = mask_k[:, None] & mask_n[None, :]{_DOT_STORE}{_EPILOGUE}



@triton.jit
def conv_gemm_cl_kernel(
    # Pointers: x channels-last [N, D, H, W, C] (the channel stride 1), w a dense [C_out, K]
    # copy in k = (tap, input channel) order
    x_ptr, w_ptr, b_ptr, out_ptr,
    # split once (TF32X3 of 2): the remainders of x and w (their high parts at x and w), and a
    # flag set where either holds an infinity or NaN
    xlo_ptr, wlo_ptr, special_ptr,
    # Sizes: output rows N * OD * OH (N * OD with FLAT_HW); K = taps * C_IN_G; channels per
    # group; spatial extents; taps per dim (h, w); the run of k that lies contiguous in x (a
    # tap's C_IN_G channels, or with RUN_W a window row's NT_W taps of them); the k steps
    # (runs * slices of a run)
    ROWS, K, C_IN_G, C_OUT_G, ID, IH, IW, OD, OH, OW, NT_H, NT_W, RUN, K_STEPS,
    # Strides of x (batch, d, h, w), of the output [N, C, OD, OH, OW] (a transposed
    # convolution's phase is a strided view) and of the bias
    s_xn, s_xd, s_xh, s_xw, s_on, s_oc, s_od, s_oh, s_ow, s_b,
    # Per dim: input position of tap t of output o is o * st + off + t * dil
    st_d, st_h, st_w, off_d, off_h, off_w, dil_d, dil_h, dil_w,
    # Meta-parameters: spatial dims; bias; tiles; fp32 products (1 tf32x3, 2 split once, 4 one
    # TF32 product, 0 ieee)
    ND: tl.constexpr, HAS_BIAS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr, BLOCK_W: tl.constexpr, TF32X3: tl.constexpr, FLAT_HW: tl.constexpr,
    # runs along whole window rows (one group, taps along w adjacent: dil_w 1)
    RUN_W: tl.constexpr,
):
    # Implicit GEMM over a channels-last input: k walks runs that lie next to each other in x
    # (a tap's input channels; with RUN_W a window row's taps along w, their channels
    # adjacent), a BLOCK_K slice at a time. So the x tile's loads are contiguous along K, the
    # order tensor-core products read it in, and no table is read. A 3-channel convolution's
    # tap is a run of 3, mostly padding in a 16-wide slice; its 3x3 window row is one of 9.{_GROUP_TILE}{_ROW}
    d0 = od * st_d + off_d
    h0 = oh * st_h + off_h
    w0 = ow * st_w + off_w
    x_n = n * s_xn + g * C_IN_G
    w_rows = (g * C_OUT_G + offs_n).to(tl.int64) * K
    slices = tl.cdiv(RUN, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    special = 0
    if TF32X3 == 2:
        special = tl.load(special_ptr)
    for step in range(0, K_STEPS):
        run = step // slices
        offs_c = (step % slices) * BLOCK_K + tl.arange(0, BLOCK_K)
        mask_c = offs_c < RUN
        if RUN_W:
            # the run is the window row's taps along w, each one's channels: input column
            # w0 + offs_c // C_IN_G (s_xw = C_IN_G), checked per element
            i_w = w0[:, None] + (offs_c // C_IN_G)[None, :]
            ok = mask_m[:, None] & mask_c[None, :] & (i_w >= 0) & (i_w < IW)
            x_row = x_n + w0 * s_xw
            rest = run
        else:
            i_w = w0 + (run % NT_W) * dil_w
            ok = (mask_m & (i_w >= 0) & (i_w < IW))[:, None] & mask_c[None, :]
            x_row = x_n + i_w * s_xw
            rest = run // NT_W
        if ND >= 2:
            i_h = h0 + (rest % NT_H) * dil_h
            ok = ok & ((i_h >= 0) & (i_h < IH))[:, None]
            x_row += i_h * s_xh
        if ND == 3:
            i_d = d0 + (rest // NT_H) * dil_d
            ok = ok & ((i_d >= 0) & (i_d < ID))[:, None]
            x_row += i_d * s_xd
        x_offs = x_row[:, None] + offs_c[None, :]
        x_mask = ok
        w_offs = w_rows[None, :] + (run * RUN + offs_c)[:, None]
        w_mask = mask_c[:, None] & mask_n[None, :]{_DOT_STORE}{_EPILOGUE}


@triton.jit
def conv_tma_x(
    # x's descriptor; the k step and a tap's slices; the program's image, output plane, first
    # output row and column, its group's first channel; taps per dim (h, w); per dim the
    # input offset of tap 0 and the step between taps
    x_desc, k, slices, n, od, oh0, ow0, c_base, NT_H, NT_W, off_d, off_h, off_w, dil_d, dil_h,
    dil_w,
    # Meta-parameters: the positions (BH x BW) and channels of the tile
    BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr,
):
    # k step k's x tile: the box of the program's positions shifted by the step's tap, its
    # slice of the group's channels
    tap = k // slices
    rest = tap // NT_W
    return x_desc.load([n, od + off_d + (rest // NT_H) * dil_d,
                        oh0 + off_h + (rest % NT_H) * dil_h, ow0 + off_w + (tap % NT_W) * dil_w,
                        c_base + (k % slices) * BLOCK_K]).reshape(BLOCK_M, BLOCK_K)


@triton.jit
def conv_gemm_tma_kernel(
    # Descriptors: x channels-last [N, D, H, W, C] (boxes [1, 1, BH, BW, BLOCK_K]: a box past
    # an edge reads zeros, the padding), with FP16 its two fp16 parts (x, xlo); the weight's
    # TF32 high part and remainder (with FP16 its fp16 parts), [C_out, K] in k = (tap, input
    # channel) order (boxes [BLOCK_N, BLOCK_K])
    x_desc, xlo_desc, whi_desc, wlo_desc,
    # Pointers: the bias, the output [N, C_out, OD, OH, OW] (a transposed convolution's phase
    # is a strided view), the splits' flag (set where the weight, with FP16 x or the weight,
    # holds an infinity or NaN); with FP16 the bits of x's and the weight's largest finite
    # magnitudes (their scales)
    b_ptr, out_ptr, special_ptr, xbits_ptr, wbits_ptr,
    # Sizes: output rows N * OD; channels per group; output extents; taps per dim (h, w); k
    # steps (taps x BLOCK_K slices of a tap's channels)
    ROWS, C_IN_G, C_OUT_G, OD, OH, OW, NT_H, NT_W, K_STEPS,
    # Strides of the output and of the bias
    s_on, s_oc, s_od, s_oh, s_ow, s_b,
    # Per dim: input position of tap t of output o is o + off + t * dil (stride 1)
    off_d, off_h, off_w, dil_d, dil_h, dil_w,
    # Meta-parameters: bias; a program's BH output rows x BW columns, BLOCK_N output channels
    # of one group; BLOCK_K channels a k step; fp16x3 products of parts split once (FP16), the
    # k steps' products summed on the tensor cores in CHAINS ranges (0: each k step's apart);
    # one TF32 product a k step of x and the weight as they are (ONE_TF32: whi is the weight)
    HAS_BIAS: tl.constexpr, BH: tl.constexpr, BW: tl.constexpr, BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr, FP16: tl.constexpr, CHAINS: tl.constexpr, ONE_TF32: tl.constexpr,
):
    # Implicit GEMM with stride 1 (every transposed convolution's phase, standard ones
    # without a stride) whose x tiles come through TMA: a tap's tile of BH x BW positions is a
    # box of x shifted by the tap, so the copy engine does the addressing and the padding, and
    # the tiles land in shared memory while earlier steps' products run. fp32 products: the
    # weight split once into TF32 parts (hi, lo), x's high part its bits cut in registers (an
    # exact TF32 value; the remainder x - hi exact too); a k step's three TF32 products
    # (lo*hi + hi*lo + hi*hi) summed on the tensor cores from zero and added to the result in
    # fp32, so no long chain of the tensor cores' truncating adds builds up (tf32x3's error).
    # An infinity or NaN in x makes its remainder NaN: a program whose sum holds a NaN, or
    # whose weight holds an infinity or NaN (the flag), sums again on the FMA units.
    # FP16 (fp16x3): x and the weight, each times a power of two, split once into two fp16
    # parts (tf32.py's fp16_parts), both read through TMA; a k step's three fp16 products
    # (xlo*w + x*wlo + x*w, twice TF32's rate) summed as above, the scales undone at the end.
    # An infinity or NaN in either sets the flag: the parts' sums on the FMA units.
    # CHAINS (fp16x3): the k steps in CHAINS ranges, each range's products summed on the tensor
    # cores from zero in one pipelined loop (the sum carried across steps, so a step's last
    # products need not finish before the next step's loads), then added in fp32: fewer
    # waits, at the cost of the tensor cores' truncating adds over a range (the matmul
    # template's chains: 3.3e-5 of the result at K = 4096 on an H200).
    # ONE_TF32 (TF32X3 = 4, where TF32 is allowed): one plain TF32 product a k step of the x
    # tile and the weight as they are, summed on the tensor cores across the whole K, as
    # cuDNN's TF32 path does. No remainder is taken, so an infinity or NaN gives what the FMA
    # units' sum would (torch's NaN and infinities): no flag and no second pass.
    BLOCK_M: tl.constexpr = BH * BW{_GROUP_TILE}
    tiles_w = tl.cdiv(OW, BW)
    tiles_h = tl.cdiv(OH, BH)
    ow0 = (pid_m % tiles_w) * BW
    t = pid_m // tiles_w
    oh0 = (t % tiles_h) * BH
    row = t // tiles_h
    od = row % OD
    n = row // OD
    slices = C_IN_G // BLOCK_K
    w_row = g * C_OUT_G + n0
    c_base = g * C_IN_G
    special = tl.load(special_ptr)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if ONE_TF32:
        for k in range(0, K_STEPS):
            x = conv_tma_x(x_desc, k, slices, n, od, oh0, ow0, c_base, NT_H, NT_W, off_d, off_h,
                           off_w, dil_d, dil_h, dil_w, BLOCK_M, BLOCK_K)
            acc = tl.dot(x, whi_desc.load([w_row, k * BLOCK_K]).T, acc, input_precision="tf32")
    elif special == 0 and CHAINS > 0:
        k_len = tl.cdiv(K_STEPS, CHAINS)
        for c in tl.static_range(CHAINS):
            part = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for k in range(c * k_len, tl.minimum(K_STEPS, (c + 1) * k_len)):
                x = conv_tma_x(x_desc, k, slices, n, od, oh0, ow0, c_base, NT_H, NT_W, off_d,
                               off_h, off_w, dil_d, dil_h, dil_w, BLOCK_M, BLOCK_K)
                x_lo = conv_tma_x(xlo_desc, k, slices, n, od, oh0, ow0, c_base, NT_H, NT_W,
                                  off_d, off_h, off_w, dil_d, dil_h, dil_w, BLOCK_M, BLOCK_K)
                w_hi = whi_desc.load([w_row, k * BLOCK_K]).T
                part = tl.dot(x_lo, w_hi, part)
                part = tl.dot(x, wlo_desc.load([w_row, k * BLOCK_K]).T, part)
                part = tl.dot(x, w_hi, part)
            acc += part
    elif special == 0:
        for k in range(0, K_STEPS):
            x = conv_tma_x(x_desc, k, slices, n, od, oh0, ow0, c_base, NT_H, NT_W, off_d, off_h,
                           off_w, dil_d, dil_h, dil_w, BLOCK_M, BLOCK_K)
            w_hi = whi_desc.load([w_row, k * BLOCK_K]).T
            w_lo = wlo_desc.load([w_row, k * BLOCK_K]).T
            if FP16:
                x_lo = conv_tma_x(xlo_desc, k, slices, n, od, oh0, ow0, c_base, NT_H, NT_W,
                                  off_d, off_h, off_w, dil_d, dil_h, dil_w, BLOCK_M, BLOCK_K)
                part = tl.dot(x_lo, w_hi)
                part = tl.dot(x, w_lo, part)
                acc += tl.dot(x, w_hi, part)
            else:
                x_hi = (x.to(tl.int32, bitcast=True) & -8192).to(tl.float32, bitcast=True)
                part = tl.dot(x - x_hi, w_hi, input_precision="tf32")
                part = tl.dot(x_hi, w_lo, part, input_precision="tf32")
                acc += tl.dot(x_hi, w_hi, part, input_precision="tf32")
    if not ONE_TF32 and ((special != 0) | (tl.max((acc != acc).to(tl.int32), axis=None) > 0)):
        # an infinity or NaN: x (with FP16 its parts' sum) times the weight's parts' sum (each
        # to 2^-22) on the FMA units, which keep torch's infinities and NaN
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K_STEPS):
            x = conv_tma_x(x_desc, k, slices, n, od, oh0, ow0, c_base, NT_H, NT_W, off_d, off_h,
                           off_w, dil_d, dil_h, dil_w, BLOCK_M, BLOCK_K).to(tl.float32)
            if FP16:
                x += conv_tma_x(xlo_desc, k, slices, n, od, oh0, ow0, c_base, NT_H, NT_W, off_d,
                                off_h, off_w, dil_d, dil_h, dil_w, BLOCK_M,
                                BLOCK_K).to(tl.float32)
            w = (whi_desc.load([w_row, k * BLOCK_K]).T.to(tl.float32)
                 + wlo_desc.load([w_row, k * BLOCK_K]).T.to(tl.float32))
            acc = tl.dot(x, w, acc, input_precision="ieee")
    if FP16:
        acc = fp16_unscale(acc, xbits_ptr, wbits_ptr)
    offs_m = tl.arange(0, BLOCK_M)
    oh = oh0 + offs_m // BW
    ow = ow0 + offs_m % BW
    mask_m = (oh < OH) & (ow < OW)
    o_row = (n.to(tl.int64) * s_on + od.to(tl.int64) * s_od + oh.to(tl.int64) * s_oh
             + ow.to(tl.int64) * s_ow){_EPILOGUE}


@triton.jit
def conv_im2col_kernel(
    # Pointers: x [N, C, D, H, W]; the im2col matrix [M, KP] (its high parts with SPLIT) and
    # its remainders (SPLIT); special [1] int32, set where x holds an infinity or NaN (SPLIT)
    x_ptr, a_ptr, alo_ptr, special_ptr,
    # Sizes: positions M = N * OD * OH * OW; the reduction K = C * KD * KH * KW and its padded
    # row length KP; extents
    M, K, KP, ID, IH, IW, OD, OH, OW,
    # Strides of x; stride, padding and dilation per dim
    s_xn, s_xc, s_xd, s_xh, s_xw, st_d, st_h, st_w, pad_d, pad_h, pad_w, dil_d, dil_h, dil_w,
    # Meta-parameters: the window; split once; the tile of positions x k
    KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, SPLIT: tl.constexpr,
    BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr,
):
    # The im2col matrix of a standard convolution with one group, written once: row m holds
    # position m's window, k = (input channel, kd, kh, kw), zero at the padding and past K.
    # A tile's writes run along k (coalesced); its reads gather, neighbouring k reading
    # neighbouring input columns within a window row.
    # positions decoded in int32 (the launcher keeps M below 2^31): int64 divisions cost about
    # as much as the rest of the pass
    m = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    k = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    ow = m % OW
    t = m // OW
    oh = t % OH
    t = t // OH
    od = t % OD
    n = t // OD
    t_w = k % KW
    t_k = k // KW
    t_h = t_k % KH
    t_k = t_k // KH
    t_d = t_k % KD
    c = t_k // KD
    i_d = (od * st_d - pad_d)[:, None] + (t_d * dil_d)[None, :]
    i_h = (oh * st_h - pad_h)[:, None] + (t_h * dil_h)[None, :]
    i_w = (ow * st_w - pad_w)[:, None] + (t_w * dil_w)[None, :]
    ok = ((m < M)[:, None] & (k < K)[None, :] & (i_d >= 0) & (i_d < ID) & (i_h >= 0)
          & (i_h < IH) & (i_w >= 0) & (i_w < IW))
    offs = ((n.to(tl.int64) * s_xn)[:, None] + (c.to(tl.int64) * s_xc)[None, :] + i_d * s_xd
            + i_h * s_xh + i_w * s_xw)
    v = tl.load(x_ptr + offs, mask=ok, other=0.0)
    dst = m.to(tl.int64)[:, None] * KP + k[None, :]
    mask = (m < M)[:, None] & (k < KP)[None, :]
    if SPLIT:
        hi, lo = tf32_parts(v, special_ptr)
        tl.store(a_ptr + dst, hi, mask=mask)
        tl.store(alo_ptr + dst, lo, mask=mask)
    else:
        tl.store(a_ptr + dst, v, mask=mask)


@triton.jit
def conv_im2col_gemm_kernel(
    # Pointers: the im2col matrix [M, KP] (x: high parts with split once), the weight [C_out,
    # KP] (K contiguous, zero past K), the bias, the output [N, C_out, OD, OH, OW] (its
    # positions evenly spaced); split once: the remainders and the special-values flag
    x_ptr, w_ptr, b_ptr, out_ptr, xlo_ptr, wlo_ptr, special_ptr,
    # Sizes: positions per image, the padded reduction, output channels
    P, KP, C_OUT_G,
    # Strides of the output (image, channel, position) and of the bias
    s_on, s_oc, s_op, s_b,
    # Meta-parameters: fp32 products (1 tf32x3, 2 split once, 4 one TF32 product, 0 ieee)
    HAS_BIAS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr, TF32X3: tl.constexpr,
):
    # A plain GEMM over the im2col matrix: a program owns BLOCK_M positions of one image x
    # BLOCK_N output channels, the channel tiles of a position tile next to each other (its
    # rows come from L2 once); the positions are one image's, so the compiler sees them
    # contiguous in the output and stores the tile coalesced.
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(C_OUT_G, BLOCK_N)
    tiles_p = tl.cdiv(P, BLOCK_M)
    pid_m = pid // tiles_n
    n = (pid_m // tiles_p).to(tl.int64)
    pos = (pid_m % tiles_p) * BLOCK_M + tl.arange(0, BLOCK_M)
    g = 0
    offs_n = (pid % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_m = pos < P
    mask_n = offs_n < C_OUT_G
    x_base = (n * P + pos)[:, None] * KP
    w_base = offs_n[None, :].to(tl.int64) * KP
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    special = 0
    if TF32X3 == 2:
        special = tl.load(special_ptr)
    for k0 in range(0, KP, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        # KP is a multiple of BLOCK_K: no mask along k
        x_offs = x_base + offs_k[None, :]
        x_mask = mask_m[:, None]
        w_offs = w_base + offs_k[:, None]
        w_mask = mask_n[None, :]{_DOT_STORE}
    o_row = n * s_on + pos * s_op{_EPILOGUE}


@triton.jit
def phase_taps(r, a, b, k, S: tl.constexpr, STEP: tl.constexpr):
    # Along one dim, the window taps t of phase r: input = j * st + (r + a + t * b) / S where
    # that division is exact, which holds for every STEP-th tap from the first (a standard
    # convolution: S = 1, every tap). Returns (first tap, taps, input offset of the first).
    first = 0
    found = 0
    for t in tl.static_range(STEP):
        hit = (((r + a + t * b) % S) == 0) & (found == 0)
        first = tl.where(hit, t, first)
        found = tl.where(hit, 1, found)
    count = tl.where((found == 1) & (first < k), (k - first + STEP - 1) // STEP, 0)
    return first, count, (r + a + first * b) // S


@triton.jit
def conv_fma_kernel(
    # Pointers
    x_ptr, w_ptr, b_ptr, out_ptr,
    # Sizes: output rows N * OD * OH (N * OD with FLAT_HW) of the grid of positions j every
    # phase shares; output channels per group; spatial extents (input; the grid of j; the whole
    # output)
    ROWS, C_OUT_G, ID, IH, IW, OD, OH, OW, FD, FH, FW,
    # Strides of x [N, C, D, H, W]; of w per group, per output and input channel of a group
    # and per tap (d, h, w); of the output [N, C, OD, OH, OW] per j (a transposed
    # convolution's: the stride's multiple) and per position (d, h, w); of the bias
    s_xn, s_xc, s_xd, s_xh, s_xw, s_wg, s_wo, s_wi, s_wd, s_wh, s_ww,
    s_on, s_oc, s_od, s_oh, s_ow, s_pd, s_ph, s_pw, s_b,
    # Per dim: the input step per j; the window as input = j * st + (phase + a + t * b) / S:
    # a and b (standard: -padding and the dilation; transposed: padding and -dilation); taps
    st_d, st_h, st_w, a_d, a_h, a_w, b_d, b_h, b_w, k_d, k_h, k_w,
    # Sizes: input channels per group
    C_IN_G,
    # Meta-parameters: taps along w (the most of any phase); per dim the phases (a transposed
    # convolution's stride, else 1), the step between a phase's taps and the input step per
    # such step
    NT_W: tl.constexpr, SD: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr,
    STEP_D: tl.constexpr, STEP_H: tl.constexpr, STEP_W: tl.constexpr,
    DIL_D: tl.constexpr, DIL_H: tl.constexpr, DIL_W: tl.constexpr,
    HAS_BIAS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    BLOCK_W: tl.constexpr, FLAT_HW: tl.constexpr,
    # a standard convolution without padding: every tap of a valid position lies inside x
    IN_BOUNDS: tl.constexpr,
    # the register tile: 0, a thread's products one position x the tile's channels (a weight
    # per FMA from shared memory); else SUB_M x SUB_N threads over positions x channels (SUB_M
    # * SUB_N the program's threads), a thread BLOCK_M // SUB_M positions x BLOCK_N // SUB_N
    # channels, each input value and weight it loads used in that many FMAs
    SUB_M: tl.constexpr, SUB_N: tl.constexpr,
    # w's output channels contiguous and padded to whole tiles (the launcher's copy): each tap's
    # weights loaded as the tile's [BLOCK_M, BLOCK_N] broadcast, unmasked, so the compiler
    # gives a thread a run of channels it loads with vector loads, beside its positions
    W_BCAST: tl.constexpr,
):
    # A convolution with a short reduction (few input channels x a window: an image's first
    # layer) on the FMA units: a program owns BLOCK_M output positions x BLOCK_N output
    # channels and walks the (input channel, tap row) pairs, a window row's taps unrolled; per
    # tap one input value per position and one weight per channel, their outer product
    # accumulated in fp32 (exact products, no split, no im2col tile through shared memory).
    # (With the whole window and the channels unrolled, KernelBench 50's 363 taps gave no
    # result within 5 minutes on an H200.) A transposed convolution's program takes its tile of
    # j in every stride phase (output positions phase + S * j) one after another: together they
    # write a contiguous block of the output, so each memory sector is whole before it leaves
    # L2 (a launch per phase wrote part of every sector a pass).{_GROUP_TILE}{_ROW}
    x_n = n * s_xn + (g * C_IN_G).to(tl.int64) * s_xc
    w_n = g * s_wg + offs_n * s_wo
    for p in range(SD * SH * SW):
        r_d = p // (SH * SW)
        r_h = (p // SW) % SH
        r_w = p % SW
        f_d, nt_d, off_d = phase_taps(r_d, a_d, b_d, k_d, SD, STEP_D)
        f_h, nt_h, off_h = phase_taps(r_h, a_h, b_h, k_h, SH, STEP_H)
        f_w, nt_w, off_w = phase_taps(r_w, a_w, b_w, k_w, SW, STEP_W)
        # a phase some dim's window misses is zero (bias)
        nt_d = tl.where(nt_h * nt_w > 0, nt_d, 0)
        d0 = od * st_d + off_d
        h0 = oh * st_h + off_h
        w0 = ow * st_w + off_w
        w_p = w_n + (f_d * s_wd + f_h * s_wh + f_w * s_ww)
        # the phase's positions: those of the whole output
        mask_p = (mask_m & (r_d + SD * od < FD) & (r_h + SH * oh < FH)
                  & (r_w + SW * ow < FW))
        if SUB_M > 0:  # [channel rep, position rep, channel thread, position thread]
            acc4 = tl.zeros((BLOCK_N // SUB_N, BLOCK_M // SUB_M, SUB_N, SUB_M), dtype=tl.float32)
        else:
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        if W_BCAST:
            zero_mn = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
        for r in range(0, C_IN_G * nt_d * nt_h):
            c = r // (nt_d * nt_h)
            t_d = (r // nt_h) % nt_d
            t_h = r % nt_h
            i_d = d0 + t_d * DIL_D
            i_h = h0 + t_h * DIL_H
            if IN_BOUNDS:
                ok_dh = mask_p
            else:
                ok_dh = mask_p & (i_d >= 0) & (i_d < ID) & (i_h >= 0) & (i_h < IH)
            x_dh = x_n + c * s_xc + i_d * s_xd + i_h * s_xh
            w_dh = w_p + (c * s_wi + t_d * STEP_D * s_wd + t_h * STEP_H * s_wh)
            for t_w in tl.static_range(NT_W):
                i_w = w0 + t_w * DIL_W
                if IN_BOUNDS:
                    # no bounds per tap: the per-element compares cost as much as the FMAs
                    ok = ok_dh
                    ok_n = offs_n < C_OUT_G
                else:
                    # a tap past the phase's: no input column and no channel (bounds, since
                    # Triton 3.9's interpreter rejects a block mask and-ed with a scalar one)
                    in_w = tl.where(t_w < nt_w, IW, 0)
                    ok = ok_dh & (i_w >= 0) & (i_w < in_w)
                    ok_n = offs_n < tl.where(t_w < nt_w, C_OUT_G, 0)
                xv = tl.load(x_ptr + (x_dh + i_w * s_xw), mask=ok, other=0.0).to(tl.float32)
                if W_BCAST:
                    wv = tl.load(w_ptr + ((w_dh + t_w * STEP_W * s_ww)[None, :]
                                          + zero_mn)).to(tl.float32)
                    acc += xv[:, None] * wv
                else:
                    wv = tl.load(w_ptr + (w_dh + t_w * STEP_W * s_ww), mask=ok_n,
                                 other=0.0).to(tl.float32)
                    if SUB_M > 0:
                        x4 = tl.reshape(xv, (BLOCK_M // SUB_M, SUB_M))
                        w4 = tl.reshape(wv, (BLOCK_N // SUB_N, SUB_N))
                        acc4 += w4[:, None, :, None] * x4[None, :, None, :]
                    else:
                        acc += xv[:, None] * wv[None, :]
        if SUB_M > 0:  # position m = rep * SUB_M + thread, channel likewise
            acc = tl.reshape(tl.permute(acc4, (1, 3, 0, 2)), (BLOCK_M, BLOCK_N))
        o_p = o_row + (r_d * s_pd + r_h * s_ph + r_w * s_pw){_epilogue('o_p', 'mask_p', '    ')}


@triton.jit
def conv_rows_fma_kernel(
    # Pointers
    x_ptr, w_ptr, b_ptr, out_ptr,
    # Sizes: output rows N * OD * OH; output channels per group; spatial extents (input,
    # output); input channels per group
    ROWS, C_OUT_G, ID, IH, IW, OD, OH, OW, C_IN_G,
    # Strides of x [N, C, D, H, W]; of w [C_in, C_out / groups, KD, KH, KW] per group, output
    # and input channel and per tap (d, h, w); of the output [N, C, OD, OH, OW]; of the bias
    s_xn, s_xc, s_xd, s_xh, s_xw, s_wg, s_wo, s_wi, s_wd, s_wh, s_ww,
    s_on, s_oc, s_od, s_oh, s_ow, s_b,
    # Along d and h: stride, padding, dilation and the window's extent; along w: padding,
    # dilation and extent
    st_d, st_h, pad_d, pad_h, dil_d, dil_h, k_d, k_h, pad_w, dil_w, k_w,
    # Meta-parameters: along w the stride, the next power of two of it, the step between a
    # phase's taps, the input step per such step and the most taps of any phase; bias; the
    # tile (column groups of SP x output channels)
    ST_W: tl.constexpr, SP: tl.constexpr, STEP_W: tl.constexpr, DIL_W: tl.constexpr,
    NT_W: tl.constexpr, HAS_BIAS: tl.constexpr, BLOCK_Q: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    # A transposed convolution with a short reduction, on the FMA units, in output order: a
    # program owns BLOCK_Q * ST_W neighbouring columns of one output row (n, od, oh) x BLOCK_N
    # output channels of a group, held as [channels, phase r, q] for column ST_W * q + r, so
    # its stores are whole runs of each channel's row. Input i reaches output o = i * st - pad
    # + t * dil through tap t. A row's (td, th) taps are the same for all its columns: the
    # taps that miss it are skipped (a loop of no channels), so with KernelBench 81's stride 5
    # and dilation 2 two rows in five store the bias alone. Along w a phase r's taps are every
    # STEP_W-th from its first, reading input q + off(r) - j * DIL_W: per input channel and
    # tap, one input value per column (contiguous along q) and one weight per (channel, r),
    # their products accumulated in fp32 (exact products). The phase kernels
    # (conv_fma_kernel) store each stride phase strided, part of each memory sector at a time.
    pid_r = tl.program_id(0).to(tl.int64)
    pid_n = tl.program_id(2)
    n_blocks_n = tl.cdiv(C_OUT_G, BLOCK_N)
    g = pid_n // n_blocks_n
    offs_n = (pid_n % n_blocks_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_n = offs_n < C_OUT_G
    r = tl.arange(0, SP)
    q = tl.program_id(1) * BLOCK_Q + tl.arange(0, BLOCK_Q)
    ow = q[None, :] * ST_W + r[:, None]
    mask_w = (ow < OW) & (r < ST_W)[:, None]
    # phase r's first tap, its taps and the input offset of the first
    f_w, nt_w, off_w = phase_taps(r, pad_w, -dil_w, k_w, ST_W, STEP_W)
    oh = pid_r % OH
    t = pid_r // OH
    od = t % OD
    n = t // OD
    x_n = n * s_xn + (g * C_IN_G).to(tl.int64) * s_xc
    w_n = g * s_wg + offs_n * s_wo
    acc = tl.zeros((BLOCK_N, SP, BLOCK_Q), dtype=tl.float32)
    for t_d in range(k_d):
        e_d = od + pad_d - t_d * dil_d
        i_d = e_d // st_d
        ok_d = (e_d >= 0) & (e_d % st_d == 0) & (i_d < ID)
        for t_h in range(k_h):
            e_h = oh + pad_h - t_h * dil_h
            i_h = e_h // st_h
            ok_h = (e_h >= 0) & (e_h % st_h == 0) & (i_h < IH)
            x_dh = x_n + i_d * s_xd + i_h * s_xh
            w_dh = w_n + (t_d * s_wd + t_h * s_wh)
            for j in tl.static_range(NT_W):
                i_w = q[None, :] + (off_w - j * DIL_W)[:, None]
                ok = mask_w & (j < nt_w)[:, None] & (i_w >= 0) & (i_w < IW)
                w_j = w_dh[:, None] + ((f_w + j * STEP_W) * s_ww)[None, :]
                mask_wj = mask_n[:, None] & ((j < nt_w) & (r < ST_W))[None, :]
                # no input channel where the tap misses this row
                for c in range(0, tl.where(ok_d & ok_h, C_IN_G, 0)):
                    xv = tl.load(x_ptr + (x_dh + c * s_xc + i_w * s_xw), mask=ok,
                                 other=0.0).to(tl.float32)
                    wv = tl.load(w_ptr + (w_j + c * s_wi), mask=mask_wj,
                                 other=0.0).to(tl.float32)
                    acc += wv[:, :, None] * xv[None, :, :]
    co = g * C_OUT_G + offs_n
    if HAS_BIAS:
        bias = tl.load(b_ptr + co * s_b, mask=mask_n, other=0.0).to(tl.float32)
        acc += bias[:, None, None]
    o_row = n * s_on + od * s_od + oh * s_oh
    out_ptrs = out_ptr + (o_row + co[:, None, None].to(tl.int64) * s_oc
                          + (ow * s_ow)[None, :, :])
    tl.store(out_ptrs, acc.to(out_ptr.dtype.element_ty),
             mask=mask_n[:, None, None] & mask_w[None, :, :])


@triton.jit
def phase_interleave_kernel(
    # Pointers: the phase-major result [SD * SH * SW, N * C, JD, JH, JW] (phase (pd, ph, pw)
    # holds the output positions (pd + SD * j_d, ph + SH * j_h, pw + SW * j_w)); the output
    src_ptr, out_ptr,
    # Sizes: output rows N * C * OD * OH and extents; a phase's block (N * C * JD * JH * JW)
    # and its extents
    ROWS, OD, OH, OW, PLANE, JD, JH, JW,
    # Meta-parameters: the strides (phases per dim); the tile
    SD: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr, BLOCK_R: tl.constexpr,
    BLOCK_W: tl.constexpr,
):
    # The output, contiguous, a tile of rows (nc, d, h) x columns w at a time: each element
    # from its phase's block. The reads are SW runs, each contiguous.
    offs_r = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    offs_w = tl.program_id(1) * BLOCK_W + tl.arange(0, BLOCK_W)
    mask = (offs_r < ROWS)[:, None] & (offs_w < OW)[None, :]
    h = offs_r % OH
    t = offs_r // OH
    d = t % OD
    nc = t // OD
    src_r = ((d % SD) * SH + h % SH) * SW * PLANE + ((nc * JD + d // SD) * JH + h // SH) * JW
    src_w = (offs_w % SW) * PLANE + offs_w // SW
    v = tl.load(src_ptr + (src_r[:, None] + src_w[None, :]), mask=mask)
    tl.store(out_ptr + (offs_r[:, None] * OW + offs_w[None, :]), v, mask=mask)

@triton.jit
def conv_pointwise_kernel(
    # Pointers
    x_ptr, w_ptr, b_ptr, out_ptr,
    # Sizes: positions per image (OD * OH * OW); channels per group; groups; tiles of a group's
    # output channels and of the positions
    P, C_IN_G, C_OUT_G, GROUPS, TILES_N, TILES_P,
    # Strides of x and out (batch, channel, position: the spatial dims read as one), of w
    # (output, input channel) and of the bias
    s_xn, s_xc, s_xp, s_on, s_oc, s_op, s_wo, s_wi, s_b,
    # Meta-parameters: fp32 products (1 and 2 tf32x3, split in the kernel; 4 one TF32 product;
    # 0 ieee)
    HAS_BIAS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr, TF32X3: tl.constexpr,
):
    # A 1x1 convolution with stride 1 and no padding is a GEMM per image and group:
    # out[n] [C_out, P] = w [C_out, C_in] @ x[n] [C_in, P], the positions contiguous in x and
    # out. A program owns BLOCK_N output channels x BLOCK_M positions; the channel tiles of one
    # position tile run next to each other, so x is read from memory about once.
    pid = tl.program_id(0)
    pid_n = pid % TILES_N
    t = pid // TILES_N
    g = t % GROUPS
    t = t // GROUPS
    pid_p = t % TILES_P
    n = t // TILES_P
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_p = pid_p * BLOCK_M + tl.arange(0, BLOCK_M)
    mask_n = offs_n < C_OUT_G
    mask_p = offs_p < P
    co = (g * C_OUT_G + offs_n).to(tl.int64)
    x_base = x_ptr + n.to(tl.int64) * s_xn + (g * C_IN_G).to(tl.int64) * s_xc
    acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
    for k0 in range(0, C_IN_G, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        mask_k = offs_k < C_IN_G
        # w [C_out, C_in] row-major: K contiguous, as TF32 tensor-core products read it
        w_tile = tl.load(w_ptr + (co[:, None] * s_wo + offs_k[None, :] * s_wi),
                         mask=mask_n[:, None] & mask_k[None, :], other=0.0).to(tl.float32)
        x_tile = tl.load(x_base + (offs_k.to(tl.int64)[:, None] * s_xc + offs_p[None, :] * s_xp),
                         mask=mask_k[:, None] & mask_p[None, :], other=0.0).to(tl.float32)
        if TF32X3 == 4:
            acc = tl.dot(w_tile, x_tile, acc, input_precision="tf32")
        elif TF32X3:
            acc = tl.dot(w_tile, x_tile, acc, input_precision="tf32x3")
        else:
            acc = tl.dot(w_tile, x_tile, acc, input_precision="ieee")
    if HAS_BIAS:
        acc += tl.load(b_ptr + co * s_b, mask=mask_n, other=0.0).to(tl.float32)[:, None]
    out_ptrs = out_ptr + (n.to(tl.int64) * s_on + co[:, None] * s_oc + offs_p[None, :] * s_op)
    tl.store(out_ptrs, acc.to(out_ptr.dtype.element_ty),
             mask=mask_n[:, None] & mask_p[None, :])


@triton.jit
def conv_direct_kernel(
    # Pointers
    x_ptr, w_ptr, b_ptr, out_ptr,
    # Sizes: output rows R = N * C_out * OD * OH; output channels, of them per group (the
    # channel multiplier); input and output extents; tiles of the columns (ow)
    R, C_OUT, C_OUT_G, ID, IH, IW, OD, OH, OW, TILES_W,
    # Strides of x [N, C, D, H, W]; of w per group, per output channel of a group and per tap
    # (d, h, w); of the output [N, C, OD, OH, OW] (a transposed phase's is a strided view); of
    # the bias
    s_xn, s_xc, s_xd, s_xh, s_xw, s_wg, s_wo, s_wd, s_wh, s_ww,
    s_on, s_oc, s_od, s_oh, s_ow, s_b,
    # Per dim: the input offset of tap 0 (-padding for a standard convolution) and its weight
    # tap
    off_d, off_h, off_w, wk_d, wk_h, wk_w,
    # Meta-parameters, per dim: taps; output stride; input step and weight step per tap
    NT_D: tl.constexpr, NT_H: tl.constexpr, NT_W: tl.constexpr,
    ST_D: tl.constexpr, ST_H: tl.constexpr, ST_W: tl.constexpr,
    DIL_D: tl.constexpr, DIL_H: tl.constexpr, DIL_W: tl.constexpr,
    WST_D: tl.constexpr, WST_H: tl.constexpr, WST_W: tl.constexpr,
    HAS_BIAS: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr,
):
    # One input channel per group (depthwise): a program owns BLOCK_H output rows
    # (n, channel, od, oh) x BLOCK_W columns (ow), so lanes along ow read neighbouring inputs
    # and small planes share a program; the taps are unrolled, and input tap (t_d, t_h, t_w)
    # of output o is o * ST + off + t * DIL per dim.
    pid = tl.program_id(0)
    offs_r = (pid // TILES_W).to(tl.int64) * BLOCK_H + tl.arange(0, BLOCK_H)
    ow = (pid % TILES_W) * BLOCK_W + tl.arange(0, BLOCK_W)
    mask_r = offs_r < R
    mask_w = ow < OW
    oh = offs_r % OH
    t = offs_r // OH
    od = t % OD
    t = t // OD
    co = t % C_OUT
    n = t // C_OUT
    g = co // C_OUT_G
    x_rows0 = n * s_xn + g * s_xc
    w_rows = g * s_wg + (co % C_OUT_G) * s_wo
    acc = tl.zeros((BLOCK_H, BLOCK_W), dtype=tl.float32)
    for t_d in tl.static_range(NT_D):
        i_d = od * ST_D + off_d + t_d * DIL_D
        for t_h in tl.static_range(NT_H):
            i_h = oh * ST_H + off_h + t_h * DIL_H
            ok_r = mask_r & (i_d >= 0) & (i_d < ID) & (i_h >= 0) & (i_h < IH)
            x_rows = x_rows0 + i_d * s_xd + i_h * s_xh
            for t_w in tl.static_range(NT_W):
                i_w = ow * ST_W + off_w + t_w * DIL_W
                ok_w = mask_w & (i_w >= 0) & (i_w < IW)
                # the rows' weights of this tap (one value where the rows share a channel)
                w_tap = tl.load(w_ptr + (w_rows + ((wk_d + t_d * WST_D) * s_wd
                                                   + (wk_h + t_h * WST_H) * s_wh
                                                   + (wk_w + t_w * WST_W) * s_ww)),
                                mask=mask_r, other=0.0).to(tl.float32)
                x_tile = tl.load(x_ptr + (x_rows[:, None] + (i_w * s_xw)[None, :]),
                                 mask=ok_r[:, None] & ok_w[None, :], other=0.0).to(tl.float32)
                acc += x_tile * w_tap[:, None]
    if HAS_BIAS:
        acc += tl.load(b_ptr + co * s_b, mask=mask_r, other=0.0).to(tl.float32)[:, None]
    out_rows = n * s_on + co * s_oc + od * s_od + oh * s_oh
    out_ptrs = out_ptr + (out_rows[:, None] + (ow * s_ow)[None, :])
    tl.store(out_ptrs, acc.to(out_ptr.dtype.element_ty),
             mask=mask_r[:, None] & mask_w[None, :])'''

# The longest reduction (input channels per group x window taps) the FMA kernel takes: it does
# C_out FMAs per output and tap where the GEMMs' tensor cores do the long ones
MAX_FMA_K = 512

LAUNCHER = SPLIT_DENSE_LAUNCHER + '''


def _per_dim(value, nd, fill, name):
    """A conv hyper-parameter as 3 ints (leading dims ``fill``): an int or one per dim."""
    if isinstance(value, str):
        raise ValueError(f"{name}={value!r}: string paddings are not supported")
    values = list(value) if isinstance(value, (list, tuple)) else [value] * nd
    if len(values) == 1 and nd > 1:
        values = values * nd
    if len(values) != nd:
        raise ValueError(f"{name} has {len(values)} entries for a {nd}-d convolution")
    return [fill] * (3 - nd) + [int(v) for v in values]


def _phase_taps(phase, size, stride, pad, dil):
    """The window positions k of a transposed convolution that reach the output positions
    phase + stride * j, as (first, step, count), and the input offset of k as (base, mul, div):
    input = j + (phase + pad - k * dil) / stride, an exact division."""
    taps = [k for k in range(size) if (phase + pad - k * dil) % stride == 0]
    step = taps[1] - taps[0] if len(taps) > 1 else 1
    return (taps[0] if taps else 0, step, len(taps)), (phase + pad, -dil, stride)


def _k_major(w5, taps, groups, transposed, c_out, k_total, channels_last=False):
    """The weight taps one GEMM launch reads, as a dense [C_out, K] matrix in its kernel's k
    order: input channel, then the taps per dim (the window table's), or the taps, then the
    input channel (``channels_last``). K contiguous; a view where the weight is already so laid
    out (a contiguous standard convolution's, in the table's order)."""
    w = w5[(slice(None), slice(None), *(slice(f, f + s * n, s) for f, s, n in taps))]
    if transposed:
        # [C_in, C_out / groups, ...] -> [groups, C_out / groups, C_in / groups, ...]
        w = w.reshape(groups, w.shape[0] // groups, *w.shape[1:]).transpose(1, 2)
    if channels_last:
        w = w.movedim(-4, -1)  # [..., C_in / groups, kd, kh, kw] -> [..., kd, kh, kw, C_in / g]
    return w.reshape(c_out, k_total).contiguous()


class _GemmInput:
    """The x one convolution's implicit GEMMs read (every phase of a transposed one), made
    once: x as it is, or channels-last (``channels_last``: a copy, or x where it already is);
    with split once (``split``) as its TF32 high part and remainder, beside ``special``, the
    flag the split passes set where x or a weight holds an infinity or NaN. The TMA GEMM's
    fp16 parts (``fp16_parts``) are made once too, where a launch asks for them."""

    def __init__(self, x5, channels_last, split):
        self.x5, self.channels_last, self.split = x5, channels_last, split
        self.special = self._flag() if split else None
        self._made = self._fp16 = None

    def _flag(self):
        return torch.zeros(1, dtype=torch.int32, device=self.x5.device)

    def _parts(self, bits=None):
        if self.channels_last and not self.x5.permute(0, 2, 3, 4, 1).is_contiguous():
            return channels_last_parts(self.x5, self.special, self.split, bits)
        # x as it is, or already channels-last
        if self.split or bits is not None:
            return split_dense(self.x5, self.special, bits)
        return self.x5, self.x5

    def get(self):
        """(x, x_lo): the high part and remainder with split once, else x twice."""
        if self._made is None:
            self._made = self._parts()
        return self._made

    def fp16_parts(self):
        """(x0, x1, bits): channels-last x times 2^e as two fp16 parts, and the bits of its
        largest finite magnitude (e's source); an infinity or NaN in x sets ``special``."""
        if self._fp16 is None:
            if self.special is None:
                self.special = self._flag()
            bits = self._flag()
            self._fp16 = (*self._parts(bits), bits)
        return self._fp16

    def weight(self, w):
        """(w, w_lo) of a dense weight copy, as ``get``."""
        return split_dense(w, self.special) if self.split else (w, w)


def _tap_lines(taps, offsets, pad):
    """Per dim, the input offset of tap 0 (less the padding) and the step between taps: input
    tap t of output o is o * stride + off + t * dil (``taps``: first, step, count; ``offsets``:
    base, mul, div of the exact division that places a window position)."""
    off = [(o[0] + t[0] * o[1]) // o[2] - p for t, o, p in zip(taps, offsets, pad)]
    dil = [t[1] * o[1] // o[2] if t[2] > 1 else 0 for t, o in zip(taps, offsets)]
    return off, dil


def _flat_stride(t):
    """The stride of ``t``'s spatial positions (dims 2-4) read as one flat axis, or None where
    they are not evenly spaced."""
    step = expect = None
    for size, stride in reversed(list(zip(t.shape[2:], t.stride()[2:]))):
        if size == 1:
            continue
        if expect is not None and stride != expect:
            return None
        step = stride if step is None else step
        expect = stride * size
    return 1 if step is None else step


# The depthwise kernel unrolls the window; a larger one takes the implicit GEMM instead
MAX_DIRECT_TAPS = 128
# The FMA kernel takes reductions up to this long; a longer one takes the GEMM
MAX_FMA_K = ''' + str(MAX_FMA_K) + '''
# The TMA implicit GEMM's tile: at most this many columns where the output has more than one
# row (KernelBench 69's 260 columns: 9 tiles of 32, not 3 of 128)
TMA_MAX_BW = 32
# ... and its pipeline: up to TMA_STAGES stages, as many as fit TMA_STAGE_BYTES of shared
# memory (at least 2). On an H200 (offline_variants_h200/conv_tma_stages.md) four stages of
# the 64 x 128 tile (156 KB) ran KernelBench 69 in 8.6 ms, three in 6.5; the 64 x 64 tile's
# four (96 KB) ran 77 in 1.2 ms, three in 2.1.
TMA_STAGES = 4
TMA_STAGE_BYTES = 144 << 10
# ... and fp16x3 chained (TMA = 3): a range of the reduction summed on the tensor cores at most
# this long (each range an unrolled loop: at most TMA_MAX_CHAINS of them)
TMA_CHAIN_K = 1024
TMA_MAX_CHAINS = 8
# The most memory the im2col matrix may take (its parts with split once); a larger one takes the
# implicit GEMM (or the FMA kernel) instead
IM2COL_MAX_BYTES = 8 << 30
# ... and at most this part of the device's free memory
IM2COL_MAX_FREE = 0.25
# The implicit GEMMs tile a contiguous (oh, ow) plane as one row where a power-of-two run of
# columns would be more than this fraction padding (KernelBench 59's rows of 10: 6 of 16)
FLAT_MIN_PAD = 0.125


def _grid_1d(programs):
    if programs >= 2 ** 31:
        raise ValueError(f"{programs} programs exceed a 1-D grid; use larger tiles")
    return (programs,)


def _direct_launch(x5, w5, bias, out, c_out_g, transposed, taps, offsets, st, pad):
    """The depthwise kernel over ``out`` [N, C_out, OD, OH, OW] (any strides). Input tap t of
    output position o is o * stride - padding + (base + (first + t * step) * mul) // div per
    dim: linear in t (``first``, ``step``: ``taps``; ``base``, ``mul``, ``div``: ``offsets``)."""
    n_batch, c_out, od, oh, ow = out.shape
    rows = n_batch * c_out * od * oh
    # Rows shorter than BLOCK_W: more of them, so a program still holds at least 1024 outputs
    # (the per-program work; and the interpreter's cost is per program); few rows: longer ones
    block_w = min(BLOCK_W, triton.next_power_of_2(ow))
    short = max(BLOCK_H * BLOCK_W, 1024) // block_w if block_w < BLOCK_W else BLOCK_H
    block_h = min(triton.next_power_of_2(rows), max(BLOCK_H, short))
    block_w = min(triton.next_power_of_2(ow), max(block_w, BLOCK_H * BLOCK_W // block_h))
    tiles_w = triton.cdiv(ow, block_w)
    off, dil = _tap_lines(taps, offsets, pad)
    # per group, w advances by its input (transposed) or output channels
    s_wo = w5.stride(1) if transposed else w5.stride(0)
    s_wg = w5.stride(0) if transposed else c_out_g * s_wo
    has_bias = bias is not None
    conv_direct_kernel[_grid_1d(triton.cdiv(rows, block_h) * tiles_w)](
        x5, w5, bias if has_bias else w5, out, rows, c_out, c_out_g, *x5.shape[2:], od, oh, ow,
        tiles_w, *x5.stride(), s_wg, s_wo, *w5.stride()[2:], *out.stride(),
        bias.stride(0) if has_bias else 0, *off, *(t[0] for t in taps),
        NT_D=taps[0][2], NT_H=taps[1][2], NT_W=taps[2][2], ST_D=st[0], ST_H=st[1], ST_W=st[2],
        DIL_D=dil[0], DIL_H=dil[1], DIL_W=dil[2], WST_D=taps[0][1], WST_H=taps[1][1],
        WST_W=taps[2][1], HAS_BIAS=has_bias, BLOCK_H=block_h, BLOCK_W=block_w,
        num_warps=max(1, min(NUM_WARPS, block_h * block_w // 32)))


def _tile_grid(out, c_out_g, groups, block_n):
    """The position x channel tiles' grid over ``out`` (the implicit GEMMs', the FMA
    kernel's), with ``_position_tiles``'s rows, row length, BLOCK_W and flat_hw."""
    rows, row_len, block_w, flat_hw = _position_tiles(out)
    grid = (triton.cdiv(rows, BLOCK_M // block_w) * triton.cdiv(row_len, block_w),
            groups * triton.cdiv(c_out_g, block_n))
    if grid[0] >= 2 ** 31:
        raise ValueError(f"{grid[0]} programs exceed a grid dim; use larger tiles")
    return grid, rows, block_w, flat_hw


def _weight_group_strides(w5, transposed, c_in_g, c_out_g, s_wi):
    """w's strides per output channel of a group and per group: it advances by its input
    (transposed) or output channels."""
    s_wo = w5.stride(1) if transposed else w5.stride(0)
    return s_wo, c_in_g * s_wi if transposed else c_out_g * s_wo


def _tap_step(stride, dil):
    """How far apart a transposed convolution's taps that reach one stride phase lie along a
    dim: the least step that the stride divides step * dil by."""
    return next(t for t in range(1, stride + 1) if t * dil % stride == 0)


def _fma_launch(x5, w5, bias, out, c_in_g, c_out_g, groups, transposed, st, pad, dil, s_wi,
                phased=False):
    """A convolution with a short reduction (c_in_g x the taps, at most MAX_FMA_K; a transposed
    one's longest phase's) on the FMA units, a window row's taps unrolled: the implicit GEMMs'
    position x channel tiles. ``phased``: a transposed one's every stride phase in one launch, a
    program taking its tile of j in each (the positions phase + stride * j); else input tap t
    of output o is o * st - pad + t * dil (a transposed one's phase: ``w5`` a view of its taps,
    ``out`` of its positions)."""
    ks = list(w5.shape[2:])
    block_n = min(BLOCK_N, max(16, triton.next_power_of_2(c_out_g)))
    # narrower channel tiles where the last would be mostly padding: on an H200 KernelBench
    # 50's 96 channels ran 3.0 ms in 3 tiles of 32 against 3.3 in 2 of 64
    while block_n > 16 and triton.cdiv(c_out_g, block_n) * block_n - c_out_g > c_out_g // 8:
        block_n //= 2
    if phased:
        # input = j + (phase + pad - tap * dil) / stride: the phases' grid of j is phase 0's
        grid_out, phases, a, b = out[:, :, ::st[0], ::st[1], ::st[2]], st, pad, [-d for d in dil]
        steps = [_tap_step(s, d) for s, d in zip(st, dil)]
        st = [1, 1, 1]
    else:  # input = o * stride - pad + tap * dil
        grid_out, phases, a, b, steps = out, [1, 1, 1], [-p for p in pad], dil, [1, 1, 1]
    grid, rows, block_w, flat_hw = _tile_grid(grid_out, c_out_g, groups, block_n)
    s_wo, s_wg = _weight_group_strides(w5, transposed, c_in_g, c_out_g, s_wi)
    has_bias = bias is not None
    w_bcast = bool(W_BCAST) and not transposed
    sub_m, sub_n = (0, 1) if w_bcast else fma_threads(SUB_M, BLOCK_M, block_n, NUM_WARPS)
    w_arg, w_taps = w5, w5.stride()[2:]
    if w_bcast:
        # [groups, c_in_g, kd, kh, kw, c_out_g padded to whole channel tiles], zeros past c_out_g
        pad_n = triton.cdiv(c_out_g, block_n) * block_n
        w_arg = w5.new_zeros((groups, c_in_g, *ks, pad_n))
        w_arg[..., :c_out_g] = w5.reshape(groups, c_out_g, c_in_g, *ks).movedim(1, -1)
        s_wg, s_wo, s_wi, w_taps = w_arg.stride(0), 1, w_arg.stride(1), w_arg.stride()[2:5]
    conv_fma_kernel[grid](
        x5, w_arg, bias if has_bias else w5, grid_out, rows, c_out_g, *x5.shape[2:],
        *grid_out.shape[2:], *out.shape[2:], *x5.stride(), s_wg, s_wo, s_wi, *w_taps,
        *grid_out.stride(), *out.stride()[2:], bias.stride(0) if has_bias else 0, *st, *a, *b,
        *ks, c_in_g, NT_W=-(-ks[2] // steps[2]), SD=phases[0], SH=phases[1], SW=phases[2],
        STEP_D=steps[0], STEP_H=steps[1], STEP_W=steps[2],
        DIL_D=steps[0] * b[0] // phases[0], DIL_H=steps[1] * b[1] // phases[1],
        DIL_W=steps[2] * b[2] // phases[2], HAS_BIAS=has_bias, BLOCK_M=BLOCK_M,
        BLOCK_N=block_n, BLOCK_W=block_w, FLAT_HW=flat_hw,
        IN_BOUNDS=not transposed and not any(pad), SUB_M=sub_m, SUB_N=sub_n, W_BCAST=w_bcast,
        num_warps=NUM_WARPS, maxnreg=MAXNREG or None)


def fma_threads(sub_m, block_m, block_n, num_warps):
    """The FMA kernel's threads over positions x channels for SUB_M = ``sub_m``: (sub_m, the
    rest of the threads) where that grid fits the tile, else (0, 1), a thread a position."""
    threads = 32 * num_warps
    if sub_m and threads % sub_m == 0 and sub_m <= block_m and threads // sub_m <= block_n:
        return sub_m, threads // sub_m
    return 0, 1


def _rows_fma_launch(x5, w5, bias, out, c_in_g, c_out_g, groups, st, pad, dil, s_wi):
    """A transposed convolution with a short reduction on the FMA units in output order
    (``conv_rows_fma_kernel``): a program BLOCK_M // SP groups of stride-many columns of one
    output row (SP the stride along w's next power of two; at most the row, rounded up) x
    BLOCK_N output channels of a group."""
    n_batch, _, od, oh, ow = out.shape
    rows = n_batch * od * oh
    sp = triton.next_power_of_2(st[2])
    block_q = max(1, min(BLOCK_M // sp, triton.next_power_of_2(triton.cdiv(ow, st[2]))))
    block_n = min(BLOCK_N, max(16, triton.next_power_of_2(c_out_g)))
    grid = (rows, triton.cdiv(ow, block_q * st[2]), groups * triton.cdiv(c_out_g, block_n))
    if rows >= 2 ** 31 or max(grid[1:]) >= 2 ** 16:
        raise ValueError(f"the output's {rows} rows x {grid[1]} column tiles x {grid[2]} "
                         f"channel tiles exceed the grid; use larger tiles")
    step = _tap_step(st[2], dil[2])
    s_wo, s_wg = _weight_group_strides(w5, True, c_in_g, c_out_g, s_wi)
    has_bias = bias is not None
    conv_rows_fma_kernel[grid](
        x5, w5, bias if has_bias else w5, out, rows, c_out_g, *x5.shape[2:], od, oh, ow,
        c_in_g, *x5.stride(), s_wg, s_wo, s_wi, *w5.stride()[2:], *out.stride(),
        bias.stride(0) if has_bias else 0, st[0], st[1], pad[0], pad[1], dil[0], dil[1],
        *w5.shape[2:4], pad[2], dil[2], w5.shape[4], ST_W=st[2], SP=sp, STEP_W=step,
        DIL_W=step * dil[2] // st[2], NT_W=-(-w5.shape[4] // step), HAS_BIAS=has_bias,
        BLOCK_Q=block_q, BLOCK_N=block_n,
        num_warps=max(1, min(NUM_WARPS, block_q * sp * block_n // 32)))


def _im2col_launch(x5, w5, bias, out, k_total, st, pad, dil, tf32x3, xs, s_op):
    """A standard convolution with one group as the im2col matrix [positions, K] written once
    (rows padded to a multiple of BLOCK_K), then a plain GEMM by the weight on the tensor
    cores (``tf32x3`` as ``_conv_launch`` resolved it; ``out``'s positions ``s_op`` apart);
    None (nothing launched) where the matrix would pass IM2COL_MAX_BYTES."""
    n_batch, c_out = out.shape[0], out.shape[1]
    positions = out.shape[2] * out.shape[3] * out.shape[4]
    m = n_batch * positions
    kp = triton.cdiv(k_total, BLOCK_K) * BLOCK_K
    parts = 2 if xs.split else 1
    size = parts * m * kp * x5.element_size()
    if m >= 2 ** 31 or size > IM2COL_MAX_BYTES or (
            x5.is_cuda and size > torch.cuda.mem_get_info(x5.device)[0] * IM2COL_MAX_FREE):
        return None
    a = torch.empty((parts, m, kp), dtype=x5.dtype, device=x5.device)
    grid = (triton.cdiv(m, 32), triton.cdiv(kp, 64))
    conv_im2col_kernel[grid](
        x5, a[0], a[-1], xs.special if xs.split else a, m, k_total, kp, *x5.shape[2:],
        *out.shape[2:], *x5.stride(), *st, *pad, *dil, KD=w5.shape[2], KH=w5.shape[3],
        KW=w5.shape[4], SPLIT=xs.split, BLOCK_R=32, BLOCK_C=64, num_warps=4)
    wk = torch.zeros((c_out, kp), dtype=w5.dtype, device=w5.device)
    wk[:, :k_total] = w5.reshape(c_out, k_total)
    wk, wk_lo = xs.weight(wk)
    block_n = min(BLOCK_N, max(16, triton.next_power_of_2(c_out)))
    has_bias = bias is not None
    programs = n_batch * triton.cdiv(positions, BLOCK_M) * triton.cdiv(c_out, block_n)
    conv_im2col_gemm_kernel[_grid_1d(programs)](
        a[0], wk, bias if has_bias else wk, out, a[-1], wk_lo,
        xs.special if xs.split else wk, positions, kp, c_out, out.stride(0), out.stride(1),
        s_op, bias.stride(0) if has_bias else 0, HAS_BIAS=has_bias,
        BLOCK_M=BLOCK_M, BLOCK_N=block_n, BLOCK_K=BLOCK_K, TF32X3=tf32x3,
        num_warps=NUM_WARPS)
    return out

def _pointwise_launch(x5, w5, bias, out, c_in_g, c_out_g, groups, s_xp, tf32x3):
    """A 1x1 convolution with stride 1 and no padding as a GEMM per image and group over the
    positions read as one axis (x's evenly spaced, ``s_xp`` apart)."""
    n_batch, positions = out.shape[0], out.shape[2] * out.shape[3] * out.shape[4]
    block_n = min(BLOCK_N, max(16, triton.next_power_of_2(c_out_g)))
    block_k = min(BLOCK_K, max(16, triton.next_power_of_2(c_in_g)))
    block_m = min(BLOCK_M, max(16, triton.next_power_of_2(positions)))
    tiles_n, tiles_p = triton.cdiv(c_out_g, block_n), triton.cdiv(positions, block_m)
    has_bias = bias is not None
    conv_pointwise_kernel[_grid_1d(n_batch * tiles_p * groups * tiles_n)](
        x5, w5, bias if has_bias else w5, out, positions, c_in_g, c_out_g, groups, tiles_n,
        tiles_p, x5.stride(0), x5.stride(1), s_xp, out.stride(0), out.stride(1),
        _flat_stride(out), w5.stride(0), w5.stride(1), bias.stride(0) if has_bias else 0,
        HAS_BIAS=has_bias, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
        TF32X3=int(tf32x3), num_warps=NUM_WARPS)


def _position_tiles(out):
    """The implicit GEMMs' position tiles of ``out`` [N, C, OD, OH, OW]: (rows, their length,
    BLOCK_W, flat_hw). A row is (n, od, oh) of OW columns; or (``flat_hw``), where OW is short
    enough that a power-of-two run of columns would be more than FLAT_MIN_PAD padding and the
    (oh, ow) plane lies evenly spaced in ``out``, (n, od) of OH * OW positions."""
    n_batch, _, od, oh, ow = out.shape
    block_w = min(BLOCK_M, triton.next_power_of_2(ow))
    padded = triton.cdiv(ow, block_w) * block_w
    if (oh > 1 and (padded - ow) > FLAT_MIN_PAD * padded
            and out.stride(3) == ow * out.stride(4)):
        plane = oh * ow
        return n_batch * od, plane, min(BLOCK_M, triton.next_power_of_2(plane)), True
    return n_batch * od * oh, ow, block_w, False


def _tma_launch(xs, w5, bias, out, c_in_g, c_out_g, groups, transposed, taps, off, dil,
                st, k_total, tma, one_tf32=False):
    """An fp32 convolution (or transposed phase) with stride 1 through conv_gemm_tma_kernel:
    x channels-last (``xs``, a _GemmInput) read in TMA boxes, the weight split once; its
    products (``tma``) TF32 ones (1: three, or with ``one_tf32`` one product of x and the
    weight as they are, nothing split), or fp16x3 (2, 3: both operands as fp16 parts, k steps of
    twice BLOCK_K channels where they divide a tap's and take at most 128 bytes; 3: the k
    steps' products summed on the tensor cores in ranges of at most TMA_CHAIN_K). None
    (nothing launched or made) where it does not fit: a stride, a tap's channels not whole
    slices of at least 16 (a slice would read the next group's), rows of x or of the weight
    copy not a multiple of 16 bytes or x not starting on one (TMA's rules), a phase no tap
    reaches, a tile of fewer than 16 positions, or a GPU before sm_90."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    x5 = xs.x5
    fp16 = tma >= 2
    one_tf32 = bool(one_tf32) and not fp16
    block_k = min(BLOCK_K, c_in_g)
    if fp16 and 2 * block_k <= 64 and c_in_g % (2 * block_k) == 0:
        block_k *= 2
    per_16_bytes = 8 if fp16 else 4
    if (x5.dtype != torch.float32 or list(st) != [1, 1, 1] or block_k < 16
            or c_in_g % block_k or k_total == 0 or k_total % per_16_bytes
            or (fp16 and x5.shape[1] % per_16_bytes)
            or (x5.is_cuda and torch.cuda.get_device_capability(x5.device)[0] < 9)):
        return None
    n_batch, c_out = out.shape[0], out.shape[1]
    od, oh, ow = out.shape[2:]
    bw = min(BLOCK_M, triton.next_power_of_2(ow), TMA_MAX_BW if oh > 1 else BLOCK_M)
    bh = min(BLOCK_M // bw, triton.next_power_of_2(oh))
    if bh * bw < 16:
        return None
    wk = _k_major(w5, taps, groups, transposed, c_out, k_total, channels_last=True)
    if fp16:  # x's parts and flag are the convolution's, made once; the weight's this launch's
        x, x_lo, x_bits = xs.fp16_parts()
        special, w_bits = xs.special, torch.zeros(1, dtype=torch.int32, device=x5.device)
        w_hi, w_lo = split_dense(wk, special, w_bits)
    else:
        x = x_lo = xs.get()[0]
        x_cl = x.permute(0, 2, 3, 4, 1)  # [N, D, H, W, C], the channels contiguous
        if any(s % 4 for s in x_cl.stride()[:-1]) or x_cl.data_ptr() % 16:
            return None
        special = x_bits = w_bits = torch.zeros(1, dtype=torch.int32, device=x5.device)
        w_hi, w_lo = (wk, wk) if one_tf32 else split_dense(wk, special)
    block_n = min(BLOCK_N, max(16, triton.next_power_of_2(c_out_g)))
    x_descs = [TensorDescriptor.from_tensor(t.permute(0, 2, 3, 4, 1), [1, 1, bh, bw, block_k])
               for t in (x, x_lo)]
    w_descs = [TensorDescriptor.from_tensor(t, [block_n, block_k]) for t in (w_hi, w_lo)]
    rows = n_batch * od
    grid = (rows * triton.cdiv(oh, bh) * triton.cdiv(ow, bw),
            groups * triton.cdiv(c_out_g, block_n))
    has_bias = bias is not None
    chains = min(triton.cdiv(k_total, TMA_CHAIN_K), TMA_MAX_CHAINS) if tma == 3 else 0
    conv_gemm_tma_kernel[grid](
        *x_descs, *w_descs, bias if has_bias else out, out, special, x_bits, w_bits, rows,
        c_in_g, c_out_g, od, oh, ow, taps[1][2], taps[2][2],
        taps[0][2] * taps[1][2] * taps[2][2] * (c_in_g // block_k), *out.stride(),
        bias.stride(0) if has_bias else 0, *off, *dil, HAS_BIAS=has_bias, BH=bh, BW=bw,
        BLOCK_N=block_n, BLOCK_K=block_k, FP16=fp16, CHAINS=chains, ONE_TF32=one_tf32,
        num_warps=NUM_WARPS, num_stages=_tma_stages(bh * bw, block_n, block_k, fp16, one_tf32))
    return out


def _tma_stages(block_m, block_n, block_k, fp16=False, one_tf32=False):
    """The TMA GEMM's pipeline stages: TMA_STAGES, fewer where they would take more than
    TMA_STAGE_BYTES of shared memory (a stage: an fp32 x box and the weight's two TF32 parts,
    with ``one_tf32`` the fp32 weight box alone, or with ``fp16`` two fp16 parts of each), at
    least 2."""
    stage = 4 * block_k * (block_m + (1 if fp16 or one_tf32 else 2) * block_n)
    return max(2, min(TMA_STAGES, TMA_STAGE_BYTES // stage))


def _conv_launch(x5, w5, bias, out, c_in_g, c_out_g, groups, transposed, taps, offsets, st,
                 pad, s_wi, nd, tf32x3, xs, run_w=False, fma=False, im2col=False, tma=False):
    """One convolution (or one phase of a transposed one) writing ``out`` [N, C_out, OD, OH,
    OW] (any strides): the depthwise kernel for one input channel per group, the pointwise
    GEMM for a 1x1 one, else an implicit GEMM over ``xs`` (a _GemmInput): channels-last, or
    x as it is through the window table. ``tf32x3``: the GEMMs' fp32 products as three TF32
    ones, split in the kernel (1) or once before it (2), or one plain TF32 product (4), the
    implicit GEMM reading a K-major copy of the weight; 0 ieee. ``run_w``: the channels-last
    GEMM's k runs along whole window rows where they lie contiguous in x (one group, adjacent
    taps along w). ``fma``: a
    reduction (input channels per group x taps) of at most MAX_FMA_K runs on the FMA units
    instead (``conv_fma_kernel``). ``im2col``: a standard convolution with one group writes its
    im2col matrix once and multiplies it by the weight in a plain GEMM (``_im2col_launch``).
    ``tma``: with TF32 products (tf32x3 1 or 4), a channels-last implicit GEMM with stride 1
    reads x through TMA (``_tma_launch``), where it fits: its products TF32 ones (1: three, one
    with tf32x3 4) or fp16x3 (2; 3 with the k steps' products chained on the tensor cores)."""
    n_batch, c_out = out.shape[0], out.shape[1]
    m = n_batch * out.shape[2] * out.shape[3] * out.shape[4]
    if m == 0:
        return
    n_taps = taps[0][2] * taps[1][2] * taps[2][2]
    if c_in_g == 1 and n_taps <= MAX_DIRECT_TAPS:
        _direct_launch(x5, w5, bias, out, c_out_g, transposed, taps, offsets, st, pad)
        return
    s_xp = _flat_stride(x5)
    if (not transposed and n_taps == 1 and list(w5.shape[2:]) == [1, 1, 1] and st == [1, 1, 1]
            and pad == [0, 0, 0] and s_xp is not None and _flat_stride(out) is not None):
        _pointwise_launch(x5, w5, bias, out, c_in_g, c_out_g, groups, s_xp, tf32x3)
        return
    k_total = c_in_g * n_taps
    # split once where x is split (fp32); otherwise, as in the pointwise GEMM, in the kernel
    tf32x3 = int(tf32x3) if xs.split or int(tf32x3) != 2 else 1
    if (im2col and not transposed and groups == 1 and k_total > 0
            and (s_op := _flat_stride(out)) is not None
            and _im2col_launch(x5, w5, bias, out, k_total, st, pad, [o[1] for o in offsets],
                               tf32x3, xs, s_op) is not None):
        return
    if fma and 0 < k_total <= MAX_FMA_K:
        off, dil = _tap_lines(taps, offsets, pad)
        # the window's taps this launch reads (a transposed phase's: every step-th from its
        # first) as a view, tap t at t * dil from the first's input offset
        w_taps = w5[(slice(None), slice(None), *(slice(f, f + s * n, s) for f, s, n in taps))]
        _fma_launch(x5, w_taps, bias, out, c_in_g, c_out_g, groups, transposed, st,
                    [-o for o in off], dil, s_wi)
        return
    has_bias = bias is not None
    block_n = min(BLOCK_N, max(16, triton.next_power_of_2(c_out_g)))
    # a program's positions: rows x BLOCK_W columns of the output
    grid, rows, block_w, flat_hw = _tile_grid(out, c_out_g, groups, block_n)
    if xs.channels_last:
        off, dil = _tap_lines(taps, offsets, pad)
        if (tma and tf32x3 in (1, 4) and not run_w
                and _tma_launch(xs, w5, bias, out, c_in_g, c_out_g, groups, transposed, taps,
                                off, dil, st, k_total, int(tma), tf32x3 == 4) is not None):
            return
        xc, xc_lo = xs.get()
        # a window row's taps along w lie next to each other where they are adjacent and the
        # channels between them are the group's own
        run_w = bool(run_w and dil[2] == 1 and taps[2][2] > 1 and xc.stride(4) == c_in_g)
        run = c_in_g * (taps[2][2] if run_w else 1)
        # a slice no wider than a run
        block_k = min(BLOCK_K, max(16, triton.next_power_of_2(run)))
        k_steps = k_total // run * triton.cdiv(run, block_k)
        wk, wk_lo = xs.weight(_k_major(w5, taps, groups, transposed, c_out, k_total,
                                       channels_last=True))
        conv_gemm_cl_kernel[grid](
            xc, wk, bias if has_bias else w5, out, xc_lo, wk_lo,
            xs.special if xs.split else xc, rows, k_total, c_in_g, c_out_g, *xc.shape[2:],
            *out.shape[2:], taps[1][2], taps[2][2], run, k_steps, xc.stride(0),
            *xc.stride()[2:], *out.stride(), bias.stride(0) if has_bias else 0, *st, *off, *dil,
            ND=nd, HAS_BIAS=has_bias, BLOCK_M=BLOCK_M, BLOCK_N=block_n, BLOCK_K=block_k,
            BLOCK_W=block_w, TF32X3=tf32x3, FLAT_HW=flat_hw, RUN_W=run_w,
            num_warps=NUM_WARPS)
        return
    xt, xt_lo = xs.get()  # x as it is, or (split once) its parts in one block of memory
    table = torch.empty((5, max(1, k_total)), dtype=torch.int64, device=x5.device)
    if k_total:
        conv_table_kernel[(triton.cdiv(k_total, 256),)](
            table, k_total, taps[0][2], taps[1][2], taps[2][2], *xt.stride()[1:], s_wi,
            *w5.stride()[2:], *(t[0] for t in taps), *(t[1] for t in taps),
            *(o[0] for o in offsets), *(o[1] for o in offsets), *(o[2] for o in offsets),
            BLOCK=256)
    s_wo, s_wg = _weight_group_strides(w5, transposed, c_in_g, c_out_g, s_wi)
    args = (xt, w5, bias if has_bias else w5, table, out, xt_lo, w5,
            xs.special if xs.split else xt,
            rows, k_total, c_in_g, c_out_g, c_out, *xt.shape[2:], *out.shape[2:],
            *xt.stride(), s_wg, s_wo, *out.stride(),
            bias.stride(0) if has_bias else 0, *st, *pad)
    meta = dict(ND=nd, HAS_BIAS=has_bias, TRANSPOSED=bool(transposed))
    # no wider than the channels and taps (a transposed phase may hold few taps)
    block_k = min(BLOCK_K, max(16, triton.next_power_of_2(k_total)))
    # TF32 tensor-core products read the weight tile K-major: on every device, so the
    # interpreter verifies the addressing the GPU runs
    w_kmajor = bool(tf32x3) and k_total > 0
    if w_kmajor:
        wk, wk_lo = xs.weight(_k_major(w5, taps, groups, transposed, c_out, k_total))
        args = (xt, wk) + args[2:5] + (xt_lo, wk_lo) + args[7:]
    conv_gemm_kernel[grid](*args, **meta, BLOCK_M=BLOCK_M, BLOCK_N=block_n, BLOCK_K=block_k,
                           BLOCK_W=block_w, TF32X3=tf32x3, W_KMAJOR=w_kmajor,
                           FLAT_HW=flat_hw, num_warps=NUM_WARPS)


def conv_nd(x, weight, bias, stride, padding, dilation, groups, transposed, output_padding,
            tf32x3=False, channels_last=False, fma=False, phase_major=False, im2col=False,
            out_rows=False, tma=False):
    """A 1-3 dim (transposed) convolution of ``x`` [N, C, *spatial] by ``weight``; ``tf32x3``:
    fp32 GEMM products as three TF32 tensor-core ones, each tile split in the kernel (1) or
    the operands split once before it (2), as one plain TF32 product (4: TF32-level error, as
    cuDNN's default; where TF32 is allowed), else (0) ieee FMA; ``channels_last``: the
    implicit GEMM reads a channels-last copy of x, k walking a tap's channels (1) or a window
    row's taps along w and their channels where they lie contiguous (2); else (0) x as it is,
    through the window table; ``fma``: a convolution whose reduction (input channels per group
    x window taps) is at most MAX_FMA_K runs on the FMA units, its window unrolled (exact fp32
    products); ``phase_major``: a transposed convolution with a stride along its last dim
    writes each stride phase contiguous into a buffer and interleaves them in one pass;
    ``im2col``: a standard convolution with one group writes its im2col matrix (positions x
    input channels * taps) once, then multiplies it by the weight in a plain GEMM, where the
    matrix takes at most IM2COL_MAX_BYTES; ``out_rows``: a transposed convolution whose
    reduction (input channels per group x window taps) is at most MAX_FMA_K runs on the FMA
    units in output order, a program a run of one output row's columns; ``tma``: with TF32
    products (tf32x3 1 or 4) and a channels-last x (1), an implicit GEMM with stride 1 (a
    transposed convolution's phases, a standard one without a stride) reads x through TMA and
    the weight split once (``conv_gemm_tma_kernel``), where it fits: three TF32 products (1;
    with tf32x3 4 one product of x and the weight as they are, nothing split), or fp16x3
    (2: x and the weight scaled by powers of two and split once into fp16 parts; 3: the same,
    the k steps' products summed on the tensor cores in ranges of at most TMA_CHAIN_K)."""
    nd = weight.dim() - 2
    if not 1 <= nd <= 3:
        raise ValueError(f"weight has {weight.dim()} dims; expected 3 to 5")
    if x.dim() != nd + 2:
        raise ValueError(f"x has {x.dim()} dims; a {nd}-d convolution takes {nd + 2}")
    groups = int(groups)
    n_batch, c_in = x.shape[0], x.shape[1]
    x5 = x.reshape(n_batch, c_in, *([1] * (3 - nd)), *x.shape[2:])
    w5 = weight.reshape(weight.shape[0], weight.shape[1], *([1] * (3 - nd)), *weight.shape[2:])
    st = _per_dim(stride, nd, 1, "stride")
    pad = _per_dim(padding, nd, 0, "padding")
    dil = _per_dim(dilation, nd, 1, "dilation")
    ks = list(w5.shape[2:])
    sizes_in = list(x5.shape[2:])
    if transposed:
        c_in_g, c_out_g = c_in // groups, weight.shape[1]
        opad = _per_dim(output_padding, nd, 0, "output_padding")
        sizes_out = [(i - 1) * s - 2 * p + d * (k - 1) + o + 1
                     for i, s, p, d, k, o in zip(sizes_in, st, pad, dil, ks, opad)]
        s_wi = w5.stride(0)
        if weight.shape[0] != c_in:
            raise ValueError(f"weight has {weight.shape[0]} input channels; x has {c_in}")
    else:
        c_in_g, c_out_g = weight.shape[1], weight.shape[0] // groups
        sizes_out = [(i + 2 * p - d * (k - 1) - 1) // s + 1
                     for i, s, p, d, k in zip(sizes_in, st, pad, dil, ks)]
        s_wi = w5.stride(1)
    if c_in_g * groups != c_in:
        raise ValueError(f"x has {c_in} channels; the weight expects {c_in_g} x {groups} groups")
    if min(sizes_out) <= 0:
        raise ValueError(f"the output would be empty ({sizes_out})")
    c_out = c_out_g * groups
    out = torch.empty((n_batch, c_out, *sizes_out), dtype=x.dtype, device=x.device)
    if out.numel() == 0:
        return out.reshape(n_batch, c_out, *sizes_out[3 - nd:])
    # split once where the products are fp32 ones on the tensor cores (the pointwise GEMM
    # splits in its kernel)
    xs = _GemmInput(x5, bool(channels_last), int(tf32x3) == 2 and x.dtype == torch.float32)
    run_w = int(channels_last) == 2
    if not transposed:
        _conv_launch(x5, w5, bias, out, c_in_g, c_out_g, groups, False,
                     [(0, 1, k) for k in ks], [(0, d, 1) for d in dil], st, pad, s_wi, nd,
                     tf32x3, xs, run_w, fma, im2col, tma)
        return out.reshape(n_batch, c_out, *sizes_out[3 - nd:])
    # in output order (conv_rows_fma_kernel), where asked and the reduction is short
    if out_rows and 0 < c_in_g * ks[0] * ks[1] * ks[2] <= MAX_FMA_K:
        _rows_fma_launch(x5, w5, bias, out, c_in_g, c_out_g, groups, st, pad, dil, s_wi)
        return out.reshape(n_batch, c_out, *sizes_out[3 - nd:])
    # A transposed convolution, one stride phase at a time: the output positions
    # phase + stride * j are reached by a fixed part of the window, each tap from input j plus
    # a fixed offset: a standard convolution with stride 1 written into a strided view of the
    # output. No tap is spent on the positions the stride skips. With a stride along w
    # (``phase_major``), each phase is written contiguous into its block of a phase-major
    # buffer and one pass interleaves them, where a phase's strided stores fill a 1 / stride
    # part of each memory sector (on an H200 it paid off on KernelBench 72 only: conv.py).
    phases = [(pd, ph, pw) for pd in range(st[0]) for ph in range(st[1]) for pw in range(st[2])]
    found = {p: [_phase_taps(*a) for a in zip(p, ks, st, pad, dil)] for p in phases}
    counts = [d[0][2] * h[0][2] * w[0][2] for d, h, w in found.values()]
    if fma and c_in_g > 1 and 0 < c_in_g * max(counts) <= MAX_FMA_K and min(counts) == 0:
        # Phases no window reaches (zeros): the FMA kernel takes every phase in one launch, a
        # program its tile of j in each, so its stores fill each memory sector at once. On an
        # H200 (conv_fma_phases.md) 81 (16 of 25 phases empty) ran 1.96 ms against 3.0 a
        # launch per phase and 75 1.33 against 1.6; 72 (none empty) 1.75 against 1.3.
        _fma_launch(x5, w5, bias, out, c_in_g, c_out_g, groups, True, st, pad, dil, s_wi,
                    phased=True)
        return out.reshape(n_batch, c_out, *sizes_out[3 - nd:])
    major = bool(phase_major) and st[2] > 1
    js = [-(-o // s) for o, s in zip(sizes_out, st)]
    buf = (torch.empty((st[0] * st[1] * st[2], n_batch, c_out, *js), dtype=x.dtype,
                       device=x.device) if major else None)
    for i, (pd, ph, pw) in enumerate(phases):
        view = out[:, :, pd::st[0], ph::st[1], pw::st[2]]
        if major:  # the same positions, contiguous in the phase's block
            view = buf[i, :, :, :view.shape[2], :view.shape[3], :view.shape[4]]
        taps = found[(pd, ph, pw)]
        _conv_launch(x5, w5, bias, view, c_in_g, c_out_g, groups, True, [f[0] for f in taps],
                     [f[1] for f in taps], [1, 1, 1], [0, 0, 0], s_wi, nd, tf32x3, xs, run_w,
                     fma, tma=tma)
    if major:
        rows = n_batch * c_out * sizes_out[0] * sizes_out[1]
        block_w = min(256, triton.next_power_of_2(sizes_out[2]))
        block_r = max(1, 2048 // block_w)
        grid = (triton.cdiv(rows, block_r), triton.cdiv(sizes_out[2], block_w))
        phase_interleave_kernel[grid](
            buf, out, rows, *sizes_out, buf[0].numel(), *js, SD=st[0], SH=st[1], SW=st[2],
            BLOCK_R=block_r, BLOCK_W=block_w)
    return out.reshape(n_batch, c_out, *sizes_out[3 - nd:])'''
