"""The normalization template: batch, instance and group norm modules with the statistics the
reference computes in training mode (biased variance over the normalized elements), and the
functional ``group_norm`` / ``batch_norm`` with their weight, bias and running statistics forward
inputs (an eval-mode batch norm normalizes by the running statistics instead).

The input is viewed as [P, Q, R] with one statistic group per q: batch norm is [N, C, S]
(stats over N and S), instance norm [1, N*C, S], group norm [1, N*G, C/G*S]. Three kernels:
partial sums of each group's elements split over many programs (so a group of 16M elements
is not one program's work), one program per group combining them into mean and 1/std, and an
elementwise pass that normalizes and applies the per-channel affine. Sums are taken about the
group's first element, so inputs far from zero keep their precision.

The data is read twice and written once, the least a normalization by statistics of the whole
group can do when a group outgrows the L2 cache. Both passes walk 2-D tiles whose rows are
contiguous runs of x (a [BLOCK_P, BLOCK_R] tile of one group's [P, R] elements; a
[BLOCK_M, BLOCK_S] tile of the [N*C, S] rows in the apply pass), so the index arithmetic is
per tile or per row, never an integer division per element, and the loads vectorize. The
statistics grid holds about N_PROGRAMS programs (several waves on 132 SMs), each adding at
most 256 tiles per lane.
"""

from __future__ import annotations

import torch

from kernelevolve.problem import Problem

from ..emit.block import BlockTemplate
from ..frontend import fxgraph
from ..frontend.lower import op_name
from ..frontend.trace import Traced
from ..plan import KernelPlan, Unsupported

SPACE = {"BLOCK": (256, 512, 1024, 2048, 4096), "N_PROGRAMS": (512, 1024, 2048, 4096, 8192),
         "num_warps": (2, 4, 8, 16)}
# 33_BatchNorm / 35_GroupNorm_ on the H200 (do_bench): BLOCK 1024 and N_PROGRAMS 4096 each beat
# 2048 / 2048 (group norm 5.29 and 5.33 ms against 5.52; torch.compile 5.39).
DEFAULTS = {"BLOCK": 1024, "N_PROGRAMS": 4096, "num_warps": 4}

KERNELS = '''@triton.jit
def norm_partial_kernel(
    # Pointers: x viewed as [P, Q, R] (contiguous); partial sums [Q, n_splits, 2]
    x_ptr, part_ptr,
    # Sizes: group q's P x R elements are tiles of BLOCK_P x BLOCK_R (r fastest), and a split
    # takes tiles_per_split consecutive tiles
    P, Q, R, r_tiles, n_tiles, tiles_per_split, n_splits,
    # Meta-parameters
    BLOCK_P: tl.constexpr, BLOCK_R: tl.constexpr,
):
    # One program sums (x - shift) and (x - shift)^2 over its tiles of group q; a tile's rows
    # are contiguous runs of x, so the index math is per tile, not per element.
    pid = tl.program_id(0)
    q = pid // n_splits
    split = pid % n_splits
    shift = tl.load(x_ptr + q.to(tl.int64) * R).to(tl.float32)
    offs_p = tl.arange(0, BLOCK_P)
    offs_r = tl.arange(0, BLOCK_R)
    acc1 = tl.zeros([BLOCK_P, BLOCK_R], tl.float32)
    acc2 = tl.zeros([BLOCK_P, BLOCK_R], tl.float32)
    first = split * tiles_per_split
    for t in range(first, tl.minimum(first + tiles_per_split, n_tiles)):
        tile_p = t // r_tiles
        p = tile_p * BLOCK_P + offs_p
        r = (t - tile_p * r_tiles) * BLOCK_R + offs_r
        mask = (p < P)[:, None] & (r < R)[None, :]
        x_ptrs = x_ptr + (p.to(tl.int64)[:, None] * Q + q) * R + r[None, :]
        v = tl.load(x_ptrs, mask=mask, other=0.0).to(tl.float32) - shift
        v = tl.where(mask, v, 0.0)
        acc1 += v
        acc2 += v * v
    tl.store(part_ptr + pid * 2, tl.sum(tl.sum(acc1, axis=1), axis=0))
    tl.store(part_ptr + pid * 2 + 1, tl.sum(tl.sum(acc2, axis=1), axis=0))


@triton.jit
def norm_stats_kernel(
    # Pointers: x (for the shift), partial sums [Q, n_splits, 2], stats [Q, 2] (mean, rstd)
    x_ptr, part_ptr, stats_ptr,
    # Sizes and eps
    P, R, n_splits, eps,
    # Meta-parameters
    BLOCK_S: tl.constexpr,
):
    q = tl.program_id(0)
    shift = tl.load(x_ptr + q.to(tl.int64) * R).to(tl.float32)
    s1 = tl.zeros([BLOCK_S], tl.float32)
    s2 = tl.zeros([BLOCK_S], tl.float32)
    for start in range(0, n_splits, BLOCK_S):
        offs = start + tl.arange(0, BLOCK_S)
        mask = offs < n_splits
        base = (q.to(tl.int64) * n_splits + offs) * 2
        s1 += tl.load(part_ptr + base, mask=mask, other=0.0)
        s2 += tl.load(part_ptr + base + 1, mask=mask, other=0.0)
    n = (tl.cast(P, tl.int64) * R).to(tl.float32)  # tl.cast: P may be 1, a constexpr on the GPU
    m1 = tl.sum(s1, axis=0) / n
    var = tl.maximum(tl.sum(s2, axis=0) / n - m1 * m1, 0.0, propagate_nan=tl.PropagateNan.ALL)
    tl.store(stats_ptr + q * 2, shift + m1)
    tl.store(stats_ptr + q * 2 + 1, 1.0 / tl.sqrt(var + eps))


@triton.jit
def norm_running_kernel(
    # Pointers: running mean and variance [C] (contiguous); stats [C, 2] (mean, rstd)
    mean_ptr, var_ptr, stats_ptr,
    # Sizes and eps
    C, eps,
    # Meta-parameters
    BLOCK: tl.constexpr,
):
    # Eval mode: each channel's statistics are the running ones the caller passes.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < C
    mean = tl.load(mean_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    var = tl.load(var_ptr + offs, mask=mask, other=1.0).to(tl.float32)
    tl.store(stats_ptr + offs * 2, mean, mask=mask)
    tl.store(stats_ptr + offs * 2 + 1, 1.0 / tl.sqrt(var + eps), mask=mask)


@triton.jit
def norm_apply_kernel(
    # Pointers
    x_ptr, stats_ptr, w_ptr, b_ptr, out_ptr,
    # Sizes: x is [M, S], row m = n * C + c of S contiguous elements; its statistics are those
    # of group q = n * QN + c // CPG and its affine is channel c's
    M, C, S, QN, CPG, s_tiles,
    # Meta-parameters
    HAS_WEIGHT: tl.constexpr, HAS_BIAS: tl.constexpr, BLOCK_M: tl.constexpr,
    BLOCK_S: tl.constexpr,
):
    # One tile of BLOCK_M rows x BLOCK_S columns per program; the index math is per row.
    pid = tl.program_id(0)
    tile_m = pid // s_tiles
    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = (pid - tile_m * s_tiles) * BLOCK_S + tl.arange(0, BLOCK_S)
    row_mask = rows < M
    c = rows % C
    q = (rows // C) * QN + c // CPG
    mean = tl.load(stats_ptr + q * 2, mask=row_mask, other=0.0)
    scale = tl.load(stats_ptr + q * 2 + 1, mask=row_mask, other=0.0)
    if HAS_WEIGHT:
        scale = scale * tl.load(w_ptr + c, mask=row_mask, other=0.0).to(tl.float32)
    mask = row_mask[:, None] & (cols < S)[None, :]
    offs = rows.to(tl.int64)[:, None] * S + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = (x - mean[:, None]) * scale[:, None]
    if HAS_BIAS:
        y = y + tl.load(b_ptr + c, mask=row_mask, other=0.0).to(tl.float32)[:, None]
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)'''

LAUNCHER = '''def _tile(block, inner):
    """BLOCK elements as [rows, cols] with cols covering ``inner`` (up to BLOCK)."""
    cols = min(block, triton.next_power_of_2(max(1, inner)))
    return block // cols, cols


def channel_norm(x, weight, bias, eps, kind, groups=1, batch_stats=True,
                 running_mean=None, running_var=None):
    """Batch ("batch"), instance ("instance") or group ("group") norm of ``x`` [N, C, *]; a batch
    norm without ``batch_stats`` normalizes by ``running_mean`` and ``running_var``."""
    running = kind == "batch" and not batch_stats
    if not batch_stats and not (running and running_mean is not None
                                and running_var is not None):
        raise ValueError("this candidate computes batch statistics (training mode); the module "
                         "is in eval mode with running statistics")
    if x.dim() < 2:
        raise ValueError(f"x has {x.dim()} dims; expected [N, C, *]")
    # The kernels address x and the per-channel vectors densely; a strided view (a forward
    # input may be one) is copied once.
    x = x.contiguous()
    weight = weight.contiguous() if weight is not None else None
    bias = bias.contiguous() if bias is not None else None
    n_batch, chans = x.shape[0], x.shape[1]
    spatial = x.numel() // max(1, n_batch * chans)
    if kind == "batch":
        P, Q, R, QN, CPG = n_batch, chans, spatial, 0, 1
    elif kind == "instance":
        P, Q, R, QN, CPG = 1, n_batch * chans, spatial, chans, 1
    else:
        if chans % groups:
            raise ValueError(f"{chans} channels do not split into {groups} groups")
        cpg = chans // groups
        P, Q, R, QN, CPG = 1, n_batch * groups, cpg * spatial, groups, cpg
    out = torch.empty_like(x)
    total = x.numel()
    if total == 0:
        return out
    stats = torch.empty((Q, 2), dtype=torch.float32, device=x.device)
    if running:
        if running_mean.numel() != chans or running_var.numel() != chans:
            raise ValueError(f"running statistics of {running_mean.numel()} and "
                             f"{running_var.numel()} channels; x has {chans}")
        norm_running_kernel[(triton.cdiv(chans, 1024),)](
            running_mean.contiguous(), running_var.contiguous(), stats, chans, float(eps),
            BLOCK=1024)
    else:
        block_p, block_r = _tile(BLOCK, R)
        r_tiles = triton.cdiv(R, block_r)
        n_tiles = triton.cdiv(P, block_p) * r_tiles
        # About N_PROGRAMS programs in all, and no lane adding more than 256 tiles in one fp32
        # chain (256 equal terms err by ~2e-6).
        n_splits = min(n_tiles, max(triton.cdiv(N_PROGRAMS, Q), triton.cdiv(n_tiles, 256)))
        tiles_per_split = triton.cdiv(n_tiles, n_splits)
        n_splits = triton.cdiv(n_tiles, tiles_per_split)
        part = torch.empty((Q, n_splits, 2), dtype=torch.float32, device=x.device)
        norm_partial_kernel[(Q * n_splits,)](
            x, part, P, Q, R, r_tiles, n_tiles, tiles_per_split, n_splits, BLOCK_P=block_p,
            BLOCK_R=block_r, num_warps=NUM_WARPS)
        norm_stats_kernel[(Q,)](x, part, stats, P, R, n_splits, float(eps),
                                BLOCK_S=min(1024, triton.next_power_of_2(n_splits)))
    block_m, block_s = _tile(BLOCK, spatial)
    s_tiles = triton.cdiv(spatial, block_s)
    rows = n_batch * chans
    norm_apply_kernel[(triton.cdiv(rows, block_m) * s_tiles,)](
        x, stats, weight if weight is not None else x, bias if bias is not None else x, out,
        rows, chans, spatial, QN, CPG, s_tiles, HAS_WEIGHT=weight is not None,
        HAS_BIAS=bias is not None, BLOCK_M=block_m, BLOCK_S=block_s, num_warps=NUM_WARPS)
    return out'''


_BATCH = (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.BatchNorm3d)
_INSTANCE = (torch.nn.InstanceNorm1d, torch.nn.InstanceNorm2d, torch.nn.InstanceNorm3d)
_OPS = {"native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_functional",
        "_native_batch_norm_legit_no_training", "native_group_norm", "add_", "empty"}


def plan(problem: Problem, traced: Traced) -> KernelPlan | None:
    """The plan when the forward is one batch/instance/group norm module on an input."""
    ops = fxgraph.op_names(traced)
    if not ops & {"native_batch_norm", "native_group_norm", "_native_batch_norm_legit",
                  "_native_batch_norm_legit_functional"}:
        return None
    if ops - _OPS - fxgraph.PASS_THROUGH - {"getitem"}:
        return None
    mods = fxgraph.modules_of(traced, _BATCH + _INSTANCE + (torch.nn.GroupNorm,))
    if not mods:
        return _functional_plan(problem, traced)
    if len(mods) != 1:
        return None
    fxgraph.float_inputs_only(traced)
    (expr, module), = mods
    src = next((fxgraph.input_expr(traced, n) for n in traced.graph.nodes
                if n.op == "placeholder" and traced.placeholders[n.name].kind == "input"), None)
    if src is None or sum(p.kind == "input" for p in traced.placeholders.values()) != 1:
        return None
    if isinstance(module, _BATCH):
        kind, what = "batch", "batch norm"
        stats = (f"{expr}.training or {expr}.running_mean is None")
    elif isinstance(module, _INSTANCE):
        kind, what = "instance", "instance norm"
        stats = (f"{expr}.training or not {expr}.track_running_stats")
    else:
        kind, what = "group", "group norm"
        stats = "True"
    if kind != "group" and getattr(module, "momentum", 0.1) is None and kind == "batch":
        raise Unsupported("batch norm with a cumulative moving average, which no template covers")
    affine = bool(getattr(module, "affine", True))
    w, b = (f"{expr}.weight", f"{expr}.bias") if affine else ("None", "None")
    groups = f"{expr}.num_groups" if kind == "group" else "1"
    call = f"channel_norm({src}, {w}, {b}, {expr}.eps, {kind!r}, {groups}, {stats})"
    out = fxgraph.output(traced)
    desc = (f"{what} (training-mode statistics) of a "
            f"[{', '.join(map(str, fxgraph.shape(out)))}] "
            f"{fxgraph.describe_dtype(fxgraph.dtype(out))} tensor")
    return KernelPlan("normalization", desc, dict(SPACE), dict(DEFAULTS),
                      BlockTemplate(problem, traced, call, desc, KERNELS, LAUNCHER, extra=("N_PROGRAMS",)))


def _functional_plan(problem: Problem, traced: Traced) -> KernelPlan | None:
    """The plan when the forward is one functional ``group_norm`` or ``batch_norm`` whose tensors
    (weight, bias, running statistics) are all forward inputs."""
    nodes = [n for n in fxgraph.calls(traced)
             if op_name(n) in {"native_batch_norm", "native_group_norm"}]
    if len(nodes) != 1:
        return None
    node, = nodes
    out = fxgraph.output(traced)
    if not (op_name(out) == "getitem" and out.args == (node, 0)):
        return None
    fxgraph.float_inputs_only(traced)

    def expr(arg: object) -> str:
        if arg is None:
            return "None"
        found = fxgraph.input_expr(traced, fxgraph.strip(arg))
        if found is None:
            raise Unsupported(f"{op_name(node)} of a computed tensor, which no "
                              f"template covers")
        return found

    if op_name(node) == "native_group_norm":
        # (input, weight, bias, N, C, HxW, group, eps)
        x, w, b, _, _, _, groups, eps = node.args
        what = "group norm"
        call = (f"channel_norm({expr(x)}, {expr(w)}, {expr(b)}, {float(eps)!r}, 'group', "  # type: ignore[arg-type]
                f"{int(groups)})")  # type: ignore[arg-type]
    else:
        # (input, weight, bias, running_mean, running_var, training, momentum, eps)
        x, w, b, mean, var, training, _, eps = node.args
        if training and (mean is not None or var is not None):
            raise Unsupported("a training-mode batch norm that updates its running statistics "
                              "in place, which no template covers")
        if not training and (mean is None or var is None):
            return None
        what = "batch norm" + ("" if training else " (eval mode: running statistics)")
        call = (f"channel_norm({expr(x)}, {expr(w)}, {expr(b)}, {float(eps)!r}, 'batch', 1, "  # type: ignore[arg-type]
                f"{bool(training)}, {expr(mean)}, {expr(var)})")
    desc = (f"functional {what} of a [{', '.join(map(str, fxgraph.shape(out)))}] "
            f"{fxgraph.describe_dtype(fxgraph.dtype(out))} tensor")
    return KernelPlan("normalization", desc, dict(SPACE), dict(DEFAULTS),
                      BlockTemplate(problem, traced, call, desc, KERNELS, LAUNCHER, extra=("N_PROGRAMS",)))
