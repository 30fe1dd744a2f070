"""Per-program work counts gathered from the interpreter's builder, and their extrapolation.

A :class:`ProgramCounter` lives for one simulated program; the builder hooks (hooks.py) call its
``on_*`` methods with the interpreter's own TensorHandles after each op ran, so counting never
changes what the interpreter computes. A :class:`LaunchRecorder` owns the counters of one launch,
chooses which programs run (sampling.py) and turns the counts into a :class:`KernelRecord`.

Tile footprint (the local-memory check) is approximated as the peak, over the program's run, of
the bytes of live floating-point block tensors that own their data (loaded tiles, dot results,
elementwise results; views, masks, index and pointer blocks excluded: MTIA's DMA descriptors do
not materialise them), plus one more copy of each repeated load's tile when the program is
pipelined (double buffering). A dot's accumulator input counts as updated in place. Liveness is
Python's: a tensor is live while the kernel holds a reference to it.
"""

from __future__ import annotations

import bisect
import weakref
from typing import Any

import numpy as np

from .access import analyze_access
from .cache import BufferAccess
from .chip import FIELDS, F, KernelRecord, pe_seconds, unit_seconds
from .generations import Generation
from .report import UNITS
from .sampling import plan_samples

LOW_PRECISION = ("fp16", "bf16")


def _itemsize(dtype: Any) -> int:
    return max(1, dtype.primitive_bitwidth // 8)


def _is_float(h: Any) -> bool:
    dtype = getattr(h, "dtype", None)
    return bool(dtype is not None and dtype.is_floating())


def _pad(n: int, tile: int) -> int:
    return -(-n // tile) * tile


class ProgramCounter:
    """Work of one Triton program, as counted from the builder calls it made."""

    def __init__(self, launch: LaunchRecorder, idx: tuple[int, int, int]) -> None:
        self.launch = launch
        self.idx = idx
        self.c = [0.0] * len(FIELDS)
        self.live = 0
        self.peak = 0
        self._tracked: dict[int, tuple[weakref.ref, int]] = {}  # handle -> (ref, buffer id)
        self._roots: dict[int, list[int]] = {}  # buffer id -> [handles, bytes]
        self.sites: dict[object, list[int]] = {}  # load site -> [count, max bytes]
        self.buffers: dict[tuple[int, bool], list[float]] = {}  # (buffer, store) -> [bytes, lo, hi]
        # Re-reads of a block this program loaded before: where it was loaded (bytes this program
        # had moved by then), and per buffer the re-read bytes that still sit in the SRAM.
        self.moved = 0.0
        self.loaded_at: dict[tuple[int, int, int, int], float] = {}
        self.near: dict[int, float] = {}
        self.dots: dict[tuple[int, int, int, str], int] = {}
        self._constants: dict[int, weakref.ref] = {}
        self._upcasts: dict[int, weakref.ref] = {}  # fp32 blocks cast from fp16/bf16

    # live-tensor bookkeeping for the tile footprint: bytes are counted per underlying buffer,
    # so a view (transpose, split, the interpreter's own wrappers) adds nothing to its base.
    def track(self, h: Any) -> None:
        data = getattr(h, "data", None)
        if not isinstance(data, np.ndarray) or data.size <= 1 or not h.dtype.is_floating():
            return
        root = data
        while isinstance(root.base, np.ndarray):
            root = root.base
        hkey, rkey = id(h), id(root)
        if hkey in self._tracked:
            return
        entry = self._roots.get(rkey)
        if entry is None:
            entry = self._roots[rkey] = [0, int(root.nbytes)]
            self.live += entry[1]
            self.peak = max(self.peak, self.live)
        entry[0] += 1

        def gone(_ref: object, hkey: int = hkey, prog: ProgramCounter = self) -> None:
            prog.consume_key(hkey)

        self._tracked[hkey] = (weakref.ref(h, gone), rkey)

    def consume_key(self, hkey: int) -> None:
        entry = self._tracked.pop(hkey, None)
        if entry is None:
            return
        root = self._roots.get(entry[1])
        if root is not None:
            root[0] -= 1
            if root[0] <= 0:
                del self._roots[entry[1]]
                self.live -= root[1]

    def consume(self, h: Any) -> None:
        """``h`` is dead from here on (a dot accumulator, updated in place on the hardware)."""
        self.consume_key(id(h))

    # memory
    def on_access(self, ptrs: Any, mask: Any, is_store: bool, site: object = None, atomic: bool = False) -> None:
        gen = self.launch.gen
        granule = int(gen.dma_granule_bytes.value)
        itemsize = _itemsize(ptrs.get_element_ty())
        acc = analyze_access(ptrs.data, None if mask is None else mask.data, itemsize, granule)
        if acc.kind == "empty":
            return
        c = self.c
        c[F["store_bytes" if is_store else "load_bytes"]] += acc.useful_bytes
        c[F["dma_moved"]] += acc.moved_bytes
        c[F["dma_cmds"]] += 1
        c[F["lm_bytes"]] += acc.moved_bytes
        c[F["mlu_bytes"]] += acc.layout_bytes
        if acc.kind in ("strided", "gather"):
            c[F["dma_txns"]] += acc.txns
            c[F["gather_bytes"]] += acc.moved_bytes
        else:
            c[F["contig_bytes"]] += acc.moved_bytes
        op = "atomic" if atomic else ("store" if is_store else "load")
        launch = self.launch
        if acc.misaligned:
            launch.flag(
                "misaligned",
                f"{launch.name}: {op} of a contiguous block starts {acc.misaligned} B past a "
                f"{granule} B boundary (program {self.idx}); MTIA DMA needs {granule}-byte-aligned block "
                "accesses (align the base pointer, row strides and tile offsets)",
            )
        if is_store and acc.kind == "gather" and not atomic and not launch.allow_scatter:
            launch.flag(
                "scatter",
                f"{launch.name}: scatter store (offsets neither affine nor contiguous, program "
                f"{self.idx}); scatter stores are off by default on MTIA",
            )
        if acc.kind in ("strided", "gather"):
            launch.warn("gather", f"{launch.name}: {acc.kind} {op}s move each element as its own {granule} B transaction")
        if acc.layout_bytes:
            launch.warn("transpose", f"{launch.name}: a {op} is contiguous only along a non-last axis: transposed by the memory-layout unit")
        buffer = launch.buffer_of(acc.lo)
        if not is_store and not atomic:
            self.reread(buffer, acc)
        self.moved += acc.moved_bytes
        key = (buffer, is_store)
        entry = self.buffers.get(key)
        if entry is None:
            self.buffers[key] = [float(acc.moved_bytes), float(acc.lo), float(acc.hi)]
        else:
            entry[0] += acc.moved_bytes
            entry[1] = min(entry[1], acc.lo)
            entry[2] = max(entry[2], acc.hi)
        if site is not None and not is_store:
            s = self.sites.get(site)
            if s is None:
                self.sites[site] = [1, acc.moved_bytes]
            else:
                s[0] += 1
                s[1] = max(s[1], acc.moved_bytes)

    def reread(self, buffer: int, acc: Any) -> None:
        """A load of the very block this program loaded before (a second pass over a row, a
        persistent loop coming back to it) hits the SRAM if the chip moved less than the SRAM
        holds in between: this program's bytes since then, times the programs running at once."""
        block = (buffer, acc.lo, acc.hi, acc.moved_bytes)
        last = self.loaded_at.get(block)
        if last is not None and (self.moved - last) * self.launch.concurrency <= self.launch.gen.sram_bytes.value:
            self.near[buffer] = self.near.get(buffer, 0.0) + acc.moved_bytes
        self.loaded_at[block] = self.moved

    # compute
    def on_dot(self, a: Any, b: Any, d: Any, out: Any) -> None:
        a_shape, b_shape = a.data.shape, b.data.shape
        m, k, n = a_shape[-2], a_shape[-1], b_shape[-1]
        batch = int(np.prod(a_shape[:-2])) if len(a_shape) > 2 else 1
        bits = a.dtype.primitive_bitwidth
        if bits == 32 and self.is_upcast(a) and self.is_upcast(b):
            # The interpreter multiplies bf16 tiles as raw integers, so candidates upcast them
            # first; the hardware would multiply the 16-bit values: cost it at that rate.
            bits = 16
            self.launch.warn("dot-upcast", f"{self.launch.name}: fp32 dot of upcast 16-bit tiles "
                             "costed at the 16-bit DPE rate")
        ratio = self.launch.gen.dpe_8bit_ratio.value if bits <= 8 else (
            1.0 if bits == 16 else self.launch.gen.dpe_fp32_ratio.value)
        c = self.c
        c[F["flops"]] += 2.0 * m * n * k * batch
        tile = int(self.launch.gen.dpe_tile.value)
        c[F["dpe_flops"]] += 2.0 * _pad(m, tile) * _pad(n, tile) * _pad(k, tile) * batch / ratio
        c[F["block_ops"]] += 1
        c[F["lm_bytes"]] += a.data.nbytes + b.data.nbytes + 2 * out.data.nbytes
        key = (int(m), int(n), int(k), a.dtype.name)
        self.dots[key] = self.dots.get(key, 0) + batch
        self.consume(d)
        self.track(out)

    def mark_constant(self, h: Any) -> None:
        self._constants[id(h)] = weakref.ref(h)

    def is_constant(self, h: Any) -> bool:
        ref = self._constants.get(id(h))
        return ref is not None and ref() is h

    def is_upcast(self, h: Any) -> bool:
        ref = self._upcasts.get(id(h))
        return ref is not None and ref() is h

    def on_elementwise(self, kind: str, name: str, args: tuple, out: Any) -> None:
        results = out if isinstance(out, tuple) else (out,)
        n = sum(getattr(r, "data", np.empty(0)).size for r in results)
        c = self.c
        if n <= 1:
            c[F["scalar_ops"]] += 1
            return
        blocks = [a for a in args if isinstance(getattr(a, "data", None), np.ndarray) and a.data.size > 1]
        if blocks and all(self.is_constant(a) for a in blocks):
            # An op on splatted constants folds to one scalar op (the compiler splats the result).
            c[F["scalar_ops"]] += 1
            for r in results:
                self.mark_constant(r)
            return
        c[F["block_ops"]] += 1
        if name in ("fp_ext", "fp_to_fp") and blocks and blocks[0].dtype.primitive_bitwidth == 16:
            for r in results:
                self._upcasts[id(r)] = weakref.ref(r)
        if kind == "se" and not any(_is_float(h) for h in (*blocks, *results)):
            # Integer/boolean block math (offsets, masks) becomes DMA descriptor parameters and
            # predication on MTIA: only its issue cost is counted.
            return
        if kind == "sfu" and name == "div" and len(args) > 1:
            # x / y with y uniform along some axes: one reciprocal per distinct y, then multiplies.
            divisor = args[1].data
            distinct = 1 if self.is_constant(args[1]) else int(np.prod(
                [dim for dim, st in zip(divisor.shape, divisor.strides, strict=True) if st != 0]))
            c[F["sfu_elems"]] += min(n, distinct)
            if distinct < n:
                c[F["se_elems"]] += n
        elif kind == "sfu":
            c[F["sfu_elems"]] += n
            dtype = getattr(args[0], "dtype", None) if args else None
            if name != "div" and dtype is not None and getattr(dtype, "name", "") in LOW_PRECISION:
                self.launch.flag(
                    "fp16-transcendental",
                    f"{self.launch.name}: {name} on {dtype.name} (program {self.idx}); MTIA's special-function "
                    "engine needs fp32 inputs: cast with .to(tl.float32) first",
                )
        elif kind == "mlu":
            c[F["mlu_bytes"]] += sum(r.data.nbytes for r in results)
        else:
            c[F["se_elems"]] += n
        operand = sum(a.data.nbytes for a in blocks)
        c[F["lm_bytes"]] += operand + sum(r.data.nbytes for r in results)
        for r in results:
            self.track(r)

    def on_layout(self, nbytes: int) -> None:
        self.c[F["mlu_bytes"]] += nbytes
        self.c[F["block_ops"]] += 1
        self.c[F["lm_bytes"]] += 2 * nbytes

    def on_reduce(self, elems: int, nbytes: int) -> None:
        if elems <= 1:
            self.c[F["scalar_ops"]] += 1
            return
        self.c[F["re_elems"]] += elems
        self.c[F["block_ops"]] += 1
        self.c[F["lm_bytes"]] += nbytes

    # summary
    def stages(self) -> int:
        return max((s[0] for s in self.sites.values()), default=1)

    def footprint(self) -> int:
        prefetch = sum(s[1] for s in self.sites.values() if s[0] > 1)
        return int(self.peak + prefetch)

    def next_program_bytes(self) -> int:
        """Local memory the next program on this PE needs to start its loads while this one
        computes: a second buffer for each load issued once (repeated loads are double-buffered
        already, see footprint)."""
        return int(sum(s[1] for s in self.sites.values() if s[0] == 1))

    def close(self) -> None:
        self._tracked.clear()
        self._roots.clear()
        self._constants.clear()
        self._upcasts.clear()
        self.loaded_at.clear()


class LaunchRecorder:
    """One Triton launch: its buffers, sample plan, simulated programs and legality findings."""

    def __init__(self, name: str, buffers: list[tuple[int, int]], gen: Generation, budget: int,
                 allow_scatter: bool, seconds: float | None = None,
                 rng: np.random.Generator | None = None) -> None:
        self.name = name
        self.rng = rng  # where the sample's interior programs are drawn (sampling.py)
        self.gen = gen
        self.budget = budget
        self.seconds = seconds
        self.allow_scatter = allow_scatter
        spans = sorted(set(buffers))
        self.starts = [s for s, _ in spans]
        self.ends = [e for _, e in spans]
        self.plan: Any = None
        self._sampled: set[tuple[int, int, int]] = set()
        self.programs: dict[int, ProgramCounter] = {}
        self.concurrency = 1  # programs running at once (one per PE, at most the grid)
        self.illegal: dict[str, str] = {}
        self.warnings: dict[str, str] = {}

    def flag(self, key: str, message: str) -> None:
        self.illegal.setdefault(key, message)

    def warn(self, key: str, message: str) -> None:
        self.warnings.setdefault(key, message)

    def buffer_of(self, addr: int) -> int:
        i = bisect.bisect_right(self.starts, addr) - 1
        return i if i >= 0 and addr < self.ends[i] else -1

    def begin_program(self, idx: tuple[int, int, int], grid: tuple[int, int, int]) -> ProgramCounter | None:
        """A counter for program ``idx`` if it is to be simulated, else None (skip it).

        The first program (0, 0, 0) always runs; the sample plan is made after it, when its
        interpreter time tells how many programs fit the time budget.
        """
        if self.plan is not None and tuple(idx) not in self._sampled:
            return None
        gx, gy, gz = grid
        self.concurrency = max(1, min(self.gen.n_pe, gx * gy * gz))
        counter = ProgramCounter(self, tuple(idx))  # type: ignore[arg-type]
        self.programs[idx[0] + gx * (idx[1] + gy * idx[2])] = counter
        return counter

    def end_program(self, grid: tuple[int, int, int], elapsed_s: float) -> None:
        if self.plan is not None:
            return
        budget = self.budget
        if self.seconds is not None and elapsed_s > 0:
            corners = 2 ** sum(1 for g in grid if g > 1)  # always simulated: edges differ most
            budget = min(budget, max(corners, int(self.seconds / elapsed_s)))
        self.plan = plan_samples(tuple(grid), budget, self.rng)  # type: ignore[arg-type]
        self._sampled = self.plan.sampled()

    def finish(self, grid: tuple[int, int, int]) -> KernelRecord:
        gen = self.gen
        n_pe = gen.n_pe
        n_programs = grid[0] * grid[1] * grid[2]
        ids = np.array(sorted(self.programs), dtype=np.int64)
        warnings = dict(self.warnings)
        if n_programs == 0 or ids.size == 0:
            return KernelRecord(self.name, "triton", grid, n_programs, 0, np.zeros(n_pe),
                                {u: 0.0 for u in UNITS}, np.zeros(len(FIELDS)), [],
                                warnings=list(warnings.values()), illegal=list(self.illegal.values()))
        if self.plan is None:
            self.end_program(grid, 0.0)
        counters = [self.programs[int(i)] for i in ids]
        counts = np.array([p.c for p in counters])
        stages = np.array([p.stages() for p in counters])
        units = unit_seconds(counts, gen)
        rows = np.searchsorted(ids, self.plan.representatives())
        weights = np.bincount(rows, minlength=ids.size).astype(float)
        footprints = [p.footprint() for p in counters]
        local = int(gen.local_mem_bytes.value)
        overlap = all(f + p.next_program_bytes() <= local for f, p in zip(footprints, counters, strict=True))
        pe_busy = pe_seconds(units, stages, np.arange(n_programs) % n_pe, rows, n_pe, overlap, gen)
        unit_busy = dict(zip(UNITS, (weights @ units).tolist(), strict=True))
        totals = weights @ counts

        accesses: dict[tuple[int, bool], list[float]] = {}  # (buffer, store) -> [bytes, lo, hi, near]
        dots: dict[tuple[int, int, int, str], float] = {}
        for w, p in zip(weights, counters, strict=True):
            for buf, (nbytes, lo, hi) in p.buffers.items():
                acc = accesses.setdefault(buf, [0.0, lo, hi, 0.0])
                acc[0] += w * nbytes
                acc[1], acc[2] = min(acc[1], lo), max(acc[2], hi)
                if not buf[1]:
                    acc[3] += w * p.near.get(buf[0], 0.0)
            for shape, count in p.dots.items():
                dots[shape] = dots.get(shape, 0.0) + w * count
        buffer_accesses = [
            BufferAccess(int(lo), int(hi), float(min(hi - lo, req)), float(req), store,
                         float(min(near, req - min(hi - lo, req))))
            for (_, store), (req, lo, hi, near) in sorted(accesses.items(), key=lambda kv: kv[0][1])
        ]
        worst = int(np.argmax(footprints))
        if footprints[worst] > local:
            self.flag(
                "local-memory",
                f"{self.name}: tile footprint {footprints[worst] / 1024:.0f} KB exceeds the "
                f"{local // 1024} KB local memory of a PE (program {counters[worst].idx}); use smaller tiles",
            )
        for m, n, k, dtype in dots:
            if dtype not in ("fp16", "bf16") and not dtype.startswith("fp8") and dtype != "int8":
                warnings.setdefault("dot-dtype", f"{self.name}: {dtype} dot runs at "
                                    f"{gen.dpe_fp32_ratio.value:g}x the fp16/bf16 DPE rate")
            tile = int(gen.dpe_tile.value)
            padded = _pad(m, tile) * _pad(n, tile) * _pad(k, tile)
            if padded > m * n * k:
                warnings.setdefault("dot-pad", f"{self.name}: dot {m}x{n}x{k} pads to {tile}x{tile} DPE tiles "
                                    f"({1 - m * n * k / padded:.0%} of the DPE work wasted)")
        if n_programs < n_pe:
            warnings.setdefault("occupancy", f"{self.name}: grid of {n_programs} programs leaves "
                                f"{n_pe - n_programs} of {n_pe} PEs idle")
        if ids.size < n_programs:
            warnings.setdefault("sampled", f"{self.name}: simulated {ids.size} of {n_programs} programs "
                                "and extrapolated")
        for p in counters:
            p.close()
        return KernelRecord(
            name=self.name,
            kind="triton",
            grid=grid,
            programs=n_programs,
            programs_simulated=int(ids.size),
            pe_busy=pe_busy,
            unit_busy=unit_busy,
            totals=totals,
            accesses=buffer_accesses,
            footprint_bytes=int(max(footprints)),
            stages=int(stages.max()),
            dots=[{"m": m, "n": n, "k": k, "dtype": dt, "count": float(c)} for (m, n, k, dt), c in dots.items()],
            warnings=list(warnings.values()),
            illegal=list(self.illegal.values()),
        )
