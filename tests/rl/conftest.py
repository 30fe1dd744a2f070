"""Fixtures of the training-data tests: the real runs (runs.py) and one warm cpu pool."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kernelevolve.config import EvalConfig
from kernelevolve.store import RunStore
from kernelevolve.tools.harness.pool import WorkerPool
from tests.rl.runs import Runs, real_runs


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory, rl_pool: WorkerPool) -> Runs:
    return real_runs(tmp_path_factory, warm=rl_pool)


@pytest.fixture
def store(runs: Runs) -> Iterator[RunStore]:
    with RunStore(runs.home / "store.sqlite") as s:
        yield s


@pytest.fixture(scope="session")
def rl_pool() -> Iterator[WorkerPool]:
    """The evaluation pool the online reward sends completions to (cpu: Triton's interpreter)."""
    with WorkerPool("cpu", EvalConfig(n_input_sets=2, gpu_compile_arch=None), workers=1) as pool:
        yield pool
