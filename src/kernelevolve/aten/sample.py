"""One OpInfo sample as a KernelBench-format problem: its tensors described (shape, dtype, value
range, layout, role), its call rendered as ``Model.forward``, its sizes scaled up and written as
module-level names.

A sample's structure survives the scaling: a broadcasting dimension of 1 stays 1, dimensions of
one size in the sample share one name (so the harness's perturbations keep them equal), a
non-contiguous tensor is made as the same kind of view (a permutation, a stride-2 slice, an
expansion) of a larger one, index tensors stay within the dimension they index, and Python
scalars, dims and kwargs become literals.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from kernelevolve.aten.ops import OpSpec


class SampleUnsupported(Exception):
    """This sample cannot be written as a problem (data: the reason is recorded)."""


@dataclass
class Leaf:
    """One tensor of the sample, as ``get_inputs`` will make it."""

    index: int
    shape: tuple[int, ...]
    dtype: torch.dtype
    role: str  # "float", "int" (data), "index", "bool"
    lo: float = 0.0
    hi: float = 1.0
    sorted_last: bool = False
    layout: str = "contiguous"  # or "permute", "slice", "expand"
    perm: tuple[int, ...] = ()
    expanded: tuple[int, ...] = ()  # dims of stride 0
    bound: int | None = None  # index values lie in [0, bound)
    unique_dim: int | None = None  # indices distinct along this dim
    true_frac: float = 0.5

    @property
    def name(self) -> str:
        return f"x{self.index}"


@dataclass
class Described:
    """A sample with its tensors replaced by leaves."""

    input: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    leaves: list[Leaf] = field(default_factory=list)


_FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _round(v: float) -> float:
    return float(f"{v:.4g}")


def _layout(t: torch.Tensor) -> tuple[str, tuple[int, ...], tuple[int, ...]]:
    if t.is_contiguous() or t.numel() <= 1:
        return "contiguous", (), ()
    expanded = tuple(d for d, (n, s) in enumerate(zip(t.shape, t.stride(), strict=True))
                     if s == 0 and n > 1)
    if expanded:
        return "expand", (), expanded
    strides = t.stride()
    perm = tuple(sorted(range(t.dim()), key=lambda d: -strides[d]))
    if t.permute(perm).is_contiguous():
        return "permute", perm, ()
    return "slice", (), ()


def describe(sample: Any, spec: OpSpec) -> Described:
    """The sample's input/args/kwargs with every tensor replaced by a :class:`Leaf`."""
    leaves: list[Leaf] = []
    index_tensors: list[tuple[Leaf, torch.Tensor]] = []

    def visit(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            if v.layout != torch.strided:
                raise SampleUnsupported(f"a {v.layout} tensor (only dense strided tensors)")
            if v.is_complex():
                raise SampleUnsupported("a complex tensor (Triton has no complex type)")
            if v.numel() == 0:
                raise SampleUnsupported("an empty tensor")
            layout, perm, expanded = _layout(v)
            leaf = Leaf(index=len(leaves), shape=tuple(v.shape), dtype=v.dtype, role="float",
                        layout=layout, perm=perm, expanded=expanded)
            if v.dtype == torch.bool:
                leaf.role = "bool"
                leaf.true_frac = _round(float(v.float().mean()))
            elif v.dtype in _FLOAT_DTYPES:
                vals = v.detach().double()
                if not bool(torch.isfinite(vals).all()):
                    raise SampleUnsupported("a tensor with inf/nan values (the harness checks "
                                            "finite outputs)")
                leaf.lo, leaf.hi = _round(float(vals.min())), _round(float(vals.max()))
                if leaf.lo == leaf.hi and leaf.lo != 0:
                    # one value (a 0-dim tensor): vary it around the sample's, keeping its sign,
                    # so every input set the harness draws differs
                    leaf.lo, leaf.hi = sorted((_round(leaf.lo / 2), _round(leaf.lo * 2)))
                if v.dim() >= 1 and v.shape[-1] >= 2 and leaf.lo < leaf.hi:
                    leaf.sorted_last = bool((vals.diff(dim=-1) >= 0).all())
            elif v.dtype.is_floating_point:
                raise SampleUnsupported(f"a {v.dtype} tensor")
            else:
                # integer inputs of indexing ops and losses are indices (gather's index, a
                # loss's targets); elsewhere they are data (repeat_interleave's counts)
                leaf.role = "index" if spec.op_class in ("indexing", "loss") else "int"
                leaf.lo, leaf.hi = float(v.min()), float(v.max())
                if leaf.role == "index":
                    index_tensors.append((leaf, v))
            leaves.append(leaf)
            return leaf
        if isinstance(v, list | tuple) and not isinstance(v, torch.Size):
            out = [visit(x) for x in v]
            return out if isinstance(v, list) else tuple(out)
        return v

    if isinstance(sample.kwargs.get("sorter"), torch.Tensor):
        # a sorter must sort the input, which random values would not
        raise SampleUnsupported("a sorter argument (a permutation tied to the input's values)")
    described = Described(input=visit(sample.input), args=tuple(visit(a) for a in sample.args),
                          kwargs={k: visit(v) for k, v in sample.kwargs.items()}, leaves=leaves)
    if spec.tensor_input_only and len(leaves) > 1:
        raise SampleUnsupported("a tensor argument would make the output's size depend on "
                                "its values")
    data_dims = sorted({d for leaf in leaves if leaf.role != "index" for d in leaf.shape})
    for leaf, _ in index_tensors:
        top = int(leaf.hi)
        if leaf.lo < 0:
            raise SampleUnsupported("negative indices")
        above = [d for d in data_dims if d > top]
        # the smallest dimension above every index value: no larger than the dimension the
        # indices really address, so scaled indices stay in range
        leaf.bound = above[0] if above else top + 1
        if spec.unique_index and leaf.shape:  # (a single index is distinct already)
            if len(leaf.shape) == 1:
                leaf.unique_dim = 0
            else:
                dims = [a for a in sample.args if type(a) is int]
                if not dims:
                    raise SampleUnsupported("unique indices along an unknown dimension")
                leaf.unique_dim = dims[0] % len(leaf.shape)
    return described


# -- sizes -------------------------------------------------------------------------------------


@dataclass
class Scaling:
    """How a sample's sizes grow: module-level names for dims (by value or by position)."""

    by_value: dict[int, str] = field(default_factory=dict)
    by_position: dict[tuple[int, int], str] = field(default_factory=dict)
    constants: dict[str, int] = field(default_factory=dict)
    map_int_args: bool = False
    note: str = "sizes as in the OpInfo sample"

    def dim(self, leaf: Leaf, pos: int, value: int) -> str:
        name = self.by_position.get((leaf.index, pos)) or self.by_value.get(value)
        return name if name else str(value)

    def value_expr(self, value: int) -> str:
        return self.by_value.get(value) or str(value)


def _spatial_rank(spec: OpSpec, ndim: int) -> int:
    for n in (1, 2, 3):
        if spec.name.endswith(f"{n}d"):
            return min(n, ndim)
    return max(ndim - 2, 1) if ndim >= 3 else min(ndim, 1)


def scalings(d: Described, spec: OpSpec, target: int) -> list[Scaling]:
    """Scalings to try, most realistic first; the last keeps the sample's sizes."""
    out: list[Scaling] = []
    if spec.spatial and d.leaves and isinstance(d.input, Leaf):
        x = d.input
        n = _spatial_rank(spec, len(x.shape))
        positions = [p for p in range(len(x.shape) - n, len(x.shape)) if x.shape[p] >= 3]
        if positions:
            base = math.prod(x.shape)
            k = int((target / base) ** (1 / len(positions)))
            if k >= 2:
                s = Scaling(note=f"spatial dims of the input x{k}")
                for i, p in enumerate(positions):
                    name = f"spatial_{i}"
                    s.by_position[(x.index, p)] = name
                    s.constants[name] = x.shape[p] * k
                out.append(s)
    else:
        for thr in (3, 5):
            values = sorted({v for leaf in d.leaves for v in leaf.shape if v >= thr})
            if not values:
                continue
            largest = max(d.leaves, key=lambda lf: math.prod(lf.shape))
            base = math.prod(largest.shape)
            n = sum(1 for v in largest.shape if v >= thr)
            if n == 0:
                continue
            k = int((target / base) ** (1 / n))
            if k < 2:
                continue
            for map_args in (False, True):
                s = Scaling(map_int_args=map_args,
                            note=f"dims of size >= {thr} x{k}"
                                 + (", with the int arguments equal to them" if map_args else ""))
                for i, v in enumerate(values):
                    s.by_value[v] = f"size_{i}"
                    s.constants[f"size_{i}"] = v * k
                out.append(s)
    out.append(Scaling())
    return out


# -- rendering ---------------------------------------------------------------------------------


def _literal(v: Any, scaling: Scaling) -> str:
    if isinstance(v, Leaf):
        return v.name
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return repr(v)
    if isinstance(v, int):
        return scaling.value_expr(v) if scaling.map_int_args else repr(v)
    if isinstance(v, float):
        if math.isinf(v):
            return "float('inf')" if v > 0 else "-float('inf')"
        if math.isnan(v):
            return "float('nan')"
        return repr(v)
    if isinstance(v, torch.Size):
        return _literal(tuple(v), scaling)
    if isinstance(v, tuple):
        inner = ", ".join(_literal(x, scaling) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    if isinstance(v, list):
        return "[" + ", ".join(_literal(x, scaling) for x in v) + "]"
    if isinstance(v, torch.dtype):
        return str(v)
    if isinstance(v, torch.memory_format):
        return str(v)
    if v is Ellipsis:
        return "..."
    if isinstance(v, slice):
        return f"slice({_literal(v.start, scaling)}, {_literal(v.stop, scaling)}, " \
               f"{_literal(v.step, scaling)})"
    raise SampleUnsupported(f"an argument of type {type(v).__name__} ({v!r:.60}) that a "
                            f"problem file cannot write as a literal")


def call_expr(d: Described, callee: str, method: bool, scaling: Scaling) -> str:
    """The op's call on x0, x1, ... with the sample's arguments; a ``callee`` holding ``{0}``
    is a template (:attr:`OpSpec.call`)."""
    if "{0}" in callee:
        kw = "".join(f", {k}={_literal(v, scaling)}" for k, v in d.kwargs.items())
        return callee.format(_literal(d.input, scaling),
                             *[_literal(a, scaling) for a in d.args], kw=kw)
    args = [_literal(a, scaling) for a in d.args]
    args += [f"{k}={_literal(v, scaling)}" for k, v in d.kwargs.items()]
    if method:
        if not isinstance(d.input, Leaf):
            raise SampleUnsupported("a method call on a non-tensor input")
        return f"{d.input.name}.{callee}({', '.join(args)})"
    return f"{callee}({', '.join([_literal(d.input, scaling)] + args)})"


def _shape(leaf: Leaf, scaling: Scaling, dims: list[str] | None = None) -> str:
    dims = dims if dims is not None else [scaling.dim(leaf, p, v)
                                          for p, v in enumerate(leaf.shape)]
    return f"({dims[0]},)" if len(dims) == 1 else f"({', '.join(dims)})"


def make_expr(leaf: Leaf, scaling: Scaling) -> str:
    """The expression that makes ``leaf`` in ``get_inputs()``."""
    dims = [scaling.dim(leaf, p, v) for p, v in enumerate(leaf.shape)]
    base = list(dims)
    if leaf.layout == "expand":
        base = ["1" if p in leaf.expanded else s for p, s in enumerate(dims)]
    elif leaf.layout == "permute":
        base = [dims[p] for p in leaf.perm]
    elif leaf.layout == "slice":
        base = dims[:-1] + [f"2 * {dims[-1]}"]
    shape = _shape(leaf, scaling, base) if base else "()"
    dt = str(leaf.dtype)
    if leaf.role == "bool":
        expr = f"torch.rand({shape}) < {leaf.true_frac}"
    elif leaf.role == "float":
        if leaf.lo == leaf.hi:
            expr = f"torch.full({shape}, {leaf.lo!r}, dtype={dt})"
        else:
            expr = f"torch.empty({shape}, dtype={dt}).uniform_({leaf.lo!r}, {leaf.hi!r})"
        if leaf.sorted_last and leaf.layout == "contiguous":
            expr = f"{expr}.sort(dim=-1).values"
    elif leaf.role == "int":
        expr = f"torch.randint({int(leaf.lo)}, {int(leaf.hi) + 1}, {shape}, dtype={dt})"
    else:
        bound = scaling.value_expr(leaf.bound or 1)
        if leaf.unique_dim is not None and leaf.layout == "contiguous":
            if len(leaf.shape) == 1:
                expr = f"torch.randperm({bound})[:{dims[0]}].to({dt})"
            else:
                full = list(dims)
                full[leaf.unique_dim] = bound
                expr = (f"torch.rand({_shape(leaf, scaling, full)}).argsort(dim="
                        f"{leaf.unique_dim}).narrow({leaf.unique_dim}, 0, "
                        f"{dims[leaf.unique_dim]}).to({dt})")
        else:
            expr = f"torch.randint(0, {bound}, {shape}, dtype={dt})"
    if leaf.layout == "expand":
        expr = f"({expr}).expand{_shape(leaf, scaling)}"
    elif leaf.layout == "permute":
        inverse = [leaf.perm.index(p) for p in range(len(leaf.perm))]
        expr = f"({expr}).permute({', '.join(map(str, inverse))})"
    elif leaf.layout == "slice":
        expr = f"({expr})[..., ::2]"
    return expr


def render(d: Described, *, callee: str, method: bool, scaling: Scaling, docstring: str
           ) -> str:
    """The whole problem file."""
    params = ", ".join(leaf.name for leaf in d.leaves)
    call = call_expr(d, callee, method, scaling)
    lines = [f'"""{docstring}\n"""', "", "import torch", "import torch.nn as nn", "", ""]
    lines += [f"{name} = {value}" for name, value in scaling.constants.items()]
    if scaling.constants:
        lines += ["", ""]
    lines += [
        "class Model(nn.Module):",
        "    def __init__(self):",
        "        super().__init__()",
        "",
        f"    def forward(self, {params}):" if params else "    def forward(self):",
        f"        return {call}",
        "", "",
        "def get_inputs():",
    ]
    lines += [f"    {leaf.name} = {make_expr(leaf, scaling)}" for leaf in d.leaves]
    lines += [f"    return [{params}]", "", "", "def get_init_inputs():", "    return []", ""]
    return "\n".join(lines)


def exec_source(source: str, filename: str = "<aten problem>") -> dict[str, Any]:
    """Run a rendered problem's module body; return its namespace."""
    namespace: dict[str, Any] = {"__name__": "kernelevolve_aten_problem"}
    exec(compile(source, filename, "exec"), namespace)
    return namespace


def forward_on(namespace: dict[str, Any], tensors: list[torch.Tensor]) -> Any:
    model: Callable[..., Any] = namespace["Model"]()
    return model(*tensors)
