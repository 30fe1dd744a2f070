"""Shared fixtures. cpu workers run Triton's interpreter; keep shapes small."""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def cpu_pool():
    """One warm cpu worker shared by the tests that only need honest evaluations."""
    from kernelevolve.config import EvalConfig
    from kernelevolve.tools.harness.pool import WorkerPool

    with WorkerPool("cpu", EvalConfig(n_input_sets=3), workers=1) as pool:
        yield pool
