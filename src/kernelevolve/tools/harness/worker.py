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

The judge's stages are the modules of ``judge/`` (its docstring lists them: inputs, running,
precision, correctness, variants, compiles, timing, simulated, memory, locks, reply); here
``Evaluation`` composes them and ``run`` orders them, and the rest is the worker's process:
``serve`` and forking the judge.

A reply is a dict shaped like ``EvalResult`` (validated by the parent). ``"fatal": true`` is
kept for the parent's bookkeeping; the worker itself is unaffected by its children's fate.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import torch

from kernelevolve.errors import ProblemError
from kernelevolve.tools.harness import compare
from kernelevolve.tools.harness.candidate import (
    Verdict,
    exit_description,
    fork_child,
    read_note,
)
from kernelevolve.tools.harness.guard import (
    ALLOWED_ATEN_OPS,
    Integrity,
    InterpreterBounds,
    LaunchCounter,
)
from kernelevolve.tools.harness.judge.compiles import Compiles
from kernelevolve.tools.harness.judge.correctness import Plan
from kernelevolve.tools.harness.judge.inputs import names_read, vary_floats
from kernelevolve.tools.harness.judge.locks import file_lock, gpu_lock, whole_gpu
from kernelevolve.tools.harness.judge.memory import Footprint, meta_footprint, previous_kept
from kernelevolve.tools.harness.judge.reply import Reply, device_name, versions
from kernelevolve.tools.harness.judge.simulated import Simulated
from kernelevolve.tools.harness.judge.state import WorkerState
from kernelevolve.tools.harness.judge.timing import Timing
from kernelevolve.tools.harness.judge.variants import Variants

# Names other modules and tests import from here. The judge's constants live in their stage's
# module (judge/*.py), and are read (and patched) there.
__all__ = [
    "ALLOWED_ATEN_OPS", "Evaluation", "Footprint", "Plan", "Verdict", "WorkerState",
    "device_name", "file_lock", "gpu_lock", "main", "meta_footprint", "names_read",
    "previous_kept", "serve", "vary_floats", "versions", "whole_gpu",
]

class Evaluation(Reply, Variants, Timing, Simulated, Compiles):
    """One candidate against one problem on this worker's target: the judge's side.

    The judge never imports the candidate. It forks the candidate process first
    (candidate.CandidateProcess), then draws the seeds, builds the reference, makes the inputs,
    computes the expected outputs and compares; the candidate process only runs forwards."""

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
        if self.device.type == "cuda" and self.cfg.get("device_kernels", True):
            with self.stage("device kernels"), gpu_lock(self.device, shared=True):
                self.check_kernels_on_device(problem, base)
        if timing is not None and self.device.type == "cuda" and self.cfg["profile"]["enabled"]:
            # the profilers replay and time kernels: the GPU to themselves
            with self.stage("profile"), gpu_lock(self.device):
                try:
                    profile = self.profile(problem, timed_module, timed_key, base, timing)
                except Exception as exc:  # advisory: the verdict is made, a profiler's fall
                    # (the candidate's process with it) must not unmake it
                    from kernelevolve.tools.profiling import unavailable

                    why = f"{type(exc).__name__}: {str(exc)[:300]}"
                    profile = [unavailable("torch", f"the profile stage failed: {why}")]
                    self.flags.append(f"the profilers failed after the verdict ({why})")
        return {
            "status": "ok", "message": "verified" + (
                "" if timing is None else " (simulated time)" if timing["simulated"] else ""
            ) + ("" if timing else " (not timed)"),
            "timing": timing, "profile": profile, "elapsed_s": time.perf_counter() - t_start,
        }


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
    from kernelevolve.tools.harness import device_kernels, guard, interpreter, judge, timing

    # the judge's stages (judge/*.py, all imported by Evaluation's bases), watched as this is
    stages = [sys.modules[name] for name in sorted(sys.modules)
              if name.startswith(judge.__name__ + ".")]
    harness_modules = (sys.modules[__name__], compare, device_kernels, guard, interpreter,
                       timing, problem_module, *stages)
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
