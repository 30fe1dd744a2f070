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
    **_specs(
        "torch-profiler",
        ("tp_kernels", "count", "device kernels launched by one forward (median over profiled forwards)"),
        ("tp_kernel_time", "us", "summed device time of the forward's kernels"),
        ("tp_mean_kernel_time", "us", "mean device time of one of the forward's kernels"),
        ("tp_forward_time", "us", "host start of the forward to the end of its last kernel"),
        ("tp_gpu_busy", "ratio", "device time covered by the forward's kernels / tp_forward_time"),
        ("tp_first_kernel_delay", "us", "host start of the forward to the start of its first kernel"),
        ("tp_idle_gaps", "us", "summed device idle time between consecutive kernels of the forward"),
        ("tp_max_idle_gap", "us", "longest device idle time between two kernels of the forward"),
        ("tp_launch_api_time", "us", "mean host time of one kernel-launch API call"),
        ("tp_syncs", "count", "host-device synchronizations in one forward (synchronize calls, "
                              "blocking copies, .item())"),
        ("tp_memcpys", "count", "device memory copies and memsets in one forward"),
        ("tp_registers_per_thread", "count", "registers per thread of the longest kernel (CUPTI)"),
        ("tp_est_occupancy", "%", "CUPTI's estimated achieved occupancy of the longest kernel"),
    ),
    **_specs(
        "ncu",
        ("ncu_kernels", "count", "kernels of one forward that ncu profiled"),
        ("ncu_duration", "us", "summed gpu__time_duration of the profiled kernels "
                               "(cold caches, replayed)"),
        ("ncu_dram_throughput", "%", "DRAM throughput as % of peak (time-weighted over kernels)"),
        ("ncu_memory_throughput", "%", "busiest memory unit (DRAM, L2, L1) as % of its peak"),
        ("ncu_sm_throughput", "%", "SM (compute) throughput as % of peak"),
        ("ncu_achieved_occupancy", "%", "active warps per active cycle / maximum warps per SM"),
        ("ncu_theoretical_occupancy", "%", "occupancy the launch configuration allows"),
        ("ncu_warps_active", "warps", "active warps per scheduler per active cycle"),
        ("ncu_issue_active", "%", "cycles in which a scheduler issued an instruction"),
        ("ncu_l1_hit_rate", "%", "L1/TEX sector hit rate"),
        ("ncu_l2_hit_rate", "%", "L2 sector hit rate"),
        ("ncu_registers_per_thread", "count", "registers per thread (the longest kernel)"),
        ("ncu_shared_mem_per_block", "KB", "static + dynamic shared memory per block "
                                           "(the longest kernel)"),
        ("ncu_block_size", "count", "threads per block (the longest kernel)"),
        ("ncu_grid_size", "count", "blocks in the grid (the longest kernel)"),
        ("ncu_waves_per_sm", "count", "waves of blocks per SM (the longest kernel)"),
        ("ncu_occupancy_limit_registers", "count", "blocks per SM the registers allow"),
        ("ncu_occupancy_limit_shared_mem", "count", "blocks per SM the shared memory allows"),
        ("ncu_occupancy_limit_warps", "count", "blocks per SM the warp slots allow"),
        ("ncu_occupancy_limit_blocks", "count", "blocks per SM the block slots allow"),
        ("ncu_dram_bytes", "MB", "bytes read from and written to DRAM by the profiled kernels"),
        ("ncu_fp_ops", "GFLOP", "non-tensor floating-point operations counted by SASS "
                                "(FMA = 2) in the profiled kernels"),
        ("ncu_inst_executed", "count", "warp instructions executed by the profiled kernels"),
        ("ncu_pipe_fma", "%", "FMA pipe (FP32, IMAD) utilization, % of peak"),
        ("ncu_pipe_alu", "%", "ALU pipe (integer, logic, FP32 compare) utilization, % of peak"),
        ("ncu_pipe_fp16", "%", "FP16 pipe utilization, % of peak"),
        ("ncu_pipe_fp64", "%", "FP64 pipe utilization, % of peak"),
        ("ncu_pipe_tensor", "%", "tensor pipes (HMMA, GMMA, IMMA, ...) utilization, % of peak "
                                 "(busiest of instructions issued and cycles active)"),
        ("ncu_pipe_lsu", "%", "load/store unit pipe utilization, % of peak"),
        ("ncu_pipe_xu", "%", "transcendental and conversion unit (XU) utilization, % of peak"),
        ("ncu_pipe_branch", "%", "branch unit (CBU, ADU) utilization, % of peak"),
        ("ncu_pipe_uniform", "%", "uniform datapath utilization, % of peak"),
        *((f"ncu_stall_{reason}", "cycles/inst", f"warp cycles per issued instruction stalled: "
                                                  f"{meaning}") for reason, meaning in (
            ("long_scoreboard", "waiting on L1TEX (global, local, texture) data"),
            ("short_scoreboard", "waiting on MIO (shared memory, special math) data"),
            ("barrier", "waiting at a block barrier"),
            ("membar", "waiting on a memory barrier"),
            ("mio_throttle", "MIO instruction queue full"),
            ("lg_throttle", "local/global memory instruction queue full"),
            ("tex_throttle", "texture unit queue full"),
            ("math_pipe_throttle", "math pipe busy"),
            ("wait", "fixed-latency dependency"),
            ("not_selected", "eligible, another warp was picked"),
            ("selected", "issuing"),
            ("no_instruction", "instruction cache miss or branch target"),
            ("branch_resolving", "branch target computation"),
            ("dispatch_stall", "dispatcher stall"),
            ("drain", "draining memory stores at exit"),
            ("imc_miss", "immediate constant cache miss"),
            ("misc", "other reasons"),
            ("sleeping", "sleeping or yielding"),
            ("tmem", "waiting on tensor memory"),
            ("gmma", "waiting on warpgroup MMA"),
        )),
    ),
    **_specs(
        "proton",
        ("proton_kernels", "count", "kernel launches of one forward seen by Proton"),
        ("proton_kernel_time", "us", "summed device time of one forward's kernels (Proton, CUPTI)"),
        ("proton_mean_kernel_time", "us", "mean device time of one kernel launch"),
        ("proton_kernel_calls", "count", "launches of this kernel in one forward"),
        ("proton_flops", "GFLOP", "FLOPs one forward's kernels declare in their launch metadata"),
        ("proton_bytes", "MB", "bytes one forward's kernels declare in their launch metadata"),
        ("proton_scope_cycles", "cycles", "cycles inside an intra-kernel scope (instrumentation)"),
    ),
    **_specs(
        "roofline",
        ("peak_bandwidth", "GB/s", "device memory bandwidth measured once per device (large copy)"),
        ("peak_tflops_bf16", "TFLOPS", "bf16 matrix-product rate measured once per device"),
        ("peak_tflops_tf32", "TFLOPS", "fp32 matrix-product rate with TF32 tensor cores, "
                                       "measured once per device"),
        ("peak_tflops_fp32", "TFLOPS", "fp32 (no TF32) matrix-product rate measured once per device"),
        ("launch_overhead", "us", "host time of one tiny Triton kernel launch, measured once per device"),
        ("reference_flops", "GFLOP", "matrix-product FLOPs of the reference's forward "
                                     "(torch's FlopCounterMode: mm, bmm, convolution, attention)"),
        ("io_bytes", "MB", "bytes of one forward's inputs, parameters and outputs (the least "
                           "any implementation moves)"),
        ("forward_time", "us", "time of one forward used for the roofline (see its source note)"),
        ("kernel_time", "us", "device time of one forward's kernels used for the roofline"),
        ("flops", "GFLOP", "FLOPs of one forward: matrix products of the reference (counted by "
                           "torch's FlopCounterMode) plus non-tensor FP ops counted by ncu"),
        ("bytes", "MB", "bytes moved by one forward: DRAM bytes counted by ncu, else the "
                        "inputs and outputs (a lower bound)"),
        ("arithmetic_intensity", "FLOP/B", "flops / bytes"),
        ("ridge_point", "FLOP/B", "arithmetic intensity where the memory and compute roofs meet"),
        ("achieved_bandwidth", "GB/s", "bytes / kernel_time"),
        ("achieved_tflops", "TFLOPS", "flops / kernel_time"),
        ("bandwidth_fraction", "ratio", "achieved_bandwidth / peak_bandwidth"),
        ("compute_fraction", "ratio", "achieved_tflops / the peak for the forward's dtype"),
        ("roofline_fraction", "ratio", "attained performance / the roofline at this arithmetic "
                                       "intensity, over kernel_time"),
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
