"""The evaluation worker and the judge: a subprocess that evaluates candidates against a problem
(import -> correctness on fresh inputs, other shapes and other values -> GPU compile on the
interpreter targets -> runtime anti-cheat -> timing).

Run as ``python -m kernelevolve.tools.harness.worker --fd-in R --fd-out W --target T``. Requests
and replies are JSON lines on those two pipes; stdout and stderr go to the worker's log, which
the parent tails. The worker imports only torch, triton, numpy and the standard library, so it
runs on any GPU host as it is.

Three processes per job, and the one that stays runs no candidate code: the worker imports torch
and triton once, installs the launch counter and the interpreter's bounds checks, and forks a
**judge** for every job (copy-on-write: milliseconds). The judge (``Evaluation``) forks the
**candidate process** (candidate.py) before it draws seeds or builds the reference, then holds
the reference, its outputs, the tolerances and the rules, and sends the verdict back to the
worker; the candidate process only runs forwards. Both exit with the job, so whatever a candidate
did to its process (module globals rebound, torch switches flipped, a poisoned CUDA context, a
segfault) dies with it, and no process that ran a candidate judges another one. CUDA is
initialised in the judge and the candidate process only (a CUDA context does not survive a
fork). Plain data the judge worked out about the problem (shrunk and other sizes) comes back
with the reply and is kept for the next job.

A reply is a dict shaped like ``EvalResult`` (validated by the parent). ``"fatal": true`` is
kept for the parent's bookkeeping; the worker itself is unaffected by its children's fate.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import functools
import importlib.util
import json
import math
import os
import platform
import secrets
import sys
import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kernelevolve.errors import ProblemError
from kernelevolve.problem import (
    Problem,
    call_factory,
    parse_problem,
)
from kernelevolve.tools.harness import compare, flags
from kernelevolve.tools.harness.candidate import (
    CandidateProcess,
    Verdict,
    exit_description,
    fork_child,
    read_note,
    tb_tail,
)
from kernelevolve.tools.harness.guard import (
    ALLOWED_ATEN_OPS,
    Integrity,
    InterpreterBounds,
    LaunchCounter,
    OpRecorder,
    expand_allowed,
)
from kernelevolve.tools.harness.timing import (
    InputVariation,
    Latency,
    copy_bandwidth,
    tensor_bytes,
    time_interleaved,
)


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


@dataclass
class Plan:
    """One family of shapes to check at: the sizes, the seeds, and what to check there."""

    label: str
    sizes: dict[str, int]
    seeds: list[int]
    determinism: bool = False
    pointer_reuse: bool = False


# check_wall_clock: forwards worth this many milliseconds of claimed time are timed by wall
# clock; the claim may be below that per forward by (factor, ms per call, ms per request).
WALL_TARGET_MS = 200.0
# On an H100 (2026-12-07, 32 level-1 convolutions of 0.4-38 ms) the judge's wall clock per
# forward was 0.99-1.10x the reported median; a factor of 2 let a forged 1.9x through.
WALL_SLACK = (1.25, 0.3, 5.0)
# check_memory_floor: a kernel may stream this much faster than a measured copy; the floor
# holds where the traffic is at least this many times the L2 cache.
FLOOR_MARGIN = 1.3
FLOOR_MIN_L2 = 4
# run_plan: how many earlier outputs the candidate's process holds (as a caller would) and the
# judge checks unchanged after each forward: a ring of that many buffers is caught (a larger
# one by the candidate process's reference check, candidate.retained_outputs, and at any length
# by the storage check, candidate.OutputStorages: an output let go of must be freed). On a GPU
# each is a whole output (gigabytes at KernelBench's sizes).
PREVIOUS_KEPT = 4
# plans: on the interpreter targets the size furthest below its real value once at that value
# (or as near as fits), the others shrunk until inputs and parameters hold at most this many
# times eval.cpu_max_elements. The interpreter's cost grows with the programs too: 8x made a
# row softmax's correctness checks 4x slower, a layer norm's 10x.
REAL_SIZE_BUDGET = 2
REAL_SIZE_PLANS = 1
REAL_SIZE_MAX_S = 30.0
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
_whole_gpu_held = False  # this process holds the GPU for a whole evaluation (whole_gpu)
# check_many_calls: after the other checks, a run of forwards at the base sizes whose length
# the candidate cannot predict, then a checked one (a kernel right only for its first N calls,
# a "time bomb", is caught wherever N is below the run). The length is MANY_CALLS_SCALE / u for
# u uniform in (0, 1] (P(length >= n) = SCALE / n: no length is safe to wait for), capped by a
# time budget: MANY_CALLS_SHARE of the evaluation so far, at most MANY_CALLS_MAX_S,
# divided by one forward's time at the base sizes. MANY_CALLS_SAMPLES of the run's outputs are
# checked too (a kernel wrong only for a while).
MANY_CALLS_SCALE = 16
MANY_CALLS_SHARE = 0.1
MANY_CALLS_MAX_S = 2.0
MANY_CALLS_SAMPLES = 2
MANY_CALLS_MAX = 4096


@contextlib.contextmanager
def gpu_lock(device: torch.device, shared: bool = False):
    """This physical GPU, across every worker on the host (several workers may share a GPU:
    ``eval.workers_per_gpu``, and several runs a machine): exclusive while anything is timed,
    shared while a job runs anything else on it (correctness checks, the GPU compile), so a
    timing never overlaps another process's GPU work and untimed work still overlaps itself.
    (With timings alone serialised, two KernelBench runs on one H200 measured a 1-D
    convolution at 0.55x of eager beside another run's correctness checks and 1.13x alone.)
    An advisory lock on a file named by the device's UUID (or its visible index); a process
    holding it shared must release it before asking for it exclusive."""
    if device.type != "cuda" or _whole_gpu_held:
        yield
        return
    try:
        name = str(torch.cuda.get_device_properties(device).uuid)
    except (AttributeError, RuntimeError):
        name = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]
    with file_lock(Path(os.environ.get("KERNELEVOLVE_LOCK_DIR", "/tmp"))
                   / f"kernelevolve-gpu-{name}.lock", shared):
        yield


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


@contextlib.contextmanager
def whole_gpu(device: torch.device):
    """``gpu_lock`` exclusive for a whole evaluation: this process's own gpu_lock calls inside
    pass straight through (they would wait on its own lock), every other process's wait."""
    global _whole_gpu_held
    with gpu_lock(device):
        release_cached_memory()
        _whole_gpu_held = True
        try:
            yield
        finally:
            _whole_gpu_held = False


@contextlib.contextmanager
def file_lock(path: Path, shared: bool = False):
    """An advisory ``flock`` on ``path``: shared (many holders) or exclusive (one, and no shared
    holder). Requests queue at a gate (``path`` + ".gate", held only while asking): one waiting
    for the lock exclusively holds the gate, so shared requests that come after it wait behind
    it instead of overlapping one another forever (flock alone lets them pass a waiting
    exclusive request)."""
    import fcntl

    gate = path.with_name(path.name + ".gate")
    with open(gate, "a") as g, open(path, "a") as f:
        fcntl.flock(g, fcntl.LOCK_EX)
        try:
            fcntl.flock(f, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        finally:
            fcntl.flock(g, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _strided_copy(t: torch.Tensor) -> torch.Tensor:
    """The same values in non-contiguous memory: the last two dims transposed in storage (a
    vector: every other element of a buffer twice as long)."""
    if t.dim() >= 2 and t.shape[-1] > 1 and t.shape[-2] > 1:
        return t.transpose(-1, -2).contiguous().transpose(-1, -2)
    if t.dim() >= 1 and t.numel() > 1:
        wide = torch.empty((*t.shape[:-1], 2 * t.shape[-1]), dtype=t.dtype, device=t.device)
        view = wide[..., ::2]
        view.copy_(t)
        return view
    return t


def _reversed_layout(t: torch.Tensor) -> torch.Tensor:
    """The same values with every dim's stride other than a contiguous tensor's: the dims laid
    out in reverse order (the first fastest), so a kernel that ignores any stride, an outer
    one included, reads the wrong elements."""
    if t.dim() < 2 or sum(s > 1 for s in t.shape) < 2:
        return _strided_copy(t)
    order = list(range(t.dim()))[::-1]
    return t.permute(order).contiguous().permute(order)


def vary_floats(values: list[Any], gen: torch.Generator) -> tuple[list[Any], list[str]]:
    """``values`` (constructor arguments) with every non-zero float (at the top level or in a
    list or tuple) times a random factor in [0.6, 1.6], and what changed: a kernel that
    hard-codes a constructor's ``divide_value`` or ``scale`` then differs from the reference."""
    changed: list[str] = []

    def vary(v: Any, where: str) -> Any:
        if isinstance(v, float) and v != 0.0 and math.isfinite(v):
            new = v * (0.6 + float(torch.rand((), generator=gen)))
            changed.append(f"{where} {v:g} -> {new:g}")
            return new
        if isinstance(v, list | tuple) and not isinstance(v, str):
            return type(v)(vary(x, f"{where}[{i}]") for i, x in enumerate(v))
        return v

    return [vary(v, f"argument {i}") for i, v in enumerate(values)], changed


def names_read(cls: type) -> set[str]:
    """The global names the functions defined in ``cls`` (and the classes it derives from in
    the same module) read, nested functions and comprehensions included."""
    names: set[str] = set()

    def walk(code: types.CodeType) -> None:
        names.update(code.co_names)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                walk(const)

    for klass in cls.__mro__:
        if klass.__module__ != cls.__module__:
            continue
        for value in vars(klass).values():
            funcs = ([value.fget, value.fset] if isinstance(value, property)
                     else [getattr(value, "__func__", value)])
            for func in funcs:
                code = getattr(func, "__code__", None)
                if isinstance(code, types.CodeType):
                    walk(code)
    return names


def release_cached_memory() -> None:
    """Hand the CUDA caching allocator's free blocks back to the driver: an input set at
    KernelBench's sizes is gigabytes, and blocks this process keeps cached after freeing it are
    memory another worker on the same GPU cannot have (two bench shards on one H200 ran out of
    memory once the NaN and infinity input sets raised each judge's peak)."""
    if torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def _to_device(values: list[Any], device: torch.device) -> list[Any]:
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


class Evaluation:
    """One candidate against one problem on this worker's target: the judge's side.

    The judge never imports the candidate. It forks the candidate process first
    (candidate.CandidateProcess), then draws the seeds, builds the reference, makes the inputs,
    computes the expected outputs and compares; the candidate process only runs forwards."""

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
        self.last_observed: _Observed | None = None
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

    # -- plumbing ---------------------------------------------------------------------------
    def check(self, name: str, passed: bool, detail: str = "", skipped: bool = False) -> None:
        self.checks.append({"name": name, "passed": passed, "detail": detail,
                            "skipped": skipped})

    def problem(self) -> Problem:
        path = self.job["problem"]
        if path not in self.state.problems:
            self.state.problems[path] = parse_problem(path)
        return self.state.problems[path]

    def base_sizes(self, problem: Problem) -> dict[str, int]:
        if self.device.type == "cuda":
            return dict(problem.sizes)
        return self.shrunk(problem, int(self.cfg["cpu_max_elements"]))

    def shrunk(self, problem: Problem, budget: int) -> dict[str, int]:
        """``problem.shrink_sizes(budget)``, kept by the worker for later jobs."""
        key = (problem.digest, budget)
        if key not in self.state.shrunk:
            self.state.shrunk[key] = problem.shrink_sizes(budget)
        return dict(self.state.shrunk[key])

    def build(self, problem: Problem, sizes: dict[str, int], perturb: bool = False
              ) -> tuple[Any, torch.nn.Module, str]:
        """The problem module at ``sizes``, the reference model and the key of the candidate's
        instance. When the constructor arguments are those of an earlier plan, the same
        instances are reused, so state a candidate keeps between calls is exercised. The
        candidate gets a copy of the reference's weights: nothing it does reaches these.
        ``perturb``: another pair whose floating parameters moved away from their initial
        values (by their own spread, at least 0.1), its floating buffers too (non-negative ones,
        a running variance, scaled and kept positive), built with its float constructor arguments
        varied (``vary_floats``; as given where the varied ones are refused)."""
        module, ref, init_inputs = problem.instantiate(sizes, self.weight_seed)
        if perturb:
            varied, changed = vary_floats(init_inputs, torch.Generator().manual_seed(
                self.seed + 2450))
            if changed:
                try:
                    torch.manual_seed(self.seed)
                    ref, init_inputs = module.Model(*varied), varied
                    self.varied_floats = changed
                except Exception:  # the problem's own constructor refuses them: as given
                    self.varied_floats = []
        # A Model whose methods read module-level sizes (``layer_norm(x, (size_0,))``) is
        # another model at other sizes even when its constructor's arguments are the same.
        read = sorted(names_read(type(ref)) & sizes.keys())
        key = (repr(init_inputs) + "".join(f" {k}={sizes[k]}" for k in read)
               + (" perturbed" if perturb else ""))
        if key not in self.instances:
            if perturb:
                gen = torch.Generator().manual_seed(self.weight_seed + 2400)
                with torch.no_grad():
                    for p in ref.parameters():
                        if p.dtype.is_floating_point and p.numel():
                            spread = max(float(p.float().std()) if p.numel() > 1 else 0.0, 0.1)
                            noise = torch.randn(p.shape, generator=gen) * spread
                            p.add_(noise.to(p.dtype))
                    for b in ref.buffers():  # running statistics: a kernel may not assume them
                        if b.dtype.is_floating_point and b.numel():
                            factor = 0.5 + 1.5 * torch.rand(b.shape, generator=gen)
                            if bool((b >= 0).all()):  # a variance stays positive
                                b.mul_(factor.to(b.dtype)).add_(0.1 * factor.to(b.dtype))
                            else:
                                b.add_((torch.randn(b.shape, generator=gen) * max(
                                    float(b.float().std()) if b.numel() > 1 else 0.0,
                                    0.1)).to(b.dtype))
            weights = {k: v.detach().clone() for k, v in ref.state_dict().items()}
            # ModelNew's own initial values are replaced by the reference's weights, so it is
            # built under a seed of its own: the evaluation's seed (from which every input set
            # is drawn) never reaches the candidate's process, not even as initial_seed().
            built = self.remote.ask("build", key=key, init_inputs=init_inputs, state=weights,
                                    seed=secrets.randbelow(2**62))
            forbidden = sorted(str(op) for op in built.get("ops", [])
                               if op not in ALLOWED_ATEN_OPS | self.allowed)
            if forbidden:
                raise Verdict("cheat", f"ModelNew computed with torch while the reference's "
                                       f"weights were loaded into it (load_state_dict and "
                                       f".to(device), outside the forward): "
                                       f"{', '.join(forbidden)}; work on the weights belongs "
                                       f"in the forward's own kernels")
            self.instances[key] = ref.to(self.device)
        return module, self.instances[key], key

    def inputs(self, module: Any, problem: Problem, seed: int) -> list[Any]:
        """``get_inputs()`` under ``seed``, made on the evaluation device where the problem's
        code allows it (a 6 GB ``torch.rand`` takes ~10 s on the CPU, milliseconds on a GPU);
        on the CPU otherwise, and the result says so."""
        torch.manual_seed(seed)
        if self.device.type == "cuda" and not self.state.host_inputs.get(problem.digest):
            try:
                with torch.device(self.device):
                    values = call_factory(module, "get_inputs", problem.path)
                torch.manual_seed(secrets.randbelow(2**62))
                return _to_device(values, self.device)
            except ProblemError as exc:
                self.state.host_inputs[problem.digest] = True
                self.flags.append(f"inputs made on the CPU: get_inputs() fails on the GPU "
                                  f"({str(exc)[:160]})")
                torch.manual_seed(seed)
        values = _to_device(call_factory(module, "get_inputs", problem.path), self.device)
        torch.manual_seed(secrets.randbelow(2**62))  # torch.initial_seed() tells nothing
        return values

    def _buffer(self, inputs: list[Any]) -> int:
        if id(inputs) not in self.buffers:
            self.buffers[id(inputs)] = (self.next_buffer, inputs)
            self.next_buffer += 1
        return self.buffers[id(inputs)][0]

    def release(self, inputs: list[Any]) -> None:
        """This input set is done with: free it here and in the candidate's process (at
        KernelBench sizes one set is gigabytes)."""
        entry = self.buffers.pop(id(inputs), None)
        if entry is not None:
            self.sent.discard(entry[0])
            self.remote.ask("drop", buf=entry[0])
        release_cached_memory()

    # -- running ----------------------------------------------------------------------------
    def reference(self, ref: torch.nn.Module, inputs: list[Any]) -> Any:
        """The reference's outputs on ``inputs``, which it must not change. Its first forward
        of a problem runs on copies and records its aten ops and whether it writes into its
        inputs; later ones copy the inputs only for a reference that does (at KernelBench's
        sizes a copy is gigabytes), and the outputs only where they share memory with an
        input or a parameter."""
        digest = self.problem().digest
        first = digest not in self.state.ref_writes_inputs
        args = compare.snapshot(inputs) if first or self.state.ref_writes_inputs[digest] else inputs
        versions_before = [t._version for t in args if isinstance(t, torch.Tensor)]
        rec = OpRecorder() if first else None
        try:
            with torch.no_grad(), rec if rec is not None else contextlib.nullcontext():
                out = ref(*args)
        except torch.OutOfMemoryError as exc:  # the device's state, not the problem's code
            free, total = (torch.cuda.mem_get_info(self.device) if self.device.type == "cuda"
                           else (0, 0))
            raise Verdict("runtime_error", f"the judge ran out of device memory running the "
                                           f"reference ({free / 2**30:.1f} of "
                                           f"{total / 2**30:.1f} GiB free): other work shares "
                                           f"this GPU, or the problem needs more than it has; "
                                           f"evaluate again with the GPU to itself "
                                           f"({str(exc)[:160]})") from exc
        except Exception as exc:  # the problem's own code, not the candidate's
            raise ProblemError(f"the reference Model.forward raised {type(exc).__name__}: "
                               f"{exc}") from exc
        if first:
            self.state.ref_ops[digest] = sorted(rec.ops) if rec is not None else []
            self.state.ref_writes_inputs[digest] = versions_before != [
                t._version for t in args if isinstance(t, torch.Tensor)]
        return compare.own_copy(out, [*inputs, *args, *ref.parameters(), *ref.buffers()])

    def reference64(self, ref: torch.nn.Module, inputs: list[Any]) -> Any:
        """The reference in float64 (weights and floating inputs cast), or None where the
        problem does not run so (dtype-specific ops)."""
        try:
            ref64 = copy.deepcopy(ref).double()
            # the casts are copies: nothing the float64 forward does reaches ``inputs``
            args = [v.double() if isinstance(v, torch.Tensor) and v.dtype.is_floating_point
                    else v.clone() if isinstance(v, torch.Tensor) else v for v in inputs]
            with torch.no_grad():
                return ref64(*args)
        except Exception:  # the comparison then stays as it was
            return None

    def reference_nudged(self, ref: torch.nn.Module, inputs: list[Any], draw: int = 0) -> Any:
        """The reference on its floating inputs each moved by a random relative half-epsilon of
        their dtype (what rounding them once does; ``draw`` picks the sample), or None where it
        does not run. How far its output moves from the truth measures the rounding error any
        kernel of that precision can make there: one sample more than the reference's own
        error, and the one that sees an output that cancels (a sum of terms far larger than
        itself)."""
        gen = None
        try:
            nudged = []
            for v in inputs:
                if isinstance(v, torch.Tensor) and v.dtype.is_floating_point and v.numel():
                    if gen is None:
                        gen = torch.Generator(device=v.device).manual_seed(
                            self.seed + 4100 + 1000 * draw)
                    u = torch.rand(v.shape, generator=gen, device=v.device, dtype=v.dtype)
                    # v * (1 + (2u - 1) * eps / 2), in place in u: one temporary, not four
                    v = u.mul_(2).sub_(1).mul_(torch.finfo(v.dtype).eps / 2).add_(1).mul_(v)
                elif isinstance(v, torch.Tensor):
                    v = v.clone()
                nudged.append(v)
            with torch.no_grad():
                return compare.own_copy(ref(*nudged), [*ref.parameters(), *ref.buffers()])
        except Exception:  # the comparison then stays as it was
            return None

    def run_candidate(self, key: str, inputs: list[Any], label: str, turn: int | None = None,
                      reverse_order: bool = False) -> Any:
        """One forward in the candidate's process, judged by the rules held here. In Triton's
        interpreter, autotuned kernels run their config number ``turn`` (by default the next
        in turn: each forward another); ``reverse_order`` runs each launch's programs in the
        reverse of the previous forward's order (interpreter.py). ``self.last_turn`` and
        ``self.last_observed`` say what this forward ran."""
        buf = self._buffer(inputs)
        fresh = buf not in self.sent
        if turn is None:
            turn = self.next_turn
        self.next_turn = max(self.next_turn, turn + 1)
        # Sent as they are (strides too): serialising copies them.
        t0 = time.perf_counter()
        reply = self.remote.ask("forward", key=key, buf=buf, inputs=inputs if fresh else None,
                                turn=turn, reverse_order=reverse_order)
        self.last_forward_s = time.perf_counter() - t0
        self.sent.add(buf)
        out, obs = reply.get("out"), _Observed.of(reply)
        self.last_turn, self.last_observed = turn, obs
        if not self.first_call_s:
            self.first_call_s = obs.seconds
        self.flags.extend(n for n in obs.notes if n not in self.flags)  # e.g. autotune untimed
        self.ops_seen |= set(obs.ops)
        self.max_launches = max(self.max_launches, obs.launches)
        forbidden = sorted(op for op in obs.ops if op not in ALLOWED_ATEN_OPS | self.allowed)
        if forbidden:
            raise Verdict("cheat", f"the forward ran torch ops that do the work ({label}): "
                                   f"{', '.join(forbidden)}. Only allocation/view ops are allowed "
                                   f"unless the user allows named library ops (eval.allowed_ops)")
        if obs.launches == 0:
            raise Verdict("cheat", f"the forward launched no custom kernel ({label}): a candidate "
                                   f"must compute with its own Triton or CUDA kernels")
        if obs.odd_outputs:
            raise Verdict("cheat", f"the forward returned tensor subclasses "
                                   f"({', '.join(obs.odd_outputs)}): outputs must be plain "
                                   f"torch.Tensor ({label})")
        after = reply.pop("inputs_after", None)  # mapped on a GPU: read now, let go (MAPPED)
        changed = (compare.modified_inputs(inputs, after) if isinstance(after, list)
                   and len(after) == len(inputs) else obs.modified)
        del after
        if changed:
            raise Verdict("cheat", f"the forward modified its inputs {changed} ({label})")
        if obs.threads:
            raise Verdict("cheat", f"the forward started {obs.threads} threads ({label}): "
                                   f"work on other threads escapes the op recorder and timer")
        if obs.stream_switched:
            raise Verdict("cheat", f"the forward switched the current CUDA stream ({label})")
        if obs.tampered:
            raise Verdict("cheat", f"the forward replaced harness functions: {obs.tampered}")
        if obs.retained:
            raise Verdict("mismatch", f"the forward keeps a reference to the memory of its "
                                      f"output(s) {obs.retained} ({label}): a buffer reused "
                                      f"across calls changes the results a caller holds; "
                                      f"allocate each call's outputs anew")
        if obs.kept_storages:
            ages = ", ".join(map(str, obs.kept_storages))
            raise Verdict("mismatch", f"the memory of the output(s) returned {ages} call(s) "
                                      f"before this one ({label}) is still held by the candidate after the "
                                      f"caller let them go: outputs handed out of kept buffers "
                                      f"(a ring, set_ on a cached tensor) change the results a "
                                      f"caller holds when later calls write them again; "
                                      f"allocate each call's outputs anew")
        return out

    def contract_ops(self) -> list[str]:
        """The problem's aten ops the timed baseline computes below fp32 precision, where the
        precision contract is the baseline's (``eval.precision``) on a GPU; empty elsewhere
        (the fp32 rule alone decides). Known after the reference's first forward."""
        if self.cfg.get("precision", "baseline") != "baseline" or self.device.type != "cuda":
            return []
        ran = self.state.ref_ops.get(self.problem().digest, [])
        return sorted(flags.inexact_ops(self.baseline) & set(ran))

    def contract_why(self) -> str:
        """Why the fp32 rule alone decides, where it does (else "")."""
        if self.cfg.get("precision", "baseline") != "baseline":
            return "eval.precision is 'fp32'"
        if self.device.type != "cuda":
            return (f"on {self.state.target} the baseline computes in full fp32: TF32 exists on "
                    f"NVIDIA GPUs only")
        if not self.contract_ops():
            return f"{flags.label(self.baseline)} computes this problem's ops in full fp32"
        return ""

    def flags_matter(self) -> bool:
        """Whether the two baselines' flags change any op of the problem (then both are
        timed; otherwise one timing serves both)."""
        ran = set(self.state.ref_ops.get(self.problem().digest, ["unknown"]))
        return bool(flags.differing_ops(self.baseline, self.other_baseline) & ran) or (
            "unknown" in ran)

    def reference_baseline(self, ref: torch.nn.Module, inputs: list[Any]) -> Any:
        """The reference under the timed baseline's flags (eval.baseline): what the user's
        PyTorch computes, TF32 included where those flags allow it. The precision contract
        measures its error against the truth; it is never the truth itself."""
        with flags.applied(self.baseline):
            return self.reference(ref, inputs)

    def reference_tf32_class(self, ref: torch.nn.Module, inputs: list[Any]) -> Any:
        """The reference in fp32 with TF32 off on its floating inputs and parameters rounded
        to TF32's 10-bit mantissa (compare.tf32_round): the error one TF32 product makes at these
        shapes. The precision contract's allowance at a shape where the library picked an exact
        algorithm although it computes in TF32 at the problem's own size (cuDNN does, by shape:
        on an H100 a 3x3 convolution at 16x64x64x64 in TF32, at 13x49x49x49 exactly). None
        where it does not run."""
        saved = [p.detach().clone() for p in ref.parameters()]
        try:
            with torch.no_grad():
                for p in ref.parameters():
                    p.copy_(compare.tf32_round(p))
                rounded = [compare.tf32_round(v) if isinstance(v, torch.Tensor) else v
                           for v in inputs]
                # the process's own flags: TF32 off (serve), as for the truth
                return compare.own_copy(ref(*rounded), [*ref.parameters(), *ref.buffers()])
        except Exception:  # the comparison then stays as it was
            return None
        finally:
            with torch.no_grad():
                for p, v in zip(ref.parameters(), saved, strict=True):
                    p.copy_(v)

    def compare(self, expected: Any, actual: Any, label: str,
                truth: Callable[[], Any] | None = None,
                nudged: Callable[..., Any] | None = None,
                baseline: Callable[[], Any] | None = None,
                tf32_class: Callable[[], Any] | None = None) -> None:
        """Compare, and where only the output's own scale refuses it, ask ``truth`` (the
        reference in float64) how inexact the fp32 reference itself is there, and ``nudged``
        (the reference on inputs moved by one rounding; ``nudged(draw=1)`` a second sample)
        how much fp32 rounding alone moves it. Where the fp32 rule still refuses it and the
        precision contract is the baseline's (``self.contract``), ``baseline`` (the reference
        under the timed baseline's flags) measures the error the user's PyTorch makes on these
        inputs, and the candidate's may be ``eval.precision_factor`` times it
        (compare.within_baseline). At a shape other than the problem's own, where the baseline
        ran below fp32 at its own size but exactly here, ``tf32_class`` gives the allowance
        instead: the error TF32 products make on these inputs (reference_tf32_class)."""
        args = (self.cfg.get("atol"), self.cfg.get("rtol"), bool(self.cfg.get("allow_loose_fp32")))
        errors, problem = compare.compare_outputs(expected, actual, *args)
        exact = None
        if problem and truth is not None and "scaled to the output" in problem:
            exact = truth()
            if exact is not None:
                moved = nudged() if nudged is not None else None
                errors, problem = compare.compare_outputs(expected, actual, *args, truth=exact,
                                                          nudged=moved)
                if problem and moved is not None and nudged is not None:
                    # One sample can land near the truth by chance where the output is
                    # sensitive: attention on inputs x 100 (a sharp softmax) refused its correct
                    # kernel for 2 of 4000 seeds, and a second sample passed both.
                    again = nudged(draw=1)
                    if again is not None:
                        errors, problem = compare.compare_outputs(
                            expected, actual, *args, truth=exact,
                            nudged=compare.farther(exact, moved, again))
                    del again
                del moved
        if problem and baseline is not None and truth is not None and self.contract_ops():
            exact = exact if exact is not None else truth()
            base = baseline() if exact is not None else None
            if base is not None:
                factor = float(self.cfg.get("precision_factor", 3.0))
                passed, detail = compare.within_baseline(expected, actual, exact, base, factor)
                if passed and tf32_class is None:
                    self.contract_at_own = True
                if not passed and tf32_class is not None and self.contract_at_own:
                    del base
                    base = tf32_class()
                    if base is not None:
                        passed, also = compare.within_baseline(expected, actual, exact, base,
                                                               factor)
                        detail = (f"{also} (the baseline computed these shapes exactly and the "
                                  f"problem's own in TF32: the allowance is TF32 products' error "
                                  f"here)" if passed else f"{detail}; {also} with TF32 products")
                if passed:
                    problem = None
                    if len(self.contract_passes) < 8:
                        self.contract_passes.append(f"{label}: {detail}")
                else:
                    problem = f"{problem}; under the baseline's precision contract: {detail}"
            del base
        del exact
        for err in errors:
            worst = self.errors.get(err.index)
            if worst is None or err.max_abs_error > worst["max_abs_error"]:
                self.errors[err.index] = err.to_dict()
        if problem:
            raise Verdict("mismatch", f"{label}: {problem}")

    def check_once(self, key: str, ref: torch.nn.Module, inputs: list[Any],
                   label: str) -> tuple[Any, Any]:
        """Reference, candidate, compare: one input set. Returns the candidate's output and
        the reference's. (The reference's outputs never leave this process, so nothing of them
        can be found in the candidate's memory.)"""
        # Written before the run, so a crash's stderr tail says where the worker died.
        print(f"[kernelevolve] checking {label}", file=sys.stderr, flush=True)
        expected = self.reference(ref, inputs)
        self.footprint = max(self.footprint, tensor_bytes(inputs) + tensor_bytes(expected)
                             + sum(t.nbytes for t in (*ref.parameters(), *ref.buffers())))
        out = self.run_candidate(key, inputs, label)
        shapes = [tuple(v.shape) for v in inputs if isinstance(v, torch.Tensor)]
        if self.own_shapes is None:  # the first set checked is at the problem's own size
            self.own_shapes = shapes
        self.compare(expected, out, label, truth=functools.partial(self.reference64, ref, inputs),
                     nudged=functools.partial(self.reference_nudged, ref, inputs),
                     baseline=functools.partial(self.reference_baseline, ref, inputs),
                     tf32_class=None if shapes == self.own_shapes else functools.partial(
                         self.reference_tf32_class, ref, inputs))
        return out, expected

    def refill(self, module: Any, problem: Problem, inputs: list[Any], seed: int) -> None:
        """New values into the same input storage: catches results keyed by data pointers.
        Where fresh inputs have other shapes (data-dependent sizes), floating inputs get new
        random values of their own shape and the rest stay."""
        fresh = self.inputs(module, problem, seed)
        same = all(not isinstance(o, torch.Tensor) or (isinstance(n, torch.Tensor)
                                                       and n.shape == o.shape)
                   for o, n in zip(inputs, fresh, strict=True))
        for old, new in zip(inputs, fresh, strict=True):
            if not isinstance(old, torch.Tensor):
                continue
            if same:
                old.copy_(new)
            elif old.dtype.is_floating_point:
                old.copy_(torch.randn(old.shape, device=old.device).to(old.dtype))
        self.sent.discard(self._buffer(inputs))

    # -- the cascade ------------------------------------------------------------------------
    def plans(self, problem: Problem, base: dict[str, int]) -> list[Plan]:
        n = int(self.cfg["n_input_sets"])
        seed = self.seed
        plans = [Plan("input sets", base, [seed + 1000 + i for i in range(n)],
                      determinism=True, pointer_reuse=True)]
        if not self.cfg.get("extra_shapes", True):
            self.check("other shapes", True, "skipped: eval.extra_shapes is off", skipped=True)
            return plans
        overrides = self.cfg.get("shape_overrides") or {}
        sizes: dict[str, int] | None
        if overrides:
            sizes, why = {**base, **overrides}, ""
        else:
            sizes, why = self.other_sizes(problem, base)
        if sizes is None:
            self.check("other shapes", True, f"skipped: {why}", skipped=True)
            self.flags.append(f"checked at one shape only: {why}")
        else:
            plans.append(Plan("other shapes", sizes, [seed + 2000, seed + 2001]))
        larger = self.larger_sizes(problem, base)
        if larger is not None:
            plans.append(Plan("larger shapes", larger, [seed + 2500]))
        return plans

    def real_size_plans(self, problem: Problem, checked: list[Plan]) -> list[Plan]:
        """On the interpreter targets, a size at its real value once (the others shrunk),
        where that fits REAL_SIZE_BUDGET: a BLOCK capped below the real row length, with no
        loop, fails there. Left out, and said, where the judge's own clock says one forward
        there would take over REAL_SIZE_MAX_S (the interpreter's cost grows with the size)."""
        base = checked[0].sizes
        if self.device.type == "cuda" or base == problem.sizes:
            return []
        budget = REAL_SIZE_BUDGET * int(self.cfg["cpu_max_elements"])
        plans = []
        for i, (name, sizes) in enumerate(problem.real_size_plans(
                [p.sizes for p in checked], budget, REAL_SIZE_PLANS)):
            ratio = problem.input_elements(sizes) / max(1, problem.input_elements(base))
            estimate = self.base_forward_s * ratio
            if estimate > REAL_SIZE_MAX_S:
                self.flags.append(f"not checked with {name} at its real size {sizes}: one "
                                  f"forward there would take about {estimate:.0f} s in the "
                                  f"interpreter")
                continue
            plans.append(Plan(f"{name} at its real size", sizes, [self.seed + 2550 + i]))
        return plans

    def larger_sizes(self, problem: Problem, base: dict[str, int]) -> dict[str, int] | None:
        """Where the interpreter checks shrunk sizes, sizes nearer the problem's own (4x the
        elements, up to its own): a kernel right only up to one block, or for the shrunk
        shapes, fails there. On a GPU the problem's own sizes are the base: none larger."""
        if self.device.type == "cuda" or base == problem.sizes:
            return None
        larger = self.shrunk(problem, 4 * int(self.cfg["cpu_max_elements"]))
        return larger if larger != base else None

    def other_sizes(self, problem: Problem, base: dict[str, int]
                    ) -> tuple[dict[str, int] | None, str]:
        key = (problem.digest, json.dumps(base, sort_keys=True))
        if key not in self.state.other_sizes:
            self.state.other_sizes[key] = problem.other_sizes(base)
        return self.state.other_sizes[key]

    def run_plan(self, problem: Problem, plan: Plan) -> tuple[Any, torch.nn.Module, str]:
        module, ref, key = self.build(problem, plan.sizes)
        inputs: list[Any] = []
        # Digests of the previous set's output and reference output (compare.fingerprint),
        # under a key the candidate never sees: whole copies would hold two more outputs
        # through the next set's checks.
        earlier: tuple[Any, Any] | None = None
        held: list[Any] = []  # digests of the outputs the candidate's process holds, newest first
        fp_key = secrets.randbits(62)
        for k, seed in enumerate(plan.seeds):
            inputs = self.inputs(module, problem, seed)
            label = f"{plan.label} {k + 1}/{len(plan.seeds)} at {plan.sizes}"
            out, expected = self.check_once(key, ref, inputs, label)
            if plan.pointer_reuse:  # the base sizes: what one forward costs here (the least)
                self.base_forward_s = min(self.base_forward_s or math.inf, self.last_forward_s)
                if self.last_observed is not None:
                    self.base_call_s = min(self.base_call_s or math.inf,
                                           self.last_observed.seconds)
            out_digest = compare.fingerprint(out, fp_key)
            turn = self.last_turn
            configs = self.last_observed.autotune_configs if self.last_observed else 1
            if plan.determinism and k == 0:
                del out  # the second run's output replaces it: one output held at a time
                # The same autotune configs; in the interpreter each launch's programs run in
                # the reverse of the first run's order, so a program that reads what another
                # wrote (a race on a GPU) finds it missing in one of the two runs.
                again_label = label + (", second run, each launch's programs in the reverse "
                                       "order" if self.interpreted else ", second run")
                again = self.run_candidate(key, inputs, again_label, turn=turn,
                                           reverse_order=self.interpreted)
                again_digest = compare.fingerprint(again, fp_key)
                if again_digest != out_digest:
                    self.nondeterministic = True
                    self.compare(expected, again, again_label,
                                 truth=functools.partial(self.reference64, ref, inputs),
                                 baseline=functools.partial(self.reference_baseline, ref, inputs))
                # The caller now holds the second run's output, not the first's: the check below
                # that held outputs do not change compares against it (a nondeterministic
                # kernel, cuDNN's transposed convolution among them, differs between the two).
                out, out_digest = again, again_digest
                del again
            if k == 0 and configs > 1:
                del out
                out = self.check_autotune_turns(key, ref, inputs, expected, label, turn, configs)
                out_digest = compare.fingerprint(out, fp_key)
                self.check(f"every autotune config on {plan.label}", True,
                           f"{configs} turns on set 1 at {plan.sizes}: each autotuned kernel ran "
                           f"every config left after pruning")
            # An output handed out earlier must not change when the forward runs again: outputs
            # that alias a buffer kept between calls would corrupt the caller's results.
            for age, digest in enumerate(held, start=1):
                now = self.remote.ask("resend_previous", age=age).get("out")
                if compare.fingerprint(now, fp_key) != digest:
                    raise Verdict("mismatch", f"{label}: an output returned {age} call(s) before "
                                              f"changed when the forward ran again (outputs "
                                              f"alias memory the candidate keeps between calls)")
                del now
            # Within tolerance is not enough where the answer barely moves (a loss over 1e9
            # terms): an output that stays bitwise the same while the reference's changes does
            # not depend on the input.
            expected_digest = compare.fingerprint(expected, fp_key)
            if (earlier is not None and out_digest == earlier[0]
                    and expected_digest != earlier[1]):
                raise Verdict("mismatch", f"{label}: the output is bitwise the same as for the "
                                          f"previous input set while the reference's changed: "
                                          f"it does not depend on the input")
            earlier = (out_digest, expected_digest)
            keep = previous_kept(self.device, tensor_bytes(expected))
            held = [out_digest, *held][:keep]
            del out, expected
            self.remote.ask("keep_previous", keep=keep)
            if not (plan.pointer_reuse and k == len(plan.seeds) - 1):
                self.release(inputs)
        self.check(f"correct on {plan.label}", True,
                   f"{len(plan.seeds)} sets at {plan.sizes}, seeds {plan.seeds}")
        if plan.pointer_reuse:
            self.refill(module, problem, inputs, self.seed + 3000)
            self.check_once(key, ref, inputs, "new values in the same input memory")
            self.check("no results reused across calls", True, "same pointers, new values")
            self.release(inputs)
        return module, ref, key

    def check_autotune_turns(self, key: str, ref: torch.nn.Module, inputs: list[Any],
                             expected: Any, label: str, turn: int, configs: int) -> Any:
        """In Triton's interpreter, where ``@triton.autotune`` cannot benchmark: the forward
        again at turns ``turn + 1`` .. ``turn + configs - 1``, so every autotuned kernel runs
        each of its configs on these inputs (a GPU's autotuner may pick any of them), each
        output compared with the reference. Returns the last output (the caller's current one)."""
        out: Any = None
        for i in range(1, configs):
            out = None  # one output held at a time
            what = f"{label}, autotune turn {i + 1} of {configs}"
            out = self.run_candidate(key, inputs, what, turn=turn + i)
            self.compare(expected, out, what + " (each autotuned kernel's configs in the order "
                                               "@triton.autotune lists them after pruning)",
                         truth=functools.partial(self.reference64, ref, inputs),
                         nudged=functools.partial(self.reference_nudged, ref, inputs),
                         baseline=functools.partial(self.reference_baseline, ref, inputs))
        return out

    def compile_for_gpu(self, again: bool = False) -> None:
        """On the interpreter targets, after every correctness check: every specialization
        of every kernel that ran, and every config of every autotuned kernel, must compile for
        the GPU too (gpu_compile.py; ``eval.gpu_compile_arch``). ``again`` (after the simulated
        timing, at the problem's own sizes): those launched since, if any."""
        arch = self.cfg.get("gpu_compile_arch")
        if not self.interpreted or (again and not arch):
            return
        if not arch:
            self.check("compiles for a GPU", True, "skipped: eval.gpu_compile_arch is unset",
                       skipped=True)
            return
        reply = self.remote.ask("gpu_compile", arch=int(arch),
                                timeout_s=float(self.cfg["timeout_s"]) / 2)
        if reply.get("timed_out"):
            raise Verdict("timeout", f"{reply['timed_out']} (no verdict on whether they compile: "
                                     f"raise eval.timeout_s on a loaded machine)")
        errors = [str(e) for e in reply.get("errors", [])]
        if errors:
            raise Verdict("compile_error", f"the kernels ran in Triton's interpreter but do not "
                                           f"compile for the GPU (sm_{arch}, Triton's own "
                                           f"compiler and ptxas): {'; '.join(errors)}")
        skipped = [str(k) for k in reply.get("skipped", [])]
        kernels = int(reply.get("kernels", 0))
        if again and not kernels:
            return
        self.check("compiles for a GPU" + (" (the simulated run's launches)" if again else ""),
                   True, f"sm_{arch}: {kernels} kernel(s) as launched"
                   + (f"; not compiled: {'; '.join(skipped)}" if skipped else ""))

    def run_variants(self, problem: Problem, sizes: dict[str, int]) -> None:
        """Inputs ``get_inputs()`` never draws, at the base sizes, each transform's parameters
        drawn per evaluation (a kernel cannot detect a fixed variant): scaled by a random
        factor of either sign (a softmax without max-subtraction overflows), shifted (a series
        valid only near zero), with random signs (a ReLU written as a copy of non-negative
        inputs), rounded to a coarse grid with a
        few large outliers (ties: a last-index argmax), spread over six decades of magnitude,
        and moved near one (a product or a log over many terms); non-contiguous views of the
        same values (the last two dims transposed, and every dim's stride changed: a kernel that
        ignores any stride); and parameters and float constructor arguments away from their
        initial values (a kernel that skips a weight of 1 or hard-codes a divisor). A variant
        whose reference is not finite where the plain inputs' is, is tried again milder (up to
        three times) before it is skipped and named."""
        module, ref, key = self.build(problem, sizes)
        base = self.inputs(module, problem, self.seed + 2200)
        if not any(isinstance(t, torch.Tensor) and t.dtype.is_floating_point for t in base):
            self.check("other input values", True, "skipped: no floating inputs", skipped=True)
            return
        gen = torch.Generator().manual_seed(self.seed + 2250)
        done, skipped = [], []
        for family in _VARIANTS:
            found = self.finite_variant(family, gen, ref, base)
            if isinstance(found, str):
                skipped.append(found)
                continue
            name, inputs, expected = found
            out = self.run_candidate(key, inputs, name)
            self.compare(expected, out, f"{name} at {sizes}",
                         truth=functools.partial(self.reference64, ref, inputs),
                         nudged=functools.partial(self.reference_nudged, ref, inputs),
                         baseline=functools.partial(self.reference_baseline, ref, inputs))
            self.release(inputs)
            del inputs, expected, out
            done.append(name)
        del base
        if any(p.dtype.is_floating_point and p.numel() for p in ref.parameters()) or (
                self.floats_in_constructor(problem, sizes)):
            module, other_ref, other_key = self.build(problem, sizes, perturb=True)
            inputs = self.inputs(module, problem, self.seed + 2300)
            self.check_once(other_key, other_ref, inputs, f"other parameter values at {sizes}")
            self.release(inputs)
            done.append("other parameter values" + (
                f" (constructor floats varied: {', '.join(self.varied_floats)})"
                if self.varied_floats else ""))
        self.check("correct on other input values", True,
                   ", ".join(done) + (f"; skipped: {'; '.join(skipped)}" if skipped else ""))

    def check_many_calls(self, problem: Problem, sizes: dict[str, int], spent_s: float
                         ) -> None:
        """Forwards at the base sizes, on the instance the input sets ran on, as many as drawn
        for this evaluation (MANY_CALLS_SCALE / u, capped by the time budget), each on new
        inputs drawn from ``get_inputs()`` as the checked sets are (the seeds are the judge's:
        a call of the run cannot be told from a checked one); a random sample of their outputs
        is checked, then one more forward on new inputs. A kernel that turns wrong (or to torch)
        after some number of calls cannot know where the judge's calls end. On a timed GPU
        evaluation the timing loop and the check after it do this."""
        if self.device.type == "cuda" and self.job.get("timed"):
            return
        budget = min(MANY_CALLS_MAX_S, MANY_CALLS_SHARE * spent_s)
        drawn = min(MANY_CALLS_MAX, int(MANY_CALLS_SCALE * 2**32 / (1 + secrets.randbelow(2**32))))
        # the forward alone, as the candidate's process timed it: what one call of the run costs
        per_call = max(self.base_call_s or self.base_forward_s or 0.0, 1e-5)
        expect = max(1, min(drawn, int(budget / per_call)))
        module, ref, key = self.build(problem, sizes)
        seed = secrets.randbelow(2**62)
        rounds = sorted(secrets.SystemRandom().sample(range(expect),
                                                      min(expect, MANY_CALLS_SAMPLES)))
        reply = self.remote.ask("calls", key=key, problem=str(problem.path), sizes=dict(sizes),
                                seed=seed, n=drawn, budget_s=budget, sample_rounds=rounds)
        n = int(reply.get("ran", 0))
        label = f"{n} calls in a row at {sizes}"
        forbidden = sorted(str(op) for op in reply.get("ops", [])
                           if op not in ALLOWED_ATEN_OPS | self.allowed)
        if forbidden:
            raise Verdict("cheat", f"the forward ran torch ops that do the work ({label}): "
                                   f"{', '.join(forbidden)}")
        if int(reply.get("fewest_launches", 0)) == 0:
            raise Verdict("cheat", f"a forward launched no custom kernel ({label})")
        if reply.get("tampered"):
            raise Verdict("cheat", f"the forward replaced harness functions: {reply['tampered']}")
        samples = list(reply.get("samples") or [])
        asked = [r for r in rounds if r < n]
        if sorted(int(r) for r, _ in samples) != asked:
            raise Verdict("cheat", f"the candidate's process returned outputs of calls "
                                   f"{[int(r) + 1 for r, _ in samples]} of {label}, the judge "
                                   f"asked for {[r + 1 for r in asked]}")
        for round_, out in samples:
            torch.manual_seed(seed + int(round_))  # the inputs as the candidate's process made them
            inputs = _to_device(call_factory(module, "get_inputs", problem.path), self.device)
            torch.manual_seed(secrets.randbelow(2**62))
            self.compare(self.reference(ref, inputs), out, f"call {int(round_) + 1} of {label}",
                         truth=functools.partial(self.reference64, ref, inputs),
                         nudged=functools.partial(self.reference_nudged, ref, inputs),
                         baseline=functools.partial(self.reference_baseline, ref, inputs))
            del inputs, out
        del samples, reply
        inputs = self.inputs(module, problem, secrets.randbelow(2**62))
        self.check_once(key, ref, inputs, f"new inputs after {label}")
        self.check("correct after many calls", True,
                   f"{n} calls (a length drawn for this evaluation, {drawn}, within "
                   f"{budget:.1f} s), each on new inputs; calls {[r + 1 for r in asked]} and one "
                   f"after checked")
        self.release(inputs)

    def finite_variant(self, family: Callable[[torch.Generator, int], tuple[
                           str, Callable[[torch.Tensor], torch.Tensor]]],
                       gen: torch.Generator, ref: torch.nn.Module, base: list[Any]
                       ) -> tuple[str, list[Any], Any] | str:
        """A variant of ``family`` whose reference is finite: (name, inputs, reference's
        output), its milder forms tried where it is not; else why it is skipped."""
        why = ""
        for mild in range(4):
            name, transform = family(gen, mild)
            inputs = [transform(t) if isinstance(t, torch.Tensor) and t.dtype.is_floating_point
                      else t for t in base]
            try:
                expected = self.reference(ref, inputs)
            except ProblemError as exc:
                self.release(inputs)
                return f"{name} (the reference refuses them: {str(exc)[:120]})"
            if all(bool(torch.isfinite(t).all()) for t in compare.tensors_of(expected)
                   if t.dtype.is_floating_point):
                return name, inputs, expected
            why = f"{name} (the reference is not finite there, nor on milder forms)"
            del expected
            self.release(inputs)
        return why

    def floats_in_constructor(self, problem: Problem, sizes: dict[str, int]) -> bool:
        module = problem.module(sizes)
        return bool(vary_floats(call_factory(module, "get_init_inputs", problem.path),
                                torch.Generator().manual_seed(0))[1])

    def run_nonfinite(self, problem: Problem, sizes: dict[str, int]) -> None:
        """Inputs with a few NaN values, then with a few +inf and -inf (``eval.nonfinite``):
        the output must hold the reference's NaN and infinities at the same places and its
        finite values within tolerance. A max that drops NaN (Triton's ``tl.maximum`` by
        default), a ReLU written as ``where(x > 0, x, 0)``, a tanh written as a ratio of
        exponentials (inf / inf), a 3xTF32 split of an infinity (inf - inf in its low part)
        differ from torch only here. Under 'require' a difference refuses the kernel; under
        'report' it is a failed check and a flag on a verdict that stands. (Where torch itself
        makes an infinity into NaN, as its softsign does, the kernel must too; only where the
        fp32 reference's NaN and infinities differ from its own float64 run's do float64's
        decide: ``compare_nonfinite``.)"""
        mode = self.cfg.get("nonfinite", "report")
        if mode == "off":
            return
        module, ref, key = self.build(problem, sizes)
        for seed, what, values in ((self.seed + 2600, "NaN", compare.NAN_VALUES),
                                   (self.seed + 2700, "infinities", compare.INF_VALUES)):
            name = what + compare.NONFINITE_CHECK
            base = self.inputs(module, problem, seed)
            gen = torch.Generator().manual_seed(seed)
            try:
                inputs = [compare.with_nonfinite(t, gen, values) if isinstance(t, torch.Tensor)
                          and t.dtype.is_floating_point and t.numel() else t for t in base]
            except (RuntimeError, TypeError) as exc:  # a dtype without NaN or inf (float8)
                self.check(name, True, f"skipped: {what} cannot be written into these inputs: "
                           f"{str(exc)[:160]}", skipped=True)
                continue
            finally:
                del base
            if not any(compare.has_nonfinite(t) for t in inputs if isinstance(t, torch.Tensor)):
                self.check("NaN and infinities" + compare.NONFINITE_CHECK, True,
                           "skipped: no floating inputs", skipped=True)
                return
            try:
                expected = self.reference(ref, inputs)
            except ProblemError as exc:
                self.check(name, True, f"skipped: the reference refuses them: {str(exc)[:160]}",
                           skipped=True)
                continue
            out = self.run_candidate(key, inputs, f"{what} in the inputs")
            errors = dict(self.errors)  # the reported errors stay those of finite inputs
            try:
                spread = self.compare_nonfinite(ref, inputs, expected, out,
                                                f"inputs with {what} at {sizes}")
            except Verdict as exc:
                if mode == "require":
                    raise
                self.check(name, False, exc.message)
                self.flags.append(f"differs from the reference where inputs hold {what} "
                                  f"(eval.nonfinite 'require' would refuse it): {exc.message}")
            else:
                places = compare.NONFINITE_COPIES * len(values)
                self.check(name, True, f"{places} {what} in every floating input at {sizes}" + (
                    f"; {spread} elements where the fp32 reference's NaN or infinities differ "
                    f"from the float64 reference's (its algorithm spreads them) compared with "
                    f"float64's" if spread else ""))
            finally:
                self.errors = errors
                self.release(inputs)
                del inputs, expected, out

    def compare_nonfinite(self, ref: torch.nn.Module, inputs: list[Any], expected: Any,
                          out: Any, label: str) -> int:
        """``compare`` on inputs holding NaN or infinities; where only the non-finite values
        differ, again against the fp32 reference with float64's values at the elements where
        the two references disagree on NaN and infinities (cuDNN's FFT convolutions spread one
        NaN over a whole tile; ``compare.nonfinite_from_truth``). Returns how many elements
        float64 decided (0: the fp32 reference sufficed); raises Verdict as ``compare``."""
        nudged = functools.partial(self.reference_nudged, ref, inputs)
        baseline = functools.partial(self.reference_baseline, ref, inputs)
        try:
            self.compare(expected, out, label, truth=functools.partial(self.reference64, ref, inputs),
                         nudged=nudged, baseline=baseline)
            return 0
        except Verdict as first:
            exact = self.reference64(ref, inputs) if "NaN/Inf" in first.message else None
            if exact is None:
                raise
            merged, spread = compare.nonfinite_from_truth(expected, exact)
            if not spread:
                raise
        self.compare(merged, out, f"{label} (the fp32 reference's NaN and infinities where "
                     f"float64's agree)", truth=lambda: exact, nudged=nudged, baseline=baseline)
        return spread

    def compiled_reference(self, problem: Problem, ref: torch.nn.Module, sizes: dict[str, int]):
        mode = str(self.baseline.get("compile_mode") or "default")
        key = (problem.digest, json.dumps([sizes, mode], sort_keys=True))
        if key not in self.state.compiled:
            t0 = time.perf_counter()
            try:
                self.state.compiled[key] = torch.compile(ref, mode=mode)
            except Exception as exc:  # recorded, the run goes on without this reference
                self.state.compiled[key] = f"{type(exc).__name__}: {exc}"
            self.compile_ref_s = time.perf_counter() - t0
        return self.state.compiled[key]

    def time_on_cuda(self, problem: Problem, module: Any, ref: torch.nn.Module, key: str,
                     sizes: dict[str, int]) -> dict[str, Any]:
        """The candidate timed in its process, eager and torch.compile here, each on inputs
        that get new values before every trial (timing.InputVariation), so a memoized result
        is wrong; the candidate's outputs of a random sample of trials are checked here
        against the reference on those trials' exact inputs. The references' latencies are
        measured once per problem, sizes and timing settings and reused by the run's later
        jobs (``fresh_references`` in the job, or a cold worker, measures them again). The
        GPU is held exclusively (``gpu_lock``) while anything on it is timed: no other timing
        and no other job's GPU work (their correctness checks hold it shared) meanwhile."""
        cfg = self.cfg
        timing_cfg = {k: cfg[k] for k in ("min_trials", "min_time_s", "max_trials", "warmup_ms")}
        ref_key = json.dumps([problem.digest, sizes, timing_cfg,
                              bool(cfg.get("compile_reference", True)), self.baseline],
                             sort_keys=True)
        cached = None if self.job.get("fresh_references") else (
            self.state.reference_timing.get(ref_key))
        sample_rounds = sorted({0, 1 + secrets.randbelow(9),
                                10 + secrets.randbelow(max(1, int(cfg["min_trials"]) - 10))})
        # the GPU work around the timing holds the lock shared: no other job's timing meanwhile
        with gpu_lock(self.device, shared=True):
            inputs = self.inputs(module, problem, self.seed + 4000)
            variation = InputVariation(compare.snapshot(inputs))
            buf = self._buffer(inputs)
            self.run_candidate(key, inputs, "timed inputs")  # the candidate holds these values
        with gpu_lock(self.device):
            reply = self.remote.ask("time", key=key, buf=buf, cfg=timing_cfg,
                                    sample_rounds=sample_rounds)
            try:
                cand_lat = Latency.of_dict(reply["latency"])
            except (KeyError, TypeError, ValueError) as exc:
                raise Verdict("cheat", f"the candidate's process sent a malformed timing "
                                       f"({exc})") from exc
            wall_ms = self.check_wall_clock(key, buf, cand_lat)
            refs = cached if cached is not None else self.time_references(
                problem, ref, inputs, variation, sizes, cfg)
        with gpu_lock(self.device, shared=True):
            if cached is None:
                self.state.reference_timing[ref_key] = refs
            if reply.get("tampered"):
                raise Verdict("cheat", f"timing found harness functions replaced: "
                                       f"{reply['tampered']}")
            samples = list(reply.get("samples") or [])
            if len(samples) < 2:
                raise Verdict("cheat", f"the candidate's process returned {len(samples)} outputs of "
                                       f"timed trials, the judge asked for {len(sample_rounds)}")
            for round_, shift, out in samples:
                variation.apply(inputs, int(shift))
                # the same comparison as the correctness sets', float64 truth included: without
                # it, an fp32 kernel verified there failed here where the output cancels (ATen mm
                # on the H200, ~3e-4 off a fp32 reference that is itself that far off)
                self.compare(self.reference(ref, inputs), out,
                             f"timed trial {int(round_) + 1} (an output produced inside the timing "
                             f"loop)", truth=lambda: self.reference64(ref, inputs),
                             nudged=functools.partial(self.reference_nudged, ref, inputs),
                             baseline=functools.partial(self.reference_baseline, ref, inputs))
            self.check("correct inside the timing loop", True,
                       f"{len(samples)} sampled trials of {cand_lat.trials}, each on new input "
                       f"values" if variation.varied else "no floating inputs to vary")
            self.check_memory_floor(cand_lat, inputs, samples[0][2])
            c = cand_lat.median_ms
            eager, compiled = Latency.of_dict(refs["eager"]), refs.get("compiled")
            compiled = Latency.of_dict(compiled) if compiled else None
            timing: dict[str, Any] = {
                "candidate": cand_lat.to_dict(), "eager": eager.to_dict(),
                "compiled": compiled.to_dict() if compiled else None,
                "speedup_vs_eager": eager.median_ms / c if c > 0 else None,
                "speedup_vs_compiled": compiled.median_ms / c if compiled and c > 0 else None,
                "compile_error": refs.get("compile_error"), "sizes": sizes, "simulated": False,
                "references_reused": cached is not None,
                "baseline_flags": self.baseline, "baseline": flags.label(self.baseline),
                "wall_per_call_ms": wall_ms,
                "other_baseline": self.other_timing(refs, c),
                **self.memory_roofline(inputs, samples[0][2], eager, cand_lat),
            }
            # After timing, the same input memory with new values must still give right answers.
            self.refill(module, problem, inputs, self.seed + 5000)
            self.check_once(key, ref, inputs, "after timing, new values in the same memory")
            self.check("correct after timing", True, "")
        self.release(inputs)
        return timing

    def time_references(self, problem: Problem, ref: torch.nn.Module, inputs: list[Any],
                        variation: InputVariation, sizes: dict[str, int], cfg: dict[str, Any]
                        ) -> dict[str, Any]:
        """Eager and torch.compile latencies of the reference on ``inputs`` (varied per trial),
        as plain data: under the baseline's flags, and under the other preset's too where
        those change one of the problem's ops (``other``; interleaved with the first, so the
        two columns see the same GPU state)."""
        compile_error = None
        sets = {"": self.baseline}
        if self.flags_matter():
            sets["@other"] = self.other_baseline
        fns: dict[str, Callable[[], Any]] = {}
        compiled = self.compiled_reference(problem, ref, sizes) if cfg.get(
            "compile_reference", True) else None
        if isinstance(compiled, str):
            compile_error, compiled = compiled, None
        for suffix, fl in sets.items():
            fns["eager" + suffix] = functools.partial(_under, fl, ref, inputs)
            if compiled is None:
                continue
            t0 = time.perf_counter()
            try:  # compiled under these flags before timing (a recompile, if dynamo guards them)
                with torch.no_grad():
                    _under(fl, compiled, inputs)
                torch.cuda.synchronize()
                fns["compiled" + suffix] = functools.partial(_under, fl, compiled, inputs)
            except Exception as exc:  # recorded, timing goes on without it
                compile_error = f"{type(exc).__name__}: {exc}"
            self.compile_ref_s += time.perf_counter() - t0

        def vary(name: str, round_: int) -> None:
            variation.apply(inputs)

        with torch.no_grad():
            lat = time_interleaved(fns, min_trials=int(cfg["min_trials"]),
                                   min_time_s=float(cfg["min_time_s"]),
                                   max_trials=int(cfg["max_trials"]),
                                   warmup_ms=float(cfg["warmup_ms"]), before=vary)
        variation.apply(inputs, 0)
        out: dict[str, Any] = {
            "eager": lat["eager"].to_dict(),
            "compiled": lat["compiled"].to_dict() if "compiled" in lat else None,
            "compile_error": compile_error, "other": None}
        if "@other" in sets:
            out["other"] = {"eager": lat["eager@other"].to_dict(),
                            "compiled": lat["compiled@other"].to_dict()
                            if "compiled@other" in lat else None}
        return out

    def other_timing(self, refs: dict[str, Any], cand_ms: float) -> dict[str, Any]:
        """The speedups against the other preset's baselines (PyTorch defaults beside fp32, or
        fp32 beside the defaults): timed where its flags change the problem's ops, else the
        same latencies (``same_ops``: no op of the problem reads the flags that differ)."""
        other = refs.get("other")
        same = other is None
        other = other or {"eager": refs["eager"], "compiled": refs.get("compiled")}
        eager = Latency.of_dict(other["eager"])
        compiled = Latency.of_dict(other["compiled"]) if other.get("compiled") else None
        return {
            "flags": self.other_baseline, "baseline": flags.label(self.other_baseline),
            "eager": eager.to_dict(), "compiled": compiled.to_dict() if compiled else None,
            "speedup_vs_eager": eager.median_ms / cand_ms if cand_ms > 0 else None,
            "speedup_vs_compiled": compiled.median_ms / cand_ms if compiled and cand_ms > 0
            else None,
            "same_ops": same}

    def memory_roofline(self, inputs: list[Any], out: Any, eager: Latency, cand: Latency
                        ) -> dict[str, Any]:
        """Where eager and the candidate stand against the memory roofline: the time that
        reading every input once and writing every output once takes at this device's measured
        copy bandwidth, over each one's median. 1.0 is a kernel that moves no byte twice at copy
        speed; a compute-bound operator (a matmul) sits far below it by nature."""
        traffic = tensor_bytes(out) + tensor_bytes(inputs)
        bw = copy_bandwidth(self.device)  # bytes per ms
        floor_ms = traffic / bw
        l2 = int(getattr(torch.cuda.get_device_properties(self.device), "L2_cache_size", 0)
                 or 64 << 20)
        return {"traffic_bytes": traffic, "copy_bandwidth_gbs": bw / 1e6,
                "roofline_beyond_l2": traffic >= FLOOR_MIN_L2 * l2,
                "eager_roofline": floor_ms / eager.median_ms if eager.median_ms > 0 else None,
                "candidate_roofline": floor_ms / cand.median_ms if cand.median_ms > 0 else None}

    def check_memory_floor(self, claimed: Latency, inputs: list[Any], out: Any) -> None:
        """A floor the judge knows without trusting the candidate's process: writing the
        outputs takes at least their bytes over the device's copy bandwidth (measured here,
        with ``FLOOR_MARGIN`` for a kernel that streams better than a copy). Sound only where
        the traffic is far beyond the L2 cache (results could stay there), so applied there.
        Reported faster than writing its outputs: refused. Faster than reading its inputs and
        writing its outputs: flagged (a problem may leave inputs unread)."""
        out_bytes, in_bytes = tensor_bytes(out), tensor_bytes(inputs)
        l2 = int(getattr(torch.cuda.get_device_properties(self.device), "L2_cache_size", 0)
                 or 64 << 20)
        if out_bytes + in_bytes < FLOOR_MIN_L2 * l2:
            self.check("reported timing above the memory floor", True,
                       f"skipped: {(out_bytes + in_bytes) / 2**20:.0f} MiB of traffic is within "
                       f"{FLOOR_MIN_L2}x the L2 cache", skipped=True)
            return
        bw = copy_bandwidth(self.device) * FLOOR_MARGIN
        write_ms, touch_ms = out_bytes / bw, (out_bytes + in_bytes) / bw
        if out_bytes >= FLOOR_MIN_L2 * l2 and claimed.median_ms < write_ms:
            raise Verdict("cheat", f"the candidate's process reported a median of "
                                   f"{claimed.median_ms:.4g} ms, below the {write_ms:.4g} ms that "
                                   f"writing its {out_bytes / 2**20:.0f} MiB of outputs takes at "
                                   f"this device's copy bandwidth: the reported timing is "
                                   f"impossible")
        if claimed.median_ms < touch_ms:
            self.flags.append(f"reported {claimed.median_ms:.4g} ms is below the {touch_ms:.4g} ms "
                              f"that reading the inputs and writing the outputs once takes "
                              f"({(in_bytes + out_bytes) / 2**20:.0f} MiB at the copy "
                              f"bandwidth): only right if the problem leaves inputs unread")
        self.check("reported timing above the memory floor", True,
                   f"{claimed.median_ms:.4g} ms >= {write_ms:.4g} ms to write "
                   f"{out_bytes / 2**20:.0f} MiB of outputs")

    def check_wall_clock(self, key: str, buf: int, claimed: Latency) -> float:
        """The latency the candidate's process reports is its own measurement. Bound it from
        here: ask for forwards back to back on fixed inputs and time them by wall clock; the
        reported median may be below that by host overhead only (``WALL_SLACK``). A process
        that reports a figure its kernels do not reach is refused."""
        n = max(3, min(1000, int(WALL_TARGET_MS / max(claimed.median_ms, 1e-3))))
        t0 = time.perf_counter()
        self.remote.ask("repeat", key=key, buf=buf, n=n)
        per_call = (time.perf_counter() - t0) * 1e3 / n
        bound = WALL_SLACK[0] * claimed.median_ms + WALL_SLACK[1] + WALL_SLACK[2] / n
        if per_call > bound:
            raise Verdict("cheat", f"the candidate's process reported a median of "
                                   f"{claimed.median_ms:.4g} ms, but {n} forwards back to back "
                                   f"took {per_call:.4g} ms each by the judge's clock (allowed "
                                   f"up to {bound:.4g} ms for host overhead): the reported "
                                   f"timing is not what the kernels take")
        self.check("reported timing within the judge's wall clock", True,
                   f"{n} forwards: {per_call:.4g} ms each; reported median "
                   f"{claimed.median_ms:.4g} ms")
        return per_call

    def time_on_mtia(self, problem: Problem) -> tuple[dict[str, Any], dict]:
        """Simulated time on an MTIA generation at the problem's own (timed) sizes: the candidate
        runs in the interpreter under the chip model, sampling programs of large grids; the eager
        reference is modelled as one unfused kernel per aten op. Outputs of this sampled run are
        incomplete: the elements the simulated programs wrote are compared
        (:meth:`check_sampled_outputs`); correctness elsewhere was checked before, with full
        runs at smaller sizes."""
        from kernelevolve.tools.mtia import simulate_reference

        gen = self.state.target.partition(":")[2] or "2i"
        module, ref, key = self.build(problem, dict(problem.sizes))
        # The candidate's process makes its own inputs at these sizes, and runs first: at
        # KernelBench's sizes two copies (and one in transit) would not fit beside each other.
        # The timed inputs are too large to send (gigabytes): the candidate's process makes them
        # from a seed drawn for them alone, unrelated to the correctness checks' seeds.
        timed_seed = secrets.randbelow(2**31)
        # Which programs of a large grid are simulated (and which elements are checked) is drawn
        # here too, apart from the inputs' seed: no program is safe from being run.
        reply = self.remote.ask("simulate", key=key, problem=str(problem.path),
                                sizes=dict(problem.sizes), seed=timed_seed, gen=gen,
                                sample_seed=secrets.randbelow(2**62))
        forbidden = sorted(op for op in reply.get("ops", [])
                           if op not in ALLOWED_ATEN_OPS | self.allowed)
        if reply.get("illegal"):
            raise Verdict("compile_error", f"MTIA ({self.state.target}, simulated) cannot run this "
                                           f"kernel: {'; '.join(map(str, reply['illegal']))}")
        if forbidden:
            raise Verdict("cheat", f"at the timed sizes the forward ran torch ops that do the "
                                   f"work: {', '.join(forbidden)}")
        inputs = self.inputs(module, problem, timed_seed)
        self.check_sampled_outputs(ref, inputs, reply, dict(problem.sizes))
        with torch.no_grad():
            base = simulate_reference(ref, inputs, gen)
        del inputs
        cand_ms, eager_ms = float(reply["time_s"]) * 1e3, base.time_s * 1e3
        timing = {
            "candidate": Latency.of([cand_ms]).to_dict(), "eager": Latency.of([eager_ms]).to_dict(),
            "compiled": None, "speedup_vs_eager": eager_ms / cand_ms if cand_ms > 0 else None,
            "speedup_vs_compiled": None,
            "compile_error": "no torch.compile reference on a simulated target",
            "sizes": dict(problem.sizes), "simulated": True,
        }
        profile = {"instrument": "mtia-sim", "candidate": reply["sim"],
                   "eager_reference": base.to_dict()}
        self.check("simulated on MTIA", True, f"{gen}: limited by {reply['limiting_resource']}")
        return timing, profile

    def check_sampled_outputs(self, ref: torch.nn.Module, inputs: list[Any],
                              reply: dict[str, Any], sizes: dict[str, int]) -> None:
        """The simulated run's outputs where they hold what the full forward would have written:
        the candidate's process sends, per output, a random sample of those elements with
        their flat indices (mtia/written.py); they are compared with the reference on the
        same inputs by the same rules, the other elements copied from the reference (so the
        output's scale is the reference's own; an output over ``copy_limit`` bytes, whose copy
        might not fit beside it at KernelBench's sizes, is compared on the sample alone). An
        output nothing wrote into (allocated, then returned as it was) is a mismatch; one whose
        written values all depend on skipped programs or atomics is named in the flags."""
        from kernelevolve.problem import as_list

        copy_limit = 1 << 30
        label = f"the timed run at {sizes}, elements the simulated programs wrote"
        try:  # not self.reference(): its copies of inputs and outputs would not fit here
            with torch.no_grad():
                expected = as_list(ref(*inputs))
        except Exception as exc:  # the problem's own code, not the candidate's
            raise ProblemError(f"the reference Model.forward raised {type(exc).__name__}: "
                               f"{exc}") from exc
        sent = reply.get("outputs")
        if not isinstance(sent, list) or len(sent) != len(expected):
            raise Verdict("mismatch", f"{label}: the forward returned "
                                      f"{len(sent) if isinstance(sent, list) else 'no'} outputs, "
                                      f"the reference {len(expected)}")
        actual: list[Any] = []
        done, unknown = [], []
        alone: dict[int, torch.Tensor] = {}  # outputs compared on their sample: its indices
        for i, (e, s) in enumerate(zip(expected, sent, strict=True)):
            if not (isinstance(e, torch.Tensor) and isinstance(s, dict) and "index" in s):
                actual.append(s.get("value") if isinstance(s, dict) else s)
                continue
            dtype, shape = str(e.dtype).removeprefix("torch."), list(e.shape)
            if [s.get("dtype"), s.get("shape")] != [dtype, shape]:
                raise Verdict("mismatch", f"{label}: output {i} is {s.get('dtype')} "
                                          f"{s.get('shape')}, the reference's {dtype} {shape}")
            index, values = s.get("index"), s.get("values")
            if not (isinstance(index, torch.Tensor) and isinstance(values, torch.Tensor)
                    and index.dtype == torch.int64 and index.dim() == 1
                    and values.shape == index.shape and values.dtype == e.dtype
                    and (not index.numel() or 0 <= int(index.min()) <= int(index.max())
                         < e.numel())):
                raise Verdict("cheat", f"the candidate's process sent a malformed sample of "
                                       f"output {i} of the timed run")
            e = expected[i] = e.contiguous()
            if not index.numel():
                if e.numel() and not s.get("written") and not reply.get("atomics"):
                    raise Verdict("mismatch", f"{label}: no simulated program wrote into output "
                                              f"{i} (returned as allocated): its values are "
                                              f"whatever the memory held")
                unknown += [i] if e.numel() else []
                actual.append(e)
                continue
            if e.numel() * e.element_size() <= copy_limit:
                full = e.clone()
                full.view(-1)[index] = values
                actual.append(full)
            else:
                expected[i], alone[i] = e.view(-1)[index], index
                actual.append(values)
            done.append(f"output {i}: {index.numel()} of {s.get('trusted')} elements"
                        + (" (compared as a sample alone)" if i in alone else ""))

        def truth() -> list[Any] | None:
            exact = self.reference64(ref, inputs)
            if exact is None:
                return None
            return [t.reshape(-1)[alone[i]] if i in alone else t
                    for i, t in enumerate(as_list(exact))]

        if alone:
            label += f" (output(s) {sorted(alone)} as a sample alone: positions within it)"
        self.compare(expected, actual, label, truth=truth)
        if unknown:
            self.flags.append(f"at the timed sizes {sizes}, output(s) {unknown} could not be "
                              f"checked: every value the simulated programs wrote there depends "
                              f"on programs the simulator skipped, or on atomics")
        self.check("correct at the timed sizes (simulated programs' writes)", True,
                   "; ".join(done) or "no output element to compare")

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

    def run(self) -> dict[str, Any]:
        t_start = time.perf_counter()
        problem = self.problem()
        with self.stage("import"):
            self.remote.ask("load")
        self.check("imports and defines ModelNew", True, "")
        base = self.base_sizes(problem)
        self.check_fits(problem, base)
        with gpu_lock(self.device, shared=True):  # untimed GPU work: no timing meanwhile
            with self.stage("correctness"):
                first, *others = self.plans(problem, base)
                timed_module, timed_ref, timed_key = self.run_plan(problem, first)
                for plan in others + self.real_size_plans(problem, [first, *others]):
                    try:
                        self.run_plan(problem, plan)
                    except ProblemError as exc:  # the problem refused sizes the probe let by
                        self.check(plan.label, True, f"skipped at {plan.sizes}: {exc}",
                                   skipped=True)
                        self.flags.append(f"checked at one shape only: the problem refused "
                                          f"{plan.sizes}: {exc}")
                self.run_variants(problem, first.sizes)
                self.run_nonfinite(problem, first.sizes)
                self.check_many_calls(problem, first.sizes, time.perf_counter() - t_start)
            # After every check, so the specializations that only the other shapes, variants
            # or autotune turns launched are compiled too.
            with self.stage("gpu compile"):
                self.compile_for_gpu()
        self.check("ran custom kernels only", True,
                   f"aten ops seen: {', '.join(sorted(self.ops_seen)) or 'none'}")
        timing: dict[str, Any] | None = None
        profile: dict[str, Any] | list[dict[str, Any]] | None = None
        if self.job.get("timed") and self.state.target.startswith("mtia-sim"):
            with self.stage("timing"):
                timing, profile = self.time_on_mtia(problem)
            with self.stage("gpu compile"):
                self.compile_for_gpu(again=True)
        elif self.job.get("timed") and self.device.type == "cuda":
            with self.stage("timing"):
                timing = self.time_on_cuda(problem, timed_module, timed_ref, timed_key, base)
            speedup = timing.get("speedup_vs_eager") or 0.0
            if speedup > float(self.cfg["suspicious_speedup"]):
                with self.stage("re-verify"), gpu_lock(self.device, shared=True):
                    self.reverify(problem, base, speedup)
            if self.cfg["profile"]["enabled"]:
                # the profilers replay and time kernels: the GPU to themselves
                with self.stage("profile"), gpu_lock(self.device):
                    profile = self.profile(problem, timed_module, timed_key, base, timing)
        return {
            "status": "ok", "message": "verified" + (
                "" if timing is None else " (simulated time)" if timing["simulated"] else ""
            ) + ("" if timing else " (not timed)"),
            "timing": timing, "profile": profile, "elapsed_s": time.perf_counter() - t_start,
        }

    def profile(self, problem: Problem, module: Any, key: str, sizes: dict[str, int],
                timing: dict[str, Any]) -> list[dict[str, Any]]:
        """The profilers on the verified, timed candidate (tools/profile_jobs.py), run in the
        candidate's process: advisory evidence, the verdict is already made."""
        seed = self.seed + 6000
        workdir = Path.cwd() / f"profile-{self.job['id']}"  # in the worker's own directory
        workdir.mkdir(exist_ok=True)
        inputs = self.inputs(module, problem, seed)
        buf = self._buffer(inputs)
        self.remote.ask("load_inputs", buf=buf, inputs=compare.snapshot(inputs))
        reply = self.remote.ask("profile", key=key, buf=buf, problem=str(problem.path),
                                candidate=self.job["candidate"], sizes=sizes, seed=seed,
                                forward_ms=timing["candidate"]["median_ms"],
                                workdir=str(workdir), options=self.cfg["profile"])
        self.release(inputs)
        return list(reply.get("reports") or [])

    def reverify(self, problem: Problem, base: dict[str, int], speedup: float) -> None:
        seed = self.seed + 7000
        plans = [Plan("fresh input sets", base, [seed, seed + 1, seed + 2])]
        # The last family the problem accepts: the furthest from the other-shapes check's.
        other = next((s for s in reversed(problem.size_candidates(base))
                      if problem.rejects(s) is None), None)
        if other is not None:
            plans.append(Plan("fresh other shapes", other, [seed + 3]))
        for plan in plans:
            self.run_plan(problem, plan)
        self.flags.append(f"speedup {speedup:.1f}x is above the suspicious threshold: "
                          f"re-verified on fresh inputs and shapes")

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

    def result(self) -> dict[str, Any]:
        t0 = time.perf_counter()
        out: dict[str, Any]
        try:
            out = self.run()
        except Verdict as v:
            out = {"status": v.status, "message": v.message, "fatal": v.fatal}
        except ProblemError as exc:
            out = {"status": "crash", "message": f"the reference problem failed: {exc}",
                   "harness_error": str(exc)}
        except Exception as exc:  # process boundary: record it
            out = {"status": "crash", "fatal": True,
                   "message": f"the harness failed while evaluating this candidate: "
                              f"{type(exc).__name__}: {exc}\n{tb_tail(exc)}"}
        finally:
            memory = self.memory_use()
            self.remote.close()
            self.held.close()
        elapsed = time.perf_counter() - t0
        out.update({
            "target": self.state.target, "device": device_name(self.device, self.state.target),
            "checks": self.checks, "errors": [self.errors[k] for k in sorted(self.errors)],
            "aten_ops": sorted(self.ops_seen), "kernel_launches": self.max_launches,
            "nondeterministic": self.nondeterministic, "flags": self.flags,
            "elapsed_s": elapsed,
            "first_call_s": self.first_call_s, "compile_reference_s": self.compile_ref_s,
            "overhead_s": max(0.0, elapsed - self.first_call_s - self.compile_ref_s),
            "stages": {k: round(v, 4) for k, v in self.stages.items()},
            "versions": versions(), "memory": memory,
            "precision": {
                "contract": str(self.cfg.get("precision", "baseline")),
                "factor": float(self.cfg.get("precision_factor", 3.0)),
                "baseline": flags.label(self.baseline),
                "inexact_ops": self.contract_ops(), "passed_under_it": self.contract_passes,
                "why": self.contract_why()},
        })
        out.setdefault("timing", None)
        return out


def _draw(gen: torch.Generator, low: float, high: float) -> float:
    return low + (high - low) * float(torch.rand((), generator=gen))


VARIANT_CHUNK = 1 << 26  # elements a variant's transform draws and writes at a time


def _in_chunks(t: torch.Tensor, seed: int,
               fn: Callable[[torch.Tensor, torch.Generator], None]) -> torch.Tensor:
    """A contiguous copy of ``t`` transformed in place by ``fn(chunk, generator)`` a chunk at
    a time, the generator on ``t``'s device: a variant of a 6 GB input costs one copy, not
    the three or four that whole-tensor expressions would hold at once."""
    out = t.detach().clone(memory_format=torch.contiguous_format)
    flat = out.view(-1)
    gen = torch.Generator(device=t.device).manual_seed(seed)
    for start in range(0, flat.numel(), VARIANT_CHUNK):
        fn(flat[start:start + VARIANT_CHUNK], gen)
    return out


def _uniform(chunk: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    return torch.rand(chunk.shape, generator=gen, device=chunk.device, dtype=torch.float32)


def _scaled(gen: torch.Generator, mild: int) -> tuple[str, Callable[[torch.Tensor], torch.Tensor]]:
    s = 10 ** _draw(gen, 1.0, 3.0) / 10 ** mild * (1 if float(torch.rand((), generator=gen)) < 0.5
                                                 else -1)
    return f"inputs x {s:.4g}", lambda t: t * s


def _shifted(gen: torch.Generator, mild: int) -> tuple[str, Callable[[torch.Tensor], torch.Tensor]]:
    c = _draw(gen, 2.0, 8.0) / 2 ** mild * (1 if float(torch.rand((), generator=gen)) < 0.5
                                           else -1)
    return f"inputs + {c:.4g}", lambda t: t + c


def _signs(gen: torch.Generator, mild: int) -> tuple[str, Callable[[torch.Tensor], torch.Tensor]]:
    """Each value's sign flipped with probability one half (``torch.rand``'s inputs are all
    non-negative: a ReLU written as a copy passes them)."""
    seed = int(torch.randint(0, 2**31, (), generator=gen))

    def signs(chunk: torch.Tensor, g: torch.Generator) -> None:
        flip = _uniform(chunk, g) < 0.5
        chunk.mul_(1 - 2 * flip.to(chunk.dtype))

    return "inputs with random signs", lambda t: _in_chunks(t, seed, signs)


def _ties(gen: torch.Generator, mild: int) -> tuple[str, Callable[[torch.Tensor], torch.Tensor]]:
    """Values rounded to a grid of a quarter of their spread (many exact ties), one in 1e5 of
    them an outlier of 1e3 (1e3 / 10^mild) times their standard deviation."""
    big = 1e3 / 10 ** mild
    seed = int(torch.randint(0, 2**31, (), generator=gen))

    def transform(t: torch.Tensor) -> torch.Tensor:
        step = (float(t.float().std()) / 4 if t.numel() > 1 else 1.0) or 1.0

        def grid(chunk: torch.Tensor, g: torch.Generator) -> None:
            chunk.div_(step).round_().mul_(step)
            where = torch.randint(chunk.numel(), (max(1, chunk.numel() // 100_000),),
                                  generator=g, device=chunk.device)
            spread = 4 * step  # the inputs' standard deviation
            chunk[where] = torch.where(chunk[where] < 0, -big * spread, big * spread).to(
                chunk.dtype)

        return _in_chunks(t, seed, grid)

    return f"ties on a grid and outliers x {big:g}", transform


def _magnitudes(gen: torch.Generator, mild: int
                ) -> tuple[str, Callable[[torch.Tensor], torch.Tensor]]:
    decades = 3.0 / 2 ** mild
    seed = int(torch.randint(0, 2**31, (), generator=gen))

    def spread(chunk: torch.Tensor, g: torch.Generator) -> None:
        chunk.mul_(torch.pow(10.0, _uniform(chunk, g).mul_(2).sub_(1).mul_(decades))
                   .to(chunk.dtype))

    return (f"inputs spread over {2 * decades:g} decades of magnitude",
            lambda t: _in_chunks(t, seed, spread))


def _near_one(gen: torch.Generator, mild: int
              ) -> tuple[str, Callable[[torch.Tensor], torch.Tensor]]:
    eps = _draw(gen, 0.005, 0.05) / 2 ** mild

    def transform(t: torch.Tensor) -> torch.Tensor:
        mean = float(t.float().mean()) if t.numel() else 0.0
        std = (float(t.float().std()) if t.numel() > 1 else 1.0) or 1.0
        def standardise(chunk: torch.Tensor, g: torch.Generator) -> None:
            chunk.sub_(mean).mul_(eps / std).add_(1)

        return _in_chunks(t, 0, standardise)

    return f"inputs near one (1 + {eps:.3g} x standardised inputs)", transform


def _layout(name: str, fn: Callable[[torch.Tensor], torch.Tensor]
            ) -> Callable[[torch.Generator, int], tuple[str, Callable[[torch.Tensor],
                                                                        torch.Tensor]]]:
    return lambda gen, mild: (name, fn)


# run_variants' families: (generator, mildness 0-3) -> (name, transform of a floating input)
_VARIANTS: list[Callable[[torch.Generator, int],
                         tuple[str, Callable[[torch.Tensor], torch.Tensor]]]] = [
    _scaled, _shifted, _signs, _ties, _magnitudes, _near_one,
    _layout("non-contiguous inputs", _strided_copy),
    _layout("every dim's stride changed", _reversed_layout),
]


def _under(fl: dict[str, Any], fn: Callable[..., Any], inputs: list[Any]) -> Any:
    """``fn(*inputs)`` under the flags ``fl`` (a timed baseline's forward)."""
    with flags.applied(fl):
        return fn(*inputs)


@dataclass
class _Observed:
    """What the candidate's process reports about one forward, type-checked: it is read, never
    trusted to be well-formed."""

    seconds: float
    ops: list[str]
    launches: int
    odd_outputs: list[str]
    modified: list[int]
    threads: int
    stream_switched: bool
    tampered: list[str]
    notes: list[str]
    retained: list[int]
    kept_storages: list[int]  # how many calls ago: outputs let go of whose memory lives on
    autotune_configs: int  # the most configs an autotuned kernel had to turn through

    @classmethod
    def of(cls, reply: dict[str, Any]) -> _Observed:
        try:
            return cls(
                seconds=float(reply["seconds"]), ops=[str(o) for o in reply["ops"]],
                launches=int(reply["launches"]),
                odd_outputs=[str(o) for o in reply["odd_outputs"]],
                modified=[int(i) for i in reply["modified"]], threads=int(reply["threads"]),
                stream_switched=bool(reply["stream_switched"]),
                tampered=[str(t) for t in reply["tampered"]],
                notes=[str(n) for n in reply.get("notes", [])],
                retained=[int(i) for i in reply.get("retained", [])],
                kept_storages=[int(i) for i in reply.get("kept_storages", [])],
                autotune_configs=max(1, int(reply.get("autotune_configs", 1))))
        except (KeyError, TypeError, ValueError) as exc:
            raise Verdict("cheat", f"the candidate's process sent a malformed report "
                                   f"({type(exc).__name__}: {exc})") from exc


def device_name(device: torch.device, target: str = "") -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if target.startswith("mtia-sim"):
        return f"simulated MTIA {target.partition(':')[2]} (Triton interpreter on the CPU)"
    return f"cpu ({platform.processor() or platform.machine()}, Triton interpreter)"


def versions() -> dict[str, str]:
    import triton

    info = {"python": platform.python_version(), "torch": torch.__version__,
            "triton": triton.__version__}
    if torch.cuda.is_available():
        info["cuda"] = str(torch.version.cuda)
    return info


def _limit_memory(gb: float) -> None:
    import resource

    limit = int(gb * 1024**3)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def serve(fd_in: int, fd_out: int, target: str, memory_limit_gb: float) -> None:
    # The worker forks per job: nothing here may initialise CUDA, not even by asking the runtime
    # how many GPUs there are (pool.py sets this too, before torch is imported).
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    device = torch.device("cuda" if target == "cuda" else "cpu")
    if device.type == "cpu":
        _limit_memory(memory_limit_gb)
        torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", "1"))))
    # fp32 references compute in full fp32: TF32 would make them the inaccurate side.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    # cuBLAS may reduce bf16/fp16 split-K partial sums in reduced precision; the reference must
    # be the accurate side of every comparison.
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    launches = LaunchCounter()
    launches.install()
    if os.environ.get("TRITON_INTERPRET") == "1":
        InterpreterBounds().install(launches)
    # Imported before the integrity snapshot: importing dynamo wraps torch.manual_seed and
    # friends, which must not look like a candidate's tampering later.
    importlib.import_module("torch._dynamo")
    importlib.import_module("triton")

    from kernelevolve import problem as problem_module
    from kernelevolve.tools.harness import guard, interpreter, timing

    harness_modules = (sys.modules[__name__], compare, guard, interpreter, timing, problem_module)
    state = WorkerState(target=target, device=device, launches=launches,
                        integrity=Integrity(harness_modules))
    reader = os.fdopen(fd_in, "r")
    writer = os.fdopen(fd_out, "w")
    writer.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")
    writer.flush()
    for line in reader:
        job = json.loads(line)
        state.jobs += 1
        print(f"--- kernelevolve job {job['id']} ---", file=sys.stderr, flush=True)
        result = _evaluate_in_child(job, state, (fd_in, fd_out))
        result["id"] = job["id"]
        writer.write(json.dumps(result, default=str) + "\n")
        writer.flush()


def _evaluate_in_child(job: dict[str, Any], state: WorkerState, parent_fds: tuple[int, int]
                       ) -> dict[str, Any]:
    """Fork the judge, evaluate ``job`` there, return its reply (or what its death says)."""
    read_fd, write_fd = os.pipe()
    note_r, note_w = os.pipe()  # the judge's last words, if it dies of an exception

    def judge() -> None:
        os.close(read_fd)
        os.close(note_r)
        for fd in parent_fds:  # only the worker talks to the parent
            os.close(fd)
        evaluation = Evaluation(job, state, close_in_candidate=(write_fd, note_w))
        profile_dir = os.environ.get("KERNELEVOLVE_PROFILE_JUDGE")  # a developer's aid
        if profile_dir:
            import cProfile
            import io
            import pstats

            profiler = cProfile.Profile()
            result = profiler.runcall(evaluation.result)
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(40)
            Path(profile_dir, f"judge-{job['id']}.txt").write_text(text.getvalue())
        else:
            result = evaluation.result()
        result["_cache"] = {"shrunk": [[*k, v] for k, v in state.shrunk.items()],
                            "other_sizes": [[*k, *v] for k, v in state.other_sizes.items()],
                            "reference_timing": state.reference_timing}
        view = memoryview(json.dumps(result, default=str).encode())
        while view:
            view = view[os.write(write_fd, view):]

    pid = fork_child(judge, note_fd=note_w)
    os.close(write_fd)
    os.close(note_w)
    chunks = []
    while chunk := os.read(read_fd, 1 << 16):
        chunks.append(chunk)
    os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    note = read_note(note_r)
    if not chunks:  # the judge itself died: out of memory, most likely
        how = exit_description(status) + (f": {note}" if note else "")
        return {"status": "crash", "fatal": True,
                "message": f"the evaluation's judge process died ({how}); running out of "
                           f"memory (a problem this large) ends it so"}
    reply: dict[str, Any] = json.loads(b"".join(chunks))
    cache = reply.pop("_cache", {})
    for digest, n, sizes in cache.get("shrunk", []):
        state.shrunk[(digest, n)] = sizes
    for digest, base, sizes, why in cache.get("other_sizes", []):
        state.other_sizes[(digest, base)] = (sizes, why)
    state.reference_timing.update(cache.get("reference_timing", {}))
    return reply


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fd-in", type=int, required=True)
    parser.add_argument("--fd-out", type=int, required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--memory-limit-gb", type=float, default=16.0)
    args = parser.parse_args(argv)
    serve(args.fd_in, args.fd_out, args.target, args.memory_limit_gb)


if __name__ == "__main__":
    main()
