"""An offline plan's candidate as a module: rendered to a file and imported fresh; and a
one-convolution problem file for the GPU tests."""

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


_CONV_PROBLEM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = CONV

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(*SHAPE)]


def get_init_inputs():
    return []
'''


def conv_problem(path: Path, conv: str, shape: tuple[int, ...]) -> Path:
    """Write a problem file at ``path`` whose model is the one module ``conv`` (source, e.g.
    ``"nn.Conv2d(8, 64, 3)"``) applied to ``torch.rand(*shape)``; returns ``path``."""
    path.write_text(_CONV_PROBLEM.replace("CONV", conv).replace("SHAPE", repr(shape)))
    return path
