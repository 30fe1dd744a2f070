"""Fixtures for the knowledge-base tests: the bundled corpus is indexed once per session into a
real Chroma store under pytest's temporary directory; tests that write get their own copy."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelevolve.config import KBConfig
from kernelevolve.kb import KnowledgeBase


@pytest.fixture(scope="session")
def indexed_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with the bundled corpus indexed (the expensive step, done once)."""
    path = tmp_path_factory.mktemp("kb-session") / "kb"
    KnowledgeBase.open(KBConfig(path=path))
    return path


@pytest.fixture(scope="session")
def shared_kb(indexed_store: Path) -> KnowledgeBase:
    """The session store, for tests that only read."""
    return KnowledgeBase.open(KBConfig(path=indexed_store))


@pytest.fixture
def store_copy(indexed_store: Path, tmp_path: Path) -> Path:
    """A private copy of the indexed store, for tests that write or damage it."""
    dest = tmp_path / "kb"
    shutil.copytree(indexed_store, dest)
    return dest


@pytest.fixture
def kb(store_copy: Path) -> KnowledgeBase:
    return KnowledgeBase.open(KBConfig(path=store_copy))
