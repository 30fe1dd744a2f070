"""The judge's GPU lock (worker.gpu_lock over worker.file_lock): timing holds it exclusive, every
other GPU phase of a job shared, so a timing never overlaps another process's correctness checks
while those still overlap each other. flock locks belong to an open file description, so a
second ``open`` of the same file stands in for another process here."""

from __future__ import annotations

import fcntl

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
