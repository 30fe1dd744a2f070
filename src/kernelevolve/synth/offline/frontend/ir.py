"""The synthesizer's intermediate form: a DAG of tensor expressions lowered from the aten graph.

Leaves are operands (tensors the kernel loads, each named by a Python expression valid inside
``ModelNew.forward``) and constants. Composite aten ops (softmax, layer norm, vector norms,
variance) are expanded into elementwise ops and ``reduce`` nodes, so one row compiler covers
them all. A matmul or an allowed library op becomes one ``gemm`` / ``library`` node whose result
the templates treat as an input of the fused epilogue.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch

from .trace import Scalar

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@dataclass(frozen=True, eq=False)
class Operand:
    """A tensor a kernel reads. ``expr`` evaluates to it inside ``ModelNew.forward``; ``chunk``
    is ``(index, count)`` when it is one of ``count`` equal pieces of ``expr``'s last dim."""

    expr: str
    label: str
    shape: tuple[int, ...]
    dtype: torch.dtype
    chunk: tuple[int, int] | None = None


@dataclass(eq=False)
class Node:
    """One value of the expression DAG. ``shape``/``dtype`` are the traced ones."""

    op: str
    args: tuple[Node, ...] = ()
    attrs: tuple[Any, ...] = ()
    shape: tuple[int, ...] = ()
    dtype: torch.dtype = torch.float32
    operand: Operand | None = None  # op == "load"
    scalar: Scalar | None = None  # op == "const"
    spec: Any = None  # op == "gemm" / "library": the template-specific description

    def walk(self, stop: Collection[int] = ()) -> list[Node]:
        """Every node this one depends on (itself included), dependencies first; nodes whose id
        is in ``stop`` are listed but not descended into."""
        seen: set[int] = set()
        order: list[Node] = []
        stack: list[tuple[Node, bool]] = [(self, False)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.append((node, True))
            if id(node) not in stop:
                stack.extend((a, False) for a in reversed(node.args) if id(a) not in seen)
        return order


def const(value: float, attr: str | None = None) -> Node:
    return Node("const", scalar=Scalar(float(value), attr), shape=())


def broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(torch.broadcast_shapes(*shapes))


def ew(op: str, *args: Node, attrs: tuple[Any, ...] = (), dtype: torch.dtype | None = None
       ) -> Node:
    """An elementwise node; its shape is the broadcast of its arguments'."""
    shape = broadcast(*(a.shape for a in args)) if args else ()
    tensor_args = [a for a in args if a.op != "const"]
    if dtype is None:
        dtype = tensor_args[0].dtype if tensor_args else torch.float32
    return Node(op, tuple(args), attrs, shape, dtype)


def reduce(kind: str, x: Node, dims: tuple[int, ...], keepdim: bool) -> Node:
    shape = tuple(1 if d in dims else s for d, s in enumerate(x.shape)) if keepdim else tuple(
        s for d, s in enumerate(x.shape) if d not in dims)
    return Node("reduce", (x,), (kind, dims, keepdim), shape, x.dtype)


def count(x: Node, dims: tuple[int, ...], correction: float = 0.0) -> Node:
    """The number of reduced elements (minus a variance correction), as a float."""
    return Node("count", (), (dims, float(correction)), (), torch.float32)


class ConvShape(NamedTuple):
    """A convolution at the traced sizes, as its kernel choice and defaults see it."""

    # "depthwise" (one input channel per group), "pointwise" (1x1, stride 1, no padding) or
    # "gemm" (the implicit GEMM, or the FMA kernel for a short reduction)
    kind: str
    layout: int  # the CHANNELS_LAST it runs best with (conv.x_layout)
    c_in_g: int  # input channels per group
    # its reduction (a transposed one's longest phase's): input channels per group x taps
    k: int
    # a standard convolution with one group (the im2col GEMM takes it)
    dense: bool = False
    transposed: bool = False


@dataclass
class Lowered:
    """The lowered graph: its single output and the structural nodes the templates dispatch on."""

    output: Node
    gemms: list[Node] = field(default_factory=list)
    libraries: list[Node] = field(default_factory=list)
    # of those library results, the convolutions the template writes itself (``conv_nd``):
    # what chooses their kernels and defaults (conv.ConvShape)
    own_convs: list[ConvShape] = field(default_factory=list)

    @property
    def nodes(self) -> list[Node]:
        return self.output.walk()

    @property
    def reduces(self) -> list[Node]:
        return [n for n in self.nodes if n.op == "reduce"]

    @property
    def operands(self) -> list[Operand]:
        out: list[Operand] = []
        for n in self.nodes:
            if n.op == "load" and n.operand is not None and n.operand not in out:
                out.append(n.operand)
        return out

    @property
    def scalars(self) -> list[Scalar]:
        """Constants the model holds as attributes (kernel scalar arguments), without repeats."""
        out: list[Scalar] = []
        for n in self.nodes:
            s = n.scalar
            if s is not None and s.attr is not None and all(o.attr != s.attr for o in out):
                out.append(s)
        return out
