"""What the profilers found, typed, and what it means: memory-bound, compute-bound,
occupancy/latency-bound or launch-bound, with the evidence that decided it and the fraction of
the roofline attained.

Parent-side (pydantic). The worker sends one dict per instrument (``profile_jobs``); validating
them as :data:`ProfileReports` also completes them: the roofline report gains the derived
figures (arithmetic intensity, achieved rates, fractions) and the Diagnosis drawn from every
report. A stored profile validates to itself.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from kernelevolve.tools import roofline
from kernelevolve.tools.metrics import metric

# The device is idle more than half of the forward: launches and host work, not kernels, set
# its time.
LAUNCH_BUSY_MAX = 0.5
# A roof is pressed on when a resource runs at half its peak or more: ncu's throughput % of
# peak, or achieved bandwidth / FLOP rate over the measured ceilings.
ROOF_NEAR = 0.5
# Achieved occupancy below this (ncu, % of the SM's warp slots) counts as low.
LOW_OCCUPANCY = 35.0


class BoundKind(StrEnum):
    memory = "memory-bound"
    compute = "compute-bound"
    occupancy = "occupancy-bound"  # occupancy- or latency-bound: no roof is reached
    launch = "launch-bound"


# The knowledge base's playbook for each kind (kb/docs/guides).
PLAYBOOKS = {
    BoundKind.memory: "memory-bound-playbook",
    BoundKind.compute: "compute-bound-playbook",
    BoundKind.occupancy: "occupancy-latency-playbook",
    BoundKind.launch: "launch-bound-playbook",
}


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Metric(_Model):
    """One measured figure; ``kernel`` names the kernel (or kernel/scope) it is about, None for
    the whole forward."""

    name: str
    value: float
    unit: str
    source: str
    kernel: str | None = None


class KernelStat(_Model):
    """One kernel of the forward as an instrument saw it (per forward)."""

    name: str
    calls: float
    time_us: float
    registers_per_thread: float | None = None
    grid: list[int] | None = None
    block: list[int] | None = None


class Diagnosis(_Model):
    """What bounds the candidate, the evidence that decided it, how close it is to the roof."""

    kind: BoundKind
    evidence: list[str]
    roofline_fraction: float | None = None
    arithmetic_intensity: float | None = None
    instruments: list[str] = Field(default_factory=list)

    @property
    def playbook(self) -> str:
        return PLAYBOOKS[self.kind]


class ProfileReport(_Model):
    """The metrics of one instrument (torch-profiler, ncu, proton, roofline, mtia-sim). An
    instrument that could not run says why in ``unavailable``."""

    instrument: str
    unavailable: str | None = None
    metrics: list[Metric] = Field(default_factory=list)
    kernels: list[KernelStat] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    facts: dict[str, str] = Field(default_factory=dict)
    raw_files: list[str] = Field(default_factory=list)
    elapsed_s: float = 0.0
    diagnosis: Diagnosis | None = None
    # Instrument-specific data the schema does not name (the MTIA simulator's per-launch
    # reports): kept for the record, never read by the diagnosis.
    detail: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _keep_unnamed_fields(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        unnamed = {k: v for k, v in data.items() if k not in cls.model_fields}
        if not unnamed:
            return data
        named = {k: v for k, v in data.items() if k in cls.model_fields}
        return {**named, "detail": {**named.get("detail", {}), **unnamed}}

    @property
    def available(self) -> bool:
        return self.unavailable is None

    def value(self, name: str, kernel: str | None = None) -> float | None:
        for m in self.metrics:
            if m.name == name and m.kernel == kernel:
                return m.value
        return None


class _Figures:
    """Forward-level metrics of all reports, looked up by name (first instrument wins)."""

    def __init__(self, reports: list[ProfileReport]) -> None:
        self.by_name: dict[str, tuple[float, str]] = {}
        for r in reports:
            for m in r.metrics:
                if m.kernel is None:
                    self.by_name.setdefault(m.name, (m.value, r.instrument))

    def get(self, *names: str) -> float | None:
        for name in names:
            if name in self.by_name:
                return self.by_name[name][0]
        return None

    def source(self, name: str) -> str | None:
        return self.by_name[name][1] if name in self.by_name else None


def _fmt(value: float, unit: str = "") -> str:
    text = f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return f"{text} {unit}".strip()


def roofline_figures(reports: list[ProfileReport]) -> tuple[dict[str, float], list[str]]:
    """The forward's work, kernel time and the derived roofline figures, with notes on where
    each input came from."""
    f = _Figures(reports)
    notes = []
    out: dict[str, float] = {}
    kernel_time = f.get("proton_kernel_time", "tp_kernel_time")
    kernel_source = "proton" if f.get("proton_kernel_time") is not None else "torch-profiler"
    launches = f.get("proton_kernels", "tp_kernels")
    ncu_kernels = f.get("ncu_kernels")
    ncu_complete = ncu_kernels is not None and (launches is None or ncu_kernels >= launches)
    if kernel_time is None and ncu_complete:
        kernel_time, kernel_source = f.get("ncu_duration"), "ncu (replayed, cold caches)"
    if kernel_time is None:
        kernel_time, kernel_source = f.get("forward_time"), "the harness's forward time"
    if kernel_time is not None:
        out["kernel_time"] = kernel_time
        notes.append(f"kernel time from {kernel_source}")
    flops = f.get("reference_flops") or 0.0
    flops_source = "the reference's matrix products"
    if ncu_complete and f.get("ncu_fp_ops") is not None:
        flops += f.get("ncu_fp_ops") or 0.0
        flops_source += " + non-tensor FP ops counted by ncu"
    out["flops"] = flops
    nbytes = f.get("io_bytes")
    bytes_source = "inputs, parameters and outputs (a lower bound)"
    if ncu_complete and f.get("ncu_dram_bytes"):
        nbytes, bytes_source = f.get("ncu_dram_bytes"), "DRAM bytes counted by ncu"
    elif ncu_kernels is not None and not ncu_complete:
        notes.append(f"ncu profiled {ncu_kernels:.0f} of {launches:.0f} launches: its counts "
                     f"are not used for the forward's totals")
    if nbytes is not None:
        out["bytes"] = nbytes
    notes.append(f"FLOPs from {flops_source}; bytes from {bytes_source}")
    ceilings = {k: v for k in ("peak_bandwidth", "peak_tflops_bf16", "peak_tflops_tf32",
                               "peak_tflops_fp32") if (v := f.get(k)) is not None}
    dtype = next((r.facts["dtype"] for r in reports if "dtype" in r.facts), "float32")
    if nbytes is not None and kernel_time is not None:
        out.update(roofline.derive(ceilings, dtype, flops, nbytes, kernel_time))
        if "compute_fraction" in out:
            _, label = roofline.peak_tflops(ceilings, dtype, out.get("achieved_tflops"))
            notes.append(f"compute ceiling: {label} ({dtype} forward)")
    return out, notes


def diagnose(reports: list[ProfileReport], roof: dict[str, float] | None = None
             ) -> Diagnosis | None:
    """The Diagnosis that the reports support, or None when no instrument measured the device.

    Launch-bound first (the device idles most of the forward); then the roof the forward presses
    on (ncu's throughput % of peak, or the roofline fractions over the measured ceilings);
    otherwise occupancy/latency-bound, with occupancy, registers and stall reasons as evidence.
    """
    f = _Figures(reports)
    if roof is None:
        roof, _ = roofline_figures(reports)
    evidence: list[str] = []
    used: set[str] = set()

    def cite(name: str) -> None:
        if (src := f.source(name)) is not None:
            used.add(src)

    fraction = roof.get("roofline_fraction")
    intensity = roof.get("arithmetic_intensity")
    busy, busy_source = f.get("tp_gpu_busy"), "torch-profiler"
    forward_time = f.get("forward_time")
    device_time = f.get("proton_kernel_time")
    if busy is None and forward_time and device_time:
        busy, busy_source = min(1.0, device_time / forward_time), "proton"
    launches = f.get("tp_kernels", "proton_kernels", "ncu_kernels")
    overhead = f.get("launch_overhead")
    kernel_time = f.get("tp_kernel_time", "proton_kernel_time")
    # An idle device alone is not enough: the profiler's own start-up and the host prologue
    # before a single short kernel also idle it (seen on the H200: a 38 us softmax kernel "busy
    # 17%"). Launches must account for it: their measured cost at least the kernels' time, or
    # (no measured cost) several kernels with more idle time between them than work.
    gaps = f.get("tp_idle_gaps")
    launches_explain = (
        overhead is not None and launches is not None and kernel_time is not None
        and overhead * launches >= kernel_time
    ) or (
        overhead is None and launches is not None and launches >= 2
        and (gaps is None or kernel_time is None or gaps > kernel_time)
    ) or kernel_time is None
    if busy is not None and busy < LAUNCH_BUSY_MAX and launches_explain:
        evidence.append(f"the device is busy only {busy:.0%} of the forward: launches and host "
                        f"work, not kernel execution, set its time")
        used.add(busy_source)
        if launches is not None:
            mean = f.get("tp_mean_kernel_time", "proton_mean_kernel_time")
            evidence.append(f"{launches:.0f} kernel launch(es) per forward"
                            + (f", {_fmt(mean, 'us')} of device time each" if mean else ""))
        if overhead is not None and launches:
            evidence.append(f"measured launch overhead {_fmt(overhead, 'us')} per launch: about "
                            f"{_fmt(overhead * launches, 'us')} per forward from launches alone")
            cite("launch_overhead")
        syncs = f.get("tp_syncs")
        if gaps:
            evidence.append(f"device idle {_fmt(gaps, 'us')} between kernels per forward")
        if syncs:
            evidence.append(f"{syncs:.0f} host-device synchronization(s) per forward")
        return Diagnosis(kind=BoundKind.launch, evidence=evidence, roofline_fraction=fraction,
                         arithmetic_intensity=intensity, instruments=sorted(used))

    dram, memory, sm = (f.get("ncu_dram_throughput"), f.get("ncu_memory_throughput"),
                        f.get("ncu_sm_throughput"))
    mem_pct = max((v for v in (dram, memory) if v is not None), default=None)
    mem_score = max((mem_pct or 0.0) / 100, roof.get("bandwidth_fraction", 0.0))
    comp_score = max((sm or 0.0) / 100, (f.get("ncu_pipe_tensor") or 0.0) / 100,
                     roof.get("compute_fraction", 0.0))
    measured = any(v is not None for v in (mem_pct, sm, roof.get("bandwidth_fraction"),
                                           roof.get("compute_fraction")))
    if not measured:
        return None
    if mem_pct is not None:
        evidence.append(f"ncu: DRAM throughput {_fmt(dram or 0, '%')} of peak, busiest memory "
                        f"unit {_fmt(memory or 0, '%')}, SM throughput {_fmt(sm or 0, '%')}")
        used.add("ncu")
    if "bandwidth_fraction" in roof:
        evidence.append(f"achieved {_fmt(roof['achieved_bandwidth'], 'GB/s')} = "
                        f"{roof['bandwidth_fraction']:.0%} of the measured bandwidth and "
                        f"{_fmt(roof['achieved_tflops'], 'TFLOPS')} = "
                        f"{roof.get('compute_fraction', 0.0):.0%} of the measured FLOP rate")
        used.add("roofline")
    if intensity is not None and "ridge_point" in roof:
        side = "memory" if intensity < roof["ridge_point"] else "compute"
        evidence.append(f"arithmetic intensity {_fmt(intensity, 'FLOP/B')} against a ridge point "
                        f"of {_fmt(roof['ridge_point'], 'FLOP/B')}: the {side} roof applies")
    if max(mem_score, comp_score) >= ROOF_NEAR:
        kind = BoundKind.memory if mem_score >= comp_score else BoundKind.compute
        if kind is BoundKind.compute and (tensor := f.get("ncu_pipe_tensor")) is not None:
            evidence.append(f"tensor pipes {_fmt(tensor, '%')} of peak")
        if kind is BoundKind.memory and (l2 := f.get("ncu_l2_hit_rate")) is not None:
            evidence.append(f"L2 hit rate {_fmt(l2, '%')}")
        return Diagnosis(kind=kind, evidence=evidence, roofline_fraction=fraction,
                         arithmetic_intensity=intensity, instruments=sorted(used))

    evidence.append(f"no roof is pressed on (memory {mem_score:.0%}, compute {comp_score:.0%} "
                    f"of peak): too few warps or too little independent work hide the latency")
    achieved, theoretical = f.get("ncu_achieved_occupancy"), f.get("ncu_theoretical_occupancy")
    if achieved is not None:
        low = " (low)" if achieved < LOW_OCCUPANCY else ""
        evidence.append(f"achieved occupancy {_fmt(achieved, '%')}{low}"
                        + (f", theoretical {_fmt(theoretical, '%')}" if theoretical is not None
                           else ""))
    regs = f.get("ncu_registers_per_thread", "tp_registers_per_thread")
    if regs is not None:
        evidence.append(f"{regs:.0f} registers per thread")
        cite("ncu_registers_per_thread")
        cite("tp_registers_per_thread")
    limits = {name: v for name in ("registers", "shared_mem", "warps", "blocks")
              if (v := f.get(f"ncu_occupancy_limit_{name}")) is not None}
    if limits:
        limiter = min(limits, key=lambda k: limits[k])
        evidence.append(f"occupancy limited by {limiter.replace('_', ' ')}: "
                        f"{limits[limiter]:.0f} block(s) per SM")
    stalls = sorted(((m.name.removeprefix("ncu_stall_"), m.value) for r in reports
                     for m in r.metrics if m.name.startswith("ncu_stall_") and m.kernel is None
                     and m.name != "ncu_stall_selected"), key=lambda kv: -kv[1])[:3]
    if stalls:
        evidence.append("top stalls (cycles per issued instruction): " + ", ".join(
            f"{name.replace('_', ' ')} {value:.3g}" for name, value in stalls))
    if mem_pct is None:
        evidence.append("ncu did not run: occupancy and stall reasons are unconfirmed")
    return Diagnosis(kind=BoundKind.occupancy, evidence=evidence, roofline_fraction=fraction,
                     arithmetic_intensity=intensity, instruments=sorted(used))


# The instruments whose reports the roofline and the diagnosis read.
GPU_INSTRUMENTS = {"roofline", "torch-profiler", "proton", "ncu"}


def complete_profile(reports: list[ProfileReport]) -> list[ProfileReport]:
    """Add the derived roofline figures and the Diagnosis to the roofline report (once).
    Profiles of other instruments alone (the MTIA simulator) are left as they are."""
    if not any(r.instrument in GPU_INSTRUMENTS for r in reports):
        return reports
    roof_report = next((r for r in reports if r.instrument == roofline.INSTRUMENT), None)
    if roof_report is None:
        roof_report = ProfileReport(instrument=roofline.INSTRUMENT,
                                    unavailable="the roofline pass did not run")
        reports.append(roof_report)
    if roof_report.diagnosis is not None or any(m.name == "roofline_fraction"
                                                for m in roof_report.metrics):
        return reports
    figures, notes = roofline_figures(reports)
    known = {m.name for m in roof_report.metrics}
    roof_report.metrics += [Metric.model_validate(metric(k, v)) for k, v in figures.items()
                            if k not in known]
    roof_report.notes += notes
    roof_report.diagnosis = diagnose(reports, figures)
    return reports


def _as_list(value: Any) -> Any:
    return [value] if isinstance(value, dict) else value


ProfileReports = Annotated[list[ProfileReport], BeforeValidator(_as_list),
                           AfterValidator(complete_profile)]
"""The type of ``EvalResult.profile``: one report per instrument (a single report dict is
accepted as a list of one); validating worker dicts completes them."""


def diagnosis_of(reports: list[ProfileReport] | None) -> Diagnosis | None:
    """The forward's Diagnosis among a profile's reports."""
    for r in reports or []:
        if r.diagnosis is not None:
            return r.diagnosis
    return None


def render_profile(reports: list[ProfileReport], console: Any) -> None:
    """Print a profile as rich tables: the diagnosis, then each instrument's figures."""
    from rich.table import Table

    diag = diagnosis_of(reports)
    if diag is not None:
        frac = f", {diag.roofline_fraction:.0%} of the roofline" if diag.roofline_fraction else ""
        console.print(f"[bold]{diag.kind.value}[/bold]{frac}  [dim](playbook: {diag.playbook}; "
                      f"from {', '.join(diag.instruments) or 'no instrument'})[/dim]")
        for line in diag.evidence:
            console.print(f"  - {line}", highlight=False)
    for r in reports:
        title = f"{r.instrument} ({r.elapsed_s:.1f} s)"
        if not r.available:
            console.print(f"[yellow]{title}: unavailable[/yellow]: {r.unavailable}",
                          highlight=False)
            continue
        table = Table("metric", "value", "unit", title=title, title_justify="left")
        for m in r.metrics:
            if m.kernel is None:
                table.add_row(m.name, _fmt(m.value), m.unit)
        console.print(table)
        if r.kernels:
            kt = Table("kernel", "calls/forward", "us/forward", title=f"{r.instrument} kernels",
                       title_justify="left")
            for k in r.kernels[:10]:
                kt.add_row(k.name[:80], _fmt(k.calls), _fmt(k.time_us))
            console.print(kt)
        for note in r.notes:
            console.print(f"[dim]{note[:300]}[/dim]", highlight=False)
