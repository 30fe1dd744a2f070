"""Fixtures for the knowledge-base tests (the session's indexed store is in tests/conftest.py);
tests that write get their own copy."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelevolve.config import KBConfig
from kernelevolve.kb import KnowledgeBase


@pytest.fixture
def store_copy(indexed_store: Path, tmp_path: Path) -> Path:
    """A private copy of the indexed store, for tests that write or damage it."""
    dest = tmp_path / "kb"
    shutil.copytree(indexed_store, dest)
    return dest


@pytest.fixture
def kb(store_copy: Path) -> KnowledgeBase:
    return KnowledgeBase.open(KBConfig(path=store_copy))
