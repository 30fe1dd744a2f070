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


@pytest.fixture(scope="session")
def indexed_store(tmp_path_factory: pytest.TempPathFactory):
    """A real Chroma store with the bundled corpus indexed (the expensive step, once a session)."""
    from kernelevolve.config import KBConfig
    from kernelevolve.kb import KnowledgeBase

    path = tmp_path_factory.mktemp("kb-session") / "kb"
    KnowledgeBase.open(KBConfig(path=path))
    return path


@pytest.fixture(scope="session")
def shared_kb(indexed_store):
    """The session store, for tests that only read."""
    from kernelevolve.config import KBConfig
    from kernelevolve.kb import KnowledgeBase

    return KnowledgeBase.open(KBConfig(path=indexed_store))
