"""The analytical chip model: work counts -> per-PE time -> chip time of each launch.

One program runs on one PE (programs are dealt to PEs round-robin by linear program id). A
program keeps seven units busy: DMA, dot-product engine, SIMD/special-function engine, memory-
layout unit, reduction engine (the *chain*: a tile's data flows through them in turn), the vector
RISC-V core that issues commands and the local memory (the *floors*: busy while the chain works,
never a step of their own). With ``stages`` pipeline stages (the trip count of its most
repeated load) the chain overlaps:

    t_program = max(max_u t_u, max_c t_c + (sum_c t_c - max_c t_c) / stages) + dispatch

so a one-shot program serialises its DMA and compute, a deeply pipelined one approaches its
busiest unit. The programs a PE runs one after another pipeline the same way (their work and
stages summed, one dispatch each) when the local memory holds the next program's first tiles
beside the current program's (``overlap``); otherwise they run back to back. A launch then takes

    t_launch = launch_cost + max(busiest PE, SRAM bytes / SRAM bw, DRAM bytes / effective DRAM bw)

with the SRAM and DRAM traffic from the LRU cache model run over the launches in order (twice
when ``warm``: the second, steady-state pass is reported).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .cache import BufferAccess, CacheTraffic, LruCache
from .generations import Generation
from .report import UNITS, LaunchReport

# Per-program work counters, in this order in every counter vector.
FIELDS = (
    "load_bytes",  # useful bytes loaded (distinct active elements)
    "store_bytes",  # useful bytes stored
    "dma_moved",  # bytes the DMA engine moves (granule-rounded)
    "dma_cmds",  # DMA commands (one per tl.load / tl.store)
    "dma_txns",  # 32 B transactions of strided / gather accesses
    "contig_bytes",  # moved bytes of block (contiguous) DMA
    "gather_bytes",  # moved bytes of strided / gather DMA
    "flops",  # dot FLOPs as written (2*M*N*K)
    "dpe_flops",  # fp16-equivalent DPE work: padded to 32x32 tiles, scaled by dtype rate
    "se_elems",  # SIMD elementwise results
    "sfu_elems",  # transcendental / division results
    "re_elems",  # elements fed to reductions and scans
    "mlu_bytes",  # bytes transposed / re-laid out
    "scalar_ops",  # scalar ops on the RISC-V core
    "block_ops",  # block ops the RISC-V core issues to an engine
    "lm_bytes",  # local-memory traffic: DMA in/out plus engine operands
)
F = {name: i for i, name in enumerate(FIELDS)}


@dataclass
class KernelRecord:
    """A launch's work, before the cache model decides its SRAM/DRAM traffic."""

    name: str
    kind: str
    grid: tuple[int, int, int]
    programs: int
    programs_simulated: int
    pe_busy: np.ndarray  # seconds per PE
    unit_busy: dict[str, float]  # seconds, summed over PEs
    totals: np.ndarray  # FIELDS summed over all programs
    accesses: list[BufferAccess]
    footprint_bytes: int = 0
    stages: int = 1
    dots: list[dict[str, object]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    illegal: list[str] = field(default_factory=list)


def unit_seconds(counts: np.ndarray, gen: Generation) -> np.ndarray:
    """Busy seconds of each unit (columns in UNITS order) for rows of FIELDS counters."""
    c = np.atleast_2d(counts)
    clk = gen.clock
    col = lambda name: c[:, F[name]]
    out = np.zeros((c.shape[0], len(UNITS)))
    out[:, 0] = (col("dma_cmds") * gen.dma_cmd_cycles.value + col("dma_txns") * gen.dma_txn_cycles.value) / clk
    out[:, 0] += col("dma_moved") / gen.dma_bw.value
    out[:, 1] = col("dpe_flops") / gen.dpe_pe_flops
    out[:, 2] = col("se_elems") / (gen.se_elems_per_cycle.value * clk)
    out[:, 2] += col("sfu_elems") / (gen.sfu_elems_per_cycle.value * clk)
    out[:, 3] = col("mlu_bytes") / (gen.mlu_bytes_per_cycle.value * clk)
    out[:, 4] = col("re_elems") / (gen.re_elems_per_cycle.value * clk)
    out[:, 5] = (col("scalar_ops") * gen.cpu_scalar_cycles.value + col("block_ops") * gen.cpu_issue_cycles.value) / clk
    out[:, 6] = col("lm_bytes") / gen.local_mem_bw.value
    return out


# The units a tile's data passes through in turn (DMA, DPE, SIMD/SFU, MLU, reduction engine);
# the RISC-V core's issue and the local memory's traffic run alongside them (floors).
CHAIN = [UNITS.index(u) for u in ("dma", "dpe", "se", "mlu", "re")]


def pipelined_seconds(units: np.ndarray, stages: np.ndarray, programs: np.ndarray | float,
                      gen: Generation) -> np.ndarray:
    """Busy time of each row of ``units`` (one program, or the programs one PE runs overlapped)
    from its pipeline depth ``stages``; ``programs`` dispatches are added."""
    chain = units[:, CHAIN]
    peak = chain.max(axis=1)
    serial = peak + (chain.sum(axis=1) - peak) / np.maximum(stages, 1)
    dispatch = gen.program_dispatch_cycles.value / gen.clock
    return np.maximum(units.max(axis=1), serial) + np.asarray(programs) * dispatch


def program_seconds(units: np.ndarray, stages: np.ndarray, gen: Generation) -> np.ndarray:
    """Time of each program from its unit busy times and its pipeline depth."""
    return pipelined_seconds(units, stages, 1.0, gen)


def pe_seconds(units: np.ndarray, stages: np.ndarray, pe_of: np.ndarray, rows: np.ndarray,
               n_pe: int, overlap: bool, gen: Generation) -> np.ndarray:
    """Busy time of each PE. Program ``i`` of the launch runs on PE ``pe_of[i]`` and does the work
    of simulated program ``rows[i]`` (``units``/``stages`` rows). Without ``overlap`` a PE runs its
    programs back to back; with it the programs' DMA and compute overlap as loop iterations do
    (the PE's work and stages summed)."""
    if not overlap:
        return np.bincount(pe_of, weights=program_seconds(units, stages, gen)[rows], minlength=n_pe)
    # count[pe, r]: how many of the PE's programs simulated program r stands for.
    count = np.bincount(pe_of * units.shape[0] + rows, minlength=n_pe * units.shape[0]).reshape(n_pe, -1)
    count = count.astype(float)
    busy = pipelined_seconds(count @ units, count @ stages, count.sum(axis=1), gen)
    return np.where(count.sum(axis=1) > 0, busy, 0.0)


def _limiting(rec: KernelRecord, launch_s: float, pe: float, sram: float, dram: float) -> str:
    parts = {"sram": sram, "dram": dram}
    if pe > 0:
        busiest_unit = max(rec.unit_busy, key=lambda u: rec.unit_busy[u])
        parts[f"pe:{busiest_unit}"] = pe
    bound = max(parts, key=lambda k: parts[k])
    return "launch" if launch_s >= parts[bound] else bound


def _launch_report(rec: KernelRecord, traffic: CacheTraffic, gen: Generation) -> LaunchReport:
    launch_s = float(gen.launch_s.value)
    pe = float(rec.pe_busy.max()) if rec.pe_busy.size else 0.0
    sram = float(traffic.sram_bytes / gen.sram_bw.value)
    dram = float(traffic.dram_bytes / gen.dram_bw_effective)
    t = rec.totals
    return LaunchReport(
        name=rec.name,
        kind=rec.kind,
        grid=rec.grid,
        programs=rec.programs,
        programs_simulated=rec.programs_simulated,
        time_s=launch_s + max(pe, sram, dram),
        launch_s=launch_s,
        pe_time_s=pe,
        pe_busy_total_s=float(rec.pe_busy.sum()),
        sram_time_s=sram,
        dram_time_s=dram,
        limiting_resource=_limiting(rec, launch_s, pe, sram, dram),
        active_pes=int(np.count_nonzero(rec.pe_busy)),
        flops=float(t[F["flops"]]),
        dpe_flops=float(t[F["dpe_flops"]]),
        bytes_loaded=float(t[F["load_bytes"]]),
        bytes_stored=float(t[F["store_bytes"]]),
        bytes_contiguous=float(t[F["contig_bytes"]]),
        bytes_gathered=float(t[F["gather_bytes"]]),
        sram_bytes=float(traffic.sram_bytes),
        sram_read_bytes=float(traffic.read_bytes),
        dram_read_bytes=float(traffic.dram_read_bytes),
        dram_write_bytes=float(traffic.dram_write_bytes),
        cache_hit_rate=float(traffic.hit_rate),
        unit_busy_s={u: float(v) for u, v in rec.unit_busy.items()},
        tile_footprint_bytes=int(rec.footprint_bytes),
        pipeline_stages=int(rec.stages),
        dots=list(rec.dots),
        warnings=list(rec.warnings),
    )


def evaluate(records: list[KernelRecord], gen: Generation, warm: bool) -> list[LaunchReport]:
    """Run the launches through the cache model and time each one."""
    cache = LruCache(gen.sram_bytes.value)
    traffic: list[CacheTraffic] = []
    for _ in range(2 if warm else 1):
        traffic = [cache.run_launch(rec.accesses) for rec in records]
    return [_launch_report(rec, tr, gen) for rec, tr in zip(records, traffic, strict=True)]
