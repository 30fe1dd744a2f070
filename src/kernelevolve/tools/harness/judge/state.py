"""The judge's state for one evaluation (``Judge``: the base of every stage's mixin) and what the
worker keeps between jobs (``WorkerState``)."""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kernelevolve.problem import Problem, parse_problem
from kernelevolve.tools.harness import flags
from kernelevolve.tools.harness.candidate import CandidateProcess
from kernelevolve.tools.harness.guard import Integrity, LaunchCounter, expand_allowed
from kernelevolve.tools.harness.judge.observed import Observed


@dataclass
class WorkerState:
    target: str
    device: torch.device
    launches: LaunchCounter
    integrity: Integrity
    problems: dict[str, Problem] = field(default_factory=dict)
    shrunk: dict[tuple[str, int], dict[str, int]] = field(default_factory=dict)
    compiled: dict[tuple[str, str], Any] = field(default_factory=dict)
    other_sizes: dict[tuple[str, str], tuple[dict[str, int] | None, str]] = field(
        default_factory=dict)
    host_inputs: dict[str, bool] = field(default_factory=dict)  # problems whose inputs need the CPU
    # problem digest -> the aten ops its reference runs, and whether it writes into its inputs
    # (learnt from its first forward; only then are the inputs copied before each forward)
    ref_ops: dict[str, list[str]] = field(default_factory=dict)
    ref_writes_inputs: dict[str, bool] = field(default_factory=dict)
    # (problem digest, sizes, timing settings) -> eager/torch.compile latencies measured by an
    # earlier job: plain data, returned with the reply and kept here for the run's later jobs.
    reference_timing: dict[str, dict[str, Any]] = field(default_factory=dict)
    jobs: int = 0


class Judge:
    """One evaluation's state, which every stage reads and adds to: the job, the candidate's
    process, the seeds, the baselines' flags, the checks, errors and flags found so far."""

    def __init__(self, job: dict[str, Any], state: WorkerState,
                 close_in_candidate: tuple[int, ...] = ()) -> None:
        self.job = job
        self.state = state
        self.cfg: dict[str, Any] = job["config"]
        self.device = state.device
        self.allowed = expand_allowed(self.cfg.get("allowed_ops", []))
        self.checks: list[dict[str, Any]] = []
        self.errors: dict[int, dict[str, Any]] = {}
        self.ops_seen: set[str] = set()
        self.max_launches = 0
        self.nondeterministic = False
        self.flags: list[str] = []
        self.held = contextlib.ExitStack()  # whole_gpu, where check_fits takes it
        self.first_call_s = 0.0
        self.compile_ref_s = 0.0
        self.stages: dict[str, float] = {}
        t0 = time.perf_counter()
        self.instances: dict[str, torch.nn.Module] = {}
        # id() of a live input list -> (its buffer number in the candidate's process, the list:
        # held so the id is not reused while the buffer lives); released after use, there too.
        self.buffers: dict[int, tuple[int, list[Any]]] = {}
        self.next_buffer = 0
        self.sent: set[int] = set()  # buffers whose current values the candidate holds
        # Forked before any seed is drawn or reference built: the candidate's process holds no
        # knowledge of the inputs to come.
        self.remote = CandidateProcess(Path(job["candidate"]), self.device, state.launches,
                                       state.integrity, f"{state.jobs}", close_in_candidate)
        if self.device.type == "cuda":
            torch.cuda.init()
        # Seeds are drawn per evaluation unless the user fixes one, so a candidate cannot carry
        # answers precomputed for known inputs; they are reported, so a run can be replayed.
        seed = self.cfg.get("seed")
        self.seed = int(seed) if seed is not None else secrets.randbelow(2**31)
        # The weights (which the candidate's process receives) come from a seed of their own:
        # from them no input set's seed can be searched for. A seed the user fixes fixes both.
        self.weight_seed = (self.seed * 7919 + 17) % 2**31 if seed is not None else (
            secrets.randbelow(2**31))
        self.base_forward_s = 0.0  # the judge's own clock over a forward at the base sizes
        self.base_call_s = 0.0  # the candidate process's clock over the forward alone there
        # The baselines' flags (eval.baseline): what eager and torch.compile are timed with;
        # the other preset is timed beside them where it changes the problem's ops. The truth
        # stays TF32-off whatever they are (serve).
        self.baseline = flags.resolve(str(self.cfg.get("baseline", "defaults")),
                                      self.cfg.get("baseline_flags"))
        numeric_fp32 = all(self.baseline[k] == flags.PRESETS["fp32"][k] for k in flags.NUMERIC)
        self.other_baseline = {**flags.PRESETS["defaults" if numeric_fp32 else "fp32"],
                               "compile_mode": self.baseline["compile_mode"]}
        self.contract_passes: list[str] = []  # comparisons the precision contract passed
        # The input shapes of the problem's own size (the first set checked) and whether the
        # precision contract passed a comparison there: the user's PyTorch computes below
        # fp32 at the size it runs (compare, at other shapes).
        self.own_shapes: list[tuple[int, ...]] | None = None
        self.contract_at_own = False
        # Autotune configs in Triton's interpreter: the turn the next forward runs, and what
        # the last one ran (run_candidate).
        self.next_turn = 0
        self.last_turn = 0
        self.last_observed: Observed | None = None
        self.footprint = 0  # bytes of the largest checked sizes' inputs, outputs and weights
        self.last_forward_s = 0.0
        self.varied_floats: list[str] = []  # constructor floats the perturbed build varied
        self.stages["start"] = time.perf_counter() - t0

    @property
    def interpreted(self) -> bool:
        """Whether kernels run in Triton's interpreter here (the cpu and mtia-sim targets)."""
        return self.device.type != "cuda" and os.environ.get("TRITON_INTERPRET") == "1"

    @contextlib.contextmanager
    def stage(self, name: str):
        """Time spent in ``name`` (added up when entered again), for the result's breakdown."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.stages[name] = self.stages.get(name, 0.0) + time.perf_counter() - t0

    def check(self, name: str, passed: bool, detail: str = "", skipped: bool = False) -> None:
        self.checks.append({"name": name, "passed": passed, "detail": detail,
                            "skipped": skipped})

    def problem(self) -> Problem:
        path = self.job["problem"]
        if path not in self.state.problems:
            self.state.problems[path] = parse_problem(path)
        return self.state.problems[path]
