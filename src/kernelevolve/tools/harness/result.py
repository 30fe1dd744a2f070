"""EvalResult: what an evaluation found, typed. Built in the parent from the worker's reply."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kernelevolve.tools.diagnosis import ProfileReports


class EvalStatus(StrEnum):
    ok = "ok"
    compile_error = "compile_error"
    runtime_error = "runtime_error"
    timeout = "timeout"
    mismatch = "mismatch"
    cheat = "cheat"
    crash = "crash"


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Check(_Model):
    name: str
    passed: bool
    detail: str = ""
    skipped: bool = Field(False, description="not run; ``detail`` says why")


class OutputError(_Model):
    """The worst error seen on one output across all checked input sets."""

    index: int
    shape: list[int]
    dtype: str
    max_abs_error: float
    max_rel_error: float
    atol: float
    rtol: float
    mismatched: int
    total: int


class Latency(_Model):
    median_ms: float
    mean_ms: float
    stdev_ms: float
    iqr_ms: float
    min_ms: float
    max_ms: float
    cv: float
    trials: int


class OtherBaseline(_Model):
    """The references timed under the other preset's flags (PyTorch defaults beside fp32, or
    fp32 beside the defaults), and the candidate's speedups against them."""

    flags: dict[str, Any] = Field(default_factory=dict)
    baseline: str = Field("", description="the flags in words")
    eager: Latency
    compiled: Latency | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_compiled: float | None = None
    same_ops: bool = Field(
        False, description="no op of the problem reads the flags that differ: the baselines' "
                           "own latencies stand for both")


class Timing(_Model):
    """Latencies of the candidate and the references, timed in the same worker, interleaved.
    The references ran under ``baseline_flags`` (eval.baseline); the truth the candidate was
    checked against never does (it is computed with TF32 off)."""

    candidate: Latency
    eager: Latency
    compiled: Latency | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_compiled: float | None = None
    compile_error: str | None = None
    sizes: dict[str, int] = Field(default_factory=dict)
    simulated: bool = False
    references_reused: bool = Field(
        False, description="eager/torch.compile latencies measured by an earlier evaluation of "
                           "the run at these sizes and timing settings, not beside this candidate")
    traffic_bytes: int | None = Field(
        None, description="bytes of every input read once and every output written once")
    copy_bandwidth_gbs: float | None = Field(
        None, description="this device's device-to-device copy bandwidth, measured (GB/s)")
    roofline_beyond_l2: bool = Field(
        False, description="the traffic is at least 4x the L2 cache, so the memory roofline "
                           "is a real floor (below that, data may stay in cache)")
    eager_roofline: float | None = Field(
        None, description="fraction of the memory roofline eager reaches: traffic_bytes at the "
                          "copy bandwidth over eager's median (1.0: moves no byte twice)")
    candidate_roofline: float | None = Field(
        None, description="the same fraction for the candidate")
    baseline_flags: dict[str, Any] = Field(
        default_factory=dict, description="the flags eager and torch.compile ran with")
    baseline: str = Field("", description="those flags in words, e.g. 'PyTorch defaults (cuDNN "
                                          "TF32 on, matmul 'highest')'")
    other_baseline: OtherBaseline | None = None
    wall_per_call_ms: float | None = Field(
        None, description="the judge's own wall clock over forwards back to back (fixed inputs, "
                          "no cache flush), per forward: what bounds the reported median")

    def speedup_line(self) -> str:
        """``1.10x vs eager, 1.05x vs torch.compile at PyTorch defaults (...); 3.40x / 3.1x at
        fp32 (...)``: both baselines where they differ."""
        def pair(e: float | None, c: float | None) -> str:
            return (f"{e:.2f}x vs eager" if e else "-") + (
                f", {c:.2f}x vs torch.compile" if c else "")
        text = pair(self.speedup_vs_eager, self.speedup_vs_compiled)
        if self.baseline:
            text += f" at {self.baseline}"
        other = self.other_baseline
        if other is not None and not other.same_ops:
            text += (f"; {pair(other.speedup_vs_eager, other.speedup_vs_compiled)} at "
                     f"{other.baseline}")
        return text


class Precision(_Model):
    """The precision contract a verdict was reached under (``eval.precision``)."""

    contract: str = Field(description="'baseline' or 'fp32'")
    factor: float = 3.0
    baseline: str = Field("", description="the flags of the baseline whose error is the bound")
    inexact_ops: list[str] = Field(
        default_factory=list, description="the problem's ops the baseline computes below fp32 "
                                          "(empty: the fp32 rule alone decided)")
    passed_under_it: list[str] = Field(
        default_factory=list, description="comparisons the fp32 rule refused and the contract "
                                          "passed, with their figures (the first few)")
    why: str = Field("", description="why the fp32 rule alone decided, where it did")

    def summary(self) -> str:
        if self.contract != "baseline" or not self.inexact_ops:
            return f"the fp32 rule ({self.why or 'eval.precision is fp32'})"
        how = (f"{len(self.passed_under_it)} comparison(s) passed within {self.factor:g}x the "
               f"baseline's error" if self.passed_under_it else "every comparison passed the "
               "fp32 rule")
        return (f"baseline: {self.baseline} computes {', '.join(self.inexact_ops)} below fp32; "
                f"a kernel's error may be {self.factor:g}x its error ({how})")


class MemoryUse(_Model):
    """Peak device memory of an evaluation's two processes, against the problem's own data."""

    footprint_bytes: int = Field(0, description="the timed sizes' inputs, outputs and weights")
    judge_peak_bytes: int = Field(0, description="the judge's peak allocated device memory")
    candidate_peak_bytes: int = Field(
        0, description="the candidate process's, as it reports it (a hint, not evidence)")

    @property
    def judge_multiple(self) -> float | None:
        return self.judge_peak_bytes / self.footprint_bytes if self.footprint_bytes else None


class EvalResult(_Model):
    """The verdict on one candidate. ``status == ok`` only for a verified candidate."""

    status: EvalStatus
    message: str = ""
    stderr_tail: str = ""
    target: str = ""
    device: str = ""
    problem: str = ""
    candidate: str = ""
    checks: list[Check] = Field(default_factory=list)
    errors: list[OutputError] = Field(default_factory=list)
    timing: Timing | None = None
    not_timed_reason: str | None = None
    nondeterministic: bool = False
    flags: list[str] = Field(default_factory=list)
    aten_ops: list[str] = Field(default_factory=list)
    kernel_launches: int = 0
    elapsed_s: float = 0.0
    first_call_s: float = 0.0
    compile_reference_s: float = 0.0
    overhead_s: float = 0.0
    stages: dict[str, float] = Field(
        default_factory=dict,
        description="seconds per stage: static, start (processes, CUDA), import, correctness "
                    "(its first call includes the Triton compile: first_call_s), gpu compile, "
                    "timing, re-verify, profile")
    versions: dict[str, str] = Field(default_factory=dict)
    profile: ProfileReports | None = None
    precision: Precision | None = None
    memory: MemoryUse | None = None

    @property
    def ok(self) -> bool:
        return self.status is EvalStatus.ok

    def stage_summary(self) -> str:
        """``static 0.01 s · start 0.6 s · ... · correctness 3.1 s (first call 1.2 s)``."""
        parts = []
        for name, seconds in self.stages.items():
            part = f"{name} {seconds:.2f} s"
            if name == "correctness" and self.first_call_s:
                part += f" (first call {self.first_call_s:.2f} s)"
            if name == "timing" and self.compile_reference_s:
                part += f" (torch.compile {self.compile_reference_s:.2f} s)"
            parts.append(part)
        return " · ".join(parts)

    @property
    def speedup(self) -> float | None:
        return self.timing.speedup_vs_eager if self.timing else None


KEEP_REFERENCE_BELOW = 0.95  # a best kernel slower than a reference by more than 5% is no win


def reference_advice(node: str | None, vs_eager: float | None,
                     vs_compiled: float | None) -> str | None:
    """"keep eager" or "keep torch.compile" (the faster of the two) where the best kernel
    ``node`` runs at less than ``KEEP_REFERENCE_BELOW`` of it; None where the kernel holds its
    own or nothing was timed."""
    refs = [(v, k) for k, v in (("eager", vs_eager), ("torch.compile", vs_compiled))
            if v is not None]
    if not refs:
        return None
    speedup, name = min(refs)
    if speedup >= KEEP_REFERENCE_BELOW:
        return None
    return (f"keep {name}: it runs {1 / speedup:.2f}x faster than the best kernel "
            f"({node}, {speedup:.2f}x of it)")
