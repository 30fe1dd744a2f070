"""Which programs of a large grid to simulate, and which simulated program stands for each other one.

A stratified product design: along every grid axis we keep the first and the last index (edge
programs see different masks) and one interior index per stratum (evenly spaced strata; with an
``rng``, the judge's, a random index within each, so no program is safe from being simulated:
a kernel wrong in one program the fixed design never picks is found with the probability of
its stratum's size); the simulated programs are the Cartesian product of those indices, at most
``budget`` of them. Each unsimulated program is
represented by the sample with the nearest interior index along every axis (the first and last
indices stand only for themselves), so a launch's totals and its per-PE loads are sums over all
programs of their representative's counts.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np


def _axis_counts(grid: tuple[int, int, int], budget: int) -> list[int]:
    counts = [1, 1, 1]
    while True:
        best, best_ratio = -1, 1.0
        total = counts[0] * counts[1] * counts[2]
        for ax in range(3):
            if counts[ax] >= grid[ax]:
                continue
            if total // counts[ax] * (counts[ax] + 1) > budget:
                continue
            ratio = grid[ax] / counts[ax]
            if ratio > best_ratio:
                best, best_ratio = ax, ratio
        if best < 0:
            return counts
        counts[best] += 1


def _axis_samples(size: int, k: int, rng: np.random.Generator | None = None) -> np.ndarray:
    if k >= size:
        return np.arange(size)
    if k == 1:
        return np.array([0]) if rng is None else rng.integers(0, size, 1)
    if rng is None or k == 2:
        return np.unique(np.round(np.linspace(0, size - 1, k)).astype(np.int64))
    # the interior 1 .. size-2 cut into k-2 strata of (nearly) equal length, one draw in each
    edges = np.round(np.linspace(1, size - 1, k - 1)).astype(np.int64)
    inner = [int(rng.integers(lo, hi)) for lo, hi in zip(edges[:-1], edges[1:], strict=True)
             if hi > lo]
    return np.unique(np.array([0, *inner, size - 1], dtype=np.int64))


def _axis_representatives(size: int, samples: np.ndarray) -> np.ndarray:
    """For each index along an axis, the index of the sample (position in ``samples``) standing for it."""
    idx = np.arange(size)
    if samples.size == size:
        return idx
    interior = [i for i, s in enumerate(samples) if 0 < s < size - 1]
    if not interior:
        rep = np.zeros(size, dtype=np.int64)
    else:
        centers = samples[interior]
        mids = (centers[:-1] + centers[1:]) / 2.0
        rep = np.asarray(interior)[np.searchsorted(mids, idx, side="right")]
    for i, s in enumerate(samples):
        if s in (0, size - 1):
            rep[s] = i
    return rep


@dataclass(frozen=True)
class SamplePlan:
    grid: tuple[int, int, int]
    axis_samples: tuple[np.ndarray, np.ndarray, np.ndarray]
    axis_reps: tuple[np.ndarray, np.ndarray, np.ndarray]

    @property
    def programs(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def is_full(self) -> bool:
        return all(s.size == g for s, g in zip(self.axis_samples, self.grid, strict=True))

    def sampled(self) -> set[tuple[int, int, int]]:
        xs, ys, zs = self.axis_samples
        return {(int(x), int(y), int(z)) for x, y, z in itertools.product(xs, ys, zs)}

    def representatives(self) -> np.ndarray:
        """For every program (linear id = x + gx*(y + gy*z)), the linear id of its representative."""
        gx, gy, _ = self.grid
        xs, ys, zs = self.axis_samples
        rx, ry, rz = self.axis_reps
        sx, sy, sz = xs[rx], ys[ry], zs[rz]
        lin = sx[:, None, None] + gx * (sy[None, :, None] + gy * sz[None, None, :])
        return np.ascontiguousarray(lin.transpose(2, 1, 0)).reshape(-1)


def plan_samples(grid: tuple[int, int, int], budget: int,
                 rng: np.random.Generator | None = None) -> SamplePlan:
    """The sampled programs of a ``grid`` launch when at most ``budget`` may be simulated;
    ``rng``: interior programs drawn at random within their strata (else evenly spaced)."""
    if budget < 1:
        raise ValueError("max_programs_per_launch must be at least 1")
    counts = _axis_counts(grid, budget)
    samples = tuple(_axis_samples(g, k, rng) for g, k in zip(grid, counts, strict=True))
    reps = tuple(_axis_representatives(g, s) for g, s in zip(grid, samples, strict=True))
    return SamplePlan(grid, samples, reps)  # type: ignore[arg-type]
