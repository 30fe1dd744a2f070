"""KernelBench-format problems: ``class Model``, ``get_inputs()``, ``get_init_inputs()``.

A problem's module-level integer sizes (``batch_size = 16``) can be overridden, so correctness is
also checked on shapes other than the ones timed. Overrides rewrite the assignment in the source,
so sizes derived from them (``hidden = 4 * dim``) follow. A shape written inline in
``get_inputs()`` (``torch.randn(16, 256)``) is a size too: its integers are lifted into
module-level names (``_inline_get_inputs_0 = 16``) that the function then reads.

This module needs only the standard library and torch: evaluation workers import it.
"""

from __future__ import annotations

import ast
import hashlib
import math
import types
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from kernelevolve.errors import ProblemError
from kernelevolve.pyparse import parse

REQUIRED_NAMES = ("Model", "get_inputs", "get_init_inputs")
# Optional: a problem may name library ops its candidates may call (e.g. ["conv2d"]), so a
# conv-with-epilogue problem can ask for the epilogue alone. Plain KernelBench files lack it.
ALLOWED_OPS_NAME = "KERNELEVOLVE_ALLOWED_OPS"
# Sizes below this are axis indices, kernel sizes, strides or head counts: never rescaled. A
# small size that is a dimension of an input (a batch of 8, 3 channels) is moved instead, to
# SMALL_MOVES's value (never to 1, which broadcasts).
MIN_SCALABLE_SIZE = 8
SMALL_MOVES = {2: 3, 3: 2, 4: 3, 5: 3, 6: 5, 7: 5, 8: 5}
# Inline shapes: the integer size arguments of these torch factories in get_inputs() and
# get_init_inputs() become sizes named INLINE_PREFIX + function + "_" + number.
INLINE_PREFIX = "_inline_"
_SHAPE_FACTORIES = ("randn", "rand", "zeros", "ones", "empty")


_INT_OPS: dict[type, Any] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b, ast.Pow: lambda a, b: a ** b if 0 <= b <= 64 else None,
    ast.LShift: lambda a, b: a << b if 0 <= b <= 64 else None,
}


def _int_value(node: ast.expr) -> int | None:
    """A literal int, or arithmetic on literal ints (``1024 * 2``, ``2 ** 14``, ``-1``)."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int_value(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.BinOp) and type(node.op) in _INT_OPS:
        left, right = _int_value(node.left), _int_value(node.right)
        if left is None or right is None or (right == 0 and isinstance(node.op, ast.FloorDiv)):
            return None
        return _INT_OPS[type(node.op)](left, right)
    return None


def _size_slots(stmt: ast.stmt) -> tuple[list[str], list[tuple[int | None, int]]] | None:
    """The sizes one top-level statement sets: its target names and, per slot, (index in a
    tuple or None, value). ``batch = 16``, ``height = width = 128``, ``M = 1024 * 2``,
    ``input_shape = (3, 224, 224)`` and ``layer_sizes = [400, 800]`` (one size per element:
    a model's hidden widths shrink with the rest) set sizes; anything else none."""
    if not (isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets)):
        return None
    names = [t.id for t in stmt.targets]  # type: ignore[attr-defined]
    value = _int_value(stmt.value)
    if value is not None:
        return names, [(None, value)]
    if isinstance(stmt.value, ast.Tuple | ast.List) and stmt.value.elts:
        values = [_int_value(e) for e in stmt.value.elts]
        if all(v is not None for v in values):
            return names, [(i, v) for i, v in enumerate(values)]  # type: ignore[misc]
    return None


def _unpacked(stmt: ast.stmt) -> list[ast.stmt]:
    """``height, width = 64, 64`` as ``height = 64`` and ``width = 64`` (each a size of its
    own: KernelBench level 2 writes spatial sizes so); any other statement as it is."""
    if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Tuple) and isinstance(stmt.value, ast.Tuple)
            and len(stmt.targets[0].elts) == len(stmt.value.elts)
            and all(isinstance(t, ast.Name) for t in stmt.targets[0].elts)
            and all(_int_value(v) is not None for v in stmt.value.elts)):
        return [ast.copy_location(ast.Assign(targets=[ast.Name(t.id, ast.Store())], value=v),
                                  stmt)
                for t, v in zip(stmt.targets[0].elts, stmt.value.elts, strict=True)
                if isinstance(t, ast.Name)]
    return [stmt]


def _slot_name(name: str, index: int | None) -> str:
    return name if index is None else f"{name}[{index}]"


def _top_level_int_sizes(tree: ast.Module) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for stmt in (one for top in tree.body for one in _unpacked(top)):
        found = _size_slots(stmt)
        if found is not None:
            names, slots = found
            sizes.update({_slot_name(n, i): v for n in names for i, v in slots})
    return sizes


def _size_args(call: ast.Call) -> list[ast.expr]:
    """The arguments of a torch factory call that are its shape (not a fill value or bounds)."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
            and func.value.id == "torch"):
        return []
    shape_kw = [k.value for k in call.keywords if k.arg == "size"]
    args = [a.value if isinstance(a, ast.Starred) else a for a in call.args]
    if func.attr in _SHAPE_FACTORIES:
        return args + shape_kw
    if func.attr == "full":
        return args[:1] + shape_kw
    if func.attr == "randint":  # randint(high, size) or randint(low, high, size)
        return [a for a in args[1:] if isinstance(a, ast.Tuple | ast.List)][-1:] + shape_kw
    if func.attr in ("randperm", "arange") and len(args) == 1:
        return args
    return []


def _lift_inline_sizes(tree: ast.Module) -> ast.Module:
    """Integers written as shapes of torch factories inside ``get_inputs`` / ``get_init_inputs``
    (``torch.randn(16, 256)``, ``torch.zeros((4, 8))``) replaced by module-level names assigned
    just before the function, so they are sizes like named ones."""
    body: list[ast.stmt] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name in ("get_inputs", "get_init_inputs"):
            body.extend(_lift_from(stmt))
        body.append(stmt)
    tree.body = body
    return ast.fix_missing_locations(tree)


def _lift_from(fn: ast.FunctionDef) -> list[ast.stmt]:
    """Rewrite the factory shapes in ``fn`` to names; the assignments of those names. Integers
    below 2 stay as written: a size of 1 is never moved."""
    lifted: list[ast.stmt] = []

    def lift(node: ast.expr) -> ast.expr:
        value = _int_value(node)
        if value is None or value < 2:
            return node
        name = f"{INLINE_PREFIX}{fn.name}_{len(lifted)}"
        lifted.append(ast.copy_location(
            ast.Assign(targets=[ast.Name(name, ast.Store())], value=ast.Constant(value)), fn))
        return ast.copy_location(ast.Name(name, ast.Load()), node)

    for call in [n for n in ast.walk(fn) if isinstance(n, ast.Call)]:
        shape_args = {id(a) for a in _size_args(call)}

        def rewrite(arg: ast.expr, shape_args: set[int] = shape_args) -> ast.expr:
            if id(arg) not in shape_args:
                return arg
            if isinstance(arg, ast.Tuple | ast.List):
                arg.elts = [lift(e) for e in arg.elts]
                return arg
            return lift(arg)

        call.args = [ast.Starred(rewrite(a.value), a.ctx) if isinstance(a, ast.Starred)
                     else rewrite(a) for a in call.args]
        for keyword in call.keywords:
            keyword.value = rewrite(keyword.value)
    return lifted


def _problem_tree(source: str, filename: str) -> ast.Module:
    """The problem's source parsed, inline shapes lifted into module-level sizes."""
    return _lift_inline_sizes(parse(source, filename))


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
    """Replace the values of overridden sizes (an expression by its new value, a tuple element
    by element); a chained assignment is split into one per name, an unpacking one too."""
    tree.body = [one for stmt in tree.body for one in _unpacked(stmt)]
    for stmt in list(tree.body):
        found = _size_slots(stmt)
        if found is None:
            continue
        names, slots = found
        if not any(_slot_name(n, i) in sizes for n in names for i, _ in slots):
            continue
        new_nodes = []
        for n in names:
            values: list[ast.expr] = [ast.Constant(int(sizes.get(_slot_name(n, i), v)))
                                      for i, v in slots]
            value: ast.expr = (values[0] if slots[0][0] is None
                               else ast.List(elts=values, ctx=ast.Load())
                               if isinstance(stmt.value, ast.List)  # type: ignore[attr-defined]
                               else ast.Tuple(elts=values, ctx=ast.Load()))
            new_nodes.append(ast.copy_location(
                ast.Assign(targets=[ast.Name(n, ast.Store())], value=value), stmt))
        i = tree.body.index(stmt)
        tree.body[i:i + 1] = new_nodes
    return ast.fix_missing_locations(tree)


@dataclass
class Problem:
    """A loaded problem file. ``sizes`` are its module-level integer constants as written,
    and the integer shapes written inline in its ``get_inputs()`` / ``get_init_inputs()``
    factories under their lifted names (``_inline_get_inputs_0``)."""

    path: Path
    source: str
    sizes: dict[str, int]
    name: str = field(default="")
    allowed_ops: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.name = self.name or self.path.stem

    def allowing(self, ops: list[str]) -> Problem:
        """This problem with ``ops`` (library aten ops a candidate may call, e.g. the user's
        ``--allow-op conv2d``) added to the ones its file allows."""
        if set(ops) <= set(self.allowed_ops):
            return self
        return replace(self, allowed_ops=sorted({*self.allowed_ops, *ops}))

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
        tree = _problem_tree(self.source, str(self.path))
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

    def rejects(self, sizes: Mapping[str, int] | None = None) -> str | None:
        """Why the problem's own code refuses ``sizes``: ``Model(*get_init_inputs())``,
        ``get_inputs()`` and the forward, run on the meta device (no memory, no compute). None
        when it accepts them, or cannot tell (an op without a meta kernel, data-dependent
        code): the real run decides then."""
        try:
            module = self.module(sizes)
            with torch.device("meta"), torch.no_grad():
                model = module.Model(*module.get_init_inputs())
                model(*module.get_inputs())
        except ProblemError as exc:
            return str(exc)
        except NotImplementedError:
            return None
        except Exception as exc:
            text = f"{type(exc).__name__}: {exc}"
            return None if "meta" in text.lower() else text.splitlines()[0]
        return None

    def shrink_sizes(self, max_elements: int) -> dict[str, int]:
        """Sizes at which inputs and parameters hold at most ``max_elements``: the largest
        scalable size the problem accepts halved is halved, until they fit (sizes below
        MIN_SCALABLE_SIZE stay, so a problem may not fit)."""
        sizes = dict(self.sizes)
        for _ in range(200):
            if self.input_elements(sizes) <= max_elements:
                return sizes
            scalable = sorted((k for k, v in sizes.items() if v > MIN_SCALABLE_SIZE),
                              key=lambda k: -sizes[k])
            if not scalable:
                break
            # The largest alone first; then the sizes equal to it together, then all of them
            # (a broadcast that needs two sizes equal, a ratio the constructor checks). A
            # halving the problem refuses is skipped.
            top = sizes[scalable[0]]
            tries = [[k] for k in scalable] + [[k for k in scalable if sizes[k] == top],
                                               scalable]
            for names in tries:
                smaller = {**sizes, **{k: max(MIN_SCALABLE_SIZE, sizes[k] // 2) for k in names}}
                if self.rejects(smaller) is None:
                    sizes = smaller
                    break
            else:
                break
        return sizes

    def real_size_plans(self, checked: Sequence[Mapping[str, int]], max_elements: int,
                        limit: int = 2) -> list[tuple[str, dict[str, int]]]:
        """Sizes at which one size takes its own (real) value while the others shrink until
        inputs and parameters hold at most ``max_elements`` (where even then it cannot fit, the
        largest half of it that does, still over twice what was checked): a kernel right only
        up to some block size, or for the shrunk shapes alone, fails there. For the sizes none of
        ``checked`` reaches, the furthest below their real value first, at most ``limit``;
        (size name, sizes) pairs, those the problem refuses or that cannot fit left out."""
        def reached(k: str) -> int:
            return max(int(c.get(k, 0)) for c in checked)

        # furthest below first; among equals the later-declared (inner dims, rows, usually)
        order = {k: i for i, k in enumerate(self.sizes)}
        names = sorted((k for k, v in self.sizes.items()
                        if v > MIN_SCALABLE_SIZE and reached(k) < v),
                       key=lambda k: (-self.sizes[k] / max(1, reached(k)), -order[k]))
        plans: list[tuple[str, dict[str, int]]] = []
        for name in names:
            sizes = {**checked[0], name: self.sizes[name]}
            for _ in range(200):
                if self.input_elements(sizes) <= max_elements:
                    break
                others = sorted((k for k, v in sizes.items()
                                 if k != name and v > MIN_SCALABLE_SIZE), key=lambda k: -sizes[k])
                for k in others:
                    smaller = {**sizes, k: max(MIN_SCALABLE_SIZE, sizes[k] // 2)}
                    if self.rejects(smaller) is None:
                        sizes = smaller
                        break
                else:
                    break
            while (self.input_elements(sizes) > max_elements
                   and sizes[name] // 2 > 2 * reached(name)):
                # its real value cannot fit: as large as fits, still far above what was checked
                smaller = {**sizes, name: sizes[name] // 2}
                if self.rejects(smaller) is not None:
                    break
                sizes = smaller
            if self.input_elements(sizes) <= max_elements and self.rejects(sizes) is None:
                plans.append((name, sizes))
            if len(plans) >= limit:
                break
        return plans

    def other_sizes(self, base: Mapping[str, int]) -> tuple[dict[str, int] | None, str]:
        """Sizes other than ``base`` that the problem accepts, for the other-shapes check: the
        first of :meth:`size_candidates` its code does not refuse, and a line saying what was
        tried. None when no size can change, or the problem refuses every family."""
        families = self.size_candidates(base)
        if not families:
            if not base:
                return None, ("the problem has no integer sizes (no module-level size, no "
                              "integer shape of a torch factory in get_inputs())")
            return None, (f"no size of this problem can change (its sizes {dict(base)} are all "
                          f"<= {MIN_SCALABLE_SIZE} and none is a dimension of an input: axis "
                          f"indices, kernel sizes)")
        refusals = []
        for sizes in families:
            why = self.rejects(sizes)
            if why is None:
                return sizes, ""
            refusals.append(f"{sizes}: {why}")
        return None, (f"the problem refuses every other size tried ({len(families)}), e.g. "
                      f"{refusals[0]}")

    def size_candidates(self, base: Mapping[str, int]) -> list[dict[str, int]]:
        """Every other size family worth probing, most telling first: the :func:`size_families`
        with the small input dimensions moved too (:meth:`small_extents`: a batch of 8 becomes
        5; all of them, then each alone), then without; then, where the problem has inline
        shapes, the same with those held (a model built for 224x224 images refuses others)."""
        small = self.small_extents(base)
        moves = ([small] + ([{k: v} for k, v in small.items()] if len(small) > 1 else [])
                 if small else [])
        inline = [k for k in base if k.startswith(INLINE_PREFIX)]
        groups = [size_families(base)] + ([size_families(base, fixed=inline)] if inline else [])
        out: list[dict[str, int]] = []
        for families in groups:
            moved = [{**f, **m} for m in moves for f in [*families, dict(base)]]
            for sizes in moved + families:
                if sizes != dict(base) and sizes not in out:
                    out.append(sizes)
        return out

    def small_extents(self, base: Mapping[str, int]) -> dict[str, int]:
        """The sizes of ``base`` too small to rescale (2 to MIN_SCALABLE_SIZE) that are
        dimensions of an input, each mapped to its SMALL_MOVES value: moved alone, it changes
        the shape of a tensor ``get_inputs()`` returns (probed on the meta device). A batch of 8
        or 3 channels qualify; an axis index, a kernel size, a stride or a group count do not."""
        shapes = self._input_shapes(base)
        if shapes is None:
            return {}
        moved: dict[str, int] = {}
        for name, value in base.items():
            if value in SMALL_MOVES:
                other = self._input_shapes({**base, name: SMALL_MOVES[value]})
                if other is not None and other != shapes:
                    moved[name] = SMALL_MOVES[value]
        return moved

    def _input_shapes(self, sizes: Mapping[str, int]) -> list[tuple[int, ...] | None] | None:
        """The shapes of ``get_inputs()``'s tensors at ``sizes`` (None for other values), made
        on the meta device; None when the problem cannot make them there."""
        try:
            module = self.module(sizes)
            with torch.device("meta"):
                values = call_factory(module, "get_inputs", self.path)
        except Exception:  # the problem's own code refuses these sizes, or the meta device
            return None
        return [tuple(v.shape) if isinstance(v, torch.Tensor) else None for v in values]


def size_families(base: Mapping[str, int], fixed: Collection[str] = ()
                  ) -> list[dict[str, int]]:
    """Other sizes to check at, most telling first, all different from ``base`` (the sizes
    named in ``fixed`` keep their values):

    1. each scalable size moved to a nearby odd number (catches missing masks and hard-wired
       shapes) — :func:`perturbed_sizes`;
    2. the same, but a size stays a multiple of the small sizes that divide it (a channel count
       divisible by a group count: ``features = 64, num_groups = 8`` -> 40 or 56);
    3. every scalable size scaled by the same exact factor (3/4, 1/2, 5/4), which keeps their
       ratios and their divisibility by each other (``embed_dim % num_heads``).
    """
    out: list[dict[str, int]] = []

    def add(sizes: dict[str, int]) -> None:
        if sizes != dict(base) and sizes not in out:
            out.append(sizes)

    scalable = {k: v for k, v in base.items() if v > MIN_SCALABLE_SIZE and k not in fixed}
    if not scalable:
        return out
    for variant in range(3):
        add({**perturbed_sizes(base, variant), **{k: base[k] for k in fixed if k in base}})
    small = [v for v in base.values() if 1 < v <= MIN_SCALABLE_SIZE]
    for factor in (0.75, 1.25):
        sizes = dict(base)
        for name, value in scalable.items():
            step = math.lcm(*[u for u in small if value % u == 0] or [1])
            k = max(1, round(value * factor / step)) | 1
            if k * step == value:
                k += 2
            sizes[name] = k * step
        add(sizes)
    for num, den in ((3, 4), (1, 2), (5, 4)):
        if all(v % den == 0 and v * num // den > MIN_SCALABLE_SIZE for v in scalable.values()):
            add({**base, **{k: v * num // den for k, v in scalable.items()}})
    return out


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
        tree = parse(source, str(p))
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
    return Problem(path=p.resolve(), source=source,
                   sizes=_top_level_int_sizes(_lift_inline_sizes(tree)),
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
