"""The single source of metric names, units, source instruments and meanings.

Every instrument (torch profiler, ncu, proton, the MTIA simulator, the harness's own timing)
reports metrics through :func:`metric`, which refuses a name that is not declared here, so reports
from different instruments can be compared and rendered without guessing units.

Stdlib only: this module is imported inside evaluation workers.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MetricSpec:
    name: str
    unit: str
    source: str
    meaning: str


def _specs(source: str, *rows: tuple[str, str, str]) -> dict[str, MetricSpec]:
    return {name: MetricSpec(name, unit, source, meaning) for name, unit, meaning in rows}


METRICS: dict[str, MetricSpec] = {
    **_specs(
        "harness",
        ("latency_median", "ms", "median device time of one forward over the timed trials"),
        ("latency_iqr", "ms", "interquartile range of the timed trials"),
        ("latency_cv", "ratio", "coefficient of variation (stdev / mean) of the timed trials"),
        ("trials", "count", "number of timed trials"),
        ("kernel_launches", "count", "custom kernels launched by one forward"),
    ),
    **_specs(
        "mtia-sim",
        ("mtia_sim_time", "us", "simulated MTIA time of one forward (analytical model, not measured)"),
        ("mtia_sim_launches", "count", "simulated kernel launches (Triton grids and eager aten ops)"),
        ("mtia_sim_launch_share", "ratio", "share of the simulated time spent in job-launch cost"),
        ("mtia_sim_pe_occupancy", "ratio", "time-weighted fraction of PEs given at least one program"),
        ("mtia_sim_pe_balance", "ratio", "time-weighted mean / busiest PE busy time of the active PEs"),
        ("mtia_sim_dpe_util", "ratio", "dot-product engine busy time / (PEs x simulated time)"),
        ("mtia_sim_sfu_util", "ratio", "SIMD/special-function engine busy time / (PEs x simulated time)"),
        ("mtia_sim_mlu_util", "ratio", "memory-layout unit busy time / (PEs x simulated time)"),
        ("mtia_sim_re_util", "ratio", "reduction engine busy time / (PEs x simulated time)"),
        ("mtia_sim_vector_util", "ratio", "vector RISC-V core busy time / (PEs x simulated time)"),
        ("mtia_sim_dma_util", "ratio", "PE DMA engine busy time / (PEs x simulated time)"),
        ("mtia_sim_tflops", "TFLOPS", "dot FLOPs as written / simulated time"),
        ("mtia_sim_dpe_peak_fraction", "ratio", "fp16-equivalent DPE work / (chip DPE peak x simulated time)"),
        ("mtia_sim_cache_hit_rate", "ratio", "share of bytes read from the on-chip SRAM cache that hit"),
        ("mtia_sim_pe_bandwidth", "GB/s", "DMA bytes moved per PE-second of busy PE time"),
        ("mtia_sim_sram_bandwidth", "GB/s", "on-chip SRAM bytes / simulated time"),
        ("mtia_sim_dram_bandwidth", "GB/s", "DRAM bytes / simulated time"),
        ("mtia_sim_sram_traffic", "MB", "bytes moved through the on-chip SRAM by one forward"),
        ("mtia_sim_dram_traffic", "MB", "bytes moved to and from DRAM by one forward"),
        ("mtia_sim_gathered_fraction", "ratio", "share of DMA bytes moved as gather/strided transactions"),
        ("mtia_sim_tile_footprint", "KB", "largest per-program tile footprint in PE local memory"),
        ("mtia_sim_sampled_fraction", "ratio", "share of Triton programs simulated (rest extrapolated)"),
    ),
}


def register(*specs: MetricSpec) -> None:
    """Declare metrics of an instrument; a name declared twice with other facts is an error."""
    for spec in specs:
        known = METRICS.get(spec.name)
        if known is not None and known != spec:
            raise ValueError(f"metric {spec.name!r} already declared as {known}")
        METRICS[spec.name] = spec


def metric(name: str, value: float) -> dict[str, object]:
    """A JSON-ready metric record; ``name`` must be declared in :data:`METRICS`."""
    spec = METRICS.get(name)
    if spec is None:
        raise KeyError(f"undeclared metric {name!r}: declare it in kernelevolve.tools.metrics")
    return {"name": name, "value": float(value), "unit": spec.unit, "source": spec.source}
