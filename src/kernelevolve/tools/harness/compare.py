"""Comparing a candidate's outputs with the reference's: dtype-aware tolerances, NaN/Inf
handling, poisoning of free memory, and checks that inputs were left unmodified.

Tolerances (``|out - ref| <= atol + rtol * |ref|`` elementwise), by output dtype:

==========  ======  ======  ================================================================
dtype       atol    rtol    why
==========  ======  ======  ================================================================
float64     1e-7    1e-7    reordering a reduction moves the last bits only
float32     1e-4    1e-4    summation order (reductions over ~1e4 terms, K=4096 dot products
                            in fp32 accumulate ~1e-5 relative); TF32 tensor-core products
                            (~1e-3) do not pass: fp32 problems need ``input_precision="ieee"``
                            or "tf32x3" in ``tl.dot``
float16     1e-2    1e-2    fp16 keeps 11 bits (eps 9.8e-4); a few roundings of inputs and
                            outputs plus fp32 accumulation stay well inside
bfloat16    2e-2    2e-2    bf16 keeps 8 bits (eps 7.8e-3): one rounding is up to 3.9e-3
integers    0       0       exact
bool        0       0       exact
==========  ======  ======  ================================================================

The absolute term sees the output's scale: ``atol`` is multiplied by ``min(1, mean |ref|)``
(plus, where the judge computed the reference in float64 too, 8x the fp32 reference's own
worst error: see ``compare_outputs``). The
table's ``atol`` is meant for outputs of magnitude ~1; a softmax over 393,216 columns holds
values near 2.5e-6, where an absolute 1e-4 would let a constant ``1/dim`` pass. Below magnitude
1 the absolute term shrinks with the output, so what passes is error relative to the output's
typical value (an honest fp32 kernel's error is ~1e-6 of it), while ``rtol`` still bounds every
element.

A user can loosen them (``eval.atol`` / ``eval.rtol``), but never beyond 1e-3 for float32 unless
``eval.allow_loose_fp32`` is set. NaN or Inf in an output passes only where the reference has the
same value at the same place.

Worker-side: torch and the standard library only.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass
from typing import Any

import torch

from kernelevolve.problem import as_list

TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-4, 1e-4),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (2e-2, 2e-2),
}
FP32_LOOSEST = 1e-3


def tolerance(dtype: torch.dtype, atol: float | None = None, rtol: float | None = None,
              allow_loose_fp32: bool = False) -> tuple[float, float]:
    """(atol, rtol) for an output of ``dtype``, with the user's overrides applied."""
    if not dtype.is_floating_point:
        return 0.0, 0.0
    base_atol, base_rtol = TOLERANCES.get(dtype, TOLERANCES[torch.float32])
    a = base_atol if atol is None else atol
    r = base_rtol if rtol is None else rtol
    if dtype == torch.float32 and not allow_loose_fp32 and (a > FP32_LOOSEST or r > FP32_LOOSEST):
        raise ValueError(
            f"float32 tolerance atol={a}, rtol={r} is looser than {FP32_LOOSEST}; set "
            f"eval.allow_loose_fp32 to accept it"
        )
    return a, r


@dataclass
class OutputError:
    index: int
    shape: list[int]
    dtype: str
    max_abs_error: float
    max_rel_error: float
    atol: float
    rtol: float
    mismatched: int
    total: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def compare_outputs(expected: Any, actual: Any, atol: float | None = None,
                    rtol: float | None = None, allow_loose_fp32: bool = False,
                    truth: Any = None, nudged: Any = None
                    ) -> tuple[list[OutputError], str | None]:
    """Per-output error figures, and the first reason the outputs do not match (or None).

    ``truth``: the reference computed in float64, where the caller has it. An output that
    cancels to near zero (the mean of a layer norm) is far below its terms' magnitude, so the
    scaled absolute term is tighter than an honest fp32 kernel can be; the fp32 reference
    itself errs there. With ``truth``, every element may also be off by 8x the fp32
    reference's own worst error against it; with ``nudged`` too (the reference on inputs moved
    by one rounding), each element by 8x the nudged output's error at that element, so that a
    reference that happened to land near the truth does not hold a kernel to more than its
    precision allows there. Per element, not the worst over the output: one element next to a
    pole (tan) or a step (floor) that the nudge crosses loosens that element only."""
    structure = _structure_mismatch(expected, actual)
    if structure:
        return [], structure
    exp, act = as_list(expected), as_list(actual)
    true = as_list(truth) if truth is not None else [None] * len(exp)
    moved = as_list(nudged) if nudged is not None else [None] * len(exp)
    if len(moved) != len(exp):
        moved = [None] * len(exp)
    errors: list[OutputError] = []
    problem: str | None = None
    for i, (e, a, t, m) in enumerate(zip(exp, act, true, moved, strict=True)):
        if not isinstance(e, torch.Tensor):
            if isinstance(a, torch.Tensor) or e != a:
                problem = problem or f"output {i}: expected {e!r}, got {a!r}"
            continue
        if not isinstance(a, torch.Tensor):
            problem = problem or f"output {i}: expected a tensor, got {type(a).__name__}"
            continue
        if a.shape != e.shape:
            problem = problem or f"output {i}: shape {list(a.shape)}, expected {list(e.shape)}"
            continue
        if a.dtype != e.dtype:
            problem = problem or f"output {i}: dtype {a.dtype}, expected {e.dtype}"
            continue
        if a.device != e.device:
            problem = problem or f"output {i}: on {a.device}, expected on {e.device}"
            continue
        at, rt = tolerance(e.dtype, atol, rtol, allow_loose_fp32)
        slack = 0.0
        if isinstance(t, torch.Tensor) and t.shape == e.shape and e.dtype.is_floating_point:
            slack = 8.0 * max_abs_difference(e, t)
            if isinstance(m, torch.Tensor) and m.shape == e.shape and m.dtype == e.dtype:
                a = within_rounding(e, a, t, m)
        err, reason = _compare_tensor(i, e, a, at, rt, slack)
        errors.append(err)
        problem = problem or reason
    return errors, problem


ROUNDING_ALLOWANCE = 8.0  # times the nudged reference's error at an element


def within_rounding(e: torch.Tensor, a: torch.Tensor, t: torch.Tensor, m: torch.Tensor
                    ) -> torch.Tensor:
    """``a`` with each element moved toward the reference ``e`` by up to ROUNDING_ALLOWANCE x
    |m - t| there (``m`` the reference on nudged inputs, ``t`` the float64 truth), non-finite
    elements left as they are: comparing it with the usual tolerance allows each element what
    one rounding of the inputs does to it, and no more."""
    fe, fa, ft, fm = (x.reshape(-1) for x in (e, a, t, m))
    out = torch.empty_like(fa)
    work, step = _work_dtype(e.dtype), _step(fe)
    for start in _chunks(fe):
        part = slice(start, start + step)
        ee, aa = fe[part].to(work), fa[part].to(work)
        allow = (fm[part].to(torch.float64) - ft[part].to(torch.float64)).abs()
        allow = torch.where(torch.isfinite(allow), ROUNDING_ALLOWANCE * allow, 0.0).to(work)
        d = aa - ee
        moved = ee + torch.sign(d) * (d.abs() - allow).clamp_min(0.0)
        out[part] = torch.where(torch.isfinite(d), moved, aa).to(out.dtype)
    return out.view(a.shape)


def farther(truth: Any, first: Any, second: Any) -> list[Any]:
    """The leaves of two nudged references' outputs merged into ``first``'s (in place): per
    element, whichever lies farther from ``truth`` (leaves that are not matching floating
    tensors stay ``first``'s). Two samples of what rounding the inputs does: one can land near
    the truth by chance where the output is sensitive (a sharp softmax), and hold a correct
    kernel to more than fp32 allows. In chunks, as the comparison: a 6 GB output needs no
    float64 copy of itself."""
    a, b, true = as_list(first), as_list(second), as_list(truth)
    if not (len(a) == len(b) == len(true)):
        return a
    for t, x, y in zip(true, a, b, strict=True):
        if not (all(isinstance(v, torch.Tensor) for v in (t, x, y)) and x.shape == y.shape
                == t.shape and x.dtype == y.dtype and x.dtype.is_floating_point
                and x.is_contiguous()):  # else (nothing to write into) the first sample stays
            continue
        fx, fy, ft = x.view(-1), y.reshape(-1), t.reshape(-1)
        for start in _chunks(fx):
            part = slice(start, start + _step(fx))
            tt = ft[part].to(torch.float64)
            pick = (fy[part].to(torch.float64) - tt).abs() > (fx[part].to(torch.float64) - tt).abs()
            fx[part] = torch.where(pick, fy[part], fx[part])
    return a


def _structure_mismatch(expected: Any, actual: Any, where: str = "the output") -> str | None:
    """Containers must match in type and length before their leaves are compared."""
    if isinstance(expected, list | tuple) or isinstance(actual, list | tuple):
        if type(expected) is not type(actual):
            return (f"{where} is a {type(actual).__name__}, the reference returns a "
                    f"{type(expected).__name__}")
        if len(expected) != len(actual):
            return f"{where} has {len(actual)} items, the reference {len(expected)}"
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            found = _structure_mismatch(e, a, f"{where}[{i}]")
            if found:
                return found
    return None


# Elements compared at a time: the temporaries of one chunk stay near 1-2 GB even when a
# KernelBench output holds billions of elements. Figures accumulate on the device and are
# read once per tensor (a read per chunk made the comparison of a 6 GB output take 0.3 s).
COMPARE_CHUNK = 1 << 24
COMPARE_CHUNK_CUDA = 1 << 26


def _step(flat: torch.Tensor) -> int:
    return COMPARE_CHUNK_CUDA if flat.is_cuda else COMPARE_CHUNK


def _chunks(flat: torch.Tensor) -> range:
    return range(0, flat.numel(), _step(flat))


def _work_dtype(dtype: torch.dtype) -> torch.dtype:
    """Errors of fp32 and narrower outputs are computed in fp32 (tolerances of 1e-4 and up
    are far above its rounding), of fp64 outputs in fp64."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def max_abs_difference(x: torch.Tensor, y: torch.Tensor) -> float:
    """max |x - y| over the elements finite in both, chunked."""
    fx, fy = x.reshape(-1), y.reshape(-1)
    work, step = torch.float64, _step(fx)
    worst = torch.zeros((), dtype=work, device=fx.device)
    for start in _chunks(fx):
        d = fx[start:start + step].to(work) - fy[start:start + step].to(work)
        d = torch.where(torch.isfinite(d), d.abs(), 0.0)
        if d.numel():
            worst = torch.maximum(worst, d.max())
    return float(worst.item())


def _compare_tensor(i: int, e: torch.Tensor, a: torch.Tensor, atol: float, rtol: float,
                    slack: float = 0.0) -> tuple[OutputError, str | None]:
    total = e.numel()
    if not e.dtype.is_floating_point:
        bad = int((a != e).sum().item())
        err = OutputError(i, list(e.shape), str(e.dtype).removeprefix("torch."),
                          float(bad > 0), float(bad > 0), 0.0, 0.0, bad, total)
        return err, (f"output {i}: {bad} of {total} values differ" if bad else None)
    flat_e, flat_a = e.reshape(-1), a.reshape(-1)
    work, step = _work_dtype(e.dtype), _step(flat_e)
    if _gpu_kernels(flat_e):  # one pass of the judge's own Triton kernel
        from kernelevolve.tools.harness import compare_gpu

        flat_e, flat_a = flat_e.contiguous(), flat_a.contiguous()
        atol = atol * min(1.0, compare_gpu.mean_magnitude(flat_e)) + slack
        bad, n_nonfinite, max_abs, max_rel = compare_gpu.errors(flat_e, flat_a, atol, rtol)
    else:
        atol = atol * min(1.0, output_scale(flat_e)) + slack
        bad, n_nonfinite, max_abs, max_rel = _errors_by_chunks(flat_e, flat_a, atol, rtol)
    if n_nonfinite:
        max_abs = max_rel = float("inf")
    err = OutputError(i, list(e.shape), str(e.dtype).removeprefix("torch."), max_abs, max_rel,
                      atol, rtol, bad, total)
    if not bad:
        return err, None
    if n_nonfinite:
        return err, (f"output {i}: {n_nonfinite} NaN/Inf values where the reference has none "
                     f"(or the reverse); {bad} of {total} values wrong")
    first_bad = 0
    for start in _chunks(flat_e):  # failures only: find the first wrong element
        mask = _chunk_errors(flat_e[start:start + step].to(work),
                             flat_a[start:start + step].to(work), atol, rtol)[0]
        hits = mask.nonzero()
        if hits.numel():
            first_bad = start + int(hits[0].item())
            break
    where = list(torch.unravel_index(torch.tensor(first_bad), e.shape)) if e.dim() else []
    return err, (f"output {i}: {bad} of {total} values outside atol={atol:.3g} (scaled to the "
                 f"output's magnitude) rtol={rtol:g}; "
                 f"max abs error {max_abs:.3g}, first at {[int(w) for w in where]}: "
                 f"got {flat_a[first_bad].item():.6g}, expected {flat_e[first_bad].item():.6g}")


def _gpu_kernels(flat: torch.Tensor) -> bool:
    from kernelevolve.tools.harness import compare_gpu

    return compare_gpu.supported(flat) and os.environ.get("TRITON_INTERPRET") != "1"


def _errors_by_chunks(flat_e: torch.Tensor, flat_a: torch.Tensor, atol: float, rtol: float
                      ) -> tuple[int, int, float, float]:
    """(wrong, wrong non-finite, max abs error, max relative error), with torch ops."""
    work, step, dev = _work_dtype(flat_e.dtype), _step(flat_e), flat_e.device
    bad_n = torch.zeros((), dtype=torch.int64, device=dev)
    nonfinite_n = torch.zeros((), dtype=torch.int64, device=dev)
    max_abs_t = torch.zeros((), dtype=work, device=dev)
    max_rel_t = torch.zeros((), dtype=work, device=dev)
    for start in _chunks(flat_e):
        bad_mask, nonfinite_bad, diff, rel = _chunk_errors(
            flat_e[start:start + step].to(work), flat_a[start:start + step].to(work), atol, rtol)
        bad_n += bad_mask.sum()
        nonfinite_n += nonfinite_bad.sum()
        max_abs_t = torch.maximum(max_abs_t, diff.max())
        max_rel_t = torch.maximum(max_rel_t, rel.max())
    return (int(bad_n.item()), int(nonfinite_n.item()), float(max_abs_t.item()),
            float(max_rel_t.item()))


def _chunk_errors(e: torch.Tensor, a: torch.Tensor, atol: float, rtol: float
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """For one chunk: wrong elements, wrong non-finite elements, |a - e| where both are finite
    (else 0), and the relative error where |e| > atol (else 0). Non-finite values must match
    the reference exactly (the same NaN/Inf at the same place)."""
    both = torch.isfinite(e) & torch.isfinite(a)
    nonfinite_bad = ~both & ~((a == e) | (a.isnan() & e.isnan()))
    abs_e = e.abs()
    diff = torch.where(both, (a - e).abs(), 0.0)
    rel = torch.where(abs_e > atol, diff / abs_e.clamp_min(1e-12), 0.0)
    bad = (diff > atol + rtol * abs_e) | nonfinite_bad
    return bad, nonfinite_bad, diff, rel


def output_scale(flat: torch.Tensor) -> float:
    """The mean magnitude of a reference output's finite values (0.0 when there are none)."""
    step = _step(flat)
    total = torch.zeros((), dtype=torch.float64, device=flat.device)
    count = torch.zeros((), dtype=torch.int64, device=flat.device)
    for start in _chunks(flat):
        chunk = flat[start:start + step].to(_work_dtype(flat.dtype))
        finite = torch.isfinite(chunk)
        total += torch.where(finite, chunk.abs(), 0.0).sum(dtype=torch.float64)
        count += finite.sum()
    n = int(count.item())
    return float(total.item()) / n if n else 0.0


NONFINITE_COPIES = 2  # how many times each non-finite value is placed in a floating input
NONFINITE_CHECK = " as the reference"  # the checks' names: "NaN as the reference", ...
NAN_VALUES = (float("nan"),)
INF_VALUES = (float("inf"), float("-inf"))


def with_nonfinite(t: torch.Tensor, gen: torch.Generator, values: tuple[float, ...]
                   ) -> torch.Tensor:
    """A contiguous copy of ``t`` with NONFINITE_COPIES elements set to each of ``values``
    (NAN_VALUES, INF_VALUES), at places drawn from ``gen`` (a CPU generator: the places do not
    depend on the device). In a large input each lands in its own row, so a reduction sees one
    value alone."""
    out = t.detach().clone(memory_format=torch.contiguous_format)
    k = NONFINITE_COPIES
    where = torch.randint(out.numel(), (k * len(values),), generator=gen).to(out.device)
    fill = torch.tensor([v for v in values for _ in range(k)], dtype=out.dtype)
    out.view(-1)[where] = fill.to(out.device)
    return out


def nonfinite_from_truth(expected: Any, truth: Any) -> tuple[Any, int]:
    """``expected``'s leaves, each floating element whose NaN or infinity differs from the
    float64 ``truth``'s (one NaN where the other is not, or a finite value against a non-finite
    one) replaced by the truth's, cast; and how many were. A library's fast algorithm (cuDNN's
    FFT and Winograd convolutions) spreads one NaN or infinity over its whole transform tile,
    where the float64 reference, computed directly, keeps it where the arithmetic puts it: on
    KernelBench's transposed convolutions the fp32 reference held 56-150x the NaN of
    float64's. The candidate cannot move either reference."""
    exp, true = as_list(expected), as_list(truth)
    if len(exp) != len(true):
        return exp, 0
    merged, changed = [], 0
    for e, t in zip(exp, true, strict=True):
        if not (isinstance(e, torch.Tensor) and isinstance(t, torch.Tensor)
                and e.dtype.is_floating_point and t.shape == e.shape):
            merged.append(e)
            continue
        t32 = t.to(e.dtype)
        differ = (torch.isfinite(e) != torch.isfinite(t32)) | (e.isnan() != t32.isnan())
        changed += int(differ.sum())
        merged.append(torch.where(differ, t32, e))
    if isinstance(expected, list | tuple):
        return type(expected)(merged), changed
    return merged[0], changed


def has_nonfinite(t: torch.Tensor) -> bool:
    return bool(t.dtype.is_floating_point and not torch.isfinite(t).all())


def tensors_of(value: Any) -> list[torch.Tensor]:
    """The tensors among a forward's result's leaves."""
    return [t for t in as_list(value) if isinstance(t, torch.Tensor)] if value is not None else []


def poison_allocator(nbytes: int, device: torch.device) -> None:
    """Fill and free a block of ``nbytes``, so cached free memory holds garbage."""
    if nbytes <= 0:
        return
    block = torch.empty(nbytes // 4 + 1, dtype=torch.float32, device=device)
    block.fill_(float("nan"))
    del block


def snapshot(values: list[Any]) -> list[Any]:
    """A list of ``values`` with every tensor cloned."""
    return list(clone_tree(list(values)))


def clone_tree(value: Any) -> Any:
    """A copy of a forward's result with every tensor cloned and containers kept as they are."""
    if isinstance(value, list | tuple):
        return type(value)(clone_tree(v) for v in value)
    return value.detach().clone() if isinstance(value, torch.Tensor) else value


def modified_inputs(before: list[Any], after: list[Any]) -> list[int]:
    """Indices of inputs whose values changed (bitwise; NaN equal to NaN)."""
    changed = []
    for i, (b, a) in enumerate(zip(before, after, strict=True)):
        if isinstance(b, torch.Tensor) and not torch.equal(b, a):
            both_nan = b.isnan() & a.isnan() if b.dtype.is_floating_point else None
            if both_nan is None or not bool(((b == a) | both_nan).all()):
                changed.append(i)
    return changed


def bitwise_equal(x: Any, y: Any) -> bool:
    xs, ys = as_list(x), as_list(y)
    if len(xs) != len(ys):
        return False
    for a, b in zip(xs, ys, strict=True):
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            if a.shape != b.shape or a.dtype != b.dtype:
                return False
            same = (a == b) | (a.isnan() & b.isnan()) if a.dtype.is_floating_point else (a == b)
            if not bool(same.all()):
                return False
        elif a != b:
            return False
    return True


def own_copy(value: Any, others: list[Any]) -> Any:
    """``value`` (a forward's result) with each tensor leaf that shares memory with one of
    ``others`` (inputs, parameters) cloned, the rest as they are: a reference's output that is
    a view of its input must not change when the input is refilled, and an output that owns
    its memory needs no copy (at KernelBench's sizes a copy is gigabytes)."""
    held = {t.untyped_storage().data_ptr() for t in others
            if isinstance(t, torch.Tensor) and t.untyped_storage().nbytes()}
    if isinstance(value, list | tuple):
        return type(value)(own_copy(v, others) for v in value)
    if isinstance(value, torch.Tensor):
        shared = value.untyped_storage().nbytes() and (
            value.untyped_storage().data_ptr() in held)
        return value.detach().clone() if shared else value.detach()
    return value


def fingerprint(value: Any, key: int) -> tuple[Any, ...]:
    """A digest of ``value``'s leaves that equals another's, bar a 2^-64 chance, exactly when
    the two are bitwise equal (NaN payloads included): their shapes, dtypes and a sum of every
    32-bit word times a weight drawn from ``key``. The judge keeps this instead of a whole
    earlier output (gigabytes at KernelBench's sizes); the candidate never learns ``key``."""
    digest: list[Any] = []
    for leaf in as_list(value) if value is not None else []:
        if not isinstance(leaf, torch.Tensor):
            digest.append(("value", repr(leaf)))
            continue
        flat = leaf.detach().reshape(-1).contiguous().view(torch.uint8)
        pad = (-flat.numel()) % 4
        if pad:
            flat = torch.cat([flat, flat.new_zeros(pad)])
        words = flat.view(torch.int32)
        gen = torch.Generator(device=words.device).manual_seed(key)
        total = torch.zeros(2, dtype=torch.int64, device=words.device)
        step = _step(words)
        for start in range(0, words.numel(), step):
            part = words[start:start + step].to(torch.int64)
            weights = torch.randint(1, 2**62, (2, part.numel()), generator=gen,
                                    device=words.device, dtype=torch.int64) | 1
            total += (weights * part).sum(dim=1)  # wraps modulo 2^64: still a fine digest
        digest.append((tuple(leaf.shape), str(leaf.dtype), *total.tolist()))
    return tuple(digest)


@dataclass
class ErrorStats:
    """Errors against the float64 truth over one output: the largest and the root mean square,
    of the candidate, of the baseline (the reference under the timed flags) and of the fp32
    reference, and how many elements break the non-finite rule."""

    cand_max: float
    cand_rms: float
    base_max: float
    base_rms: float
    ref_max: float
    ref_rms: float
    nonfinite_bad: int


def error_stats(e: torch.Tensor, a: torch.Tensor, t: torch.Tensor, b: torch.Tensor) -> ErrorStats:
    """``ErrorStats`` of the candidate ``a``, the baseline ``b`` and the fp32 reference ``e``
    against the truth ``t``, in chunks. Errors count where the truth and the reference are
    finite (the candidate must be finite there too); the baseline's where it is finite as
    well, so a baseline that overflows does not loosen anything."""
    fe, fa, ft, fb = (x.reshape(-1) for x in (e, a, t, b))
    dev, step = fe.device, _step(fe)
    acc = torch.zeros(6, dtype=torch.float64, device=dev)  # 3 x (max, sum of squares)
    counts = torch.zeros(3, dtype=torch.int64, device=dev)  # counted elements, baseline's, bad
    for start in _chunks(fe):
        part = slice(start, start + step)
        ee, aa, tt, bb = (x[part].to(torch.float64) for x in (fe, fa, ft, fb))
        finite_e = torch.isfinite(ee)
        bad = ~finite_e & ~((aa == ee) | (aa.isnan() & ee.isnan()))
        bad |= finite_e & ~torch.isfinite(aa)
        counted = finite_e & torch.isfinite(tt) & torch.isfinite(aa)
        with_base = counted & torch.isfinite(bb)
        for j, (x, mask) in enumerate(((aa, counted), (bb, with_base), (ee, counted))):
            d = torch.where(mask, (x - tt).abs(), 0.0)
            if d.numel():
                acc[2 * j] = torch.maximum(acc[2 * j], d.max())
            acc[2 * j + 1] += (d * d).sum()
        counts[0] += counted.sum()
        counts[1] += with_base.sum()
        counts[2] += bad.sum()
    a_, n = acc.tolist(), counts.tolist()
    rms = [math.sqrt(a_[1] / n[0]) if n[0] else 0.0, math.sqrt(a_[3] / n[1]) if n[1] else 0.0,
           math.sqrt(a_[5] / n[0]) if n[0] else 0.0]
    return ErrorStats(a_[0], rms[0], a_[2], rms[1], a_[4], rms[2], int(n[2]))


def tf32_round(t: torch.Tensor) -> torch.Tensor:
    """``t`` rounded to TF32 (fp32 with a 10-bit mantissa, to nearest, ties to even), as the
    tensor cores take an fp32 operand in TF32 mode; a copy. Other dtypes, NaN and infinities
    as they are."""
    if t.dtype != torch.float32:
        return t.clone()
    bits = t.view(torch.int32)
    # Adding half the dropped range (plus the kept part's last bit, for ties to even) carries
    # into the kept bits; two's complement addition on the pattern works for either sign.
    rounded = ((bits + (0x0FFF + ((bits >> 13) & 1))) & -0x2000).view(torch.float32)
    return torch.where(torch.isfinite(t), rounded, t)


def within_baseline(expected: Any, actual: Any, truth: Any, baseline: Any, factor: float
                    ) -> tuple[bool, str]:
    """The precision contract 'baseline' (``eval.precision``): per floating output, the
    candidate's largest and root-mean-square errors against the float64 ``truth`` must each be
    within ``factor`` times the larger of the baseline's and the fp32 reference's, all measured
    on these inputs; NaN and infinities as the fp32 reference's; every other output exact.
    Both figures, because either alone can be gamed: a kernel right on average but far off at
    a few elements fails the largest, one a little off everywhere (fewer bits than the
    baseline keeps) fails the mean square. (True, the figures) or (False, the reason)."""
    exp, act, true, base = (as_list(v) for v in (expected, actual, truth, baseline))
    if not len(exp) == len(act) == len(true) == len(base):
        return False, "the outputs' structure differs from the reference's"
    figures = []
    for i, (e, a, t, b) in enumerate(zip(exp, act, true, base, strict=True)):
        if not isinstance(e, torch.Tensor) or not e.dtype.is_floating_point:
            same = (isinstance(a, torch.Tensor) and isinstance(e, torch.Tensor)
                    and a.shape == e.shape and a.dtype == e.dtype and torch.equal(a, e)
                    ) if isinstance(e, torch.Tensor) else a == e
            if not same:
                return False, f"output {i} is not floating and differs from the reference's"
            continue
        if not (isinstance(a, torch.Tensor) and a.shape == e.shape and a.dtype == e.dtype
                and a.device == e.device):
            return False, f"output {i} differs in shape, dtype or device"
        if not all(isinstance(x, torch.Tensor) and x.shape == e.shape for x in (t, b)):
            return False, f"output {i}: no float64 truth or baseline of its shape to measure by"
        st = error_stats(e, a, t, b)
        if st.nonfinite_bad:
            return False, (f"output {i}: {st.nonfinite_bad} NaN/Inf values where the reference "
                           f"has none (or the reverse)")
        allow_max = factor * max(st.base_max, st.ref_max)
        allow_rms = factor * max(st.base_rms, st.ref_rms)
        said = (f"output {i}: error against the float64 truth {st.cand_max:.3g} largest, "
                f"{st.cand_rms:.3g} rms; the baseline's {st.base_max:.3g} / {st.base_rms:.3g}, "
                f"the fp32 reference's {st.ref_max:.3g} / {st.ref_rms:.3g} (allowed "
                f"{factor:g}x the larger)")
        if st.cand_max > allow_max or st.cand_rms > allow_rms:
            return False, said
        figures.append(said)
    return True, "; ".join(figures)
