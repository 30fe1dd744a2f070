"""The candidate module of a plan's source, for the scripts beside it."""

import importlib.util
import tempfile
from pathlib import Path
from types import ModuleType


def load(source: str, tag: str) -> ModuleType:
    path = Path(tempfile.mkdtemp()) / f"{tag}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(tag, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
