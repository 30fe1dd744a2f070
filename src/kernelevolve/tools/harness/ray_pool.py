"""The ``ray`` backend of the evaluation pool: one Ray actor per GPU, on one host or a cluster.

Each actor (``EvalActor``) owns ``eval.workers_per_gpu`` warm ``Worker`` subprocesses on its
own node, so a candidate still runs in a worker's forked judge and candidate processes with all
their isolation; Ray only carries requests and replies. Nodes share no filesystem: the request
carries the problem's and the candidate's sources, and the actor writes them into its worker's
directory. On ``cuda`` an actor asks for ``num_gpus=1`` and its workers see only the GPU Ray
gave it; on the interpreter targets (``cpu``, ``mtia-sim``) there is one actor per worker with
``num_cpus=1``.

Failures: an actor that dies mid-evaluation (killed, out of memory, its node lost) makes that
candidate a ``crash`` that names the node, and a fresh actor takes its place. A hung candidate
is stopped by the worker's own timeout inside the actor (``timeout``); ``ray.get`` waits a
margin longer than that, so a node that stopped answering cannot hang the caller either. A lost
connection to the cluster raises ``WorkerError``: a run stops there and resumes from its
checkpoint (``kernelevolve resume``) once the cluster is back.

Ray is optional (``pip install 'kernelevolve[ray]'``) and imported only when a pool is made.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import queue
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import kernelevolve
from kernelevolve.config import EvalConfig
from kernelevolve.errors import ConfigError, KernelEvolveError, WorkerError
from kernelevolve.targets import Target
from kernelevolve.tools.harness.pool import READY_TIMEOUT_S, EvalPool, EvalRequest, Worker

log = logging.getLogger(__name__)

RAY_EXTRA = "pip install 'kernelevolve[ray]'"
# ray.get waits this much longer than eval.timeout_s: the worker's own timeout answers first;
# this only bounds an actor whose node stopped answering.
GUARD_MARGIN_S = 60.0
# Starting a worker in an actor: scheduling (a free GPU) plus the worker's own start.
START_TIMEOUT_S = READY_TIMEOUT_S + 60.0
CLOSE_TIMEOUT_S = 30.0

# Runs beside an actor, outside its process tree (it forks away from the child Popen makes):
# when the actor dies, its end of the pipe closes and the watchdog kills the process groups of
# the actor's workers ("+pgid" watches one, "-pgid" lets it go), then removes the actor's
# directories ("dPATH"). Ray kills only an actor's direct children, which would leave a worker's
# judge and candidate processes (a hung kernel, a GPU context) running.
_WATCHDOG = """
import os, shutil, signal, sys
if os.fork():
    os._exit(0)
groups, dirs = set(), []
for line in sys.stdin:
    kind, arg = line[0], line[1:].rstrip("\\n")
    if kind == "d":
        dirs.append(arg)
    else:
        (groups.add if kind == "+" else groups.discard)(int(arg))
for pgid in groups:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
for path in dirs:
    shutil.rmtree(path, ignore_errors=True)
"""


def _ray() -> ModuleType:
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(f"eval.backend = 'ray' needs Ray, which is not installed here: "
                          f"{RAY_EXTRA}") from exc
    return ray


@dataclass(frozen=True)
class ActorInfo:
    """One evaluation actor as it reports itself."""

    name: str
    node_ip: str
    hostname: str
    pid: int
    worker_pids: tuple[int | None, ...]
    jobs: int  # evaluations it took
    busy: int  # evaluations running now
    version: str

    @property
    def node(self) -> str:
        return f"{self.node_ip} ({self.hostname})"


class EvalActor:
    """Lives in a Ray actor process: ``slots`` warm workers on this node (wrapped by
    ``ray.remote`` when the pool starts, so this module imports without Ray)."""

    def __init__(self, target: Target, config: EvalConfig, slots: int, name: str) -> None:
        if target.device == "cuda":
            # Ray set CUDA_VISIBLE_DEVICES to the GPU it gave this actor: that is device 0.
            target = dataclasses.replace(
                target, worker_devices=[os.environ.get("CUDA_VISIBLE_DEVICES") or "0"])
        self.name = name
        self.root = Path(tempfile.mkdtemp(prefix="kernelevolve-actor-"))
        self.workers = [Worker(target, 0, config, slot=s) for s in range(slots)]
        self.jobs = 0
        self.busy = 0
        self._lock = threading.Lock()
        self._watchdog = subprocess.Popen(  # noqa: SIM115 (the pipe lives as long as the actor)
            [sys.executable, "-c", _WATCHDOG], stdin=subprocess.PIPE, text=True,
            start_new_session=True)
        self._watchdog.wait()  # the forked watchdog lives on, reading the pipe
        for path in (self.root, *(w.dir for w in self.workers)):
            self._watch("d", path)

    def _watch(self, kind: str, arg: object) -> None:
        with self._lock:
            assert self._watchdog.stdin is not None
            self._watchdog.stdin.write(f"{kind}{arg}\n")
            self._watchdog.stdin.flush()

    def info(self) -> dict[str, Any]:
        import ray

        return {"name": self.name, "node_ip": ray.util.get_node_ip_address(),
                "hostname": socket.gethostname(), "pid": os.getpid(),
                "worker_pids": [w.proc.pid if w.alive and w.proc else None
                                for w in self.workers],
                "jobs": self.jobs, "busy": self.busy, "version": kernelevolve.__version__}

    def start(self, slot: int) -> dict[str, Any]:
        """Start the worker of ``slot`` unless it runs; this actor's info."""
        worker = self.workers[slot]
        if not worker.alive:
            worker.start()  # the worker runs in a session of its own: pgid == pid
            assert worker.proc is not None
            self._watch("+", worker.proc.pid)
        return self.info()

    def evaluate(self, slot: int, request: EvalRequest, timeout_s: float) -> dict[str, Any]:
        """The worker's reply (a timeout or a dead worker leaves the worker stopped; the next
        ``start`` makes a fresh one)."""
        self.start(slot)
        worker = self.workers[slot]
        assert worker.proc is not None
        pid = worker.proc.pid
        with self._lock:
            self.jobs += 1
            self.busy += 1
        try:
            job = request.job(worker, request.write_problem(self.root))
            return worker.evaluate(job, timeout_s)
        finally:
            with self._lock:
                self.busy -= 1
            if not worker.alive:
                self._watch("-", pid)

    def close(self) -> None:
        for worker in self.workers:
            pid = worker.proc.pid if worker.proc is not None else None
            worker.close()
            if pid is not None:
                self._watch("-", pid)
        shutil.rmtree(self.root, ignore_errors=True)
        if self._watchdog.stdin is not None:
            self._watchdog.stdin.close()


class _Actor:
    """The pool's view of one actor: its handle, its slots, where it runs."""

    def __init__(self, handle: Any, name: str, slots: int) -> None:
        self.handle = handle
        self.name = name
        self.slots = slots
        self.node: str | None = None  # known once it answered
        self.dead = False


def _check_reachable(address: str) -> None:
    """Refuse a ``host:port`` (or ``ray://host:port``) that nothing listens on: Ray itself keeps
    retrying such an address for minutes."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return  # "auto": Ray finds the cluster of this node, or says there is none
    try:
        socket.create_connection((host, int(port)), timeout=10).close()
    except OSError as exc:
        raise ConfigError(f"nothing answers at {host}:{port} (eval.ray_address = {address!r}): "
                          f"{exc}; start the cluster's head with `ray start --head`, or fix "
                          f"the address") from exc


def _info(reply: dict[str, Any]) -> ActorInfo:
    return ActorInfo(**{**reply, "worker_pids": tuple(reply["worker_pids"])})


def _death_reason(exc: BaseException) -> str:
    """The line of a Ray error that says why the actor died."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    causes = [line for line in lines if line.startswith("The actor") and "before" not in line]
    return (causes or lines or [type(exc).__name__])[0]


class RayPool(EvalPool):
    """The ``ray`` backend: evaluation actors on a Ray cluster (``eval.ray_address``) or on a
    private Ray instance of this host, started here and shut down by ``close``.

    ``workers``: evaluation workers in all (default ``eval.workers_per_gpu`` per GPU of the
    cluster on ``cuda``, ``eval.workers_per_gpu`` on the interpreter targets)."""

    backend = "ray"

    def __init__(self, target: Target | str | None = None, config: EvalConfig | None = None,
                 workers: int | None = None) -> None:
        super().__init__(target, config)
        self._ray = _ray()
        self._connected_here = False
        self._id = uuid.uuid4().hex[:8]
        self._count = 0
        self._lock = threading.Lock()
        self._free: queue.Queue[tuple[_Actor, int]] = queue.Queue()
        self._actors: list[_Actor] = []
        self._workers = workers
        self._started = False
        self._start_lock = threading.Lock()

    def _ensure_started(self) -> None:
        """Connect and create the actors, on first use: opening a run to read it starts no
        cluster (a local pool starts its workers on first use too)."""
        with self._start_lock:
            if self._started:
                return
            per = self.config.workers_per_gpu
            on_gpu = self.target.device == "cuda"
            total = self._workers or (0 if on_gpu else len(self.target.worker_devices) * per)
            self._connect(cpus=None if on_gpu else total)
            if on_gpu:
                gpus = int(self._ray.cluster_resources().get("GPU", 0))
                total = total or gpus * per
                actors = -(-total // per)
                if gpus == 0 or actors > gpus:
                    self.close()
                    need = (f"{total} workers at eval.workers_per_gpu = {per} need {actors} "
                            f"GPUs" if gpus else "the cuda target needs GPUs")
                    raise ConfigError(f"{need}; the Ray cluster ({self._where()}) has {gpus} "
                                      f"(start its nodes on GPU hosts: ray start)")
                plan = [min(per, total - i * per) for i in range(actors)]
            else:
                plan = [1] * total
            self._remote = self._ray.remote(EvalActor)
            for slots in plan:
                self._spawn(slots)
            self._started = True

    # -- the cluster -----------------------------------------------------------------------------
    def _where(self) -> str:
        address = self.config.ray_address
        return f"at {address}" if address else "a private instance on this host"

    def _connect(self, cpus: int | None) -> None:
        """Join the configured cluster, or start a private instance. ``close`` disconnects from
        what this joined and stops what it started; a process that was connected already
        (``ray.init`` elsewhere) keeps its connection."""
        ray = self._ray
        if ray.is_initialized():
            return
        quiet = {"log_to_driver": False, "logging_level": logging.WARNING}
        try:
            if self.config.ray_address is None:
                ray.init(address="local", include_dashboard=False, **quiet,  # never a running one
                         **({"num_cpus": max(os.cpu_count() or 1, cpus)} if cpus else {}))
            else:
                _check_reachable(self.config.ray_address)
                ray.init(address=self.config.ray_address, **quiet)
            self._connected_here = True
        except (ConnectionError, RuntimeError, ValueError) as exc:
            cause = str(exc.__cause__ or "").strip().splitlines()  # e.g. a wrong auth token
            why = f"{exc}: {cause[-1]}" if cause else str(exc)
            raise ConfigError(f"cannot reach the Ray cluster {self._where()} "
                              f"(eval.ray_address): {why}") from exc

    def _check_connected(self) -> None:
        if not self._ray.is_initialized():
            raise WorkerError(f"the connection to the Ray cluster ({self._where()}) is gone; "
                              f"a run stopped here resumes with `kernelevolve resume RUN` once "
                              f"the cluster is back")

    def _spawn(self, slots: int) -> _Actor:
        """A new actor; its slots join the free queue (its workers start on first use)."""
        with self._lock:
            self._count += 1
            name = f"kernelevolve-eval-{self._id}-{self._count}"
        resources = {"num_gpus": 1} if self.target.device == "cuda" else {"num_cpus": 1}
        # One more thread than workers: info and close answer while evaluations run.
        handle = self._remote.options(name=name, max_concurrency=slots + 1, **resources).remote(
            self.target, self.config, slots, name)
        actor = _Actor(handle, name, slots)
        with self._lock:
            self._actors.append(actor)
        for slot in range(slots):
            self._free.put((actor, slot))
        return actor

    def _retire(self, actor: _Actor, replace: bool) -> None:
        """Kill ``actor`` (once, whichever of its slots failed first) and maybe replace it."""
        with self._lock:
            if actor.dead:
                return
            actor.dead = True
            self._actors.remove(actor)  # its slots still queued are skipped by _take
        with contextlib.suppress(self._ray.exceptions.RayError):  # gone already, with its node
            self._ray.kill(actor.handle)
        if replace:
            self._spawn(actor.slots)

    # -- the backend -------------------------------------------------------------------------
    @property
    def size(self) -> int:
        self._ensure_started()
        return self._live_slots()

    def _live_slots(self) -> int:
        with self._lock:
            return sum(a.slots for a in self._actors if not a.dead)

    def _take(self) -> tuple[_Actor, int]:
        self._ensure_started()
        while True:
            self._check_connected()
            if self._live_slots() == 0:
                raise WorkerError(f"no evaluation actor is left on the Ray cluster "
                                  f"({self._where()})")
            try:
                actor, slot = self._free.get(timeout=1.0)
            except queue.Empty:
                continue
            if not actor.dead:
                return actor, slot

    def _get(self, ref: Any, timeout_s: float, actor: _Actor) -> Any:
        """``ray.get`` with a harness error re-raised as itself, not wrapped by Ray."""
        try:
            return self._ray.get(ref, timeout=timeout_s)
        except self._ray.exceptions.RayTaskError as exc:
            cause = exc.cause
            if isinstance(cause, KernelEvolveError):
                raise type(cause)(f"on node {actor.node or '(starting)'}: {cause}") from None
            raise WorkerError(f"the evaluation actor on node {actor.node or '(starting)'} failed: "
                              f"{type(cause).__name__}: {cause}") from exc

    def _ready(self, actor: _Actor, slot: int) -> bool:
        """Start the slot's worker unless it runs, and hear from the actor. False when the actor
        is gone: it died since its last evaluation (replaced; no candidate is blamed for it) or
        it never got the resources to start (dropped)."""
        errors = self._ray.exceptions
        fresh = actor.node is None
        try:
            info = _info(self._get(actor.handle.start.remote(slot), START_TIMEOUT_S, actor))
        except errors.GetTimeoutError:
            self._retire(actor, replace=not fresh)
            if fresh:
                log.warning("no evaluation actor started within %.0f s on the Ray cluster (%s): "
                            "it has no free %s for one; going on with %d workers",
                            START_TIMEOUT_S, self._where(),
                            "GPU" if self.target.device == "cuda" else "CPU", self._live_slots())
            else:
                log.warning("the evaluation actor on node %s did not answer within %.0f s: "
                            "replaced", actor.node, START_TIMEOUT_S)
            return False
        except errors.RayError as exc:
            self._check_connected()
            self._retire(actor, replace=not fresh)
            if fresh:
                raise WorkerError(f"an evaluation actor could not start on the Ray cluster "
                                  f"({self._where()}): {exc}") from exc
            return False
        if fresh:
            actor.node = info.node
            if info.version != kernelevolve.__version__:
                raise ConfigError(f"node {info.node} runs kernelevolve {info.version}, this "
                                  f"host {kernelevolve.__version__}: install the same version "
                                  f"on every node of the Ray cluster")
        return True

    def _run(self, request: EvalRequest, timeout_s: float) -> dict[str, Any]:
        errors = self._ray.exceptions
        while True:
            actor, slot = self._take()
            try:
                if not self._ready(actor, slot):
                    continue  # another actor takes the candidate
                guard = timeout_s + GUARD_MARGIN_S
                ref = actor.handle.evaluate.remote(slot, request, timeout_s)
                try:
                    reply: dict[str, Any] = self._get(ref, guard, actor)
                except errors.GetTimeoutError:
                    self._retire(actor, replace=True)
                    return {"status": "timeout",
                            "message": f"no reply from the evaluation actor on node {actor.node} "
                                       f"within {guard:.0f} s (eval.timeout_s plus "
                                       f"{GUARD_MARGIN_S:.0f} s): its node may be down; the "
                                       f"actor was killed and replaced"}
                except errors.RayError as exc:  # died (ActorDiedError), its node or reply lost
                    self._check_connected()
                    self._retire(actor, replace=True)
                    return {"status": "crash", "stderr_tail": str(exc)[-4000:],
                            "message": f"the evaluation actor died during the evaluation (node "
                                       f"{actor.node}): {_death_reason(exc)}; a fresh actor "
                                       f"took its place"}
                return reply
            finally:
                if not actor.dead:
                    self._free.put((actor, slot))

    def actors(self) -> list[ActorInfo]:
        """The actors that answer, as they report themselves (node, pid, worker pids, jobs)."""
        self._ensure_started()
        self._check_connected()
        with self._lock:
            live = [a for a in self._actors if not a.dead]
        refs = [a.handle.info.remote() for a in live]
        infos = []
        for ref in refs:
            with contextlib.suppress(self._ray.exceptions.RayActorError):  # replaced at next use
                infos.append(_info(self._ray.get(ref, timeout=CLOSE_TIMEOUT_S)))
        return infos

    def close(self) -> None:
        """Stop the actors' workers and the actors; shut down a private Ray instance (a cluster
        this joined stays up)."""
        ray = self._ray
        if ray.is_initialized():
            with self._lock:
                live = [a for a in self._actors if not a.dead]
                for a in live:
                    a.dead = True
            gone = ray.exceptions.RayError  # an actor, or its node, already gone
            with contextlib.suppress(gone):
                ray.get([a.handle.close.remote() for a in live], timeout=CLOSE_TIMEOUT_S)
            for a in live:
                with contextlib.suppress(gone):
                    ray.kill(a.handle)
            if self._connected_here:
                ray.shutdown()  # a private instance stops; a cluster only loses this client
        self._connected_here = False
