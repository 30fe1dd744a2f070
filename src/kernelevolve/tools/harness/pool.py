"""The evaluation pool: the interface every backend shares, the local backend, the static stage.

A pool evaluates candidates against a problem. What does not depend on where the worker runs is
here, in ``EvalPool``: the static stage in the caller's thread, reading the candidate, the
request that travels to a worker, the reply validated into an ``EvalResult``, and spreading
many candidates over the workers. A backend only runs a request on a free worker within a
timeout and gives back the worker's reply: ``local`` (``WorkerPool``, warm worker subprocesses
on this host) or ``ray`` (``ray_pool.RayPool``, one actor per GPU of a Ray cluster, each owning
such a worker on its node). ``make_pool`` picks one by ``eval.backend``.

Each worker is a warm subprocess reused between candidates; it runs every candidate in a fresh
child of its own (worker.py), so a crash (segfault, illegal memory access, OOM kill) or a CUDA
error ends that child and that evaluation only, recorded with the tail of stderr. A timeout
kills the worker with its child and a fresh worker takes its place. On ``cuda``, one worker per
visible GPU, or ``eval.workers_per_gpu`` of them.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import queue
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self

from pydantic import ValidationError

import kernelevolve
from kernelevolve.config import EvalConfig
from kernelevolve.errors import CandidateError, ConfigError, ProblemError, WorkerError
from kernelevolve.problem import Problem, load_problem
from kernelevolve.targets import Target, get_target
from kernelevolve.tools.harness.compare import tolerance
from kernelevolve.tools.harness.judge.locks import WAIT_FILE_ENV, waited
from kernelevolve.tools.harness.result import EvalResult, EvalStatus
from kernelevolve.tools.harness.static import check_source

_SRC_DIR = str(Path(kernelevolve.__file__).resolve().parent.parent)
STDERR_TAIL_CHARS = 4000
# the most queueing for the GPU (judge.locks.WaitRecord) an evaluation's deadline is extended by
MAX_GPU_WAIT_S = 3600.0
READY_TIMEOUT_S = 180.0


class Worker:
    """One evaluation subprocess and its private temp directory and log.

    ``index`` is the device it evaluates on (``target.worker_env(index)``); ``slot`` tells apart
    workers that share that device (``eval.workers_per_gpu``)."""

    def __init__(self, target: Target, index: int, config: EvalConfig, slot: int = 0) -> None:
        self.target = target
        self.index = index
        self.slot = slot
        self.config = config
        self.dir = Path(tempfile.mkdtemp(prefix=f"kernelevolve-worker{index}.{slot}-"))
        self.log_path = self.dir / "worker.log"
        self.wait_file = self.dir / "gpu-wait"  # the judge's queueing for the GPU, per job
        (self.dir / "candidates").mkdir()
        self.proc: subprocess.Popen[bytes] | None = None
        self._buffer = b""
        self._resp = -1
        self.eof = False
        self.jobs = 0

    def start(self) -> None:
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        env = dict(os.environ)
        env.pop("TRITON_INTERPRET", None)  # the target decides, not the caller's environment
        env.update(self.target.worker_env(self.index))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_SRC_DIR, env.get("PYTHONPATH")) if p)
        env.setdefault("OMP_NUM_THREADS", "1")
        env["TRITON_CACHE_DIR"] = str(self.dir / "triton-cache")
        env["TORCHINDUCTOR_CACHE_DIR"] = str(self.dir / "inductor-cache")
        env["PYTHONUNBUFFERED"] = "1"
        env[WAIT_FILE_ENV] = str(self.wait_file)
        # Ask NVML, not the CUDA runtime, whether a GPU is there: a runtime query (which
        # importing cpp_extension makes) poisons fork() for CUDA, and the worker forks a judge
        # and a candidate process per job, each with its own CUDA context.
        env["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
        log = open(self.log_path, "ab")  # noqa: SIM115 (the child owns it)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kernelevolve.tools.harness.worker",
             "--fd-in", str(req_r), "--fd-out", str(resp_w), "--target", self.target.name,
             "--memory-limit-gb", str(self.config.memory_limit_gb)],
            pass_fds=(req_r, resp_w), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            cwd=self.dir, env=env, start_new_session=True,
        )
        log.close()
        os.close(req_r)
        os.close(resp_w)
        self._req = os.fdopen(req_w, "w")
        self._resp = resp_r
        self._buffer = b""
        ready = self._read_line(time.monotonic() + READY_TIMEOUT_S)
        if ready is None or not json.loads(ready).get("ready"):
            tail = self.stderr_tail(0)
            self.stop()
            raise WorkerError(f"the evaluation worker for {self.target.name} did not start:\n{tail}")

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _read_line(self, deadline: float) -> str | None:
        """The next reply line; None at the deadline or when the worker closed its pipe (then
        ``self.eof`` is set)."""
        self.eof = False
        while b"\n" not in self._buffer:
            # time spent queued for the GPU behind other evaluations is not this one's
            remaining = deadline + min(waited(self.wait_file), MAX_GPU_WAIT_S) - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self._resp], [], [], min(remaining, 1.0))
            if not ready:
                continue
            chunk = os.read(self._resp, 1 << 16)
            if not chunk:
                self.eof = True
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode()

    def stderr_tail(self, offset: int) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                return f.read().decode(errors="replace")[-STDERR_TAIL_CHARS:]
        except OSError:
            return ""

    def evaluate(self, job: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        if not self.alive:
            self.start()
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        self.wait_file.unlink(missing_ok=True)  # an earlier job's queueing is not this one's
        self.jobs += 1
        try:
            self._req.write(json.dumps(job) + "\n")
            self._req.flush()
        except BrokenPipeError:
            pass
        line = self._read_line(time.monotonic() + timeout_s)
        if line is not None:
            reply: dict[str, Any] = json.loads(line)
            reply["stderr_tail"] = self.stderr_tail(offset)
            return reply  # the candidate ran in a child of the worker: the worker is intact
        if self.eof and self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=30)
        if self.alive:
            self.stop()
            queued = waited(self.wait_file)
            return {"status": "timeout", "message": f"the evaluation exceeded {timeout_s:.0f} s "
                    f"and the worker was killed" + (f" (besides {queued:.0f} s queued for the "
                                                    f"GPU behind other evaluations)"
                                                    if queued >= 1 else ""),
                    "stderr_tail": self.stderr_tail(offset)}
        code = self.proc.returncode if self.proc else None
        self.stop()
        how = (f"killed by signal {signal.Signals(-code).name}" if code is not None and code < 0
               else f"exit code {code}")
        return {"status": "crash", "message": f"the worker died during the evaluation ({how}); "
                f"a segfault, an illegal memory access or running out of memory ends it so",
                "stderr_tail": self.stderr_tail(offset)}

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.proc = None
        with contextlib.suppress(AttributeError, OSError):
            self._req.close()
        # Close the fd once: a second os.close could hit a number reused by another pipe.
        if self._resp >= 0:
            with contextlib.suppress(OSError):
                os.close(self._resp)
            self._resp = -1

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def _validate_tolerances(config: EvalConfig) -> None:
    """Refuse loose fp32 tolerances in the parent, with the rule the worker applies."""
    import torch

    try:
        tolerance(torch.float32, config.atol, config.rtol, config.allow_loose_fp32)
    except ValueError as exc:
        raise ConfigError(f"eval.atol/eval.rtol: {exc}") from exc


@dataclass(frozen=True)
class EvalRequest:
    """One evaluation as it travels to a worker. It carries the sources, not only paths: a
    worker on another node shares no filesystem with the caller."""

    problem_path: str
    problem_source: str
    candidate_source: str
    config: dict[str, Any]
    timed: bool
    fresh_references: bool = False

    def write_problem(self, root: Path) -> str:
        """The problem's source as a file under ``root`` (one per content, so a worker's cache
        of parsed problems, keyed by path, still hits); its path."""
        digest = hashlib.sha256(self.problem_source.encode()).hexdigest()[:16]
        path = root / "problems" / digest / Path(self.problem_path).name
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(self.problem_source)
        return str(path)

    def job(self, worker: Worker, problem_path: str | None = None) -> dict[str, Any]:
        """The job line for ``worker``: the candidate written into its directory, the problem
        at ``problem_path`` (default: where the caller has it)."""
        cand_path = worker.dir / "candidates" / (
            "candidate_" + hashlib.sha256(self.candidate_source.encode()).hexdigest()[:16]
            + ".py")
        cand_path.write_text(self.candidate_source)
        return {"id": f"{worker.index}.{worker.slot}-{worker.jobs}",
                "problem": problem_path or self.problem_path, "candidate": str(cand_path),
                "config": self.config, "timed": self.timed,
                "fresh_references": self.fresh_references}


class EvalPool(ABC):
    """Workers for one target; evaluate candidates one at a time or many in parallel.

    Backends implement ``_run`` (a request on a free worker within a timeout: the worker's
    reply, or one that says the evaluation crashed or timed out), ``size`` and ``close``."""

    backend: ClassVar[str]

    def __init__(self, target: Target | str | None = None,
                 config: EvalConfig | None = None) -> None:
        self.target = target if isinstance(target, Target) else get_target(target)
        self.config = config or EvalConfig()
        _validate_tolerances(self.config)

    @property
    @abstractmethod
    def size(self) -> int:
        """How many evaluations can run at once."""

    @abstractmethod
    def _run(self, request: EvalRequest, timeout_s: float) -> dict[str, Any]:
        """Run ``request`` on a free worker; the reply dict (shaped like ``EvalResult``)."""

    @abstractmethod
    def close(self) -> None:
        """Stop the workers."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def evaluate(self, problem: Problem | str | Path, candidate: str | Path,
                 timed: bool | None = None, fresh_references: bool = False) -> EvalResult:
        """Evaluate one candidate (a path to a .py file, or its source) against ``problem``.
        ``fresh_references``: time eager and torch.compile again beside this candidate, not
        reuse the run's earlier figures for them (the figure a run reports for its best)."""
        prob = problem if isinstance(problem, Problem) else load_problem(problem)
        source, label = _candidate_source(candidate)
        allowed = sorted({*self.config.allowed_ops, *prob.allowed_ops})
        t0 = time.perf_counter()
        # CUDA C++ only where it can run as a kernel: on the interpreter targets an extension's
        # host code would do the work where no check sees it
        findings = check_source(source, allowed, allow_cpp=not self.target.interpreter)
        static_s = round(time.perf_counter() - t0, 4)
        base = {"target": self.target.name, "problem": str(prob.path), "candidate": label}
        if findings:
            status = (EvalStatus.compile_error if any(f.kind == "contract" for f in findings)
                      else EvalStatus.cheat)
            message = "static check: " + "; ".join(
                f"line {f.line} [{f.rule}]: {f.message}" if f.line else f"[{f.rule}] {f.message}"
                for f in findings)
            return EvalResult(status=status, message=message, stages={"static": static_s},
                              **base)
        request = EvalRequest(
            problem_path=str(prob.path), problem_source=prob.source, candidate_source=source,
            config={**self.config.model_dump(mode="json"), "allowed_ops": allowed},
            timed=self.target.timed if timed is None else timed,
            fresh_references=fresh_references)
        reply = self._run(request, self.config.timeout_s)
        if reply.get("harness_error"):
            raise ProblemError(reply["harness_error"])
        reply.update(base)
        reply["stages"] = {"static": static_s, **(reply.get("stages") or {})}
        if reply.get("timing") is None and reply.get("status") == "ok":
            reply["not_timed_reason"] = self.target.not_timed_reason or "timing was not asked for"
        try:
            return EvalResult.model_validate(reply)
        except ValidationError as exc:
            raise WorkerError(f"the worker sent a malformed result: {exc}") from exc

    def evaluate_many(self, problem: Problem | str | Path, candidates: Iterable[str | Path]
                      ) -> list[EvalResult]:
        """Evaluate candidates in parallel across the pool's workers, results in input order."""
        items = list(candidates)
        if not items:
            return []
        prob = problem if isinstance(problem, Problem) else load_problem(problem)
        with ThreadPoolExecutor(max_workers=max(1, min(self.size, len(items)))) as ex:
            futures = [ex.submit(self.evaluate, prob, item) for item in items]
            return [f.result() for f in futures]  # the first failure re-raises here


class WorkerPool(EvalPool):
    """The ``local`` backend: warm worker subprocesses on this host, ``eval.workers_per_gpu``
    per device (``workers``: that many in all, spread over the devices in turn)."""

    backend = "local"

    def __init__(self, target: Target | str | None = None, config: EvalConfig | None = None,
                 workers: int | None = None) -> None:
        super().__init__(target, config)
        devices = len(self.target.worker_devices)
        n = workers or devices * self.config.workers_per_gpu
        self._workers = [Worker(self.target, i % devices, self.config, slot=i // devices)
                         for i in range(n)]
        self._free: queue.Queue[Worker] = queue.Queue()
        for w in self._workers:
            self._free.put(w)

    @property
    def size(self) -> int:
        return len(self._workers)

    def _run(self, request: EvalRequest, timeout_s: float) -> dict[str, Any]:
        worker = self._free.get()
        try:
            return worker.evaluate(request.job(worker), timeout_s)
        finally:
            self._free.put(worker)

    def close(self) -> None:
        for w in self._workers:
            w.close()


# Backends by ``eval.backend``: module and class, imported on demand (the ray backend's module
# imports Ray only when a pool is made, and says how to install it when it is missing).
BACKENDS: dict[str, tuple[str, str]] = {
    "local": ("kernelevolve.tools.harness.pool", "WorkerPool"),
    "ray": ("kernelevolve.tools.harness.ray_pool", "RayPool"),
}


def make_pool(target: Target | str | None = None, config: EvalConfig | None = None,
              workers: int | None = None) -> EvalPool:
    """The evaluation pool ``config.backend`` names (``local`` or ``ray``) for ``target``;
    ``workers``: how many evaluation workers in all (default: ``eval.workers_per_gpu`` per
    device, on ``ray`` per GPU of the cluster)."""
    config = config or EvalConfig()
    module, name = BACKENDS[config.backend]
    factory: Callable[[Target | str | None, EvalConfig, int | None], EvalPool] = getattr(
        importlib.import_module(module), name)
    return factory(target, config, workers)


def _candidate_source(candidate: str | Path) -> tuple[str, str]:
    if isinstance(candidate, Path) or (isinstance(candidate, str) and "\n" not in candidate
                                       and candidate.endswith(".py")):
        path = Path(candidate)
        if not path.is_file():
            raise CandidateError(f"candidate file {path} does not exist")
        try:
            return path.read_text(), str(path.resolve())
        except (OSError, UnicodeDecodeError) as exc:
            raise CandidateError(f"cannot read candidate file {path}: {exc}") from exc
    return str(candidate), "<source>"


def evaluate(problem: Problem | str | Path, candidate: str | Path, target: str | None = None,
             config: EvalConfig | None = None) -> EvalResult:
    """Evaluate one candidate in a fresh pool of one worker, on ``config.backend``
    (convenient; a pool reuses warm workers)."""
    with make_pool(target, config, workers=1) as pool:
        return pool.evaluate(problem, candidate)
