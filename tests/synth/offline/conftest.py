"""The offline synthesizer's tests: one small cpu pool per test file."""

from __future__ import annotations

import pytest

from kernelevolve.config import EvalConfig
from kernelevolve.tools.harness.pool import WorkerPool


@pytest.fixture(scope="module")
def small_pool():
    """A one-worker cpu pool checking one input set at up to 4096 elements."""
    with WorkerPool("cpu", EvalConfig(n_input_sets=1, cpu_max_elements=1 << 12),
                    workers=1) as pool:
        yield pool
