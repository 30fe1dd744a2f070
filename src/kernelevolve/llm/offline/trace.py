"""Tracing a problem's ``Model`` into an aten-level torch.fx graph.

``make_fx`` records what the forward dispatches, so nn.Module calls, functional calls and Tensor
methods all arrive as the same aten ops (``nn.LayerNorm``, ``F.layer_norm`` and ``x.layer_norm``
are all ``native_layer_norm``). Parameters and buffers are traced as placeholders (through
``functional_call``), so each keeps its state_dict name.

Float attributes of the model (``self.scale = scale``) are traced twice: once with their values
and once with marker values. A constant in the graph that equals a marker comes from that
attribute, so the candidate reads ``self.scale`` at call time instead of hard-wiring the value.
"""

from __future__ import annotations

import ast
import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.func import functional_call
from torch.fx.experimental.proxy_tensor import make_fx

from kernelevolve.errors import ProblemError
from kernelevolve.problem import Problem, call_factory

from .plan import Unsupported

# Inputs and parameters above this many elements are traced on the meta device only.
_REAL_TRACE_ELEMENTS = 1 << 16
_MARKER_BASE = 7.389056098930651  # e**2: not a value a problem is likely to hold
# Names a candidate module defines or imports: forward arguments must not shadow them.
_RESERVED = {"self", "torch", "triton", "tl", "nn", "F", "math", "out", "grid", "ModelNew"}


@dataclass(frozen=True)
class Scalar:
    """A Python number in the graph; ``attr`` is ``self.<path>`` when the model holds it."""

    value: float
    attr: str | None = None


@dataclass(frozen=True)
class Placeholder:
    """A graph input: a forward argument (``index`` into get_inputs) or a parameter/buffer."""

    kind: str  # "input" | "param"
    name: str  # forward argument name, or the state_dict name ("norm.weight")
    index: int

    @property
    def expr(self) -> str:
        """The Python expression that names it inside ``ModelNew.forward``."""
        return self.name if self.kind == "input" else self_expr(self.name)


def self_expr(path: str) -> str:
    """``norm.weight`` -> ``self.norm.weight``; ``layers.0.bias`` -> ``self.layers[0].bias``."""
    return "self" + "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in path.split("."))


@dataclass
class Traced:
    """The traced graph and what its placeholders and constants stand for."""

    graph: torch.fx.Graph
    model: torch.nn.Module
    placeholders: dict[str, Placeholder]
    forward_args: list[str]
    scalars: dict[tuple[str, tuple[Any, ...]], str] = field(default_factory=dict)

    def scalar(self, node: torch.fx.Node, path: tuple[Any, ...], value: Any,
               runtime: bool = True) -> Scalar:
        """The number at ``path`` in ``node``'s arguments (an int index or a kwarg name, then
        list indices). ``runtime=False`` forces the traced literal (exponents, structural
        values)."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise Unsupported(f"{_op(node)} takes a non-numeric argument {value!r} where a number "
                              f"was expected")
        if not math.isfinite(float(value)) and value not in (float("inf"), float("-inf")):
            raise Unsupported(f"{_op(node)} takes a NaN constant")
        attr = self.scalars.get((node.name, path)) if runtime else None
        return Scalar(float(value), attr)

    def submodule_of(self, param: str) -> torch.nn.Module | None:
        """The module that owns the parameter ``param`` (``conv.weight`` -> ``self.conv``)."""
        path = param.rpartition(".")[0]
        try:
            return self.model.get_submodule(path) if path else self.model
        except AttributeError:
            return None


def _op(node: torch.fx.Node) -> str:
    return str(getattr(node.target, "__name__", node.target)).split(".")[0]


def forward_arg_names(problem: Problem, n_inputs: int) -> list[str]:
    """The argument names of ``Model.forward`` when they are plain positional names, else
    ``in0, in1, ...``."""
    generic = [f"in{i}" for i in range(n_inputs)]
    tree = ast.parse(problem.source)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "forward":
                    args = item.args
                    names = [a.arg for a in args.posonlyargs + args.args][1:]
                    if args.vararg or args.kwonlyargs or len(names) < n_inputs:
                        return generic
                    names = names[:n_inputs]
                    clash = [n for n in names if n in _RESERVED or n.startswith(("_", "fused_"))
                             or n.isupper()]
                    return generic if clash else names
    return generic


def _float_attrs(model: torch.nn.Module) -> list[tuple[torch.nn.Module, str, str]]:
    """(module, attribute, dotted path) of every plain float attribute of the model's modules."""
    found = []
    for prefix, module in model.named_modules():
        for name, value in vars(module).items():
            if type(value) is float and not name.startswith("_"):
                found.append((module, name, f"{prefix}.{name}" if prefix else name))
    return found


@contextlib.contextmanager
def _markers(attrs: list[tuple[torch.nn.Module, str, str]]) -> Iterator[dict[float, str]]:
    saved = [getattr(m, a) for m, a, _ in attrs]
    marks = {}
    try:
        for k, (module, name, path) in enumerate(attrs):
            value = _MARKER_BASE + 0.0625 * (k + 1)
            setattr(module, name, value)
            marks[value] = path
        yield marks
    finally:
        for (module, name, _), value in zip(attrs, saved, strict=True):
            setattr(module, name, value)


def _make_graph(model: torch.nn.Module, inputs: list[torch.Tensor]) -> torch.fx.GraphModule:
    names = [n for n, _ in model.named_parameters()] + [n for n, _ in model.named_buffers()]
    state = {**dict(model.named_parameters()), **dict(model.named_buffers())}

    def forward(*flat: torch.Tensor) -> Any:
        params = dict(zip(names, flat[:len(names)], strict=True))
        return functional_call(model, params, tuple(flat[len(names):]))

    with torch.no_grad():
        return make_fx(forward)(*[state[n] for n in names], *inputs)


def _signature(gm: torch.fx.GraphModule) -> list[tuple[str, str, tuple[int, ...] | None]]:
    out = []
    for node in gm.graph.nodes:
        val = node.meta.get("val")
        shape = tuple(val.shape) if isinstance(val, torch.Tensor) else None
        out.append((node.op, str(node.target), shape))
    return out


def _walk_numbers(value: Any, path: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _walk_numbers(item, (*path, i))
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield path, value


def _build(problem: Problem, meta: bool) -> tuple[torch.nn.Module, list[Any]]:
    sizes = None if meta else problem.shrink_sizes(_REAL_TRACE_ELEMENTS)
    module = problem.module(sizes)
    ctx = torch.device("meta") if meta else contextlib.nullcontext()
    with ctx:
        init = call_factory(module, "get_init_inputs", problem.path)
        torch.manual_seed(0)
        model = module.Model(*init)
        inputs = call_factory(module, "get_inputs", problem.path)
    return model, inputs


def trace(problem: Problem) -> Traced:
    """Trace ``problem``'s Model at its own sizes on the meta device (no memory), or, when an op
    has no meta kernel, with real tensors at shrunk sizes. Raises Unsupported when fx cannot."""
    errors = []
    for meta in (True, False):
        try:
            model, inputs = _build(problem, meta)
            if not all(isinstance(t, torch.Tensor) for t in inputs):
                raise Unsupported("get_inputs() returns non-tensor values; the templates take "
                                  "tensor inputs only")
            gm = _make_graph(model, inputs)
            attrs = _float_attrs(model)
            with _markers(attrs) as marks:
                marked = _make_graph(model, inputs) if attrs else gm
            break
        except Unsupported:
            raise
        except (ProblemError, RuntimeError, NotImplementedError, TypeError, ValueError,
                IndexError, AttributeError) as exc:
            errors.append(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    else:
        raise Unsupported(f"torch.fx could not trace Model.forward ({errors[-1]}); "
                          f"data-dependent control flow or shapes need an LLM")
    n_params = len(list(model.named_parameters())) + len(list(model.named_buffers()))
    param_names = [n for n, _ in model.named_parameters()] + [n for n, _ in model.named_buffers()]
    args = forward_arg_names(problem, len(inputs))
    placeholders: dict[str, Placeholder] = {}
    for i, node in enumerate(n for n in gm.graph.nodes if n.op == "placeholder"):
        placeholders[node.name] = (Placeholder("param", param_names[i], i) if i < n_params
                                   else Placeholder("input", args[i - n_params], i - n_params))
    traced = Traced(gm.graph, model, placeholders, args)
    if attrs and _signature(gm) == _signature(marked):
        for node, twin in zip(gm.graph.nodes, marked.graph.nodes, strict=True):
            if node.op != "call_function":
                continue
            # A value equal to the op's default is left out of the call (leaky_relu's 0.01), so
            # the marked twin may carry more arguments: those positions hold no attribute.
            pairs = [((i,), a, b)
                     for i, (a, b) in enumerate(zip(node.args, twin.args, strict=False))]
            pairs += [((k,), node.kwargs[k], twin.kwargs.get(k)) for k in node.kwargs]
            for path, real, mark in pairs:
                marked_numbers = dict(_walk_numbers(mark, path))
                for sub, value in _walk_numbers(real, path):
                    attr = marks.get(marked_numbers.get(sub))  # type: ignore[arg-type]
                    if attr is not None and float(value) == float(getattr(
                            traced.model.get_submodule(attr.rpartition(".")[0]),
                            attr.rpartition(".")[2])):
                        traced.scalars[(node.name, sub)] = self_expr(attr)
    return traced
