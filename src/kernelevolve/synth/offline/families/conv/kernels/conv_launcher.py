"""The convolution template's launcher: ``conv_nd`` picks a kernel per convolution (and per
phase of a transposed one) and launches it. ``source.py`` emits the text below the marker into
each candidate module, after ``emit/tf32.py``'s split launchers; the names it reads from around
it have stand-ins here, for ruff."""

import torch
import triton

from .conv_kernels import (
    conv_direct_kernel,
    conv_fma_kernel,
    conv_gemm_cl_kernel,
    conv_gemm_kernel,
    conv_gemm_tma_kernel,
    conv_im2col_gemm_kernel,
    conv_im2col_kernel,
    conv_pointwise_kernel,
    conv_rows_fma_kernel,
    conv_table_kernel,
    phase_interleave_kernel,
)

# stand-ins: the candidate module defines the plan's launch constants (emit/source.py) and
# emit/tf32.py's split launchers above this launcher
BLOCK_H = BLOCK_K = BLOCK_M = BLOCK_N = BLOCK_W = MAXNREG = NUM_WARPS = SUB_M = W_BCAST = 0
split_dense = channels_last_parts = None

# ---- emitted below this line, as it is ----



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
MAX_FMA_K = 512
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
    return out.reshape(n_batch, c_out, *sizes_out[3 - nd:])
