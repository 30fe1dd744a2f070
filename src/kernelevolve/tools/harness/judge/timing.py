"""Timing on a GPU: the candidate in its process, eager and torch.compile here, outputs sampled
inside the timing loop, and the bounds the judge puts on what the candidate's process reports
(its own wall clock, the memory floor); the profilers after."""

from __future__ import annotations

import functools
import json
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from kernelevolve.problem import Problem
from kernelevolve.tools.harness import compare, flags
from kernelevolve.tools.harness.candidate import Verdict
from kernelevolve.tools.harness.judge.correctness import Correctness
from kernelevolve.tools.harness.judge.locks import gpu_lock
from kernelevolve.tools.harness.timing import (
    InputVariation,
    Latency,
    copy_bandwidth,
    tensor_bytes,
    time_interleaved,
)

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


def _under(fl: dict[str, Any], fn: Callable[..., Any], inputs: list[Any]) -> Any:
    """``fn(*inputs)`` under the flags ``fl`` (a timed baseline's forward)."""
    with flags.applied(fl):
        return fn(*inputs)


class Timing(Correctness):
    """The timed stage on a GPU."""

    def flags_matter(self) -> bool:
        """Whether the two baselines' flags change any op of the problem (then both are
        timed; otherwise one timing serves both)."""
        ran = set(self.state.ref_ops.get(self.problem().digest, ["unknown"]))
        return bool(flags.differing_ops(self.baseline, self.other_baseline) & ran) or (
            "unknown" in ran)

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
