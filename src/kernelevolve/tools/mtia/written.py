"""Which elements of a sampled forward hold what the full forward would have written.

A launch whose grid is sampled (sampling.py) runs some of its programs only, so afterwards some
elements of its outputs hold what the full run would have written and the rest hold whatever
was there. :class:`Written` follows the forward launch by launch and op by op, and keeps, per
storage the forward allocated or wrote, the element addresses it *trusts*: those whose value is
the full run's. Everything else is trusted whole: inputs, parameters and anything the forward
did not touch or made from trusted data alone.

- A torch op that allocates without initialising (``empty``, ``empty_like``, ...) makes a
  storage of which nothing is trusted yet (in the full run a kernel would fill it).
- A program is *tainted* from its first load of an untrusted address on (unless the program
  itself wrote that address before), or its first atomic (its result depends on other
  programs). Its later stores are untrusted; a clean program's stores are trusted.
- After a launch that ran every program, a storage it wrote keeps its trusted addresses plus the
  clean writes, less every address range a tainted store covered. After a sampled launch, a
  storage it wrote trusts only that launch's clean writes: the skipped programs may have
  written anywhere else in it.
- Data movement (``clone``, ``_to_copy``, ``copy_``, ``cat``, ``stack``, ``fill_``) carries trust
  element by element; any other op that reads an untrusted storage makes its outputs untrusted.

Sets are kept as sorted byte addresses, at most ``cap`` per storage (a random subset beyond:
fewer elements trusted, never more). Imports numpy and torch only.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .aten import op_name

# Allocations whose contents are garbage until something writes them.
UNINITIALISED = frozenset({"empty", "empty_like", "empty_strided", "new_empty",
                           "new_empty_strided"})
# Ops whose output element i is input element i (same shape).
IDENTITY = frozenset({"clone", "_to_copy"})
# In-place ops that make every element of their target trusted (they read nothing untrusted).
FILLS = frozenset({"fill", "zero"})
_EMPTY = np.zeros(0, dtype=np.uint64)


@dataclass
class _Region:
    """One storage the forward allocated or wrote: [start, end) bytes and the trusted element
    addresses; ``written``: a kernel or an op wrote into it during the forward."""

    start: int
    end: int
    trusted: np.ndarray = field(default_factory=lambda: _EMPTY)
    written: bool = False


def _active(ptrs: Any, mask: Any) -> np.ndarray:
    """The addresses of an access's active lanes, flat (uint64)."""
    p = np.asarray(ptrs.data).reshape(-1).astype(np.uint64, copy=False)
    if mask is None:
        return p
    m = np.asarray(mask.data)
    if m.shape != np.asarray(ptrs.data).shape:
        m = np.broadcast_to(m, np.asarray(ptrs.data).shape)
    return p[m.reshape(-1)]


def _unique(*arrays: np.ndarray) -> np.ndarray:
    """The sorted distinct values of ``arrays`` together (np.unique hashes: slower here)."""
    a = np.sort(np.concatenate(arrays)) if len(arrays) > 1 else np.sort(arrays[0])
    return a[np.concatenate(([True], a[1:] != a[:-1]))] if a.size else a


def _member(addrs: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    if sorted_set.size == 0:
        return np.zeros(addrs.shape, dtype=bool)
    i = np.minimum(np.searchsorted(sorted_set, addrs), sorted_set.size - 1)
    return sorted_set[i] == addrs


def _outside(addrs: np.ndarray, ranges: list[tuple[int, int]]) -> np.ndarray:
    """Which of ``addrs`` lie in none of the inclusive ``ranges``."""
    if not ranges or addrs.size == 0:
        return np.ones(addrs.shape, dtype=bool)
    merged: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    starts = np.array([m[0] for m in merged], dtype=np.uint64)
    ends = np.array([m[1] for m in merged], dtype=np.uint64)
    j = np.searchsorted(starts, addrs, side="right") - 1
    inside = (j >= 0) & (addrs <= ends[np.maximum(j, 0)])
    return ~inside


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


def _span(t: torch.Tensor) -> tuple[int, int]:
    storage = t.untyped_storage()
    return storage.data_ptr(), storage.data_ptr() + storage.nbytes()


def index_of(addrs: np.ndarray, t: torch.Tensor) -> np.ndarray:
    """For each byte address, the flat (row-major) index of the element of ``t`` stored there,
    or -1 where none is (another tensor's element, a gap of a strided view). A tensor whose
    elements alias each other gets one of the indices."""
    item = t.element_size()
    off = addrs.astype(np.int64) - int(t.data_ptr())
    valid = (off >= 0) & (off % item == 0)
    rem = off // item
    idx = np.zeros(addrs.shape, dtype=np.int64)
    shape, strides = list(t.shape), list(t.stride())
    mult = [int(np.prod(shape[d + 1:], dtype=np.int64)) for d in range(len(shape))]
    for d in sorted(range(len(shape)), key=lambda d: -strides[d]):
        if shape[d] <= 1 or strides[d] <= 0:
            continue
        c = rem // strides[d]
        rem = rem - c * strides[d]
        valid &= c < shape[d]
        idx += c * mult[d]
    valid &= rem == 0
    return np.where(valid, idx, -1)


def address_of(idx: np.ndarray, t: torch.Tensor) -> np.ndarray:
    """The byte address of each flat (row-major) element index of ``t``."""
    if t.dim() == 0:
        return np.full(idx.shape, t.data_ptr(), dtype=np.uint64)
    off = np.zeros(idx.shape, dtype=np.int64)
    for c, stride in zip(np.unravel_index(idx, tuple(t.shape)), t.stride(), strict=True):
        off += c.astype(np.int64) * stride
    return (int(t.data_ptr()) + off * t.element_size()).astype(np.uint64)


class Written:
    """Trusted element addresses of the storages one simulated forward allocated or wrote."""

    def __init__(self, cap: int = 1 << 22, seed: int = 0) -> None:
        self.cap = cap
        self.rng = np.random.default_rng(seed)
        self.regions: dict[int, _Region] = {}
        self._starts: list[int] = []
        self.atomics = False
        self._buffers: list[tuple[int, int]] = []
        self._clean: list[np.ndarray] = []
        self._clean_n = 0
        self._dirty: list[tuple[int, int]] = []
        self._tainted = False
        self._own: list[np.ndarray] = []
        self._own_sorted: np.ndarray | None = None

    # -- regions -----------------------------------------------------------------------------
    def _overlapping(self, lo: int, hi: int) -> list[_Region]:
        """Regions with a byte in [lo, hi]."""
        i = max(0, bisect.bisect_right(self._starts, lo) - 1)
        out = []
        for start in self._starts[i:]:
            if start > hi:
                break
            region = self.regions[start]
            if region.end > lo:
                out.append(region)
        return out

    def _drop(self, start: int, end: int) -> None:
        for region in self._overlapping(start, end - 1):
            del self.regions[region.start]
        self._starts = sorted(self.regions)

    def _subsample(self, addrs: np.ndarray) -> np.ndarray:
        if addrs.size <= self.cap:
            return addrs
        return np.sort(self.rng.choice(addrs, self.cap, replace=False))

    def _set(self, start: int, end: int, trusted: np.ndarray, written: bool) -> _Region:
        self._drop(start, end)
        region = _Region(start, end, self._subsample(trusted), written)
        self.regions[start] = region
        self._starts = sorted(self.regions)
        return region

    def _region(self, t: torch.Tensor) -> _Region | None:
        """The region of ``t``'s storage (None: trusted whole); a stale region that only
        overlaps it (freed memory reused) is dropped."""
        start, end = _span(t)
        region = self.regions.get(start)
        if region is not None and region.end == end:
            return region
        if self._overlapping(start, end - 1):
            self._drop(start, end)
        return None

    # -- kernels -----------------------------------------------------------------------------
    def begin_launch(self, buffers: list[tuple[int, int]]) -> None:
        self._buffers = sorted(set(buffers))
        self._clean, self._dirty, self._clean_n = [], [], 0

    def begin_program(self) -> None:
        self._tainted = False
        self._own, self._own_sorted = [], None

    def on_load(self, ptrs: Any, mask: Any) -> None:
        if self._tainted or not self.regions:
            return
        addrs = _active(ptrs, mask)
        if addrs.size == 0:
            return
        for region in self._overlapping(int(addrs.min()), int(addrs.max())):
            inside = addrs[(addrs >= region.start) & (addrs < region.end)]
            ok = _member(inside, region.trusted)
            if not ok.all() and self._own:
                if self._own_sorted is None:
                    self._own_sorted = _unique(*self._own)
                ok |= _member(inside, self._own_sorted)
            if not ok.all():
                self._tainted = True
                return

    def on_store(self, ptrs: Any, mask: Any) -> None:
        addrs = _active(ptrs, mask)
        if addrs.size == 0:
            return
        if self._tainted:
            self._dirty.append((int(addrs.min()), int(addrs.max())))
            return
        self._clean.append(addrs)
        self._own.append(addrs)
        self._own_sorted = None
        self._clean_n += addrs.size
        if self._clean_n > 4 * self.cap:  # a random cap of them: fewer trusted, never more
            self._clean = [self._subsample(_unique(*self._clean))]
            self._own = [self._subsample(_unique(*self._own))]
            self._clean_n = self._clean[0].size

    def on_atomic(self, ptrs: Any, mask: Any) -> None:
        self.atomics = True
        self._tainted = True
        addrs = _active(ptrs, mask)
        if addrs.size:
            self._dirty.append((int(addrs.min()), int(addrs.max())))

    def end_launch(self, complete: bool) -> None:
        """``complete``: every program of the launch ran."""
        clean = _unique(*self._clean) if self._clean else _EMPTY
        dirty = self._dirty
        self._clean, self._dirty, self._own, self._own_sorted = [], [], [], None
        for start, end in self._buffers:
            lo, hi = np.searchsorted(clean, [start, end])
            mine = clean[lo:hi]
            hits = [(a, b) for a, b in dirty if b >= start and a < end]
            if mine.size == 0 and not hits:
                continue
            region = self.regions.get(start)
            if region is not None and region.end != end:
                region = None
            if complete and region is None and not hits:
                continue  # trusted whole, and written by clean programs only
            if complete and region is not None:
                mine = _unique(region.trusted, mine)
            self._set(start, end, mine[_outside(mine, hits)], True)

    # -- torch ops ---------------------------------------------------------------------------
    def on_aten(self, func: Any, args: tuple, kwargs: dict, out: Any) -> None:
        """An eager op of the forward (not one inside a launch) ran and returned ``out``."""
        name = op_name(func)
        outs = _tensors(out)
        if name in UNINITIALISED:
            for o in outs:
                start, end = _span(o)
                if end > start:
                    self._set(start, end, _EMPTY, False)
            return
        if not self.regions:
            return
        ins = _tensors(args) + _tensors(kwargs)
        in_spans = {_span(t) for t in ins}
        for o in outs:
            if _span(o) not in in_spans:
                self._new_output(name, o, ins, args, kwargs)
        for dst, is_out in _mutated(func, args, kwargs):
            self._in_place(name, dst, [t for t in ins if t is not dst], is_out)

    def _new_output(self, name: str, o: torch.Tensor, ins: list[torch.Tensor], args: tuple,
                    kwargs: dict) -> None:
        start, end = _span(o)
        if end <= start or not any(self._region(t) is not None for t in ins):
            self._drop(start, end)  # made from trusted data alone
            return
        pieces: list[np.ndarray] = []
        if name in IDENTITY and ins and ins[0].shape == o.shape:
            pieces.append(address_of(self._indices(ins[0]), o))
        elif name in ("cat", "stack") and o.dim() > 0:
            dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
            pieces += self._joined(name, o, ins, int(dim) % o.dim())
        trusted = _unique(*pieces) if pieces else _EMPTY
        self._set(start, end, trusted, True)

    def _joined(self, name: str, o: torch.Tensor, ins: list[torch.Tensor], dim: int
                ) -> list[np.ndarray]:
        """Trusted addresses of a ``cat``/``stack`` output, from its inputs'."""
        pieces, offset = [], 0
        for t in ins:
            if name == "cat" and (t.dim() != o.dim() or t.numel() == 0):
                continue  # cat skips empty 1-D tensors
            idx = self._indices(t)
            coords = list(np.unravel_index(idx, tuple(t.shape))) if t.dim() else []
            if name == "cat":
                coords[dim] = coords[dim] + offset
                offset += t.shape[dim]
            else:
                coords.insert(dim, np.full(idx.shape, offset, dtype=np.int64))
                offset += 1
            pieces.append(address_of(np.ravel_multi_index(coords, tuple(o.shape)), o))
        return pieces

    def _in_place(self, name: str, dst: torch.Tensor, others: list[torch.Tensor],
                  is_out: bool) -> None:
        region = self._region(dst)
        untrusted_src = [t for t in others if self._region(t) is not None]
        if not untrusted_src and (name in FILLS or name == "copy" or is_out):
            # Every element of dst now holds what the full run's op wrote there.
            if region is None:
                return
            if _covers(dst):
                self._drop(region.start, region.end)
                return
            added = address_of(self._all_indices(dst), dst)
            self._set(region.start, region.end, _unique(region.trusted, added), True)
            return
        if region is None and not untrusted_src:
            return  # an op on trusted data into trusted memory
        start, end = _span(dst)
        kept = region.trusted if region is not None else _EMPTY
        kept = kept[index_of(kept, dst) < 0]  # what it overwrote is no longer known
        if name == "copy" and others and others[0].shape == dst.shape:
            kept = _unique(kept, address_of(self._indices(others[0]), dst))
        self._set(start, end, kept, True)

    # -- results -----------------------------------------------------------------------------
    def _indices(self, t: torch.Tensor) -> np.ndarray:
        """Flat indices of the trusted elements of ``t`` (every one, up to ``cap``)."""
        region = self._region(t)
        if region is None:
            return self._all_indices(t)
        idx = index_of(region.trusted, t)
        return _unique(idx[idx >= 0])

    def _all_indices(self, t: torch.Tensor) -> np.ndarray:
        n = t.numel()
        if n <= self.cap:
            return np.arange(n, dtype=np.int64)
        return _unique(self.rng.integers(0, n, self.cap))

    def pick(self, t: torch.Tensor, limit: int) -> tuple[np.ndarray, int, bool]:
        """Up to ``limit`` random flat indices of trusted elements of the output ``t``, sorted;
        how many are trusted (of those kept); whether the forward wrote into ``t``'s storage
        (False: it was allocated without initialising and nothing wrote it)."""
        region = self._region(t)
        idx = self._indices(t)
        trusted = t.numel() if region is None else int(idx.size)
        if idx.size > limit:
            idx = np.sort(self.rng.choice(idx, limit, replace=False))
        return idx.astype(np.int64), trusted, region is None or region.written


def _mutated(func: Any, args: tuple, kwargs: dict) -> list[tuple[torch.Tensor, bool]]:
    """The tensors an op writes into, each with whether it is an ``out=`` argument."""
    schema = getattr(func, "_schema", None)
    out: list[tuple[torch.Tensor, bool]] = []
    for i, arg in enumerate(getattr(schema, "arguments", [])):
        info = arg.alias_info
        if info is not None and info.is_write:
            value = kwargs.get(arg.name) if arg.kwarg_only or i >= len(args) else args[i]
            out += [(t, bool(arg.kwarg_only)) for t in _tensors(value)]
    return out


def _covers(t: torch.Tensor) -> bool:
    """``t``'s elements are every byte of its storage, each once."""
    start, end = _span(t)
    if t.data_ptr() != start or t.numel() * t.element_size() != end - start:
        return False
    strides = t.stride()
    order = sorted(range(t.dim()), key=lambda d: -strides[d])
    return t.permute(order).is_contiguous() if t.dim() else True
