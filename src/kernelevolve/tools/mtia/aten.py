"""Eager PyTorch ops as MTIA kernels: one unfused, library-quality kernel per aten op.

Used for the simulated eager baseline (``simulate_reference``) and for the torch ops a candidate's
forward runs outside its Triton kernels. Each op pays a launch, reads its inputs and writes its
outputs through the same cache model as Triton launches, and keeps one engine busy: matmul and
convolution on the dot-product engine (dims padded to 32x32 tiles), transcendentals on the
special-function path, reductions on the reduction engine, layout-changing copies on the memory-
layout unit, everything else on the SIMD engine. Library kernels are assumed ideally pipelined
(a PE's time is its busiest unit) and spread evenly over the PEs their size can occupy; a GEMM
re-reads its operands once per 256x128 output tile (library tile: an estimate).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import torch

from .cache import BufferAccess
from .chip import FIELDS, F, KernelRecord, unit_seconds
from .generations import Generation
from .report import UNITS

FREE_OPS = frozenset(
    ["view", "_unsafe_view", "reshape", "_reshape_alias", "expand", "expand_as", "permute", "transpose", "t", "unsqueeze", "squeeze", "slice", "select", "as_strided", "detach", "alias", "split", "split_with_sizes", "unbind", "chunk", "narrow", "diagonal", "unfold", "view_as", "view_as_real", "view_as_complex", "lift_fresh", "lift_fresh_copy", "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "set", "resize", "_local_scalar_dense", "is_same_size", "numpy_T", "movedim", "_to_dense", "_nested_tensor_size", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset"]
)
SFU_OPS = frozenset(
    ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "tanh", "sigmoid", "sqrt", "rsqrt", "erf", "erfc", "erfinv", "gelu", "silu", "softplus", "mish", "elu", "selu", "celu", "pow", "reciprocal", "atan", "atan2", "asin", "acos", "sinh", "cosh", "asinh", "acosh", "atanh", "logit", "div", "true_divide", "log_sigmoid_forward", "hardtanh_backward"]
)
REDUCE_OPS = frozenset(
    ["sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "prod", "var", "std", "var_mean", "std_mean", "norm", "linalg_vector_norm", "logsumexp", "cumsum", "cumprod", "all", "any", "topk", "sort", "kthvalue", "median", "nansum", "nanmean", "count_nonzero", "mse_loss", "nll_loss_forward", "nll_loss2d_forward", "l1_loss", "smooth_l1_loss", "huber_loss"]
)
COPY_OPS = frozenset(
    ["clone", "copy", "_to_copy", "contiguous", "cat", "stack", "index_select", "gather", "scatter", "scatter_add", "index", "index_put", "repeat", "flip", "roll", "constant_pad_nd", "pad", "reflection_pad1d", "reflection_pad2d", "replication_pad2d", "masked_select", "embedding", "take", "tril", "triu", "narrow_copy", "permute_copy", "transpose_copy"]
)
# Composite ops: (SIMD, special-function, reduction) element passes over the input.
COMPOSITE = {
    "_softmax": (2, 1, 2),
    "_log_softmax": (2, 1, 2),
    "native_layer_norm": (4, 0, 2),
    "native_group_norm": (4, 0, 2),
    "native_batch_norm": (3, 0, 2),
    "_native_batch_norm_legit": (3, 0, 2),
    "_native_batch_norm_legit_no_training": (2, 0, 0),
    "_fused_rms_norm": (2, 0, 1),
    "logsumexp": (1, 1, 2),
    "var": (2, 0, 2),
    "std": (2, 1, 2),
    "var_mean": (2, 0, 2),
    "std_mean": (2, 1, 2),
}
# Transcendental ops as the SIMD / special-function passes a Triton kernel would spend on them
# (e.g. sigmoid = 1 / (1 + exp(-x)): two SIMD ops, exp and a reciprocal); others: one SFU pass.
SFU_PASSES = {
    "sigmoid": (2, 2),
    "silu": (3, 2),
    "gelu": (4, 1),
    "softplus": (1, 2),
    "mish": (2, 3),
    "elu": (3, 1),
    "selu": (3, 1),
    "celu": (3, 1),
    "logit": (2, 2),
    "pow": (1, 2),
    "log_sigmoid_forward": (2, 2),
}
GEMM_TILE_M, GEMM_TILE_N = 256, 128  # estimate: a library GEMM tile that fits 2i local memory
ELEMS_PER_PE = 1024  # estimate: a library kernel gives each PE at least this many elements


def op_name(func: Any) -> str:
    packet = getattr(func, "overloadpacket", None)
    name = str(getattr(packet, "__name__", None) or getattr(func, "__name__", func))
    return name[:-1] if name.endswith("_") and not name.endswith("__") else name


def _flatten(x: Any) -> Iterable[torch.Tensor]:
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for item in x:
            yield from _flatten(item)
    elif isinstance(x, dict):
        for item in x.values():
            yield from _flatten(item)


def _unique(tensors: Iterable[torch.Tensor]) -> list[torch.Tensor]:
    seen, out = set(), []
    for t in tensors:
        if t.numel() == 0 or t.device.type == "meta":
            continue
        key = (t.data_ptr(), tuple(t.shape), tuple(t.stride()), t.dtype)
        if key not in seen:
            seen.add(key)
            out.append(t)
    return out


def _span(t: torch.Tensor) -> tuple[int, int]:
    esz = t.element_size()
    lo = t.data_ptr() + sum(min(0, (s - 1) * st) for s, st in zip(t.shape, t.stride(), strict=True)) * esz
    hi = t.data_ptr() + (sum(max(0, (s - 1) * st) for s, st in zip(t.shape, t.stride(), strict=True)) + 1) * esz
    return lo, hi


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def _dtype_ratio(dtype: torch.dtype, gen: Generation) -> float:
    if dtype in (torch.float16, torch.bfloat16):
        return 1.0
    if dtype.itemsize == 1:
        return gen.dpe_8bit_ratio.value
    return gen.dpe_fp32_ratio.value


def _pad(n: int, tile: int) -> int:
    return -(-n // tile) * tile


def _gemm(name: str, args: tuple, outs: list[torch.Tensor]) -> tuple | None:
    """(batch, M, N, K, lhs, rhs) of a matmul-like op, or None."""
    if not outs:
        return None
    out = outs[0]
    try:
        if name in ("mm", "addmm", "bmm", "baddbmm", "matmul", "linear"):
            lhs, rhs = (args[1], args[2]) if name in ("addmm", "baddbmm") else (args[0], args[1])
            k = lhs.shape[-1]
            n = out.shape[-1] if out.dim() else 1
            m = out.shape[-2] if out.dim() > 1 else 1
            return max(1, out.numel() // max(1, m * n)), m, n, k, lhs, rhs
        if name in ("convolution", "_convolution"):
            # (input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
            x, w, transposed, groups = args[0], args[1], bool(args[6]), int(args[8])
            spatial = math.prod(w.shape[2:])
            if transposed:
                m = x.shape[0] * math.prod(x.shape[2:])
                n, k = w.shape[1], w.shape[0] // groups * spatial
            else:
                m = out.shape[0] * math.prod(out.shape[2:])
                n, k = w.shape[0] // groups, w.shape[1] * spatial
            return groups, m, n, k, x, w
        if name.startswith("_scaled_dot_product") or name == "scaled_dot_product_attention":
            q, key = args[0], args[1]
            return math.prod(q.shape[:-2]), q.shape[-2], key.shape[-2], q.shape[-1], q, key
    except (AttributeError, IndexError, TypeError):
        return None  # an overload with another signature: costed as an elementwise op
    return None


GEMM_OPS = frozenset(
    ["mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "convolution", "_convolution",
     "scaled_dot_product_attention", "_scaled_dot_product_flash_attention_for_cpu",
     "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention"]
)


def gemm_flops(func: Any, args: tuple, out: Any) -> float:
    """FLOPs of a matmul-like op given its (possibly meta) output, else 0."""
    name = op_name(func)
    if name not in GEMM_OPS:
        return 0.0
    gemm = _gemm(name, args, list(_flatten(out)))
    if gemm is None:
        return 0.0
    batch, m, n, k, _, _ = gemm
    return 2.0 * batch * m * n * k


def aten_record(func: Any, args: tuple, kwargs: dict, out: Any, gen: Generation) -> KernelRecord | None:
    """The simulated kernel of one eager aten op, or None for views, metadata and allocations."""
    name = op_name(func)
    if name in FREE_OPS:
        return None
    outs = _unique(_flatten(out))
    ins = _unique(list(_flatten(args)) + list(_flatten(kwargs)))
    if not outs:
        return None
    c = np.zeros(len(FIELDS))
    in_elems = max((t.numel() for t in ins), default=0)
    out_elems = sum(t.numel() for t in outs)
    reuse: dict[int, float] = {}
    gemm = _gemm(name, args, outs)
    if gemm is not None:
        batch, m, n, k, lhs, rhs = gemm
        c[F["flops"]] = 2.0 * batch * m * n * k
        tile = int(gen.dpe_tile.value)
        c[F["dpe_flops"]] = 2.0 * batch * _pad(m, tile) * _pad(n, tile) * _pad(k, tile) / _dtype_ratio(lhs.dtype, gen)
        reuse[id(lhs)] = float(math.ceil(n / GEMM_TILE_N))
        reuse[id(rhs)] = float(math.ceil(m / GEMM_TILE_M))
        if name.startswith("_scaled_dot_product") or name == "scaled_dot_product_attention":
            scores = batch * m * n
            c[F["flops"]] *= 2
            c[F["dpe_flops"]] *= 2
            c[F["sfu_elems"]], c[F["re_elems"]], c[F["se_elems"]] = scores, 2 * scores, 2 * scores
        else:
            c[F["se_elems"]] = out_elems if name in ("addmm", "baddbmm") or len(ins) > 2 else 0
        active = min(gen.n_pe, batch * math.ceil(m / 128) * math.ceil(n / 128))
    else:
        se, sfu, re = COMPOSITE.get(name, (0, 0, 0))
        if name in COMPOSITE:
            c[F["se_elems"]], c[F["sfu_elems"]], c[F["re_elems"]] = se * in_elems, sfu * in_elems, re * in_elems
        elif name in REDUCE_OPS:
            c[F["re_elems"]] = in_elems
        elif name in ("bucketize", "searchsorted"):
            # A binary search per element: one compare-and-select pass per level.
            boundaries = args[1] if name == "bucketize" else args[0]
            levels = math.ceil(math.log2(max(2, getattr(boundaries, "numel", lambda: 2)() + 1)))
            c[F["se_elems"]] = out_elems * levels
        elif name in SFU_OPS:
            se, sfu = SFU_PASSES.get(name, (0, 1))
            c[F["se_elems"]], c[F["sfu_elems"]] = se * out_elems, sfu * out_elems
        elif name in COPY_OPS:
            if any(not t.is_contiguous() for t in ins) or name in ("index_select", "gather", "scatter", "index"):
                c[F["mlu_bytes"]] = sum(_nbytes(t) for t in outs)
        else:
            c[F["se_elems"]] = out_elems
        active = min(gen.n_pe, max(1, math.ceil(max(in_elems, out_elems) / ELEMS_PER_PE)))

    accesses = []
    out_keys = {(t.data_ptr(), tuple(t.shape)) for t in outs}
    for t in ins:
        if (t.data_ptr(), tuple(t.shape)) in out_keys and name.endswith(("copy", "fill", "zero")):
            continue
        lo, hi = _span(t)
        unique = float(_nbytes(t))
        accesses.append(BufferAccess(lo, hi, unique, unique * reuse.get(id(t), 1.0), False))
    for t in outs:
        lo, hi = _span(t)
        accesses.append(BufferAccess(lo, hi, float(_nbytes(t)), float(_nbytes(t)), True))
    moved = sum(a.requested_bytes for a in accesses)
    c[F["load_bytes"]] = sum(a.unique_bytes for a in accesses if not a.is_write)
    c[F["store_bytes"]] = sum(a.unique_bytes for a in accesses if a.is_write)
    c[F["dma_moved"]] = c[F["contig_bytes"]] = moved
    c[F["dma_cmds"]] = math.ceil(moved / 65536) + len(accesses)
    compute = c[F["se_elems"]] + c[F["sfu_elems"]] + c[F["re_elems"]]
    c[F["block_ops"]] = c[F["dma_cmds"]] + math.ceil(compute / 4096) + math.ceil(c[F["dpe_flops"]] / 2**22)
    c[F["lm_bytes"]] = moved + 3 * 4 * compute + c[F["mlu_bytes"]] * 2

    totals = unit_seconds(c, gen)[0]
    per_pe = totals / active
    t_pe = float(per_pe.max()) + gen.program_dispatch_cycles.value / gen.clock
    pe_busy = np.zeros(gen.n_pe)
    pe_busy[:active] = t_pe
    dots = []
    if gemm is not None:
        batch, m, n, k, lhs, _ = gemm
        dots.append({"m": int(m), "n": int(n), "k": int(k), "dtype": str(lhs.dtype).replace("torch.", ""),
                     "count": int(batch)})
    return KernelRecord(
        name=f"aten.{name}",
        kind="aten",
        grid=(int(active), 1, 1),
        programs=int(active),
        programs_simulated=int(active),
        pe_busy=pe_busy,
        unit_busy={u: float(v) for u, v in zip(UNITS, totals, strict=True)},
        totals=c,
        accesses=accesses,
        stages=1,
        dots=dots,
    )
