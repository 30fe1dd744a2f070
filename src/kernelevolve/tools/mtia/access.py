"""How one tl.load / tl.store becomes DMA on an MTIA PE.

The interpreter hands the builder a block of byte addresses and a mask. From them we decide what
the DMA engine would do:

- ``scalar``: one element, one 32 B transaction.
- ``contiguous``: the addresses are affine and one axis has unit element stride: a (multi-dim)
  block DMA of rows along that axis, each row rounded up to the 32 B granule. Row starts must be
  32 B aligned (the block's base, before masking: masked tails are fine). If the unit-stride axis is
  not the block's last axis, the data also needs a transpose (memory-layout unit).
- ``strided``: affine without a unit-stride axis: one strided descriptor, but every element costs
  its own 32 B transaction (deduplicated per granule).
- ``gather``: not affine: an indexed DMA, one transaction per distinct 32 B granule. A store of
  this kind is a scatter, which MTIA's Triton backend does not allow by default.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Access(NamedTuple):
    kind: str  # "empty" | "scalar" | "contiguous" | "strided" | "gather"
    useful_bytes: int  # distinct active elements x itemsize
    moved_bytes: int  # bytes the DMA engine transfers (granule-rounded)
    txns: int  # 32 B transactions of a strided/gather access (0 for block DMA)
    lo: int  # lowest active byte address
    hi: int  # one past the highest active byte
    misaligned: int  # a row start's offset from the granule (0 = aligned)
    layout_bytes: int  # bytes that need a transpose after the DMA


EMPTY = Access("empty", 0, 0, 0, 0, 0, 0, 0)


def analyze_access(ptrs: np.ndarray, mask: np.ndarray | None, itemsize: int, granule: int) -> Access:
    """Classify one block access; ``ptrs`` are byte addresses (uint64), ``mask`` the active lanes."""
    p = np.asarray(ptrs)
    if p.size == 0:
        return EMPTY
    m: np.ndarray | None = None if mask is None else np.broadcast_to(np.asarray(mask, dtype=bool), p.shape)
    if m is not None and m.all():
        m = None
    if m is not None and not m.any():
        return EMPTY
    if p.size == 1:
        addr = int(p.reshape(-1)[0])
        return Access("scalar", itemsize, granule, 1, addr, addr + itemsize, 0, 0)

    q = p.astype(np.int64)
    strides: list[int] = []
    affine = True
    for ax in range(q.ndim):
        if q.shape[ax] == 1:
            strides.append(0)
            continue
        d = np.diff(q, axis=ax)
        s0 = int(d.reshape(-1)[0])
        if not (d == s0).all():
            affine = False
            break
        strides.append(s0)

    if affine:
        # Broadcast axes (stride 0) read the same addresses again: keep one copy.
        zero_axes = tuple(ax for ax, s in enumerate(strides) if s == 0 and q.shape[ax] > 1)
        if zero_axes:
            sl = tuple(slice(0, 1) if ax in zero_axes else slice(None) for ax in range(q.ndim))
            q = q[sl]
            m = None if m is None else np.asarray(m.any(axis=zero_axes, keepdims=True))
        unit = [ax for ax, s in enumerate(strides) if s == itemsize and q.shape[ax] > 1]
        if unit:
            cax = unit[-1]
            row_len = q.shape[cax]
            counts = np.full(np.delete(q.shape, cax), row_len) if m is None else m.sum(axis=cax)
            active_rows = counts > 0
            starts = np.take(q, 0, axis=cax)[active_rows]
            row_bytes = counts[active_rows].astype(np.int64) * itemsize
            moved = int((-(-row_bytes // granule) * granule).sum())
            offs = starts % granule
            misaligned = int(offs.max()) if offs.size else 0
            if misaligned:
                moved += granule * int(active_rows.sum())
            useful = int(row_bytes.sum())
            layout = useful if cax != q.ndim - 1 and q.shape[-1] > 1 else 0
            active = q if m is None else q[m]
            lo, hi = int(active.min()), int(active.max()) + itemsize
            return Access("contiguous", useful, moved, 0, lo, hi, misaligned, layout)

    active = (q if m is None else q[m]).reshape(-1)
    lo, hi = int(active.min()), int(active.max()) + itemsize
    granules = np.unique(active // granule).size
    distinct = np.unique(active).size
    kind = "strided" if affine else "gather"
    return Access(kind, distinct * itemsize, granules * granule, granules, lo, hi, 0, 0)
