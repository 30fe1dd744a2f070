"""What the simulator hands back: per-launch reports, the forward's SimReport, and its metrics.

Plain dataclasses (the evaluation worker imports this without pydantic); ``to_dict()`` gives the
JSON form. Every report carries ``simulated=True``: these are model outputs, not measurements.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from kernelevolve.tools.metrics import metric

from .generations import Generation

UNITS = ("dma", "dpe", "se", "mlu", "re", "cpu", "lm")
UNIT_NAMES = {
    "dma": "DMA engine",
    "dpe": "dot-product engine",
    "se": "SIMD/special-function engine",
    "mlu": "memory-layout unit",
    "re": "reduction engine",
    "cpu": "vector RISC-V core",
    "lm": "PE local memory",
}


class MtiaIllegalKernel(Exception):
    """A kernel that MTIA could not run (misaligned DMA, fp16 transcendental, tile too large, scatter)."""

    def __init__(self, reasons: list[str]) -> None:
        self.reasons = list(reasons)
        super().__init__("kernel cannot run on MTIA (simulated): " + "; ".join(self.reasons))


@dataclass
class LaunchReport:
    """One kernel launch (a Triton grid, or one eager aten op) as the simulated chip runs it."""

    name: str
    kind: str  # "triton" | "aten"
    grid: tuple[int, int, int]
    programs: int
    programs_simulated: int
    time_s: float
    launch_s: float
    pe_time_s: float  # busiest PE
    pe_busy_total_s: float  # summed over PEs
    sram_time_s: float
    dram_time_s: float
    limiting_resource: str
    active_pes: int
    flops: float
    dpe_flops: float  # fp16-equivalent DPE work after padding to 32x32 tiles
    bytes_loaded: float
    bytes_stored: float
    bytes_contiguous: float
    bytes_gathered: float
    sram_bytes: float
    sram_read_bytes: float
    dram_read_bytes: float
    dram_write_bytes: float
    cache_hit_rate: float
    unit_busy_s: dict[str, float]
    tile_footprint_bytes: int
    pipeline_stages: int
    dots: list[dict[str, object]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    simulated: bool = True

    def to_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


@dataclass
class SimReport:
    """The simulated cost of one forward on one MTIA generation."""

    gen: str
    time_s: float
    launches: list[LaunchReport]
    metrics: list[dict[str, object]]
    limiting_resource: str
    warnings: list[str]
    simulated: bool = True

    def to_dict(self) -> dict[str, object]:
        return {
            "gen": self.gen,
            "time_s": self.time_s,
            "launches": [launch.to_dict() for launch in self.launches],
            "metrics": list(self.metrics),
            "limiting_resource": self.limiting_resource,
            "warnings": list(self.warnings),
            "simulated": self.simulated,
        }


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else 0.0


def build_report(launches: list[LaunchReport], gen: Generation, warnings: list[str]) -> SimReport:
    """Aggregate launch reports into the forward's report and its Insight-style metrics."""
    total = sum(launch.time_s for launch in launches)
    n_pe = gen.n_pe
    busy = {u: sum(launch.unit_busy_s.get(u, 0.0) for launch in launches) for u in UNITS}
    pe_capacity = n_pe * total
    kernel_time = sum(launch.time_s - launch.launch_s for launch in launches)
    occupancy = _ratio(sum(launch.active_pes / n_pe * launch.time_s for launch in launches), total)
    balance = _ratio(
        sum(_ratio(launch.pe_busy_total_s, launch.pe_time_s * launch.active_pes) * launch.time_s
            for launch in launches),
        total,
    )
    flops = sum(launch.flops for launch in launches)
    dpe_fp16 = sum(launch.dpe_flops for launch in launches)
    moved = sum(launch.bytes_contiguous + launch.bytes_gathered for launch in launches)
    gathered = sum(launch.bytes_gathered for launch in launches)
    reads = sum(launch.sram_read_bytes for launch in launches)
    hits = sum(launch.sram_read_bytes * launch.cache_hit_rate for launch in launches)
    sram = sum(launch.sram_bytes for launch in launches)
    dram = sum(launch.dram_read_bytes + launch.dram_write_bytes for launch in launches)
    pe_busy = sum(launch.pe_busy_total_s for launch in launches)
    footprint = max((launch.tile_footprint_bytes for launch in launches), default=0)
    simulated = sum(launch.programs_simulated for launch in launches if launch.kind == "triton")
    programs = sum(launch.programs for launch in launches if launch.kind == "triton")
    metrics = [
        metric("mtia_sim_time", total * 1e6),
        metric("mtia_sim_launches", len(launches)),
        metric("mtia_sim_launch_share", _ratio(total - kernel_time, total)),
        metric("mtia_sim_pe_occupancy", occupancy),
        metric("mtia_sim_pe_balance", balance),
        metric("mtia_sim_dpe_util", _ratio(busy["dpe"], pe_capacity)),
        metric("mtia_sim_sfu_util", _ratio(busy["se"], pe_capacity)),
        metric("mtia_sim_mlu_util", _ratio(busy["mlu"], pe_capacity)),
        metric("mtia_sim_re_util", _ratio(busy["re"], pe_capacity)),
        metric("mtia_sim_vector_util", _ratio(busy["cpu"], pe_capacity)),
        metric("mtia_sim_dma_util", _ratio(busy["dma"], pe_capacity)),
        metric("mtia_sim_tflops", _ratio(flops, total) / 1e12),
        metric("mtia_sim_dpe_peak_fraction", _ratio(dpe_fp16, total * gen.dpe_chip_flops.value)),
        metric("mtia_sim_cache_hit_rate", _ratio(hits, reads) if reads > 0 else 1.0),
        metric("mtia_sim_pe_bandwidth", _ratio(moved, pe_busy) / 1e9),
        metric("mtia_sim_sram_bandwidth", _ratio(sram, total) / 1e9),
        metric("mtia_sim_dram_bandwidth", _ratio(dram, total) / 1e9),
        metric("mtia_sim_sram_traffic", sram / 1e6),
        metric("mtia_sim_dram_traffic", dram / 1e6),
        metric("mtia_sim_gathered_fraction", _ratio(gathered, moved)),
        metric("mtia_sim_tile_footprint", footprint / 1024),
        metric("mtia_sim_sampled_fraction", _ratio(simulated, programs) if programs else 1.0),
    ]
    by_limit: dict[str, float] = {}
    for launch in launches:
        by_limit[launch.limiting_resource] = by_limit.get(launch.limiting_resource, 0.0) + launch.time_s
    limiting = max(by_limit, key=lambda k: by_limit[k]) if by_limit else "launch"
    return SimReport(gen.name, total, launches, metrics, limiting, warnings)
