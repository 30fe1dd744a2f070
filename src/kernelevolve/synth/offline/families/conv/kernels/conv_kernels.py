"""The convolution template's Triton kernels: the window table, the implicit GEMMs (row-major,
channels-last, TMA), im2col and its GEMM, the FMA kernels, the phase interleaving pass, the
pointwise GEMM and the direct depthwise kernel. ``source.py`` emits the text below the marker
into each candidate module, after ``emit/tf32.py``'s split kernels (``tf32_parts``,
``fp16_unscale``); ``template.py`` says which kernel runs where and why."""

import triton
import triton.language as tl

# stand-ins for emit/tf32.py's kernels, which the candidate module defines above these
tf32_parts = fp16_unscale = None

# ---- emitted below this line, as it is ----
@triton.jit
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
    return ok


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
    xlo_ptr, wlo_ptr, special_ptr,
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
    ND: tl.constexpr, HAS_BIAS: tl.constexpr, TRANSPOSED: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_W: tl.constexpr,
    # fp32 products: 1 tf32x3, 2 split once, 4 one TF32 product, 0 ieee; w is a dense
    # [C_out, K] copy, K contiguous; rows are (n, od) planes (ROWS = N * OD)
    TF32X3: tl.constexpr, W_KMAJOR: tl.constexpr, FLAT_HW: tl.constexpr,
):
    # Implicit GEMM: a program owns BLOCK_M output positions x BLOCK_N output channels of one
    # group and walks the (input channel, kernel window) axis in BLOCK_K slices.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    n_blocks_n = tl.cdiv(C_OUT_G, BLOCK_N)
    g = pid_n // n_blocks_n
    n0 = (pid_n % n_blocks_n) * BLOCK_N
    offs_n = n0 + tl.arange(0, BLOCK_N)
    mask_n = offs_n < C_OUT_G
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
        o_row = n * s_on + od * s_od + oh * s_oh + ow * s_ow
    # the input position each window starts from: output position * stride - padding
    d0 = od * st_d - pad_d
    h0 = oh * st_h - pad_h
    w0 = ow * st_w - pad_w
    x_row = n * s_xn + d0 * s_xd + h0 * s_xh + w0 * s_xw
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
        mask_k = offs_k < K
        # The window table gives each k its input offset (row 0) and its window offsets (rows
        # 1-3, for the padding masks of conv_window)
        t_ptrs = tab_ptr + offs_k
        x_col = tl.load(t_ptrs, mask=mask_k, other=0)
        ok = conv_window(t_ptrs[None, :], mask_k[None, :], K, d0[:, None], h0[:, None],
                         w0[:, None], ID, IH, IW, ND)
        x_mask = mask_m[:, None] & mask_k[None, :] & ok
        x_offs = x_row[:, None] + x_col[None, :]
        if W_KMAJOR:
            # k itself, not a table entry: the compiler sees K contiguous and lays the tile
            # K-major, as TF32 tensor-core products read it
            w_offs = w_base[None, :] + offs_k[:, None]
        else:
            w_off = tl.load(t_ptrs + 4 * K, mask=mask_k, other=0)
            w_offs = w_base[None, :] + w_off[:, None]
        w_mask = mask_k[:, None] & mask_n[None, :]
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
            acc = tl.dot(x_tile, w_tile, acc, input_precision="ieee")
    co = g * C_OUT_G + offs_n
    if HAS_BIAS:
        acc += tl.load(b_ptr + co * s_b, mask=mask_n, other=0.0).to(tl.float32)[None, :]
    out_ptrs = out_ptr + (o_row[:, None] + co[None, :].to(tl.int64) * s_oc)
    tl.store(out_ptrs, acc.to(out_ptr.dtype.element_ty),
             mask=mask_m[:, None] & mask_n[None, :])



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
    # tap is a run of 3, mostly padding in a 16-wide slice; its 3x3 window row is one of 9.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    n_blocks_n = tl.cdiv(C_OUT_G, BLOCK_N)
    g = pid_n // n_blocks_n
    n0 = (pid_n % n_blocks_n) * BLOCK_N
    offs_n = n0 + tl.arange(0, BLOCK_N)
    mask_n = offs_n < C_OUT_G
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
        o_row = n * s_on + od * s_od + oh * s_oh + ow * s_ow
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
        w_mask = mask_c[:, None] & mask_n[None, :]
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
            acc = tl.dot(x_tile, w_tile, acc, input_precision="ieee")
    co = g * C_OUT_G + offs_n
    if HAS_BIAS:
        acc += tl.load(b_ptr + co * s_b, mask=mask_n, other=0.0).to(tl.float32)[None, :]
    out_ptrs = out_ptr + (o_row[:, None] + co[None, :].to(tl.int64) * s_oc)
    tl.store(out_ptrs, acc.to(out_ptr.dtype.element_ty),
             mask=mask_m[:, None] & mask_n[None, :])


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
    BLOCK_M: tl.constexpr = BH * BW
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    n_blocks_n = tl.cdiv(C_OUT_G, BLOCK_N)
    g = pid_n // n_blocks_n
    n0 = (pid_n % n_blocks_n) * BLOCK_N
    offs_n = n0 + tl.arange(0, BLOCK_N)
    mask_n = offs_n < C_OUT_G
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
             + ow.to(tl.int64) * s_ow)
    co = g * C_OUT_G + offs_n
    if HAS_BIAS:
        acc += tl.load(b_ptr + co * s_b, mask=mask_n, other=0.0).to(tl.float32)[None, :]
    out_ptrs = out_ptr + (o_row[:, None] + co[None, :].to(tl.int64) * s_oc)
    tl.store(out_ptrs, acc.to(out_ptr.dtype.element_ty),
             mask=mask_m[:, None] & mask_n[None, :])


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
        w_mask = mask_n[None, :]
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
            acc = tl.dot(x_tile, w_tile, acc, input_precision="ieee")
    o_row = n * s_on + pos * s_op
    co = g * C_OUT_G + offs_n
    if HAS_BIAS:
        acc += tl.load(b_ptr + co * s_b, mask=mask_n, other=0.0).to(tl.float32)[None, :]
    out_ptrs = out_ptr + (o_row[:, None] + co[None, :].to(tl.int64) * s_oc)
    tl.store(out_ptrs, acc.to(out_ptr.dtype.element_ty),
             mask=mask_m[:, None] & mask_n[None, :])


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
    # L2 (a launch per phase wrote part of every sector a pass).
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    n_blocks_n = tl.cdiv(C_OUT_G, BLOCK_N)
    g = pid_n // n_blocks_n
    n0 = (pid_n % n_blocks_n) * BLOCK_N
    offs_n = n0 + tl.arange(0, BLOCK_N)
    mask_n = offs_n < C_OUT_G
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
        o_row = n * s_on + od * s_od + oh * s_oh + ow * s_ow
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
        o_p = o_row + (r_d * s_pd + r_h * s_ph + r_w * s_pw)
        co = g * C_OUT_G + offs_n
        if HAS_BIAS:
            acc += tl.load(b_ptr + co * s_b, mask=mask_n, other=0.0).to(tl.float32)[None, :]
        out_ptrs = out_ptr + (o_p[:, None] + co[None, :].to(tl.int64) * s_oc)
        tl.store(out_ptrs, acc.to(out_ptr.dtype.element_ty),
                 mask=mask_p[:, None] & mask_n[None, :])


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
             mask=mask_r[:, None] & mask_w[None, :])
