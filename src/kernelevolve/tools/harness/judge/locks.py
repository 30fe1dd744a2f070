"""One GPU shared by several workers (and runs): the per-GPU file lock, held shared by untimed
work and exclusively by timing, or for a whole evaluation that needs the card to itself."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

import torch

_whole_gpu_held = False  # this process holds the GPU for a whole evaluation (whole_gpu)


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
        waiting = WaitRecord.start()
        fcntl.flock(g, fcntl.LOCK_EX)
        try:
            fcntl.flock(f, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        finally:
            fcntl.flock(g, fcntl.LOCK_UN)
            waiting.stop()
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def release_cached_memory() -> None:
    """Hand the CUDA caching allocator's free blocks back to the driver: an input set at
    KernelBench's sizes is gigabytes, and blocks this process keeps cached after freeing it are
    memory another worker on the same GPU cannot have (two bench shards on one H200 ran out of
    memory once the NaN and infinity input sets raised each judge's peak)."""
    if torch.cuda.is_initialized():
        torch.cuda.empty_cache()


# The file (named by the worker's environment) where this process records how long it has
# waited for the GPU's lock: the pool adds that time to the evaluation's deadline, so an
# evaluation queued behind another's (a 6 GB problem holds the GPU alone for minutes) is not
# timed out for it.
WAIT_FILE_ENV = "KERNELEVOLVE_GPU_WAIT_FILE"


class WaitRecord:
    """This process's waiting for the GPU lock, as ``"<seconds waited> <waiting since>"`` (0
    when not waiting; wall-clock times) in the file ``$KERNELEVOLVE_GPU_WAIT_FILE``."""

    waited = 0.0  # this process's total

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.since = time.time()
        self._write(self.since)

    @classmethod
    def start(cls) -> WaitRecord:
        return cls(os.environ.get(WAIT_FILE_ENV))

    def stop(self) -> None:
        WaitRecord.waited += time.time() - self.since
        self._write(0.0)

    def _write(self, since: float) -> None:
        if self.path:
            with contextlib.suppress(OSError):
                Path(self.path).write_text(f"{WaitRecord.waited:.3f} {since:.3f}")


def waited(path: Path) -> float:
    """Seconds the process recording in ``path`` has waited for the GPU lock, a wait in
    progress included (0 where there is no record)."""
    try:
        total, since = (float(v) for v in path.read_text().split())
    except (OSError, ValueError):
        return 0.0
    return total + (time.time() - since if since else 0.0)
