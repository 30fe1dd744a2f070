"""The judge's GPU lock (worker.gpu_lock over worker.file_lock): timing holds it exclusive, every
other GPU phase of a job shared, so a timing never overlaps another process's correctness checks
while those still overlap each other. flock locks belong to an open file description, so a
second ``open`` of the same file stands in for another process here."""

from __future__ import annotations

import fcntl
import threading
import time

import pytest

from kernelevolve.tools.harness.worker import file_lock


def _try(path, mode) -> bool:
    """Whether another holder could take the lock in ``mode`` now (without waiting)."""
    with open(path, "a") as f:
        try:
            fcntl.flock(f, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(f, fcntl.LOCK_UN)
        return True


def test_shared_holders_overlap_and_keep_a_timing_out(tmp_path):
    path = tmp_path / "gpu.lock"
    with file_lock(path, shared=True):
        assert _try(path, fcntl.LOCK_SH)  # another job's correctness checks run meanwhile
        assert not _try(path, fcntl.LOCK_EX)  # a timing waits
    assert _try(path, fcntl.LOCK_EX)


def test_a_timing_keeps_everything_else_out(tmp_path):
    path = tmp_path / "gpu.lock"
    with file_lock(path):
        assert not _try(path, fcntl.LOCK_SH)
        assert not _try(path, fcntl.LOCK_EX)
    assert _try(path, fcntl.LOCK_SH)


def test_the_lock_is_released_when_the_work_raises(tmp_path):
    path = tmp_path / "gpu.lock"
    with pytest.raises(RuntimeError), file_lock(path):
        raise RuntimeError("a candidate crashed")
    assert _try(path, fcntl.LOCK_EX)


def test_a_waiting_timing_goes_before_later_correctness_checks(tmp_path):
    """flock alone lets shared requests pass a waiting exclusive one, so overlapping correctness
    checks of other processes could hold a timing off indefinitely; requests queue instead."""
    path = tmp_path / "gpu.lock"
    order: list[str] = []

    def take(name: str, shared: bool) -> None:
        with file_lock(path, shared=shared):
            order.append(name)

    with file_lock(path, shared=True):  # one job's correctness checks
        timing = threading.Thread(target=take, args=("timing", False))
        timing.start()
        time.sleep(0.3)  # the timing is waiting now
        checks = threading.Thread(target=take, args=("later checks", True))
        checks.start()
        time.sleep(0.3)
        assert order == []  # neither passed the holder, nor the later checks the timing
    timing.join(timeout=10)
    checks.join(timeout=10)
    assert order == ["timing", "later checks"]


def test_a_large_evaluation_holds_the_gpu_from_first_check_to_verdict(tmp_path, monkeypatch):
    """whole_gpu (taken by check_fits where an evaluation needs more than WHOLE_GPU_SHARE of the
    card): every other process waits, shared or exclusive, while this process's own gpu_lock
    calls inside pass straight through instead of waiting on its own lock; afterwards the lock
    is free and gpu_lock locks again."""
    import torch

    from kernelevolve.tools.harness import worker

    def no_uuid(device):
        raise RuntimeError("no CUDA here: the lock is named by the visible index")

    monkeypatch.setattr(torch.cuda, "get_device_properties", no_uuid)
    monkeypatch.setenv("KERNELEVOLVE_LOCK_DIR", str(tmp_path))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    path = tmp_path / "kernelevolve-gpu-0.lock"
    cuda = torch.device("cuda")
    with worker.whole_gpu(cuda):
        assert not _try(path, fcntl.LOCK_SH) and not _try(path, fcntl.LOCK_EX)
        # its correctness checks, and its timing nested in them as a profile's replay would be
        with worker.gpu_lock(cuda, shared=True), worker.gpu_lock(cuda):
            assert not _try(path, fcntl.LOCK_SH)
    assert _try(path, fcntl.LOCK_EX)
    with worker.gpu_lock(cuda, shared=True):
        assert _try(path, fcntl.LOCK_SH) and not _try(path, fcntl.LOCK_EX)


def test_the_footprint_is_measured_on_the_meta_device():
    """check_fits's estimate (inputs, outputs, weights) comes from the reference built and run
    on the meta device: the same bytes as the real tensors, no memory taken."""
    from pathlib import Path

    import torch

    from kernelevolve.problem import call_factory, load_problem
    from kernelevolve.tools.harness.timing import tensor_bytes
    from kernelevolve.tools.harness.worker import meta_footprint

    problem = load_problem(Path(__file__).parents[2] / "data" / "conv2d_small.py")
    sizes = dict(problem.sizes)
    module, model, _ = problem.instantiate(sizes)
    inputs = call_factory(module, "get_inputs", problem.path)
    with torch.no_grad():
        out = model(*inputs)
    real = tensor_bytes(inputs) + tensor_bytes([out]) + tensor_bytes(list(model.parameters()))
    with torch.device("meta"):
        meta_inputs = call_factory(module, "get_inputs", problem.path)
    assert all(t.device.type == "meta" for t in meta_inputs)
    assert meta_footprint(problem, sizes, meta_inputs) == real == (16 * 64 * 64 * 64 * 2
                                                                   + 64 * 64 * 9 + 64) * 4
