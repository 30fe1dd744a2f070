"""The pooling template: max and average pooling modules (``nn.MaxPool1d``-``3d``,
``nn.AvgPool1d``-``3d``) with their stride, padding, dilation, ceil mode and divisor rules.

Every pooling is computed as 3-D (1-D and 2-D inputs are viewed with size-1 leading spatial
dims). A program owns a [BLOCK_R, BLOCK_W] tile of the [N*C*OD*OH, OW] result: BLOCK_W
neighbouring outputs along the contiguous OW (lanes along it read neighbouring input columns)
in BLOCK_R rows. The window's extents, strides, paddings and dilations are constexprs, so the
window loops unroll and their index arithmetic folds; the index math left is int32 per row of
the tile, never an int64 division per element (the first version's four int64 div/mods per
output were most of its time). The module's hyper-parameters are read at call time.

A window may instead run ``pool_slide_kernel``, written out for its extent, stride, padding
and dilation along W (``slide_kernel``): a thread's 4 neighbouring outputs read their span of
columns once, as aligned vectors, and fold their taps in registers.

Pooling is memory-bound: the floor is reading the input once and writing the output once
(KernelBench 45, a 17.2 GB input, is 4.1 ms at the H200's ~4.15 TB/s). Overlapping windows
read each input element several times, which the L1/L2 caches serve when a tile's rows and
columns are neighbours.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from kernelevolve.problem import Problem

from ..emit.block import BlockTemplate
from ..emit.expr import NAN
from ..frontend import fxgraph
from ..frontend.lower import op_name
from ..frontend.trace import Traced
from ..plan import KernelPlan, Unsupported

# BLOCK: loads per window step of one program (BLOCK_R * BLOCK_W * KW_TILE, at least one row);
# WINDOW: 1 loads a row's window columns as one [BLOCK_W, KW] span, 0 one column at a time,
# 2 slides: a thread reads its 4 neighbouring outputs' windows once, in aligned 4-wide
# vectors, and folds the taps in registers (``slide_kernel``; strides along W up to MAX_SLIDE_SW).
SPACE = {"BLOCK": (256, 512, 1024, 2048, 4096), "BLOCK_W": (16, 32, 64, 128, 256, 512, 1024),
         "WINDOW": (0, 1, 2), "num_warps": (1, 2, 4, 8)}
DEFAULTS = {"BLOCK": 1024, "BLOCK_W": 1024, "WINDOW": 0, "num_warps": 4}
# The window's loads are unrolled, and the compiler hoists them: past about this many loads per
# thread (window taps x loads per thread per tap) the registers spill. On the H200, 45's 121
# taps ran 4.4 ms at 8 loads per thread per tap and 62-68 ms at 16.
MAX_UNROLLED = 1024

KERNEL = '''@triton.jit
def pool_row_origin(rows, C, OD, OH, s_xn, s_xc, SD: tl.constexpr, SH: tl.constexpr,
                    PD: tl.constexpr, PH: tl.constexpr):
    # Where output rows (n, c, od, oh) read x: their (n, c) plane's offset (int64; an input
    # can pass 2**31 elements) and their windows' first input depth and height, in int32
    oh = rows % OH
    t = rows // OH
    od = t % OD
    nc = t // OD
    n = nc // C
    base = n.to(tl.int64) * s_xn + (nc - n * C).to(tl.int64) * s_xc
    return base, od * SD - PD, oh * SH - PH


@triton.jit
def pool_kernel(
    # Pointers
    x_ptr, out_ptr,
    # Sizes: rows of the output (N * C * OD * OH), channels, input and output extents
    n_rows, C, ID, IH, IW, OD, OH, OW,
    # Strides of x [N, C, D, H, W]
    s_xn, s_xc, s_xd, s_xh, s_xw,
    # divisor_override, used when DIVISOR == 0
    divisor,
    # The window: extents, strides, paddings and dilations per dim
    KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr,
    SD: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr,
    PD: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr,
    DD: tl.constexpr, DH: tl.constexpr, DW: tl.constexpr,
    # Meta-parameters: IS_MAX; DIVISOR 0 = given, 1 = window incl. padding, 2 = valid inputs;
    # a [BLOCK_R, BLOCK_W] tile of outputs; KW_TILE window columns loaded at once
    IS_MAX: tl.constexpr, DIVISOR: tl.constexpr, BLOCK_R: tl.constexpr,
    BLOCK_W: tl.constexpr, KW_TILE: tl.constexpr,
):
    # Index math once per program and per row of the tile, in int32; the offsets of rows of x
    # are int64 (an input can pass 2**31 elements).
    pid = tl.program_id(0)
    n_wb = tl.cdiv(OW, BLOCK_W)
    pid_r = pid // n_wb
    pid_w = pid - pid_r * n_wb
    rows = pid_r * BLOCK_R + tl.arange(0, BLOCK_R)
    offs_w = pid_w * BLOCK_W + tl.arange(0, BLOCK_W)
    mask_r = rows < n_rows
    mask_w = offs_w < OW
    base, d0, h0 = pool_row_origin(rows, C, OD, OH, s_xn, s_xc, SD, SH, PD, PH)
    w0 = offs_w * SW - PW
    offs_kw = tl.arange(0, KW_TILE)
    if IS_MAX:
        acc = tl.full([BLOCK_R, BLOCK_W, KW_TILE], -float("inf"), tl.float32)
    else:
        acc = tl.zeros([BLOCK_R, BLOCK_W, KW_TILE], tl.float32)
    for kd in tl.static_range(KD):
        i_d = d0 + kd * DD
        ok_d = mask_r & (i_d >= 0) & (i_d < ID)
        for kh in tl.static_range(KH):
            i_h = h0 + kh * DH
            ok_r = ok_d & (i_h >= 0) & (i_h < IH)
            row_ptrs = x_ptr + base + i_d.to(tl.int64) * s_xd + i_h.to(tl.int64) * s_xh
            for kw0 in tl.static_range(0, KW, KW_TILE):
                kw = kw0 + offs_kw
                i_w = w0[:, None] + kw[None, :] * DW
                ok_w = mask_w[:, None] & (kw[None, :] < KW) & (i_w >= 0) & (i_w < IW)
                ptrs = row_ptrs[:, None, None] + (i_w * s_xw)[None, :, :]
                ok = ok_r[:, None, None] & ok_w[None, :, :]
                if IS_MAX:
                    v = tl.load(ptrs, mask=ok, other=-float("inf"))
                    # a NaN in the window wins, as in torch's max pooling
                    acc = tl.maximum(acc, v.to(tl.float32), propagate_nan=tl.PropagateNan.ALL)
                else:
                    v = tl.load(ptrs, mask=ok, other=0.0)
                    acc += v.to(tl.float32)
    if IS_MAX:
        res = tl.reduce(acc, 2, max_nan)
    else:
        res = tl.sum(acc, axis=2)
        if DIVISOR == 0:
            res = res / divisor
        else:
            if DIVISOR == 1:
                cnt_d = tl.minimum(d0 + KD, ID + PD) - d0
                cnt_h = tl.minimum(h0 + KH, IH + PH) - h0
                cnt_w = tl.minimum(w0 + KW, IW + PW) - w0
            else:
                cnt_d = tl.minimum(d0 + KD, ID) - tl.maximum(d0, 0)
                cnt_h = tl.minimum(h0 + KH, IH) - tl.maximum(h0, 0)
                cnt_w = tl.minimum(w0 + KW, IW) - tl.maximum(w0, 0)
            res = res / ((cnt_d * cnt_h)[:, None] * cnt_w[None, :]).to(tl.float32)
    out_ptrs = out_ptr + rows[:, None].to(tl.int64) * OW + offs_w[None, :]
    tl.store(out_ptrs, res.to(out_ptr.dtype.element_ty), mask=mask_r[:, None] & mask_w[None, :])'''

# Outputs a thread owns along W in the sliding kernel: one 16-byte vector of fp32. A window
# whose span takes more vectors than MAX_SLIDE_CHUNKS (64 scalars live a thread), or whose
# stride along W passes MAX_SLIDE_SW (the span then mostly columns no window reads), is not slid.
LANES = 4
MAX_SLIDE_CHUNKS = 16
MAX_SLIDE_SW = 4


def _slide_span(kw: int, sw: int, pw: int, dw: int) -> tuple[int, int, int]:
    """The sliding kernel's span for a window along W: (lead, shift, chunks): it starts
    ``lead`` columns before the thread's first output's column times the stride (a multiple of
    LANES, so aligned), output 0's first tap is its element ``shift``, and it is ``chunks``
    vectors long."""
    lead = LANES * -(-pw // LANES)
    shift = lead - pw
    last = shift + (LANES - 1) * sw + (kw - 1) * dw
    return lead, shift, last // LANES + 1


def slide_kernel(kw: int, sw: int, pw: int, dw: int, is_max: bool) -> str:
    """``pool_slide_kernel``: a window along W of ``kw`` taps, stride ``sw``, padding ``pw``
    and dilation ``dw``, written out for that window.

    A thread owns 4 neighbouring outputs of a row. It reads the input columns their windows
    span once, as aligned 4-wide vectors (the span starts 4 * ceil(pw / 4) columns before its
    first output), splits them into scalars and sums (or takes the max of) each output's taps
    in registers. One load per column a thread needs, instead of one per tap and output, and
    every load a full, aligned vector: 44 (window 8) had spent its time in L1 on 8 unaligned
    loads per output.
    """
    lead, shift, chunks = _slide_span(kw, sw, pw, dw)
    taps = {v: [shift + v * sw + t * dw for t in range(kw)] for v in range(LANES)}
    fold = "tl.maximum({}, {}" + NAN + ")" if is_max else "({} + {})"

    def tree(names: list[str]) -> str:  # pairwise, as tl.sum's reduction tree would
        if len(names) == 1:
            return names[0]
        half = len(names) // 2
        return fold.format(tree(names[:half]), tree(names[half:]))

    init = "tl.full([BLOCK_R, BLOCK_J], -float(\"inf\"), tl.float32)" if is_max else \
        "tl.zeros([BLOCK_R, BLOCK_J], tl.float32)"
    other = '-float("inf")' if is_max else "0.0"
    loads = []
    for c in range(chunks):
        loads += [
            f"cols = col0[:, None] + ({LANES * c} + lane)[None, :]",
            "ok = ok_r[:, None, None] & ((cols >= 0) & (cols < IW))[None, :, :]",
            f"v = tl.load(row_ptrs[:, None, None] + cols[None, :, :], mask=ok, other={other})",
            "p, q = tl.split(tl.reshape(v.to(tl.float32), [BLOCK_R, BLOCK_J, 2, 2]))",
            f"w{4 * c}, w{4 * c + 2} = tl.split(p)",
            f"w{4 * c + 1}, w{4 * c + 3} = tl.split(q)",
        ]
    combine = [f"acc{v} = {fold.format(f'acc{v}', tree([f'w{u}' for u in taps[v]]))}"
               for v in range(LANES)]
    body = "\n".join(" " * 12 + line for line in loads + combine)
    if is_max:
        finish = "res = tl.reshape(tl.join(tl.join(acc0, acc2), tl.join(acc1, acc3)), " \
                 "[BLOCK_R, BLOCK_J, 4])"
    else:
        finish = f"""res = tl.reshape(tl.join(tl.join(acc0, acc2), tl.join(acc1, acc3)),
                     [BLOCK_R, BLOCK_J, 4])
    if DIVISOR == 0:
        res = res / divisor
    else:
        first = ocols * {sw} - {pw}
        if DIVISOR == 1:
            cnt_d = tl.minimum(d0 + KD, ID + PD) - d0
            cnt_h = tl.minimum(h0 + KH, IH + PH) - h0
            cnt_w = tl.minimum(first + {kw}, IW + {pw}) - first
        else:
            cnt_d = tl.minimum(d0 + KD, ID) - tl.maximum(d0, 0)
            cnt_h = tl.minimum(h0 + KH, IH) - tl.maximum(h0, 0)
            cnt_w = tl.minimum(first + {kw}, IW) - tl.maximum(first, 0)
        res = res / ((cnt_d * cnt_h)[:, None, None] * cnt_w[None, :, :]).to(tl.float32)"""
    return f"""# The window along W that pool_slide_kernel is written for: taps, stride, padding, dilation, max
SLIDE = ({kw}, {sw}, {pw}, {dw}, {is_max})


@triton.jit
def pool_slide_kernel(
    # Pointers
    x_ptr, out_ptr,
    # Sizes: rows of the output (N * C * OD * OH), channels, input and output extents
    n_rows, C, ID, IH, IW, OD, OH, OW,
    # Strides of x [N, C, D, H, W] (W's is 1)
    s_xn, s_xc, s_xd, s_xh,
    # divisor_override, used when DIVISOR == 0
    divisor,
    # The window along D and H
    KD: tl.constexpr, KH: tl.constexpr, SD: tl.constexpr, SH: tl.constexpr,
    PD: tl.constexpr, PH: tl.constexpr, DD: tl.constexpr, DH: tl.constexpr,
    # Meta-parameters: DIVISOR as pool_kernel's; a tile of BLOCK_R rows by BLOCK_J groups of 4
    # neighbouring outputs
    DIVISOR: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_J: tl.constexpr,
):
    # W's window ({kw} taps, stride {sw}, padding {pw}, dilation {dw}) is written out: a
    # thread's 4 outputs read columns [{4 * sw} j - {lead}, {4 * sw} j + {4 * chunks - lead}) as
    # {chunks} aligned vectors
    pid = tl.program_id(0)
    n_jb = tl.cdiv(OW, 4 * BLOCK_J)
    pid_r = pid // n_jb
    pid_j = pid - pid_r * n_jb
    rows = pid_r * BLOCK_R + tl.arange(0, BLOCK_R)
    offs_j = pid_j * BLOCK_J + tl.arange(0, BLOCK_J)
    lane = tl.arange(0, 4)
    mask_r = rows < n_rows
    base, d0, h0 = pool_row_origin(rows, C, OD, OH, s_xn, s_xc, SD, SH, PD, PH)
    col0 = offs_j * {4 * sw} - {lead}
    ocols = offs_j[:, None] * 4 + lane[None, :]
    acc0 = {init}
    acc1 = {init}
    acc2 = {init}
    acc3 = {init}
    for kd in tl.static_range(KD):
        i_d = d0 + kd * DD
        ok_d = mask_r & (i_d >= 0) & (i_d < ID)
        for kh in tl.static_range(KH):
            i_h = h0 + kh * DH
            ok_r = ok_d & (i_h >= 0) & (i_h < IH)
            row_ptrs = x_ptr + base + i_d.to(tl.int64) * s_xd + i_h.to(tl.int64) * s_xh
{body}
    {finish}
    out_ptrs = out_ptr + rows[:, None, None].to(tl.int64) * OW + ocols[None, :, :]
    tl.store(out_ptrs, res.to(out_ptr.dtype.element_ty),
             mask=mask_r[:, None, None] & (ocols < OW)[None, :, :])"""


LAUNCHER = '''def _per_dim(value, nd, fill, name):
    """A pooling hyper-parameter as 3 ints (leading dims ``fill``): an int or one per dim."""
    values = list(value) if isinstance(value, (list, tuple)) else [value] * nd
    if len(values) == 1 and nd > 1:
        values = values * nd
    if len(values) != nd:
        raise ValueError(f"{name} has {len(values)} entries for {nd}-d pooling")
    return [fill] * (3 - nd) + [int(v) for v in values]


def pool_nd(x, nd, is_max, kernel_size, stride, padding, dilation, ceil_mode,
            count_include_pad=True, divisor_override=None):
    """Max or average pooling of ``x`` [N, C, *spatial] over its last ``nd`` dims."""
    if x.dim() not in (nd + 1, nd + 2):
        raise ValueError(f"x has {x.dim()} dims; {nd}-d pooling takes {nd + 1} or {nd + 2}")
    batched = x.dim() == nd + 2
    x4 = x if batched else x.unsqueeze(0)
    n_batch, chans = x4.shape[0], x4.shape[1]
    x5 = x4.reshape(n_batch, chans, *([1] * (3 - nd)), *x4.shape[2:])
    ks = _per_dim(kernel_size, nd, 1, "kernel_size")
    st = _per_dim(stride if stride is not None and stride != [] else kernel_size, nd, 1, "stride")
    pad = _per_dim(padding, nd, 0, "padding")
    dil = _per_dim(dilation, nd, 1, "dilation")
    sizes_in = list(x5.shape[2:])
    sizes_out = []
    for i, k, s, p, d in zip(sizes_in, ks, st, pad, dil):
        if 2 * p > k:
            raise ValueError(f"padding {p} is more than half the kernel size {k}")
        span = i + 2 * p - d * (k - 1) - 1
        o = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (o - 1) * s >= i + p:
            o -= 1
        sizes_out.append(o)
    if min(sizes_out) <= 0:
        raise ValueError(f"the output would be empty ({sizes_out})")
    out = torch.empty((n_batch, chans, *sizes_out), dtype=x.dtype, device=x.device)
    if out.numel():
        if divisor_override:
            mode, divisor = 0, float(divisor_override)
        else:
            mode, divisor = (1 if count_include_pad else 2), 1.0
        n_rows = n_batch * chans * sizes_out[0] * sizes_out[1]
        ow = sizes_out[2]
        # BLOCK_W outputs along OW (no wider than OW), the window's columns at once when
        # WINDOW, and as many output rows as fill BLOCK loads per window step.
        block_w = min(BLOCK_W, triton.next_power_of_2(ow))
        kw_tile = triton.next_power_of_2(ks[2]) if WINDOW else 1
        slide = (WINDOW == 2 and SLIDE == (ks[2], st[2], pad[2], dil[2], bool(is_max))
                 and x5.stride(-1) == 1)
        # The CPU interpreter pays per program and per op, not per element: big tiles there,
        # over more warps, so the share of each thread (what the check that the launched kernels
        # compile for the GPU compiles) stays near the GPU's.
        loads, warps = BLOCK, NUM_WARPS
        if x.device.type == "cpu":
            loads, warps = max(BLOCK, 1 << 14), max(NUM_WARPS, 16)
        if slide:
            # BLOCK outputs a program, 4 to a thread, in rows BLOCK_W (at least 4) wide
            block_w = max(block_w, 4)
            block_r = max(1, min(loads // block_w, triton.next_power_of_2(n_rows)))
            grid = (triton.cdiv(n_rows, block_r) * triton.cdiv(ow, block_w),)
            pool_slide_kernel[grid](x5, out, n_rows, chans, *sizes_in, *sizes_out,
                                    *x5.stride()[:4], divisor, *ks[:2], *st[:2], *pad[:2],
                                    *dil[:2], DIVISOR=mode, BLOCK_R=block_r,
                                    BLOCK_J=block_w // 4, num_warps=warps)
        else:
            block_r = max(1, min(loads // (block_w * kw_tile), triton.next_power_of_2(n_rows)))
            grid = (triton.cdiv(n_rows, block_r) * triton.cdiv(ow, block_w),)
            pool_kernel[grid](x5, out, n_rows, chans, *sizes_in, *sizes_out, *x5.stride(),
                              divisor, *ks, *st, *pad, *dil, IS_MAX=bool(is_max), DIVISOR=mode,
                              BLOCK_R=block_r, BLOCK_W=block_w, KW_TILE=kw_tile,
                              num_warps=warps)
    out = out.reshape(n_batch, chans, *sizes_out[3 - nd:])
    return out if batched else out.squeeze(0)'''

@dataclass
class PoolTemplate(BlockTemplate):
    taps: int = 1  # window elements (KD * KH * KW) of the traced module
    # pool_slide_kernel written for the traced module's window along W; None where it does not
    # slide (its stride or span along W too long)
    slide: str | None = None

    def feasible(self, params: Mapping[str, int]) -> str | None:
        if params.get("WINDOW") == 2 and self.slide is None:
            return (f"sliding windows (WINDOW=2) need a stride along W of at most "
                    f"{MAX_SLIDE_SW} and a span of at most {MAX_SLIDE_CHUNKS} vectors")
        per_thread = max(1, params["BLOCK"] // (32 * params["num_warps"]))
        if per_thread * self.taps > MAX_UNROLLED:
            return (f"{per_thread} loads per thread for each of {self.taps} unrolled window "
                    f"taps (spills)")
        return super().feasible(params)

    def kernels(self) -> list[str]:
        return [self.kernel, self.slide or "SLIDE = None"]


_MAX = (torch.nn.MaxPool1d, torch.nn.MaxPool2d, torch.nn.MaxPool3d)
_AVG = (torch.nn.AvgPool1d, torch.nn.AvgPool2d, torch.nn.AvgPool3d)
_POOL_OPS = {"max_pool1d", "max_pool2d", "max_pool3d", "max_pool2d_with_indices",
             "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d"}


def plan(problem: Problem, traced: Traced) -> KernelPlan | None:
    """The plan when the forward is one pooling module applied to an input, else None."""
    ops = fxgraph.op_names(traced)
    if not ops & _POOL_OPS or ops - _POOL_OPS - fxgraph.PASS_THROUGH - {"getitem"}:
        return None
    pools = fxgraph.modules_of(traced, _MAX + _AVG)
    pool_calls = [n for n in fxgraph.calls(traced) if op_name(n) in _POOL_OPS]
    if len(pools) != 1 or len(pool_calls) != 1:
        return None
    fxgraph.float_inputs_only(traced)
    (expr, module), = pools
    src = fxgraph.input_expr(traced, fxgraph.strip(pool_calls[0].args[0]))
    if src is None:
        return None
    is_max = isinstance(module, _MAX)
    nd = int(type(module).__name__[-2])
    if is_max and module.return_indices:
        raise Unsupported("max pooling that returns indices, which no template covers")
    if is_max:
        call = (f"pool_nd({src}, {nd}, True, {expr}.kernel_size, {expr}.stride, {expr}.padding, "
                f"{expr}.dilation, {expr}.ceil_mode)")
    else:
        call = (f"pool_nd({src}, {nd}, False, {expr}.kernel_size, {expr}.stride, "
                f"{expr}.padding, 1, {expr}.ceil_mode, {expr}.count_include_pad"
                + (f", {expr}.divisor_override)" if nd > 1 else ")"))
    out = fxgraph.output(traced)
    desc = (f"{'max' if is_max else 'average'} pooling {nd}-d giving a "
            f"[{', '.join(map(str, fxgraph.shape(out)))}] "
            f"{fxgraph.describe_dtype(fxgraph.dtype(out))} tensor")
    kw, sw, pw, dw = (_last(getattr(module, name, 1)) for name in
                      ("kernel_size", "stride", "padding", "dilation"))
    sw = sw or kw  # stride None or [] is the window
    dw = dw if is_max else 1
    slide = None
    if sw <= MAX_SLIDE_SW and _slide_span(kw, sw, pw, dw)[2] <= MAX_SLIDE_CHUNKS:
        slide = slide_kernel(kw, sw, pw, dw, is_max)
    return KernelPlan("pooling", desc, dict(SPACE),
                      defaults(module, fxgraph.shape(out), slide is not None),
                      PoolTemplate(problem, traced, call, desc, KERNEL, LAUNCHER,
                                   extra=("BLOCK_W", "WINDOW"), taps=_taps(module),
                                   slide=slide))


def _last(value: Any) -> int:
    """A pooling hyper-parameter's entry for the last dim (W)."""
    if isinstance(value, tuple | list):
        return int(value[-1]) if value else 0
    return int(value) if value is not None else 0


def _taps(module: Any) -> int:
    ks = module.kernel_size
    return math.prod(int(k) for k in ks) if isinstance(ks, tuple | list) else int(ks) ** int(
        type(module).__name__[-2])


def defaults(module: Any, out_shape: tuple[int, ...], slide: bool = False) -> dict[str, int]:
    """The tile the template starts from for ``module`` at the traced output shape.

    WINDOW (a row's window columns loaded as one [BLOCK_W, KW] span) against one load per
    column, measured on the H200 at KernelBench's sizes (offline_variants_gpu.py): the span won
    for 1-D windows (41, 44: 2.68 vs 3.74 ms, 1.75 vs 2.46 ms) and strided 3-D ones (43, 46:
    2.05 vs 6.48 ms, 5.45 vs 7.36 ms), and lost for the 11-wide window padded to 16 lanes (45:
    4.89 vs 4.39 ms) and the stride-1 2-D window (42: 2.69 vs 2.26 ms). So: the span when it
    wastes at most a quarter of its lanes and the pooling is 1-D or strided.

    A window slides (``slide``; WINDOW=2) where its stride along W is 1, whatever its other
    dims: 41 1.68 ms, 42 1.61, 44 1.22 (``pool_slide.md``); and where it is strided but not
    dilated along W, one 4-output group a thread: 46 (3x3x3, stride 2) 2.63 ms at 256 outputs
    a program over 2 warps, 3.25 at 512 over 4, against the span's 5.55; 1024 over 4 warps (two
    groups a thread) and 256 over 4 (half the threads idle) both ran 5.78. Strided and dilated,
    43 (dilation 3) ran 3.71-4.73 ms against the span's 2.07, and keeps it
    (``pool_slide_strided.md``). BLOCK_W covers the output's width up to 1024. A large window
    (45's 121 taps) takes smaller tiles: 512 loads per step ran 4.04 ms there, 1024 4.40 ms.
    """
    params = dict(DEFAULTS)
    kw = _last(module.kernel_size)
    sw = _last(module.stride) or kw  # stride None or [] is the window
    nd = int(type(module).__name__[-2])
    lanes = 1 << (kw - 1).bit_length()
    params["WINDOW"] = int(4 * kw >= 3 * lanes and (nd == 1 or sw > 1))
    if _taps(module) >= 64:
        params["BLOCK"] = 512
    if slide and (sw == 1 or _last(getattr(module, "dilation", 1)) == 1):
        params["WINDOW"] = 2
        if sw > 1:  # one 4-output group a thread (46: two a thread ran 5.8 ms)
            params["BLOCK"], params["num_warps"] = 256, 2
    width = max(1, out_shape[-1] if out_shape else 1)
    params["BLOCK_W"] = max(SPACE["BLOCK_W"][0],
                            min(SPACE["BLOCK_W"][-1], 1 << (width - 1).bit_length()))
    return params
