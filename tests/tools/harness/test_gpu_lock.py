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
    assert meta_footprint(problem, sizes, meta_inputs).total == real == (16 * 64 * 64 * 64 * 2
                                                                   + 64 * 64 * 9 + 64) * 4


def test_the_least_hold_counts_outputs_as_they_are(kernelbench):
    """check_fits refuses a problem whose least hold exceeds the card: two copies of the inputs
    and weights, four of the outputs. Average pooling 2-D (KernelBench 45: 16 GiB in, an
    output 121x smaller) fits an 80 GB card (five copies of its inputs, the old rule, did not);
    ReLU (6 GiB in, 6 GiB out) holds at least 36 GiB."""
    import torch

    from kernelevolve.problem import call_factory, load_problem
    from kernelevolve.tools.harness.worker import meta_footprint

    def footprint(name: str):
        problem = load_problem(kernelbench / "level1" / name)
        with torch.device("meta"):
            inputs = call_factory(problem.module(problem.sizes), "get_inputs", problem.path)
        return meta_footprint(problem, dict(problem.sizes), inputs)

    pool = footprint("45_Average_Pooling_2D.py")
    assert pool.inputs == 16 * 2**30 and pool.outputs < pool.inputs // 100
    assert 32 * 2**30 < pool.least_hold < 80 * 10**9 < 5 * pool.inputs
    relu = footprint("19_ReLU.py")
    assert relu.inputs == relu.outputs == 4096 * 393216 * 4 and relu.weights == 0
    assert relu.least_hold == 6 * relu.inputs


def test_outputs_held_as_a_caller_would_fit_a_sixteenth_of_the_gpu():
    """On a GPU the candidate's process holds as many earlier outputs as fit PREVIOUS_SHARE of
    the card, at least one; on the interpreter targets PREVIOUS_KEPT."""
    import torch

    from kernelevolve.tools.harness import worker
    from kernelevolve.tools.harness.judge import memory

    assert worker.previous_kept(torch.device("cpu"), 8 * 2**30) == memory.PREVIOUS_KEPT
    if torch.cuda.is_available():
        total = torch.cuda.get_device_properties(0).total_memory
        cuda = torch.device("cuda", 0)
        assert worker.previous_kept(cuda, total // 10) == 1
        assert worker.previous_kept(cuda, 1 << 20) == memory.PREVIOUS_KEPT_CUDA


def test_time_queued_for_the_gpu_is_recorded_for_the_pool(tmp_path, monkeypatch):
    """The judge records how long it waited for the lock (judge.locks.WaitRecord), in progress
    and done; the pool adds it to the evaluation's deadline (pool.Worker._read_line), so an
    evaluation queued behind another's is not timed out for it."""
    from kernelevolve.tools.harness.judge import locks

    record = tmp_path / "gpu-wait"
    monkeypatch.setenv(locks.WAIT_FILE_ENV, str(record))
    monkeypatch.setattr(locks.WaitRecord, "waited", 0.0)
    path = tmp_path / "gpu.lock"
    assert locks.waited(record) == 0.0  # no record: nothing waited
    seen: list[float] = []
    with open(path, "a") as holder:  # another process's evaluation holds the GPU
        fcntl.flock(holder, fcntl.LOCK_EX)

        def release_later() -> None:
            time.sleep(0.6)
            seen.append(locks.waited(record))  # while waiting: the wait so far
            time.sleep(0.6)
            fcntl.flock(holder, fcntl.LOCK_UN)

        t = threading.Thread(target=release_later)
        t.start()
        with locks.file_lock(path):
            pass
        t.join()
    assert 0.4 < seen[0] < 1.1
    done = locks.waited(record)
    assert 1.0 < done < 3.0
    time.sleep(0.3)
    assert locks.waited(record) == pytest.approx(done)  # not waiting now: it stays


def test_the_pool_waits_longer_while_the_judge_is_queued_for_the_gpu(tmp_path):
    """A reply that comes after the deadline, but within it once the judge's queueing is added,
    is read (a real pipe stands in for the worker's)."""
    import os

    from kernelevolve.config import EvalConfig
    from kernelevolve.targets import get_target
    from kernelevolve.tools.harness.pool import Worker

    worker = Worker(get_target("cpu"), 0, EvalConfig())
    read_fd, write_fd = os.pipe()
    worker._resp = read_fd
    try:
        # queued for the GPU since 1.5 s ago, and still waiting
        worker.wait_file.write_text(f"0.0 {time.time() - 1.5:.3f}")

        def reply_later() -> None:
            time.sleep(1.0)
            os.write(write_fd, b'{"status": "ok"}\n')

        t = threading.Thread(target=reply_later)
        t.start()
        line = worker._read_line(time.monotonic() + 0.3)  # 0.3 s alone would time out
        t.join()
        assert line == '{"status": "ok"}'
        worker.wait_file.unlink()
        assert worker._read_line(time.monotonic() + 0.2) is None  # no queueing: on time
    finally:
        os.close(read_fd)
        os.close(write_fd)
        worker._resp = -1
        worker.close()
