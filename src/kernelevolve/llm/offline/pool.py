"""The pooling template: max and average pooling modules (``nn.MaxPool1d``-``3d``,
``nn.AvgPool1d``-``3d``) with their stride, padding, dilation, ceil mode and divisor rules.

Every pooling is computed as 3-D (1-D and 2-D inputs are viewed with size-1 leading spatial
dims). A program owns BLOCK consecutive outputs of the flattened [N*C, OD, OH, OW] result and
walks the kernel window, so neighbouring lanes read neighbouring input columns. The module's
hyper-parameters are read at call time.
"""

from __future__ import annotations

import torch

from kernelevolve.problem import Problem

from . import fxgraph
from .block import BlockTemplate
from .lower import op_name
from .plan import KernelPlan, Unsupported
from .trace import Traced

SPACE = {"BLOCK": (128, 256, 512, 1024, 2048), "num_warps": (1, 2, 4, 8)}
DEFAULTS = {"BLOCK": 1024, "num_warps": 4}

KERNEL = '''@triton.jit
def pool_kernel(
    # Pointers
    x_ptr, out_ptr,
    # Sizes: total outputs; channels; input, output and window extents
    total, C, ID, IH, IW, OD, OH, OW, KD, KH, KW,
    # Strides of x [N, C, D, H, W]
    s_xn, s_xc, s_xd, s_xh, s_xw,
    # Pooling hyper-parameters; divisor is used when DIVISOR == 0
    st_d, st_h, st_w, pad_d, pad_h, pad_w, dil_d, dil_h, dil_w, divisor,
    # Meta-parameters: IS_MAX; DIVISOR 0 = given, 1 = window incl. padding, 2 = valid inputs
    IS_MAX: tl.constexpr, DIVISOR: tl.constexpr, BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    ow = offs % OW
    t = offs // OW
    oh = t % OH
    t = t // OH
    od = t % OD
    nc = t // OD
    base = (nc // C) * s_xn + (nc % C) * s_xc
    d0 = od * st_d - pad_d
    h0 = oh * st_h - pad_h
    w0 = ow * st_w - pad_w
    if IS_MAX:
        acc = tl.full([BLOCK], -float("inf"), tl.float32)
    else:
        acc = tl.zeros([BLOCK], tl.float32)
    for kd in range(0, KD):
        i_d = d0 + kd * dil_d
        ok_d = mask & (i_d >= 0) & (i_d < ID)
        for kh in range(0, KH):
            i_h = h0 + kh * dil_h
            ok_h = ok_d & (i_h >= 0) & (i_h < IH)
            row = base + i_d * s_xd + i_h * s_xh
            for kw in range(0, KW):
                i_w = w0 + kw * dil_w
                ok = ok_h & (i_w >= 0) & (i_w < IW)
                if IS_MAX:
                    v = tl.load(x_ptr + row + i_w * s_xw, mask=ok, other=-float("inf"))
                    acc = tl.maximum(acc, v.to(tl.float32))
                else:
                    v = tl.load(x_ptr + row + i_w * s_xw, mask=ok, other=0.0)
                    acc += v.to(tl.float32)
    if not IS_MAX:
        if DIVISOR == 0:
            acc = acc / divisor
        elif DIVISOR == 1:
            cnt = ((tl.minimum(d0 + KD, ID + pad_d) - d0) * (tl.minimum(h0 + KH, IH + pad_h) - h0)
                   * (tl.minimum(w0 + KW, IW + pad_w) - w0))
            acc = acc / cnt.to(tl.float32)
        else:
            cnt = ((tl.minimum(d0 + KD, ID) - tl.maximum(d0, 0))
                   * (tl.minimum(h0 + KH, IH) - tl.maximum(h0, 0))
                   * (tl.minimum(w0 + KW, IW) - tl.maximum(w0, 0)))
            acc = acc / cnt.to(tl.float32)
    tl.store(out_ptr + offs, acc.to(out_ptr.dtype.element_ty), mask=mask)'''

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
    total = out.numel()
    if total:
        if divisor_override:
            mode, divisor = 0, float(divisor_override)
        else:
            mode, divisor = (1 if count_include_pad else 2), 1.0
        grid = (triton.cdiv(total, BLOCK),)
        pool_kernel[grid](x5, out, total, chans, *sizes_in, *sizes_out, *ks, *x5.stride(),
                          *st, *pad, *dil, divisor, IS_MAX=bool(is_max), DIVISOR=mode,
                          BLOCK=BLOCK, num_warps=NUM_WARPS)
    out = out.reshape(n_batch, chans, *sizes_out[3 - nd:])
    return out if batched else out.squeeze(0)'''

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
    return KernelPlan("pooling", desc, dict(SPACE), dict(DEFAULTS),
                      BlockTemplate(problem, traced, call, desc, KERNEL, LAUNCHER))
