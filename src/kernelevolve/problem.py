"""KernelBench-format problems: ``class Model``, ``get_inputs()``, ``get_init_inputs()``.

A problem's module-level integer sizes (``batch_size = 16``) can be overridden, so correctness is
also checked on shapes other than the ones timed. Overrides rewrite the assignment in the source,
so sizes derived from them (``hidden = 4 * dim``) follow.

This module needs only the standard library and torch: evaluation workers import it.
"""

from __future__ import annotations

import ast
import hashlib
import math
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kernelevolve.errors import ProblemError

REQUIRED_NAMES = ("Model", "get_inputs", "get_init_inputs")
# Optional: a problem may name library ops its candidates may call (e.g. ["conv2d"]), so a
# conv-with-epilogue problem can ask for the epilogue alone. Plain KernelBench files lack it.
ALLOWED_OPS_NAME = "KERNELEVOLVE_ALLOWED_OPS"
# Sizes below this are axis indices, kernel sizes, strides or head counts: never rescaled.
MIN_SCALABLE_SIZE = 8


def _int_assignments(tree: ast.Module) -> list[tuple[ast.Assign, list[str], int]]:
    """Top-level ``name = <int>`` statements, chained ones (``height = width = 128``) included."""
    found = []
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and all(isinstance(t, ast.Name) for t in node.targets)
            and isinstance(node.value, ast.Constant)
            and type(node.value.value) is int
        ):
            found.append((node, [t.id for t in node.targets], node.value.value))  # type: ignore[attr-defined]
    return found


def _top_level_int_sizes(tree: ast.Module) -> dict[str, int]:
    return {name: value for _, names, value in _int_assignments(tree) for name in names}


def _defined_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _rewrite_sizes(tree: ast.Module, sizes: Mapping[str, int]) -> ast.Module:
    """Replace the values of overridden sizes; a chained assignment is split into one per name."""
    for node, names, value in _int_assignments(tree):
        if not any(n in sizes for n in names):
            continue
        new_nodes = [
            ast.copy_location(
                ast.Assign(targets=[ast.Name(n, ast.Store())],
                           value=ast.Constant(int(sizes.get(n, value)))), node)
            for n in names
        ]
        i = tree.body.index(node)
        tree.body[i:i + 1] = new_nodes
    return ast.fix_missing_locations(tree)


@dataclass
class Problem:
    """A loaded problem file. ``sizes`` are its module-level integer constants as written."""

    path: Path
    source: str
    sizes: dict[str, int]
    name: str = field(default="")
    allowed_ops: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.name = self.name or self.path.stem

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]

    def module(self, sizes: Mapping[str, int] | None = None) -> types.ModuleType:
        """Execute the problem with ``sizes`` overriding its module-level integers."""
        unknown = set(sizes or {}) - set(self.sizes)
        if unknown:
            raise ProblemError(
                f"{self.path}: cannot override {sorted(unknown)}: not module-level integer sizes "
                f"of this problem (it has {sorted(self.sizes)})"
            )
        tree = ast.parse(self.source, filename=str(self.path))
        if sizes:
            tree = _rewrite_sizes(tree, sizes)
        module = types.ModuleType(f"kernelevolve_problem_{self.name}")
        module.__file__ = str(self.path)
        try:
            exec(compile(tree, str(self.path), "exec"), module.__dict__)
        except Exception as exc:
            raise ProblemError(
                f"{self.path} raised while loading: {type(exc).__name__}: {exc}"
            ) from exc
        return module

    def instantiate(
        self, sizes: Mapping[str, int] | None = None, seed: int = 0
    ) -> tuple[types.ModuleType, torch.nn.Module, list[Any]]:
        """The module, ``Model(*get_init_inputs())`` built under ``seed``, and the init inputs."""
        module = self.module(sizes)
        init_inputs = call_factory(module, "get_init_inputs", self.path)
        torch.manual_seed(seed)
        try:
            model = module.Model(*init_inputs)
        except Exception as exc:
            raise ProblemError(
                f"{self.path}: Model(*get_init_inputs()) raised {type(exc).__name__}: {exc}"
            ) from exc
        return module, model, init_inputs

    def input_elements(self, sizes: Mapping[str, int] | None = None) -> int:
        """Elements in ``get_inputs()`` and the model's parameters at ``sizes``, counted on the
        meta device (no memory)."""
        module = self.module(sizes)
        try:
            with torch.device("meta"):
                inputs = call_factory(module, "get_inputs", self.path)
                params = sum(p.numel() for p in module.Model(
                    *call_factory(module, "get_init_inputs", self.path)).parameters())
        except Exception:  # an op without a meta kernel: count real tensors instead
            inputs = call_factory(module, "get_inputs", self.path)
            params = 0
        return params + sum(t.numel() for t in inputs if isinstance(t, torch.Tensor))

    def shrink_sizes(self, max_elements: int) -> dict[str, int]:
        """Sizes at which inputs and parameters hold at most ``max_elements``: the largest
        scalable size is halved until they fit (sizes below MIN_SCALABLE_SIZE stay, so a problem
        may not fit)."""
        sizes = dict(self.sizes)
        for _ in range(200):
            if self.input_elements(sizes) <= max_elements:
                return sizes
            scalable = {k: v for k, v in sizes.items() if v > MIN_SCALABLE_SIZE}
            if not scalable:
                break
            name = max(scalable, key=lambda k: scalable[k])
            sizes[name] = max(MIN_SCALABLE_SIZE, sizes[name] // 2)
        return sizes


def perturbed_sizes(sizes: Mapping[str, int], variant: int = 0) -> dict[str, int]:
    """Other sizes near ``sizes``: each scalable size moved to a nearby odd number (never equal to
    the original), so a kernel hard-wired to the visible shapes, or one missing its masks, fails.
    ``variant`` picks among several such families."""
    factors = (0.75, 0.6, 1.25)
    factor = factors[variant % len(factors)]
    out: dict[str, int] = {}
    for name, value in sizes.items():
        if value <= MIN_SCALABLE_SIZE:
            out[name] = value
            continue
        new = max(MIN_SCALABLE_SIZE + 1, math.floor(value * factor)) | 1
        if new == value:
            new += 2
        out[name] = new
    return out


def call_factory(module: types.ModuleType, name: str, path: Path) -> list[Any]:
    """Call ``get_inputs`` / ``get_init_inputs`` and check it returns a list or tuple."""
    try:
        value = getattr(module, name)()
    except Exception as exc:
        raise ProblemError(
            f"{path}: {name}() raised {type(exc).__name__}: {exc}; fix the problem file so it "
            f"returns the inputs"
        ) from exc
    if not isinstance(value, list | tuple):
        raise ProblemError(f"{path}: {name}() must return a list, got {type(value).__name__}")
    return list(value)


def parse_problem(path: str | Path) -> Problem:
    """Read and statically validate a problem file, without running it."""
    p = Path(path)
    if not p.is_file():
        raise ProblemError(f"problem file {p} does not exist")
    try:
        source = p.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ProblemError(f"cannot read problem file {p}: {exc}") from exc
    try:
        tree = ast.parse(source, filename=str(p))
    except SyntaxError as exc:
        raise ProblemError(
            f"{p}:{exc.lineno}: the problem does not parse: {exc.msg}"
        ) from exc
    missing = [n for n in REQUIRED_NAMES if n not in _defined_names(tree)]
    if missing:
        raise ProblemError(
            f"{p} is not a KernelBench-format problem: it lacks {', '.join(missing)} "
            f"(a problem defines class Model(nn.Module), get_inputs() and get_init_inputs())"
        )
    return Problem(path=p.resolve(), source=source, sizes=_top_level_int_sizes(tree),
                   allowed_ops=_allowed_ops(tree, p))


def _allowed_ops(tree: ast.Module, path: Path) -> list[str]:
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == ALLOWED_OPS_NAME):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                value = None
            if not (isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)):
                raise ProblemError(f"{path}: {ALLOWED_OPS_NAME} must be a literal list of op "
                                   f"names, e.g. [\"conv2d\"]")
            return list(value)
    return []


def load_problem(path: str | Path, check: bool = True) -> Problem:
    """Load a KernelBench-format problem file.

    With ``check`` the file is also run: ``Model(*get_init_inputs())`` is built and ``get_inputs()``
    called (on the meta device when possible, so large default shapes cost no memory).
    """
    problem = parse_problem(path)
    if check:
        module, _, _ = problem.instantiate()
        try:
            with torch.device("meta"):
                call_factory(module, "get_inputs", problem.path)
        except ProblemError:
            call_factory(module, "get_inputs", problem.path)
    return problem


def as_list(value: Any) -> list[Any]:
    """Flatten a forward's result (tensor, tuple, list) into a list of leaves."""
    if isinstance(value, list | tuple):
        out: list[Any] = []
        for item in value:
            out.extend(as_list(item))
        return out
    return [value]


def tensors(values: Iterable[Any]) -> list[torch.Tensor]:
    return [v for v in values if isinstance(v, torch.Tensor)]
