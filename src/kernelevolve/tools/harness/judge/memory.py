"""Device memory: how many earlier outputs a caller holds, a problem's footprint, whether its
evaluation fits the GPU (or must hold it alone), and the peaks it reached."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import torch

from kernelevolve.errors import ProblemError
from kernelevolve.problem import Problem, call_factory
from kernelevolve.tools.harness.judge.locks import whole_gpu
from kernelevolve.tools.harness.judge.state import Judge
from kernelevolve.tools.harness.timing import tensor_bytes

# run_plan: how many earlier outputs the candidate's process holds (as a caller would) and the
# judge checks unchanged after each forward: a ring of that many buffers is caught (a larger
# one by the candidate process's reference check, candidate.retained_outputs, and at any length
# by the storage check, candidate.OutputStorages: an output let go of must be freed). On a GPU
# each is a whole output (gigabytes at KernelBench's sizes).
PREVIOUS_KEPT = 4
PREVIOUS_KEPT_CUDA = 2
# previous_kept: the earlier outputs held on a GPU take at most this share of it (at
# KernelBench's sizes an output is 6-8 GB: one, not two, on an 80 GB card). A longer ring is
# caught at any length by the storage check.
PREVIOUS_SHARE = 1 / 16
# whole_gpu: an evaluation whose least hold (Footprint.least_hold) or typical peak is above
# this share of the GPU's memory holds the GPU exclusively from its first check to its verdict,
# so two such evaluations never meet on one GPU (on an H100 80GB, bench shards ran KernelBench
# 63 and 87 out of memory beside one another). Measured peaks were 4-21x the footprint, so 0.25
# keeps an evaluation past about a third of the card to itself.
WHOLE_GPU_SHARE = 0.25
# the judge's peak over the problem's footprint (inputs, outputs, weights) on that H100: 4.1-21x,
# 8x typical for footprints over 1 GiB (the larger multiples are fixed costs over small ones)
TYPICAL_PEAK = 8


@dataclass(frozen=True)
class Footprint:
    """Bytes of a problem's inputs, outputs and weights at some sizes (meta_footprint)."""

    inputs: int
    outputs: int
    weights: int

    @property
    def total(self) -> int:
        return self.inputs + self.outputs + self.weights

    @property
    def least_hold(self) -> int:
        """The least an evaluation holds on the device at once: the judge's inputs, weights,
        the reference's output and its copy of the candidate's; the candidate's process's own
        inputs, weights, output and the previous output a caller still holds."""
        return 2 * (self.inputs + self.weights) + 4 * self.outputs


def meta_footprint(problem: Problem, sizes: dict[str, int], inputs: list[Any]) -> Footprint:
    """The problem's inputs (as made on the meta device), outputs and weights at ``sizes``,
    the reference built and run on the meta device (no memory taken); outputs counted as
    large as the inputs where the reference cannot run there."""
    need = tensor_bytes(inputs)
    try:
        with torch.device("meta"):
            _, model, _ = problem.instantiate(sizes)
            with torch.no_grad():
                out = model(*inputs)
    except Exception:  # an op the meta device lacks, data-dependent shapes
        return Footprint(need, need, 0)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    weights = [t for t in (*model.parameters(), *model.buffers())]
    return Footprint(need, tensor_bytes(outs), tensor_bytes(weights))


def previous_kept(device: torch.device, out_bytes: int) -> int:
    """How many outputs the candidate's process holds as a caller would while the next forward
    runs (PREVIOUS_KEPT; on a GPU as many as fit PREVIOUS_SHARE of it, at least one)."""
    if device.type != "cuda":
        return PREVIOUS_KEPT
    total = torch.cuda.get_device_properties(device).total_memory
    return max(1, min(PREVIOUS_KEPT_CUDA, int(PREVIOUS_SHARE * total) // max(out_bytes, 1)))


class Memory(Judge):
    """Fitting the evaluation to the GPU before any check, and its memory use in the result."""

    def check_fits(self, problem: Problem, sizes: dict[str, int]) -> None:
        """On a GPU, before any check: refuse a problem whose evaluation cannot fit the
        device, with the figures (its inputs measured on the meta device, no memory taken);
        hold the GPU for the whole evaluation (``whole_gpu``) where it takes more than
        WHOLE_GPU_SHARE of it."""
        if self.device.type != "cuda":
            return
        try:
            module = problem.module(sizes)
            with torch.device("meta"):
                values = call_factory(module, "get_inputs", problem.path)
        except Exception:  # inputs the meta device cannot make: the checks find out
            return
        total = torch.cuda.get_device_properties(self.device).total_memory
        fp = meta_footprint(problem, sizes, values)
        gib = 2**30
        if fp.least_hold > total:
            raise ProblemError(
                f"this problem cannot be evaluated on this GPU: at {sizes} its inputs take "
                f"{fp.inputs / gib:.1f} GiB, its outputs {fp.outputs / gib:.1f} GiB and its "
                f"weights {fp.weights / gib:.1f} GiB, and an evaluation holds at least two "
                f"copies of the inputs and weights (the judge's and the candidate's) and four of "
                f"the outputs (the reference's, the candidate's, the judge's copy of it, the "
                f"previous one a caller holds): {fp.least_hold / gib:.1f} GiB against the "
                f"{total / gib:.1f} GiB of {torch.cuda.get_device_name(self.device)}. Shrink "
                f"its sizes (the file's module-level sizes) or use a GPU with more memory")
        if max(fp.least_hold, TYPICAL_PEAK * fp.total) > WHOLE_GPU_SHARE * total:
            self.held.enter_context(whole_gpu(self.device))
            self.check("fits this GPU", True,
                       f"its inputs, outputs and weights take {fp.total / gib:.1f} GiB; an "
                       f"evaluation holds at least {fp.least_hold / gib:.1f} GiB at once, "
                       f"typically {TYPICAL_PEAK}x its data: it held the GPU alone, from its "
                       f"first check to its verdict")

    def memory_use(self) -> dict[str, int] | None:
        """Peak device memory of the judge and (as it reports it) the candidate's process,
        and the problem's own footprint; None off the GPU."""
        if self.device.type != "cuda":
            return None
        cand = 0
        with contextlib.suppress(Exception):  # a candidate process that died tells nothing
            cand = int(self.remote.ask("memory").get("peak_bytes", 0))
        return {"footprint_bytes": int(self.footprint), "candidate_peak_bytes": cand,
                "judge_peak_bytes": int(torch.cuda.max_memory_allocated(self.device))}
