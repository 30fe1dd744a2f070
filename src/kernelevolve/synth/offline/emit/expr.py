"""Triton code for the elementwise ops of the DAG, computed in fp32 registers.

Only functions that exist in Triton 3.4 through 3.7 are used (``tl.exp``, ``tl.log``, ``tl.sqrt``,
``tl.rsqrt``, ``tl.math.erf``, ``tl.sin``, ``tl.cos``, ``tl.abs``, ``tl.maximum``, ``tl.minimum``,
``tl.where``); tanh is built from ``tl.exp``. Transcendentals always see fp32 values (MTIA's
special-function engine needs them).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from ..frontend.ir import Node
from ..plan import Unsupported

SQRT1_2 = 0.7071067811865476
SQRT2_PI = 0.7978845608028654  # sqrt(2 / pi), the tanh-GELU constant
# tl.maximum / tl.minimum return the number where one side is NaN; torch's relu, clamp,
# maximum and minimum return NaN (a NaN input or product must reach the output as in the
# reference)
NAN = ", propagate_nan=tl.PropagateNan.ALL"

# The reductions' combines and final reductions in a generated kernel: max and min keep NaN as
# torch's amax/amin/max pooling do (tl.max and tl.min, like fmax, drop it). ``nan_helpers``
# writes the two @triton.jit combine functions a kernel's text calls (module_source adds them).
NAN_HELPERS = {
    "max_nan": "@triton.jit\ndef max_nan(a, b):\n    # a NaN wins, as in torch's max (tl.maximum's "
               "default, like fmax, drops it)\n    return tl.maximum(a, b" + NAN + ")",
    "min_nan": "@triton.jit\ndef min_nan(a, b):\n    # a NaN wins, as in torch's min\n"
               "    return tl.minimum(a, b" + NAN + ")",
}
COMBINE = {"sum": "{a} + {v}", "max": "max_nan({a}, {v})", "min": "min_nan({a}, {v})"}


def reduce_call(kind: str, x: str, axis: str, keep_dims: bool = False) -> str:
    """The final reduction of ``x`` along ``axis`` (a sum, or a max/min that keeps NaN)."""
    keep = ", keep_dims=True" if keep_dims else ""
    if kind == "sum":
        return f"tl.sum({x}, axis={axis}{keep})"
    return f"tl.reduce({x}, {axis}, {kind}_nan{keep})"


def nan_helpers(text: str) -> list[str]:
    """The NaN-keeping combine functions ``text`` calls."""
    return [src for name, src in NAN_HELPERS.items() if re.search(rf"\b{name}\(|[ ,]{name}[,)]",
                                                                   text)]


def literal(value: float) -> str:
    if math.isinf(value):
        return 'float("inf")' if value > 0 else '-float("inf")'
    text = repr(float(value))
    return f"({text})" if value < 0 else text


def scalar_arg_name(attr: str) -> str:
    """``self.norm.eps`` -> ``norm_eps``: the kernel argument that carries it."""
    name = attr.removeprefix("self").strip(".").replace(".", "_").replace("[", "_").replace(
        "]", "")
    return name if name.isidentifier() else "s_" + "".join(c if c.isalnum() else "_" for c in name)


def _tanh(y: str) -> str:
    # 2 / (1 + exp(-2y)) - 1: saturates to +-1 without inf/inf for large |y|.
    return f"(2.0 / (1.0 + tl.exp(-2.0 * {y})) - 1.0)"


def _pow(a: str, e: float, tmp: Callable[[str], str]) -> str:
    if e == int(e) and abs(e) <= 8:
        n = int(abs(e))
        if n == 0:
            return f"({a} * 0.0 + 1.0)"
        prod = " * ".join([a] * n)
        return prod if e > 0 else f"1.0 / ({prod})"
    if e == 0.5:
        return f"tl.sqrt({a})"
    if e == -0.5:
        return f"tl.rsqrt({a})"
    if e == int(e):  # a large integer power of a possibly negative base
        mag = tmp(f"tl.exp({literal(e)} * tl.log(tl.abs({a})))")
        return f"tl.where({a} < 0.0, -{mag}, {mag})" if int(e) % 2 else mag
    return f"tl.exp({literal(e)} * tl.log({a}))"


class ExprWriter:
    """Emits one statement per DAG node into ``lines`` (so shared subexpressions are computed
    once) and returns the name holding each node's value.

    ``special(node)`` renders the nodes that depend on the template (loads, reductions, the
    matmul accumulator); it returns None for ordinary elementwise nodes.
    """

    def __init__(self, lines: list[str], indent: str, special: Callable[[Node], str | None],
                 scalar_names: dict[str, str], prefix: str = "t") -> None:
        self.lines = lines
        self.indent = indent
        self.special = special
        self.scalar_names = scalar_names
        self.names: dict[int, str] = {}
        self.prefix = prefix
        self._count = 0

    def tmp(self, expr: str) -> str:
        name = f"{self.prefix}{self._count}"
        self._count += 1
        self.lines.append(f"{self.indent}{name} = {expr}")
        return name

    def bind(self, node: Node, name: str) -> None:
        self.names[id(node)] = name

    def emit(self, node: Node) -> str:
        for n in node.walk(stop=self.names.keys()):
            if id(n) in self.names:
                continue
            if n.op == "const":
                assert n.scalar is not None
                attr = n.scalar.attr
                self.names[id(n)] = (self.scalar_names[attr] if attr is not None
                                     else literal(n.scalar.value))
                continue
            special = self.special(n)
            if special is not None:
                self.names[id(n)] = special
                continue
            self.names[id(n)] = self.tmp(self.render(n))
        return self.names[id(node)]

    def render(self, n: Node) -> str:
        a = [self.names[id(x)] for x in n.args]
        op = n.op
        simple = {
            "add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "div": "{0} / {1}",
            "neg": "-{0}", "abs": "tl.abs({0})", "relu": f"tl.maximum({{0}}, 0.0{NAN})",
            "exp": "tl.exp({0})", "log": "tl.log({0})", "sqrt": "tl.sqrt({0})",
            "rsqrt": "tl.rsqrt({0})", "sin": "tl.sin({0})", "cos": "tl.cos({0})",
            "erf": "tl.math.erf({0})", "reciprocal": "1.0 / {0}",
            "log1p": "tl.log(1.0 + {0})", "expm1": "tl.exp({0}) - 1.0",
            "sigmoid": "1.0 / (1.0 + tl.exp(-{0}))", "silu": "{0} / (1.0 + tl.exp(-{0}))",
            "maximum": f"tl.maximum({{0}}, {{1}}{NAN})", "minimum": f"tl.minimum({{0}}, {{1}}{NAN})",
            "gt": "{0} > {1}", "lt": "{0} < {1}", "ge": "{0} >= {1}", "le": "{0} <= {1}",
            "eq": "{0} == {1}", "ne": "{0} != {1}", "where": "tl.where({0}, {1}, {2})",
            "sign": "tl.where({0} > 0.0, 1.0, tl.where({0} < 0.0, -1.0, 0.0))",
            "hardsigmoid": f"tl.minimum(tl.maximum({{0}} / 6.0 + 0.5, 0.0{NAN}), 1.0{NAN})",
            "hardswish": f"{{0}} * tl.minimum(tl.maximum({{0}} + 3.0, 0.0{NAN}), 6.0{NAN}) / 6.0",
            "leaky_relu": "tl.where({0} > 0.0, {0}, {0} * {1})",
            "elu": "tl.where({0} > 0.0, {0} * {2}, (tl.exp({0} * {3}) - 1.0) * {1} * {2})",
            "softplus": "tl.where({0} * {1} > {2}, {0}, tl.log(1.0 + tl.exp({0} * {1})) / {1})",
            "expand": "{0}",
        }
        if op in simple:
            return simple[op].format(*a)
        if op == "tanh":
            return _tanh(a[0])
        if op == "gelu":
            if n.attrs[0] == "tanh":
                inner = self.tmp(f"{SQRT2_PI} * ({a[0]} + 0.044715 * {a[0]} * {a[0]} * {a[0]})")
                return f"0.5 * {a[0]} * (1.0 + {_tanh(inner)})"
            return f"0.5 * {a[0]} * (1.0 + tl.math.erf({a[0]} * {SQRT1_2}))"
        if op == "mish":
            sp = self.tmp(f"tl.where({a[0]} > 20.0, {a[0]}, tl.log(1.0 + tl.exp({a[0]})))")
            return f"{a[0]} * {_tanh(sp)}"
        if op == "pow":
            return _pow(a[0], float(n.attrs[0]), self.tmp)
        if op == "rpow":
            return f"tl.exp({a[0]} * {literal(math.log(float(n.attrs[0])))})"
        if op == "cast":
            target = n.attrs[0]
            if target == "float32":
                return a[0]
            return f"{a[0]}.to(tl.{target}).to(tl.float32)"
        raise Unsupported(f"the {op} node has no Triton rendering in this template")
