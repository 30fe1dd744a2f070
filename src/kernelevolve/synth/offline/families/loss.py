"""The row-loss template: losses that reduce each row to one value and average the rows:
cross-entropy over class logits (``F.cross_entropy`` with integer targets) and the triplet
margin loss (``nn.TripletMarginLoss``).

A program owns BLOCK_M rows and walks them in BLOCK_N-column chunks (an online max and sum of
exponentials for cross-entropy, sums of squared differences for the triplet distances), so a
row of any width is one pass; it writes one partial sum of its rows' losses, and a single
program adds the partials and divides by the row count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from kernelevolve.problem import Problem

from ..emit.source import module_source
from ..frontend import fxgraph
from ..frontend.lower import op_name
from ..frontend.trace import Traced
from ..plan import KernelPlan, Unsupported

SPACE = {"BLOCK_M": (1, 2, 4, 8), "BLOCK_N": (256, 512, 1024, 2048, 4096),
         "num_warps": (2, 4, 8, 16)}
DEFAULTS = {"BLOCK_M": 4, "BLOCK_N": 1024, "num_warps": 4}

_FINAL = '''@triton.jit
def loss_mean_kernel(
    # Pointers: per-program partial sums, the 0-d output
    part_ptr, out_ptr,
    # Sizes
    n_parts, n_rows,
    # Meta-parameters
    BLOCK_P: tl.constexpr,
):
    acc = tl.zeros([BLOCK_P], tl.float32)
    for start in range(0, n_parts, BLOCK_P):
        offs = start + tl.arange(0, BLOCK_P)
        acc += tl.load(part_ptr + offs, mask=offs < n_parts, other=0.0)
    tl.store(out_ptr, (tl.sum(acc, axis=0) / n_rows).to(out_ptr.dtype.element_ty))'''

CROSS_ENTROPY = '''@triton.jit
def cross_entropy_kernel(
    # Pointers: logits [n_rows, n_cols] (contiguous), targets [n_rows], partial sums
    x_ptr, t_ptr, part_ptr,
    # Sizes
    n_rows, n_cols,
    # Meta-parameters
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    # loss of a row = logsumexp(row) - row[target], with an online max over column chunks
    pid = tl.program_id(0)
    rows = pid.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < n_rows
    m = tl.full([BLOCK_M], -float("inf"), tl.float32)
    s = tl.zeros([BLOCK_M], tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols < n_cols)[None, :]
        v = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask,
                    other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(v, axis=1))
        m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        s = s * tl.exp(m - m_safe) + tl.sum(tl.exp(v - m_safe[:, None]), axis=1)
        m = m_new
    target = tl.load(t_ptr + rows, mask=row_mask, other=0).to(tl.int64)
    # an out-of-range target (torch raises on one) is not read
    ok = row_mask & (target >= 0) & (target < n_cols)
    picked = tl.load(x_ptr + rows * n_cols + target, mask=ok, other=0.0).to(tl.float32)
    loss = tl.where(row_mask, m + tl.log(s) - picked, 0.0)
    tl.store(part_ptr + pid, tl.sum(loss, axis=0))'''

CE_LAUNCHER = '''def cross_entropy(logits, targets):
    """Mean cross-entropy of ``logits`` [N, C] against class indices ``targets`` [N]."""
    if logits.dim() != 2 or targets.dim() != 1 or targets.shape[0] != logits.shape[0]:
        raise ValueError(f"expected logits [N, C] and targets [N], got {list(logits.shape)} "
                         f"and {list(targets.shape)}")
    logits = logits.contiguous()
    targets = targets.contiguous()
    n_rows, n_cols = logits.shape
    if n_rows == 0:
        raise ValueError("cross-entropy of an empty batch")
    n_parts = triton.cdiv(n_rows, BLOCK_M)
    part = torch.empty((n_parts,), dtype=torch.float32, device=logits.device)
    out = torch.empty((), dtype=logits.dtype, device=logits.device)
    cross_entropy_kernel[(n_parts,)](logits, targets, part, n_rows, n_cols, BLOCK_M=BLOCK_M,
                                     BLOCK_N=BLOCK_N, num_warps=NUM_WARPS)
    loss_mean_kernel[(1,)](part, out, n_parts, float(n_rows), BLOCK_P=1024)
    return out'''

TRIPLET = '''@triton.jit
def triplet_margin_kernel(
    # Pointers: anchor, positive, negative [n_rows, n_cols] (contiguous), partial sums
    a_ptr, p_ptr, n_ptr, part_ptr,
    # Sizes
    n_rows, n_cols,
    # Loss parameters
    margin, eps,
    # Meta-parameters
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    # loss of a row = max(||a - p + eps|| - ||a - n + eps|| + margin, 0)
    pid = tl.program_id(0)
    rows = pid.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < n_rows
    d_ap = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    d_an = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols < n_cols)[None, :]
        offs = rows[:, None] * n_cols + cols[None, :]
        a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        p = tl.load(p_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        n = tl.load(n_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        u = tl.where(mask, a - p + eps, 0.0)
        w = tl.where(mask, a - n + eps, 0.0)
        d_ap += u * u
        d_an += w * w
    dist_ap = tl.sqrt(tl.sum(d_ap, axis=1))
    dist_an = tl.sqrt(tl.sum(d_an, axis=1))
    loss = tl.where(row_mask, tl.maximum(dist_ap - dist_an + margin, 0.0,
                                         propagate_nan=tl.PropagateNan.ALL), 0.0)
    tl.store(part_ptr + pid, tl.sum(loss, axis=0))'''

TRIPLET_LAUNCHER = '''def triplet_margin_loss(anchor, positive, negative, margin, eps):
    """Mean triplet margin loss (p=2, no swap) of [N, D] anchors, positives and negatives."""
    if anchor.dim() != 2 or positive.shape != anchor.shape or negative.shape != anchor.shape:
        raise ValueError("anchor, positive and negative must all be [N, D]")
    anchor, positive, negative = anchor.contiguous(), positive.contiguous(), negative.contiguous()
    n_rows, n_cols = anchor.shape
    if n_rows == 0:
        raise ValueError("triplet loss of an empty batch")
    n_parts = triton.cdiv(n_rows, BLOCK_M)
    part = torch.empty((n_parts,), dtype=torch.float32, device=anchor.device)
    out = torch.empty((), dtype=anchor.dtype, device=anchor.device)
    triplet_margin_kernel[(n_parts,)](anchor, positive, negative, part, n_rows, n_cols,
                                      float(margin), float(eps), BLOCK_M=BLOCK_M,
                                      BLOCK_N=BLOCK_N, num_warps=NUM_WARPS)
    loss_mean_kernel[(1,)](part, out, n_parts, float(n_rows), BLOCK_P=1024)
    return out'''


@dataclass
class LossTemplate:
    problem: Problem
    traced: Traced
    kernel: str
    launcher: str
    call: str
    description: str

    def feasible(self, params: Mapping[str, int]) -> str | None:
        tile = params["BLOCK_M"] * params["BLOCK_N"]
        if tile < 32 * params["num_warps"]:
            return f"a {tile}-element tile leaves threads of {params['num_warps']} warps idle"
        if tile // (32 * params["num_warps"]) > 64:
            return f"a {tile}-element tile is too many values per thread"
        return None

    def render(self, params: Mapping[str, int]) -> str:
        return module_source(
            self.problem, self.description,
            {"BLOCK_M": params["BLOCK_M"], "BLOCK_N": params["BLOCK_N"],
             "NUM_WARPS": params["num_warps"]},
            [self.kernel + "\n\n\n" + _FINAL], [self.launcher], self.traced.forward_args,
            [f"return {self.call}"])


def _cross_entropy(problem: Problem, traced: Traced) -> KernelPlan | None:
    out = fxgraph.strip(fxgraph.output(traced))
    if not (isinstance(out, torch.fx.Node) and op_name(out) == "getitem"):
        return None
    nll = out.args[0]
    if not (isinstance(nll, torch.fx.Node) and op_name(nll) == "nll_loss_forward"):
        return None
    lsm = fxgraph.strip(nll.args[0])
    if not (isinstance(lsm, torch.fx.Node) and op_name(lsm) == "_log_softmax"):
        return None
    weight, reduction, ignore = nll.args[2:5]
    if weight is not None or reduction != 1:
        raise Unsupported("cross-entropy with class weights or without mean reduction, which "
                          "no template covers")
    x, t = fxgraph.strip(lsm.args[0]), fxgraph.strip(nll.args[1])
    ex, et = fxgraph.input_expr(traced, x), fxgraph.input_expr(traced, t)
    class_dim: Any = lsm.args[1]
    if ex is None or et is None or len(fxgraph.shape(x)) != 2 or class_dim not in (1, -1):
        raise Unsupported("cross-entropy of computed or non-2-D logits, which no template covers")
    desc = (f"cross-entropy over [{', '.join(map(str, fxgraph.shape(x)))}] "
            f"{fxgraph.describe_dtype(fxgraph.dtype(x))} logits, mean over rows "
            f"(targets are assumed valid: ignore_index {ignore} never occurs)")
    return KernelPlan("loss", desc, dict(SPACE), dict(DEFAULTS), LossTemplate(
        problem, traced, CROSS_ENTROPY, CE_LAUNCHER, f"cross_entropy({ex}, {et})", desc))


def _triplet(problem: Problem, traced: Traced) -> KernelPlan | None:
    mods = fxgraph.modules_of(traced, torch.nn.TripletMarginLoss)
    if len(mods) != 1:
        return None
    (expr, module), = mods
    if module.p != 2 or module.swap or module.reduction != "mean":
        raise Unsupported("a triplet margin loss other than p=2, no swap, mean reduction")
    inputs = [n for n in traced.graph.nodes if n.op == "placeholder"
              and traced.placeholders[n.name].kind == "input"]
    if len(inputs) != 3 or any(len(fxgraph.shape(n)) != 2 for n in inputs):
        raise Unsupported("a triplet margin loss of other than three [N, D] inputs")
    ops = fxgraph.op_names(traced)
    if ops - {"sub", "add", "norm", "linalg_vector_norm", "clamp_min", "mean"} - (
            fxgraph.PASS_THROUGH):
        return None
    names = [traced.placeholders[n.name].expr for n in inputs]
    desc = (f"triplet margin loss over [{', '.join(map(str, fxgraph.shape(inputs[0])))}] "
            f"{fxgraph.describe_dtype(fxgraph.dtype(inputs[0]))} rows, mean over rows")
    call = f"triplet_margin_loss({', '.join(names)}, {expr}.margin, {expr}.eps)"
    return KernelPlan("loss", desc, dict(SPACE), dict(DEFAULTS), LossTemplate(
        problem, traced, TRIPLET, TRIPLET_LAUNCHER, call, desc))


def plan(problem: Problem, traced: Traced) -> KernelPlan | None:
    """The plan when the forward is a cross-entropy or triplet margin loss, else None."""
    return _cross_entropy(problem, traced) or _triplet(problem, traced)
