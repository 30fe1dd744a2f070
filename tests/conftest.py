"""Shared fixtures. cpu workers run Triton's interpreter; keep shapes small."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("OMP_NUM_THREADS", "1")
# pytest-xdist's workers start with COLUMNS=80 and LINES=24, which freeze a rich Console's size
# when the CLI module is imported; the tests set COLUMNS per command where tables are read.
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)
# Runs, the run store and the knowledge base default to the user's data directory: never the
# real one in tests (session-scoped fixtures share this one; each test gets its own below).
os.environ["KERNELEVOLVE_HOME"] = tempfile.mkdtemp(prefix="kernelevolve-tests-")

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _own_data_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """A fresh data directory per test: no run store or runs leak between tests (warm starts
    would otherwise seed one test's run with another's kernels)."""
    monkeypatch.setenv("KERNELEVOLVE_HOME", str(tmp_path_factory.mktemp("home")))


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


KERNELBENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared",
                           "kernelbench")


@pytest.fixture(scope="session")
def kernelbench():
    """The unmodified KernelBench levels 1 and 2 beside the checkout (``../shared/kernelbench``).
    CI always has them: there a missing copy fails; elsewhere the tests that need it skip."""
    from pathlib import Path

    root = Path(KERNELBENCH).resolve()
    if not (root / "level1").is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"KernelBench is missing at {root} (CI lays ../shared beside the clone)")
        pytest.skip(f"KernelBench not found at {root}")
    return root
