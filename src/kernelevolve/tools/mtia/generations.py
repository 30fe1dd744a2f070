"""The simulated MTIA generations: every constant of the model, each with its source.

A constant either cites a public source (the ISCA papers that describe each generation, as quoted
in the issue that asked for this simulator) or says ``estimate: <why>``. Nothing else in the
simulator holds a hardware number; MODEL.md renders this table.

Units are SI (bytes, seconds, hertz, FLOP/s); "KB"/"MB" in the papers are read as KiB/MiB.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

KIB = 1024
MIB = 1024 * 1024

V1 = "MTIA v1, ISCA 2023"
V2I = "MTIA 2i, ISCA 2025"
V300 = "MTIA 300, ISCA 2026"


@dataclass(frozen=True)
class Const:
    """One model constant: its value, unit and where it comes from (a citation or an estimate)."""

    value: float
    unit: str
    source: str

    @property
    def is_estimate(self) -> bool:
        return self.source.startswith("estimate")

    def to_dict(self) -> dict[str, object]:
        return {"value": self.value, "unit": self.unit, "source": self.source}


def _est(why: str) -> str:
    return f"estimate: {why}"


@dataclass(frozen=True)
class Generation:
    """One MTIA generation as the analytical model sees it (all fields are :class:`Const`)."""

    name: str
    title: str
    pe_rows: Const
    pe_cols: Const
    clock_hz: Const
    local_mem_bytes: Const
    local_mem_bw: Const
    dpe_chip_flops: Const
    dpe_tile: Const
    dpe_fp32_ratio: Const
    dpe_8bit_ratio: Const
    se_elems_per_cycle: Const
    sfu_elems_per_cycle: Const
    re_elems_per_cycle: Const
    mlu_bytes_per_cycle: Const
    cpu_issue_cycles: Const
    cpu_scalar_cycles: Const
    dma_bw: Const
    dma_cmd_cycles: Const
    dma_txn_cycles: Const
    dma_granule_bytes: Const
    sram_bytes: Const
    sram_bw: Const
    dram_bw: Const
    dram_ecc_overhead: Const
    launch_s: Const
    program_dispatch_cycles: Const

    @property
    def n_pe(self) -> int:
        return int(self.pe_rows.value * self.pe_cols.value)

    @property
    def clock(self) -> float:
        return self.clock_hz.value

    @property
    def dpe_pe_flops(self) -> float:
        """fp16/bf16 dense FLOP/s of one PE's dot-product engine."""
        return self.dpe_chip_flops.value / self.n_pe

    @property
    def dram_bw_effective(self) -> float:
        return self.dram_bw.value * (1.0 - self.dram_ecc_overhead.value)

    def constants(self) -> dict[str, Const]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.type in ("Const", Const)}

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"name": self.name, "title": self.title, "simulated": True}
        out["constants"] = {k: c.to_dict() for k, c in self.constants().items()}
        return out


def _common(clock: float, sram_bw: float, n_pe: int, cite_se: str, cite_tile: str) -> dict[str, Const]:
    """Constants whose value no paper gives: shared estimates, scaled where a rate is known."""
    return {
        "dpe_tile": Const(32, "elements", cite_tile),
        "dpe_fp32_ratio": Const(0.25, "x fp16 rate", _est("fp32 dots run as multi-pass bf16; 1/4 of the fp16 rate")),
        "dpe_8bit_ratio": Const(2.0, "x fp16 rate", _est("int8/fp8 MACs at twice the fp16 rate, usual for MAC arrays")),
        "se_elems_per_cycle": Const(32, "elements/cycle", cite_se),
        "sfu_elems_per_cycle": Const(8, "elements/cycle", _est("transcendentals take ~4 SIMD cycles per 32-wide vector")),
        "re_elems_per_cycle": Const(32, "elements/cycle", _est("reduction engine consumes one SIMD-width vector per cycle")),
        "mlu_bytes_per_cycle": Const(64, "bytes/cycle", _est("memory-layout unit moves 64 B per cycle")),
        "cpu_issue_cycles": Const(4, "cycles/block op", _est("vector RISC-V core issues one engine command in ~4 cycles")),
        "cpu_scalar_cycles": Const(1, "cycles/op", _est("one scalar RISC-V instruction per scalar Triton op")),
        "dma_bw": Const(2.0 * sram_bw / n_pe, "B/s", _est("per-PE DMA = twice the PE's fair share of on-chip SRAM bandwidth")),
        "dma_cmd_cycles": Const(32, "cycles/command", _est("DMA descriptor setup and completion per tl.load/tl.store")),
        "dma_txn_cycles": Const(2, "cycles/transaction", _est("extra cost of each 32 B transaction of a gather/strided DMA")),
        "dma_granule_bytes": Const(32, "bytes", "MTIA Triton backend (all generations): accesses must be 32-byte aligned"),
        "program_dispatch_cycles": Const(100, "cycles/program", _est("firmware starts one Triton program on a PE")),
    }


def _gen_v1() -> Generation:
    clock, sram_bw, n_pe = 0.8e9, 0.8e12, 64
    return Generation(
        name="v1",
        title="MTIA v1 (simulated)",
        pe_rows=Const(8, "PEs", f"{V1}: 8x8 grid of PEs"),
        pe_cols=Const(8, "PEs", f"{V1}: 8x8 grid of PEs"),
        clock_hz=Const(clock, "Hz", f"{V1}: 800 MHz"),
        local_mem_bytes=Const(128 * KIB, "bytes", f"{V1}: 128 KB local memory per PE"),
        local_mem_bw=Const(1.0e12 * 0.8 / 1.35, "B/s", _est("2i's 1.0 TB/s scaled by clock (0.8/1.35)")),
        dpe_chip_flops=Const(51.2e12, "FLOP/s", f"{V1}: 51.2 TFLOPS fp16/bf16"),
        sram_bytes=Const(128 * MIB, "bytes", f"{V1}: 128 MB on-chip SRAM"),
        sram_bw=Const(sram_bw, "B/s", f"{V1}: SRAM 0.8 TB/s"),
        dram_bw=Const(176e9, "B/s", f"{V1}: LPDDR5 176 GB/s"),
        dram_ecc_overhead=Const(0.125, "fraction", _est("same LPDDR5 ECC cost as 2i (10-15%, midpoint)")),
        launch_s=Const(1e-6, "s", _est("job launch as on 2i (<1 us); no v1 figure")),
        **_common(clock, sram_bw, n_pe, _est("SIMD width of 2i (~32 elements/cycle) assumed for v1"),
                  _est("32x32 MAC tiles as on 2i")),
    )


def _gen_2i() -> Generation:
    clock, sram_bw, n_pe = 1.35e9, 2.7e12, 64
    return Generation(
        name="2i",
        title="MTIA 2i (simulated)",
        pe_rows=Const(8, "PEs", f"{V2I}: 8x8 grid of PEs"),
        pe_cols=Const(8, "PEs", f"{V2I}: 8x8 grid of PEs"),
        clock_hz=Const(clock, "Hz", f"{V2I}: 1.35 GHz"),
        local_mem_bytes=Const(384 * KIB, "bytes", f"{V2I}: 384 KB local memory per PE"),
        local_mem_bw=Const(1.0e12, "B/s", f"{V2I}: local memory 1.0 TB/s per PE"),
        dpe_chip_flops=Const(177e12, "FLOP/s", f"{V2I}: 177 TFLOPS fp16/bf16 (~2.76 TFLOPS per PE)"),
        sram_bytes=Const(256 * MIB, "bytes", f"{V2I}: 256 MB on-chip SRAM usable as cache"),
        sram_bw=Const(sram_bw, "B/s", f"{V2I}: SRAM 2.7 TB/s"),
        dram_bw=Const(204.8e9, "B/s", f"{V2I}: LPDDR5 204.8 GB/s"),
        dram_ecc_overhead=Const(0.125, "fraction", f"{V2I}: ECC costs 10-15% of DRAM bandwidth (midpoint)"),
        launch_s=Const(1e-6, "s", f"{V2I}: job launch under 1 us (upper bound used)"),
        **_common(clock, sram_bw, n_pe, f"{V2I}: SIMD/special-function engine ~32 elements/cycle",
                  f"{V2I}: two 32x32 MAC tiles per dot-product engine"),
    )


def _gen_300() -> Generation:
    clock, sram_bw, n_pe = 1.9e9, 11.4e12, 72
    return Generation(
        name="300",
        title="MTIA 300 (simulated)",
        pe_rows=Const(12, "PEs", f"{V300}: 12x6 grid of PEs"),
        pe_cols=Const(6, "PEs", f"{V300}: 12x6 grid of PEs"),
        clock_hz=Const(clock, "Hz", f"{V300}: 1.9 GHz"),
        local_mem_bytes=Const(512 * KIB, "bytes", f"{V300}: 512 KB local memory per PE"),
        local_mem_bw=Const(1.4e12, "B/s", _est("2i's 1.0 TB/s scaled by clock (1.9/1.35)")),
        dpe_chip_flops=Const(560e12, "FLOP/s", f"{V300}: 560 TFLOPS bf16"),
        sram_bytes=Const(192 * MIB, "bytes", f"{V300}: 192 MB on-chip cache"),
        sram_bw=Const(sram_bw, "B/s", f"{V300}: cache 11.4 TB/s"),
        dram_bw=Const(6.1e12, "B/s", f"{V300}: HBM 6.1 TB/s"),
        dram_ecc_overhead=Const(0.0, "fraction", _est("HBM ECC assumed free (no published cost)")),
        launch_s=Const(1e-6, "s", _est("job launch as on 2i (<1 us); no 300 figure")),
        **_common(clock, sram_bw, n_pe, _est("SIMD width of 2i (~32 elements/cycle) assumed for 300"),
                  _est("32x32 MAC tiles as on 2i")),
    )


GENERATIONS: dict[str, Generation] = {"2i": _gen_2i(), "v1": _gen_v1(), "300": _gen_300()}
DEFAULT_GENERATION = "2i"


def get_generation(gen: str | Generation) -> Generation:
    """The generation named ``gen`` ("2i", "v1", "300"; an "mtia-sim:" prefix is accepted)."""
    if isinstance(gen, Generation):
        return gen
    key = gen.split(":", 1)[1] if gen.startswith("mtia-sim:") else gen
    try:
        return GENERATIONS[key]
    except KeyError:
        raise ValueError(f"unknown MTIA generation {gen!r}; known: {', '.join(GENERATIONS)}") from None


def constants_markdown() -> str:
    """The constants of every generation as a Markdown table (MODEL.md embeds this verbatim)."""
    gens = list(GENERATIONS.values())
    lines = ["| constant | unit | " + " | ".join(g.name for g in gens) + " | source |",
             "|---|---|" + "---|" * len(gens) + "---|"]
    for key, const in gens[0].constants().items():
        values = [f"{g.constants()[key].value:.4g}" for g in gens]
        sources = list(dict.fromkeys(g.constants()[key].source for g in gens))
        lines.append(f"| {key} | {const.unit} | " + " | ".join(values) + " | " + "; ".join(sources) + " |")
    return "\n".join(lines)
