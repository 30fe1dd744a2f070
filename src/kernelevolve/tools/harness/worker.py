"""The evaluation worker: a subprocess that loads a problem and a candidate and runs the cascade
(import -> correctness on fresh inputs and other shapes -> runtime anti-cheat -> timing).

Run as ``python -m kernelevolve.tools.harness.worker --fd-in R --fd-out W --target T``. Requests
and replies are JSON lines on those two pipes; stdout and stderr belong to the candidate and go
to the worker's log, which the parent tails. The worker imports only torch, triton, numpy and the
standard library, so it runs on any GPU host as it is.

The worker process never runs a candidate itself: it imports torch and triton once, installs the
launch counter and the interpreter's bounds checks, and then forks a fresh child for every job
(copy-on-write: milliseconds). The child evaluates the candidate, sends its reply to the worker
and exits, so whatever a candidate did to its process (module globals rebound, torch switches
flipped, a poisoned CUDA context, a segfault) dies with it, and no process that ran a candidate
judges another one. CUDA is initialised in the child only (a CUDA context does not survive a
fork). Plain data the child worked out about the problem (shrunk and other sizes) comes back
with the reply and is kept for the next child.

A reply is a dict shaped like ``EvalResult`` (validated by the parent). ``"fatal": true`` is
kept for the parent's bookkeeping; the worker itself is unaffected by its child's fate.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import platform
import secrets
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kernelevolve.errors import ProblemError
from kernelevolve.problem import (
    Problem,
    as_list,
    call_factory,
    parse_problem,
    size_families,
    tensors,
)
from kernelevolve.tools.harness import compare
from kernelevolve.tools.harness.guard import (
    Integrity,
    InterpreterBounds,
    LaunchCounter,
    OpRecorder,
    expand_allowed,
)
from kernelevolve.tools.harness.timing import Latency, time_interleaved


class Verdict(Exception):
    """Ends an evaluation with a status other than ok."""

    def __init__(self, status: str, message: str, fatal: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.fatal = fatal  # the process is unusable afterwards (a CUDA error poisons it)


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
    jobs: int = 0


@dataclass
class Plan:
    """One family of shapes to check at: the sizes, the seeds, and what to check there."""

    label: str
    sizes: dict[str, int]
    seeds: list[int]
    determinism: bool = False
    pointer_reuse: bool = False


def _tb_tail(exc: BaseException, limit: int = 12) -> str:
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return "".join(lines)[-4000:] if len(lines) < limit else "".join(lines[-limit:])[-4000:]


def _is_compile_error(exc: BaseException) -> bool:
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"CompilationError", "CompileTimeAssertionFailure", "UnsupportedLanguageConstruct"}) \
        or "error building extension" in str(exc).lower()


def _is_fatal_device_error(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc}".lower()
    return any(s in text for s in ("illegal memory access", "cuda error", "device-side assert",
                                   "acceleratorerror", "misaligned address", "unspecified launch failure"))


def _to_device(values: list[Any], device: torch.device) -> list[Any]:
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


def load_candidate(path: Path, state: WorkerState) -> type:
    """Import the candidate file as a fresh module and return its ModelNew."""
    name = f"kernelevolve_candidate_{state.jobs}_{abs(hash(str(path))) % 10**8}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise Verdict("compile_error", f"cannot import candidate file {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise Verdict("compile_error", f"importing the candidate failed: {type(exc).__name__}: "
                                       f"{exc}\n{_tb_tail(exc)}") from exc
    tampered = state.integrity.tampered()
    if tampered:
        raise Verdict("cheat", f"importing the candidate replaced harness functions: {tampered}")
    cls = getattr(module, "ModelNew", None)
    if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
        raise Verdict("compile_error", "the candidate defines no class ModelNew(nn.Module)")
    return cls


class _ThreadWatch:
    """Counts threads started from the main thread while active. Threads that libraries start
    from their own background threads (torch.compile's worker pools) are not the candidate's."""

    def __init__(self) -> None:
        self.count = 0
        self._original = threading.Thread.start

    def __enter__(self) -> _ThreadWatch:
        original, watch = self._original, self

        def start(thread: threading.Thread) -> None:
            if threading.current_thread() is threading.main_thread():
                watch.count += 1
            original(thread)

        threading.Thread.start = start  # type: ignore[method-assign,assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        threading.Thread.start = self._original  # type: ignore[method-assign,assignment]


class Evaluation:
    """One candidate against one problem on this worker's target."""

    def __init__(self, job: dict[str, Any], state: WorkerState) -> None:
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
        self.first_call_s = 0.0
        self.compile_ref_s = 0.0
        self.instances: dict[str, tuple[torch.nn.Module, torch.nn.Module]] = {}
        # Seeds are drawn per evaluation unless the user fixes one, so a candidate cannot carry
        # answers precomputed for known inputs; they are reported, so a run can be replayed.
        seed = self.cfg.get("seed")
        self.seed = int(seed) if seed is not None else secrets.randbelow(2**31)

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
        key = (problem.digest, int(self.cfg["cpu_max_elements"]))
        if key not in self.state.shrunk:
            self.state.shrunk[key] = problem.shrink_sizes(key[1])
        return dict(self.state.shrunk[key])

    def build(self, problem: Problem, cand_cls: type, sizes: dict[str, int]
              ) -> tuple[Any, torch.nn.Module, torch.nn.Module]:
        """The problem module at ``sizes`` with reference and candidate models. When the
        constructor arguments are those of an earlier plan, the same instances are reused, so
        state a candidate keeps between calls (a size fixed at the first call) is exercised."""
        seed = self.seed
        module, ref, init_inputs = problem.instantiate(sizes, seed)
        key = repr(init_inputs)
        if key in self.instances:
            ref, cand = self.instances[key]
            return module, ref, cand
        torch.manual_seed(seed)
        try:
            cand = cand_cls(*init_inputs)
        except Exception as exc:
            raise Verdict("runtime_error", f"ModelNew(*get_init_inputs()) raised "
                                           f"{type(exc).__name__}: {exc}\n{_tb_tail(exc)}") from exc
        try:
            cand.load_state_dict(ref.state_dict(), strict=True)
        except RuntimeError as exc:
            raise Verdict("compile_error", "ModelNew's parameters and buffers must have the same "
                                           f"names and shapes as Model's: {exc}") from exc
        self.instances[key] = (ref.to(self.device), cand.to(self.device))
        return module, *self.instances[key]

    def inputs(self, module: Any, problem: Problem, seed: int) -> list[Any]:
        torch.manual_seed(seed)
        values = _to_device(call_factory(module, "get_inputs", problem.path), self.device)
        torch.manual_seed(secrets.randbelow(2**62))  # torch.initial_seed() tells nothing
        return values

    # -- running ----------------------------------------------------------------------------
    def reference(self, ref: torch.nn.Module, inputs: list[Any]) -> Any:
        try:
            with torch.no_grad():
                out = ref(*compare.snapshot(inputs))
        except Exception as exc:  # the problem's own code, not the candidate's
            raise ProblemError(f"the reference Model.forward raised {type(exc).__name__}: "
                               f"{exc}") from exc
        return compare.clone_tree(out)

    def run_candidate(self, cand: torch.nn.Module, inputs: list[Any], label: str) -> Any:
        """One forward under the op recorder and launch counter, with the anti-cheat checks."""
        launches = self.state.launches
        before = compare.snapshot(inputs)
        started = _ThreadWatch()
        stream = torch.cuda.current_stream() if self.device.type == "cuda" else None
        recorder = OpRecorder()
        launches.count = 0
        t0 = time.perf_counter()
        try:
            with torch.no_grad(), recorder, started:
                out = cand(*inputs)
            if self.device.type == "cuda":
                torch.cuda.synchronize()
        except Verdict:
            raise
        except Exception as exc:
            status = "compile_error" if _is_compile_error(exc) else "runtime_error"
            raise Verdict(status, f"ModelNew.forward raised {type(exc).__name__}: {exc}\n"
                                  f"{_tb_tail(exc)}", fatal=_is_fatal_device_error(exc)) from exc
        if not self.first_call_s:
            self.first_call_s = time.perf_counter() - t0
        self.ops_seen |= set(recorder.ops)
        self.max_launches = max(self.max_launches, launches.count)
        forbidden = recorder.forbidden(self.allowed)
        if forbidden:
            raise Verdict("cheat", f"the forward ran torch ops that do the work ({label}): "
                                   f"{', '.join(forbidden)}. Only allocation/view ops are allowed "
                                   f"unless the user allows named library ops (eval.allowed_ops)")
        if launches.count == 0:
            raise Verdict("cheat", f"the forward launched no custom kernel ({label}): a candidate "
                                   f"must compute with its own Triton or CUDA kernels")
        odd = [type(v).__name__ for v in as_list(out)
               if isinstance(v, torch.Tensor) and type(v) is not torch.Tensor]
        if odd:
            raise Verdict("cheat", f"the forward returned tensor subclasses ({', '.join(odd)}): "
                                   f"outputs must be plain torch.Tensor ({label})")
        changed = compare.modified_inputs(before, inputs)
        if changed:
            raise Verdict("cheat", f"the forward modified its inputs {changed} ({label})")
        if started.count:
            raise Verdict("cheat", f"the forward started {started.count} threads ({label}): "
                                   f"work on other threads escapes the op recorder and timer")
        if stream is not None and torch.cuda.current_stream() != stream:
            raise Verdict("cheat", f"the forward switched the current CUDA stream ({label})")
        tampered = self.state.integrity.tampered()
        if tampered:
            raise Verdict("cheat", f"the forward replaced harness functions: {tampered}")
        return out

    def compare(self, expected: Any, actual: Any, label: str) -> None:
        errors, problem = compare.compare_outputs(
            expected, actual, self.cfg.get("atol"), self.cfg.get("rtol"),
            bool(self.cfg.get("allow_loose_fp32")))
        for err in errors:
            worst = self.errors.get(err.index)
            if worst is None or err.max_abs_error > worst["max_abs_error"]:
                self.errors[err.index] = err.to_dict()
        if problem:
            raise Verdict("mismatch", f"{label}: {problem}")

    def check_once(self, cand: torch.nn.Module, ref: torch.nn.Module, inputs: list[Any],
                   label: str) -> tuple[Any, Any]:
        """Reference, poison, candidate, compare: one input set. Returns the candidate's output
        and the reference's."""
        # Written before the run, so a crash's stderr tail says where the worker died.
        print(f"[kernelevolve] checking {label}", file=sys.stderr, flush=True)
        expected = self.reference(ref, inputs)
        keep = compare.clone_tree(expected)
        out_bytes = sum(t.numel() * t.element_size() for t in tensors(as_list(keep)))
        compare.poison(expected)
        del expected
        compare.poison_allocator(2 * out_bytes, self.device)
        out = self.run_candidate(cand, inputs, label)
        self.compare(keep, out, label)
        return out, keep

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
        return plans

    def other_sizes(self, problem: Problem, base: dict[str, int]
                    ) -> tuple[dict[str, int] | None, str]:
        key = (problem.digest, json.dumps(base, sort_keys=True))
        if key not in self.state.other_sizes:
            self.state.other_sizes[key] = problem.other_sizes(base)
        return self.state.other_sizes[key]

    def run_plan(self, problem: Problem, cand_cls: type, plan: Plan) -> tuple[Any, Any, Any]:
        module, ref, cand = self.build(problem, cand_cls, plan.sizes)
        inputs: list[Any] = []
        earlier: tuple[Any, Any, Any] | None = None
        for k, seed in enumerate(plan.seeds):
            inputs = self.inputs(module, problem, seed)
            label = f"{plan.label} {k + 1}/{len(plan.seeds)} at {plan.sizes}"
            out, expected = self.check_once(cand, ref, inputs, label)
            if plan.determinism and k == 0:
                again = self.run_candidate(cand, inputs, label + ", second run")
                if not compare.bitwise_equal(out, again):
                    self.nondeterministic = True
                    self.compare(self.reference(ref, inputs), again, label + ", second run")
            # An output handed out earlier must not change when the forward runs again: outputs
            # that alias a buffer kept between calls would corrupt the caller's results.
            if earlier is not None and not compare.bitwise_equal(earlier[0], earlier[1]):
                raise Verdict("mismatch", f"{label}: an output returned by the previous call "
                                          f"changed when the forward ran again (outputs alias "
                                          f"memory the candidate keeps between calls)")
            # Within tolerance is not enough where the answer barely moves (a loss over 1e9
            # terms): an output that stays bitwise the same while the reference's changes does
            # not depend on the input.
            if (earlier is not None and compare.bitwise_equal(out, earlier[1])
                    and not compare.bitwise_equal(expected, earlier[2])):
                raise Verdict("mismatch", f"{label}: the output is bitwise the same as for the "
                                          f"previous input set while the reference's changed: "
                                          f"it does not depend on the input")
            earlier = (out, compare.clone_tree(out), expected)
        self.check(f"correct on {plan.label}", True,
                   f"{len(plan.seeds)} sets at {plan.sizes}, seeds {plan.seeds}")
        if plan.pointer_reuse:
            self.refill(module, problem, inputs, self.seed + 3000)
            self.check_once(cand, ref, inputs, "new values in the same input memory")
            self.check("no results reused across calls", True, "same pointers, new values")
        return module, ref, cand

    def compiled_reference(self, problem: Problem, ref: torch.nn.Module, sizes: dict[str, int]):
        key = (problem.digest, json.dumps(sizes, sort_keys=True))
        if key not in self.state.compiled:
            t0 = time.perf_counter()
            try:
                self.state.compiled[key] = torch.compile(ref)
            except Exception as exc:  # recorded, the run goes on without this reference
                self.state.compiled[key] = f"{type(exc).__name__}: {exc}"
            self.compile_ref_s = time.perf_counter() - t0
        return self.state.compiled[key]

    def time_on_cuda(self, problem: Problem, module: Any, ref: torch.nn.Module,
                     cand: torch.nn.Module, sizes: dict[str, int]) -> dict[str, Any]:
        """Candidate, eager and torch.compile timed interleaved. Before every trial the floating
        inputs get new values (the base set rotated by a random offset: the same values, so the
        same distribution, in a new arrangement), so a result memoized by pointer, version
        counter or fingerprint is wrong; the candidate's outputs of a random sample of trials
        are then checked against the reference on those trials' exact inputs."""
        cfg = self.cfg
        inputs = self.inputs(module, problem, self.seed + 4000)
        base = compare.snapshot(inputs)
        rotated = [i for i, t in enumerate(inputs) if isinstance(t, torch.Tensor)
                   and t.dtype.is_floating_point and t.numel() > 1]
        fns: dict[str, Callable[[], Any]] = {}

        def candidate() -> Any:
            return cand(*inputs)

        def eager() -> Any:
            return ref(*inputs)

        fns["candidate"], fns["eager"] = candidate, eager
        compile_error = None
        if cfg.get("compile_reference", True):
            compiled = self.compiled_reference(problem, ref, sizes)
            if isinstance(compiled, str):
                compile_error = compiled
            else:
                t0 = time.perf_counter()
                try:
                    with torch.no_grad():
                        compiled(*inputs)
                    torch.cuda.synchronize()
                    fns["compiled"] = lambda: compiled(*inputs)
                except Exception as exc:  # recorded, timing goes on without it
                    compile_error = f"{type(exc).__name__}: {exc}"
                self.compile_ref_s += time.perf_counter() - t0
        shifts: dict[tuple[str, int], int] = {}
        sample_rounds = {0, 1 + secrets.randbelow(9),
                         10 + secrets.randbelow(max(1, int(cfg["min_trials"]) - 10))}
        samples: dict[int, tuple[int, Any]] = {}

        # A sorted input (bucket boundaries) keeps its order: it is scaled instead of rotated.
        ordered = {i for i in rotated if base[i].numel() <= 1 << 20
                   and bool((base[i].reshape(-1).diff() >= 0).all())}

        def vary(shift: int) -> None:
            for i in rotated:
                if i in ordered:
                    torch.mul(base[i], 1.0 + (shift % 997) / 997.0, out=inputs[i])
                else:
                    _rotate_into(inputs[i], base[i], shift)

        def before(name: str, round_: int) -> None:
            shift = 1 + secrets.randbelow(2**40)
            vary(shift)
            shifts[(name, round_)] = shift

        def after(name: str, round_: int, out: Any) -> None:
            if name == "candidate" and round_ in sample_rounds:
                samples[round_] = (shifts[(name, round_)], compare.clone_tree(out))

        with torch.no_grad():
            lat = time_interleaved(fns, min_trials=int(cfg["min_trials"]),
                                   min_time_s=float(cfg["min_time_s"]),
                                   max_trials=int(cfg["max_trials"]),
                                   warmup_ms=float(cfg["warmup_ms"]), before=before, after=after)
        tampered = self.state.integrity.tampered()
        if tampered:
            raise Verdict("cheat", f"timing found harness functions replaced: {tampered}")
        for round_, (shift, out) in sorted(samples.items()):
            vary(shift)
            self.compare(self.reference(ref, inputs), out, f"timed trial {round_ + 1} (outputs "
                                                           f"produced inside the timing loop)")
        self.check("correct inside the timing loop", True,
                   f"{len(samples)} sampled trials of {lat['candidate'].trials}, each on new "
                   f"input values" if rotated else "no floating inputs to vary")
        c = lat["candidate"].median_ms
        timing: dict[str, Any] = {
            "candidate": lat["candidate"].to_dict(), "eager": lat["eager"].to_dict(),
            "compiled": lat["compiled"].to_dict() if "compiled" in lat else None,
            "speedup_vs_eager": lat["eager"].median_ms / c if c > 0 else None,
            "speedup_vs_compiled": lat["compiled"].median_ms / c if "compiled" in lat and c > 0
            else None,
            "compile_error": compile_error, "sizes": sizes, "simulated": False,
        }
        # After timing, the same input memory with new values must still give right answers.
        self.refill(module, problem, inputs, self.seed + 5000)
        self.check_once(cand, ref, inputs, "after timing, new values in the same memory")
        self.check("correct after timing", True, "")
        return timing

    def time_on_mtia(self, problem: Problem, cand_cls: type) -> tuple[dict[str, Any], dict]:
        """Simulated time on an MTIA generation at the problem's own (timed) sizes: the candidate
        runs in the interpreter under the chip model, sampling programs of large grids; the eager
        reference is modelled as one unfused kernel per aten op. Outputs of this sampled run are
        incomplete and not compared; correctness was checked before, with full runs."""
        from kernelevolve.tools.mtia import MtiaIllegalKernel, simulate_forward, simulate_reference

        gen = self.state.target.partition(":")[2] or "2i"
        module, ref, cand = self.build(problem, cand_cls, dict(problem.sizes))
        inputs = self.inputs(module, problem, self.seed + 4000)
        recorder = OpRecorder()

        def forward() -> Any:
            with torch.no_grad(), recorder:
                return cand(*inputs)

        try:
            sim = simulate_forward(forward, gen)
        except MtiaIllegalKernel as exc:
            raise Verdict("compile_error", f"MTIA ({self.state.target}, simulated) cannot run this "
                                           f"kernel: {'; '.join(exc.reasons)}") from exc
        forbidden = recorder.forbidden(self.allowed)
        if forbidden:
            raise Verdict("cheat", f"at the timed sizes the forward ran torch ops that do the "
                                   f"work: {', '.join(forbidden)}")
        with torch.no_grad():
            base = simulate_reference(ref, compare.snapshot(inputs), gen)
        cand_ms, eager_ms = sim.time_s * 1e3, base.time_s * 1e3
        timing = {
            "candidate": Latency.of([cand_ms]).to_dict(), "eager": Latency.of([eager_ms]).to_dict(),
            "compiled": None, "speedup_vs_eager": eager_ms / cand_ms if cand_ms > 0 else None,
            "speedup_vs_compiled": None,
            "compile_error": "no torch.compile reference on a simulated target",
            "sizes": dict(problem.sizes), "simulated": True,
        }
        profile = {"instrument": "mtia-sim", "candidate": sim.to_dict(),
                   "eager_reference": base.to_dict()}
        self.check("simulated on MTIA", True, f"{gen}: limited by {sim.limiting_resource}")
        return timing, profile

    def run(self) -> dict[str, Any]:
        t_start = time.perf_counter()
        problem = self.problem()
        cand_cls = load_candidate(Path(self.job["candidate"]), self.state)
        self.check("imports and defines ModelNew", True, "")
        base = self.base_sizes(problem)
        first, *others = self.plans(problem, base)
        timed_module, timed_ref, timed_cand = self.run_plan(problem, cand_cls, first)
        for plan in others:
            try:
                self.run_plan(problem, cand_cls, plan)
            except ProblemError as exc:  # the problem's code refused sizes the probe let by
                self.check(plan.label, True, f"skipped at {plan.sizes}: {exc}", skipped=True)
                self.flags.append(f"checked at one shape only: the problem refused "
                                  f"{plan.sizes}: {exc}")
        self.check("ran custom kernels only", True,
                   f"aten ops seen: {', '.join(sorted(self.ops_seen)) or 'none'}")
        timing: dict[str, Any] | None = None
        profile: dict[str, Any] | list[dict[str, Any]] | None = None
        if self.job.get("timed") and self.state.target.startswith("mtia-sim"):
            timing, profile = self.time_on_mtia(problem, cand_cls)
        elif self.job.get("timed") and self.device.type == "cuda":
            timing = self.time_on_cuda(problem, timed_module, timed_ref, timed_cand, base)
            speedup = timing.get("speedup_vs_eager") or 0.0
            if speedup > float(self.cfg["suspicious_speedup"]):
                self.reverify(problem, cand_cls, base, speedup)
            if self.cfg["profile"]["enabled"]:
                profile = self.profile(problem, timed_module, timed_ref, timed_cand, base, timing)
        return {
            "status": "ok", "message": "verified" + (
                "" if timing is None else " (simulated time)" if timing["simulated"] else ""
            ) + ("" if timing else " (not timed)"),
            "timing": timing, "profile": profile, "elapsed_s": time.perf_counter() - t_start,
        }

    def profile(self, problem: Problem, module: Any, ref: torch.nn.Module,
                cand: torch.nn.Module, sizes: dict[str, int], timing: dict[str, Any]
                ) -> list[dict[str, Any]]:
        """The profilers on the verified, timed candidate (tools/profile_jobs.py)."""
        from kernelevolve.tools.profile_jobs import ProfileContext, run_profile

        seed = self.seed + 6000
        workdir = Path.cwd() / f"profile-{self.job['id']}"  # in the worker's own directory
        workdir.mkdir(exist_ok=True)
        ctx = ProfileContext(problem=str(problem.path), candidate=self.job["candidate"],
                             sizes=sizes, seed=seed, model=cand, reference=ref,
                             inputs=self.inputs(module, problem, seed),
                             forward_ms=timing["candidate"]["median_ms"], workdir=workdir)
        return run_profile(ctx, self.cfg["profile"])

    def reverify(self, problem: Problem, cand_cls: type, base: dict[str, int], speedup: float
                 ) -> None:
        seed = self.seed + 7000
        plans = [Plan("fresh input sets", base, [seed, seed + 1, seed + 2])]
        families = [s for s in size_families(base) if problem.rejects(s) is None]
        if families:
            plans.append(Plan("fresh other shapes", families[-1], [seed + 3]))
        for plan in plans:
            self.run_plan(problem, cand_cls, plan)
        self.flags.append(f"speedup {speedup:.1f}x is above the suspicious threshold: "
                          f"re-verified on fresh inputs and shapes")

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
        except Exception as exc:  # process boundary: record it, and restart the worker
            out = {"status": "crash", "fatal": True,
                   "message": f"the harness failed while evaluating this candidate: "
                              f"{type(exc).__name__}: {exc}\n{_tb_tail(exc)}"}
        elapsed = time.perf_counter() - t0
        out.update({
            "target": self.state.target, "device": device_name(self.device, self.state.target),
            "checks": self.checks, "errors": [self.errors[k] for k in sorted(self.errors)],
            "aten_ops": sorted(self.ops_seen), "kernel_launches": self.max_launches,
            "nondeterministic": self.nondeterministic, "flags": self.flags,
            "elapsed_s": elapsed,
            "first_call_s": self.first_call_s, "compile_reference_s": self.compile_ref_s,
            "overhead_s": max(0.0, elapsed - self.first_call_s - self.compile_ref_s),
            "versions": versions(),
        })
        out.setdefault("timing", None)
        return out


def _rotate_into(dst: torch.Tensor, src: torch.Tensor, shift: int) -> None:
    """``dst`` (same shape as ``src``) gets ``src``'s values rotated by ``shift`` positions in
    row-major order: two copies, no temporary."""
    n = src.numel()
    k = shift % n
    flat_src = src.reshape(-1)
    flat_dst = dst.view(-1) if dst.is_contiguous() else None
    if flat_dst is None:  # a strided input: rotate into a temporary, copy it over
        dst.copy_(flat_src.roll(-k).view_as(src))
        return
    flat_dst[:n - k].copy_(flat_src[k:])
    flat_dst[n - k:].copy_(flat_src[:k])


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
        InterpreterBounds().install()
    # Imported before the integrity snapshot: importing dynamo wraps torch.manual_seed and
    # friends, which must not look like a candidate's tampering later.
    importlib.import_module("torch._dynamo")
    importlib.import_module("triton")

    from kernelevolve import problem as problem_module
    from kernelevolve.tools.harness import guard, timing

    harness_modules = (sys.modules[__name__], compare, guard, timing, problem_module)
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
    """Fork, evaluate ``job`` in the child, return its reply (or what its death says)."""
    sys.stdout.flush()
    sys.stderr.flush()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 0
        try:
            os.close(read_fd)
            for fd in parent_fds:  # only the worker talks to the parent
                os.close(fd)
            if state.device.type == "cuda":
                torch.cuda.init()
            result = Evaluation(job, state).result()
            result["_cache"] = {"shrunk": [[*k, v] for k, v in state.shrunk.items()],
                                "other_sizes": [[*k, *v] for k, v in state.other_sizes.items()]}
            data = json.dumps(result, default=str).encode()
            view = memoryview(data)
            while view:
                view = view[os.write(write_fd, view):]
        except BaseException:  # the child's boundary: the worker reports a reply-less death
            traceback.print_exc()
            code = 70
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    os.close(write_fd)
    chunks = []
    while chunk := os.read(read_fd, 1 << 16):
        chunks.append(chunk)
    os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    if not chunks:
        if os.WIFSIGNALED(status):
            how = f"killed by signal {signal.Signals(os.WTERMSIG(status)).name}"
        else:
            how = f"exit code {os.WEXITSTATUS(status)}"
        return {"status": "crash", "fatal": True,
                "message": f"the candidate's process died during the evaluation ({how}); a "
                           f"segfault, an illegal memory access or running out of memory ends "
                           f"it so"}
    reply: dict[str, Any] = json.loads(b"".join(chunks))
    cache = reply.pop("_cache", {})
    for digest, n, sizes in cache.get("shrunk", []):
        state.shrunk[(digest, n)] = sizes
    for digest, base, sizes, why in cache.get("other_sizes", []):
        state.other_sizes[(digest, base)] = (sizes, why)
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
