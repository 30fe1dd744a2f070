"""An offline plan's candidate as a module: rendered to a file and imported fresh."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any


def load_rendered(plan: Any, params: Mapping[str, int], path: Path) -> ModuleType:
    """Write ``plan.render(params)`` to ``path`` and import it as a module named after it."""
    path.write_text(plan.render(params))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
