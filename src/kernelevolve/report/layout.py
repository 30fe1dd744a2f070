"""Geometry of the report's pictures, computed in Python: the search tree laid out as a tree
(leaves side by side, a parent centred over its children) and the axes of the speedup chart."""

from __future__ import annotations

import math
from dataclasses import dataclass

from kernelevolve.graph.search import ROOT, SearchTree


def tree_layout(tree: SearchTree) -> dict[str, tuple[float, int]]:
    """Each node's (column, depth): leaves take consecutive columns in depth-first order
    (children in creation order), a parent sits at the mean column of its children."""
    kids: dict[str, list[str]] = {nid: [] for nid in tree.nodes}
    for node in tree.nodes.values():
        if node.parent is not None and node.parent in kids:
            kids[node.parent].append(node.id)
    roots = [n.id for n in tree.nodes.values() if n.parent is None or n.parent not in kids]
    roots.sort(key=lambda nid: (nid != ROOT, nid))
    pos: dict[str, tuple[float, int]] = {}
    next_col = 0.0
    # Iterative post-order: a long chain of inherit steps may be deeper than Python's stack.
    for root in roots:
        stack: list[tuple[str, int, bool]] = [(root, 0, False)]
        while stack:
            nid, depth, expanded = stack.pop()
            children = sorted(kids[nid])
            if not children:
                pos[nid] = (next_col, depth)
                next_col += 1
            elif expanded:
                cols = [pos[c][0] for c in children]
                pos[nid] = ((min(cols) + max(cols)) / 2, depth)
            else:
                stack.append((nid, depth, True))
                stack.extend((c, depth + 1, False) for c in reversed(children))
    return pos


def nice_ticks(hi: float, lo: float = 0.0, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi] (steps of 1, 2 or 5 times a power of ten)."""
    span = hi - lo
    if span <= 0 or not math.isfinite(span):
        return [lo]
    raw = span / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    ticks = []
    v = first
    while v <= hi + step * 1e-9:
        ticks.append(round(v, 10))
        v += step
    return ticks


@dataclass(frozen=True)
class Axis:
    """A linear map from data values to pixels."""

    lo: float
    hi: float
    start: float
    end: float

    def __call__(self, v: float) -> float:
        if self.hi == self.lo:
            return self.start
        return self.start + (v - self.lo) / (self.hi - self.lo) * (self.end - self.start)
