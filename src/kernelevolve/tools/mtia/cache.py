"""The on-chip SRAM as an LRU, write-back, write-allocate cache in front of DRAM.

Tracked at a coarse chunk granularity (64 KiB, a modelling choice, not the hardware line size) so
a forward touching hundreds of MB stays cheap. Each chunk remembers how many of its bytes are valid
and dirty; capacity is counted in valid bytes. A read of a missing chunk costs DRAM reads; a
write allocates without reading (kernels overwrite whole lines); evicting a dirty chunk costs DRAM
writes. Accesses of one launch are interleaved in up to 32 slices per buffer, the order in which
a grid of programs sweeps its buffers.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

CHUNK = 64 * 1024
MAX_SLICES = 32


@dataclass(frozen=True)
class BufferAccess:
    """What one launch does to one buffer: a byte span, how much of it, how often."""

    lo: int
    hi: int
    unique_bytes: float  # distinct bytes touched (<= hi - lo)
    requested_bytes: float  # bytes moved through the SRAM, re-reads included
    is_write: bool
    # re-reads of blocks the same program loaded shortly before (still resident: hits)
    near_bytes: float = 0.0


@dataclass
class CacheTraffic:
    sram_bytes: float = 0.0
    read_bytes: float = 0.0
    hit_bytes: float = 0.0
    dram_read_bytes: float = 0.0
    dram_write_bytes: float = 0.0

    @property
    def dram_bytes(self) -> float:
        return self.dram_read_bytes + self.dram_write_bytes

    @property
    def hit_rate(self) -> float:
        return self.hit_bytes / self.read_bytes if self.read_bytes > 0 else 1.0


class LruCache:
    def __init__(self, capacity_bytes: float, chunk: int = CHUNK) -> None:
        self.capacity = float(capacity_bytes)
        self.chunk = chunk
        self.lines: OrderedDict[int, list[float]] = OrderedDict()  # chunk -> [valid, dirty]
        self.resident = 0.0

    def _insert(self, key: int, valid: float, dirty: float) -> float:
        self.lines[key] = [valid, dirty]
        self.resident += valid
        return self._evict()

    def _evict(self) -> float:
        written = 0.0
        while self.resident > self.capacity and len(self.lines) > 1:
            _, (v, d) = self.lines.popitem(last=False)
            self.resident -= v
            written += d
        return written

    def _touch(self, lo: float, hi: float, density: float, write: bool, t: CacheTraffic) -> None:
        c0, c1 = int(lo) // self.chunk, (int(hi) - 1) // self.chunk
        for c in range(c0, c1 + 1):
            a, b = max(lo, c * self.chunk), min(hi, (c + 1) * self.chunk)
            nbytes = (b - a) * density
            if nbytes <= 0:
                continue
            line = self.lines.get(c)
            if line is not None:
                self.lines.move_to_end(c)
                valid = min(float(self.chunk), max(line[0], nbytes))
                self.resident += valid - line[0]
                line[0] = valid
                t.dram_write_bytes += self._evict() if self.resident > self.capacity else 0.0
                if write:
                    line[1] = min(line[0], line[1] + nbytes)
                else:
                    t.hit_bytes += nbytes
                continue
            if write:
                t.dram_write_bytes += self._insert(c, nbytes, nbytes)
            else:
                t.dram_read_bytes += nbytes
                t.dram_write_bytes += self._insert(c, nbytes, 0.0)

    def run_launch(self, accesses: list[BufferAccess]) -> CacheTraffic:
        """Apply one launch's accesses; the traffic it caused on the SRAM and on DRAM."""
        t = CacheTraffic()
        footprint = sum(a.unique_bytes for a in accesses)
        plans = []
        for a in accesses:
            span = max(a.hi - a.lo, 1)
            density = min(1.0, a.unique_bytes / span)
            slices = max(1, min(MAX_SLICES, int(span // self.chunk)))
            plans.append((a, density, slices))
            t.sram_bytes += a.requested_bytes
            if not a.is_write:
                t.read_bytes += a.requested_bytes
        for i in range(max((s for _, _, s in plans), default=0)):
            for a, density, slices in plans:
                if i >= slices:
                    continue
                span = a.hi - a.lo
                lo = a.lo + span * i / slices
                hi = a.lo + span * (i + 1) / slices
                self._touch(lo, hi, density, a.is_write, t)
        # Re-reads within the launch: a program's re-read of a block it loaded moments before
        # hits (its reuse distance was measured); other re-reads (tiles read by many programs)
        # hit while the launch's footprint fits, and beyond that a proportional share misses.
        near = sum(a.near_bytes for a in accesses if not a.is_write)
        reuse = sum(max(0.0, a.requested_bytes - a.unique_bytes - a.near_bytes)
                    for a in accesses if not a.is_write)
        miss_share = max(0.0, 1.0 - self.capacity / footprint) if footprint > 0 else 0.0
        t.dram_read_bytes += reuse * miss_share
        t.hit_bytes += near + reuse * (1.0 - miss_share)
        return t
