"""Lowering the traced aten graph into the expression DAG of ir.py: arguments, leaves,
elementwise ops and views. compound.py adds reductions, composite row ops, matmuls and library
ops, and the ``lower()`` entry point."""

from __future__ import annotations

import math
import operator
import re
from dataclasses import replace
from typing import Any

import torch

from ..plan import Unsupported
from .ir import FLOAT_DTYPES, ConvShape, Node, Operand, const, ew
from .trace import Traced

UNARY = {
    "abs", "neg", "relu", "sigmoid", "silu", "tanh", "exp", "log", "sqrt", "rsqrt", "sin", "cos",
    "erf", "reciprocal", "log1p", "expm1", "sign", "hardsigmoid", "hardswish", "mish",
}
BINARY = {"add", "sub", "rsub", "mul", "div", "maximum", "minimum", "gt", "lt", "ge", "le", "eq",
          "ne"}
PARAMETRIC = {"gelu", "leaky_relu", "elu", "softplus", "hardtanh", "clamp", "clamp_min",
              "clamp_max", "pow", "threshold", "where", "scalar_tensor", "_to_copy", "xlogy",
              "triu", "tril"}
IDENTITY = {"detach", "alias", "clone", "lift_fresh_copy", "contiguous"}
VIEWS = {"view", "_unsafe_view", "reshape", "expand", "unsqueeze", "squeeze", "t", "transpose",
         "permute", "split", "split_with_sizes", "slice"}
REDUCTIONS = {"sum", "mean", "amax", "amin", "max", "min", "linalg_vector_norm", "var", "std"}
ROW_OPS = {"_softmax", "_log_softmax", "native_layer_norm", "smooth_l1_loss"}
GEMMS = {"mm", "addmm", "bmm"}
LIBRARY = {"convolution"}
KNOWN = UNARY | BINARY | PARAMETRIC | IDENTITY | VIEWS | REDUCTIONS | ROW_OPS | GEMMS | LIBRARY


def args_of(node: torch.fx.Node) -> list[Any]:
    return list(node.args)


def kwargs_of(node: torch.fx.Node) -> dict[str, Any]:
    return dict(node.kwargs)


def op_name(node: torch.fx.Node) -> str:
    if node.target is operator.getitem:
        return "getitem"
    packet = getattr(node.target, "overloadpacket", None)
    return str(getattr(packet, "__name__", node.target))


def _label(expr: str) -> str:
    base = expr.split("(")[0].split(".view")[0]
    base = base.removeprefix("self.").replace("self[", "")
    return re.sub(r"\W+", "_", base).strip("_") or "t"


def normal_dims(dims: Any, rank: int) -> tuple[int, ...]:
    if dims is None or dims == [] or dims == ():
        return tuple(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    return tuple(sorted(d % rank for d in dims)) if rank else ()


def val_shape(node: torch.fx.Node) -> tuple[int, ...]:
    val = node.meta.get("val")
    return tuple(val.shape) if isinstance(val, torch.Tensor) else ()


def val_dtype(node: torch.fx.Node) -> torch.dtype:
    val = node.meta.get("val")
    return val.dtype if isinstance(val, torch.Tensor) else torch.float32


def leaf_view(x: Node, out: tuple[int, ...]) -> Node:
    """A view of an operand, replayed in the launcher: size-1 dims added or removed, or leading
    dims flattened."""
    assert x.operand is not None
    src, shape = x.operand, x.shape
    if src.chunk is not None or src.expr.startswith("torch."):
        raise Unsupported(f"a view {list(shape)} -> {list(out)} of a split input or of a "
                          f"library op's result, which no template covers")
    if [s for s in shape if s != 1] == [s for s in out if s != 1]:
        non_one = [s for s in out if s != 1]
        if len(non_one) <= 1:
            dims = ", ".join("1" if s == 1 else "-1" for s in out) or ""
            suffix = f".reshape({dims})" if out else ".reshape(())"
        else:
            it = iter(i for i, s in enumerate(shape) if s != 1)
            dims = ", ".join("1" if s == 1 else f"{src.expr}.shape[{next(it)}]" for s in out)
            suffix = f".reshape({dims})"
    elif len(out) < len(shape) and out[1:] == shape[len(shape) - len(out) + 1:] and (
            out[0] == math.prod(shape[:len(shape) - len(out) + 1])):
        suffix = f".flatten(0, {-len(out)})"
    else:
        raise Unsupported(f"a view {list(shape)} -> {list(out)} of {src.expr}, which no template "
                          f"covers")
    return replace_operand(x, src.expr + suffix, out)


_CHAIN_OPS = {"view", "_unsafe_view", "reshape", "unsqueeze", "squeeze", "permute", "transpose",
              "t", "expand"}
Atom = tuple[tuple[int, ...], int]  # (order key, size): a source dim or a piece of one


def view_chain(node: torch.fx.Node) -> tuple[Any, list[list[Atom]]] | None:
    """The start of the chain of view ops ending at ``node`` (a view or reshape) that permutes
    dims on the way (``einsum`` writes such chains), and what each output dim holds of the start's
    dims: a list of atoms (a source dim, or a row-major piece of one, in order). None when the
    chain has no permute, or a step is not a view (an expand that broadcasts, a split of a dim
    that does not divide)."""
    chain: list[torch.fx.Node] = []
    cur: Any = node
    while (isinstance(cur, torch.fx.Node) and cur.op == "call_function"
           and op_name(cur) in _CHAIN_OPS):
        chain.insert(0, cur)
        cur = cur.args[0]
    if not isinstance(cur, torch.fx.Node) or not any(
            op_name(n) in {"permute", "transpose", "t"} for n in chain):
        return None
    dims: list[list[Atom]] = [[((d,), s)] if s != 1 else [] for d, s in enumerate(val_shape(cur))]
    for step in chain:
        name, out = op_name(step), val_shape(step)
        if name == "expand":
            if out != tuple(math.prod(a[1] for a in d) for d in dims):
                return None
        elif name == "permute":
            perm: Any = step.args[1]
            dims = [dims[int(d) % len(dims)] for d in perm]
        elif name in {"transpose", "t"}:
            a, b = ((0, 1) if name == "t" else
                    (int(step.args[1]) % len(dims), int(step.args[2]) % len(dims)))  # type: ignore[arg-type]
            dims[a], dims[b] = dims[b], dims[a]
        else:
            regrouped = _regroup([a for d in dims for a in d], out)
            if regrouped is None:
                return None
            dims = regrouped
    return cur, dims


def _regroup(atoms: list[Atom], out: tuple[int, ...]) -> list[list[Atom]] | None:
    """Row-major atoms re-cut into dims of sizes ``out``, splitting an atom where a dim needs part
    of it (its outer piece first); None when a size does not divide."""
    pending = list(atoms)
    dims: list[list[Atom]] = []
    for size in out:
        dim: list[Atom] = []
        need = size
        while need > 1:
            if not pending:
                return None
            key, n = pending.pop(0)
            if n <= need:
                if need % n:
                    return None
                dim.append((key, n))
                need //= n
            else:
                if n % need:
                    return None
                dim.append(((*key, 0), need))
                pending.insert(0, ((*key, 1), n // need))
                need = 1
        dims.append(dim)
    return dims if not pending else None


def in_order(dims: list[list[Atom]]) -> bool:
    """Whether the dims read the chain's start in its own row-major order (a plain reshape)."""
    keys = [key for d in dims for key, _ in d]
    return keys == sorted(keys)


def replace_operand(x: Node, expr: str, shape: tuple[int, ...]) -> Node:
    assert x.operand is not None
    operand = replace(x.operand, expr=expr, shape=shape)
    return Node("load", shape=shape, dtype=x.dtype, operand=operand)



def factor_difference(a: Node, b: Node, dtype: torch.dtype) -> Node | None:
    """``a - b`` as ``x * (y - z)`` where ``a = x * y`` and ``b = x * z`` share the factor
    ``x`` (``a`` may be xlogy's zero-guarded product): the difference is taken before any
    product is rounded, so two nearly equal products cost no accuracy. KL divergence is
    ``xlogy(t, t) - t * log(p)``; on targets shifted by 4 the fp32 products cancel to 1e-5 of
    their size and the contracted form (an FMA) was off by 2.4x its value on the H200. None
    where no factor is shared."""
    guard = None
    if (a.op == "where" and a.args[1].op == "const" and a.args[1].scalar is not None
            and a.args[1].scalar.value == 0.0 and a.args[2].op == "mul"):
        guard, a = a.args[0], a.args[2]
    if a.op != "mul" or b.op != "mul":
        return None
    for i, x in enumerate(a.args):
        for j, x2 in enumerate(b.args):
            if x == x2 and x.op != "const":
                y, z = a.args[1 - i], b.args[1 - j]
                product = ew("mul", x, ew("sub", y, z, dtype=dtype), dtype=dtype)
                if guard is None:
                    return product
                # where the guard holds, xlogy's product is 0: what is left is -b
                return ew("where", guard, ew("sub", const(0.0), b, dtype=dtype), product,
                          dtype=dtype)
    return None

class BaseLowerer:
    """Lowers fx nodes one by one (memoised), refusing what no template covers."""

    def __init__(self, traced: Traced, allowed_ops: list[str]) -> None:
        self.traced = traced
        self.allowed = set(allowed_ops)
        self.env: dict[str, Any] = {}
        self.gemms: list[Node] = []
        self.libraries: list[Node] = []
        # the convolutions the template writes (not the library's), as their kernels see them
        self.own_convs: list[ConvShape] = []

    # -- arguments -------------------------------------------------------------------------
    def arg(self, node: torch.fx.Node, i: int | str, default: Any = None) -> Any:
        if isinstance(i, int):
            return node.args[i] if i < len(node.args) else default
        return node.kwargs.get(i, default)

    def value(self, node: torch.fx.Node, i: int | str, default: Any = None,
              runtime: bool = True) -> Node | None:
        """Argument ``i`` as a Node: a lowered tensor or a constant."""
        a = self.arg(node, i, default)
        if a is None:
            return None
        if isinstance(a, torch.fx.Node):
            v = self.lower(a)
            if not isinstance(v, Node):
                raise Unsupported(f"{op_name(node)} takes a tuple where a tensor was expected")
            return v
        return const(*self._scalar(node, i, a, runtime))

    def number(self, node: torch.fx.Node, i: int | str, default: Any) -> float:
        a = self.arg(node, i, default)
        if isinstance(a, torch.fx.Node) or a is None:
            raise Unsupported(f"{op_name(node)} takes a tensor where the templates need a number")
        return self.traced.scalar(node, (i,), a, runtime=False).value

    def _scalar(self, node: torch.fx.Node, i: int | str, a: Any, runtime: bool
                ) -> tuple[float, str | None]:
        s = self.traced.scalar(node, (i,), a, runtime)
        return s.value, s.attr

    # -- dispatch --------------------------------------------------------------------------
    def lower(self, node: torch.fx.Node) -> Any:
        if node.name in self.env:
            return self.env[node.name]
        if node.op == "placeholder":
            result: Any = self.leaf(node)
        elif node.op == "call_function":
            result = self.call(node)
        else:
            raise Unsupported(f"fx node {node.op} {node.target} is not an aten call")
        self.env[node.name] = result
        return result

    def leaf(self, node: torch.fx.Node) -> Node:
        ph = self.traced.placeholders[node.name]
        dtype = val_dtype(node)
        if dtype not in FLOAT_DTYPES:
            raise Unsupported(f"{ph.name} is a {str(dtype).removeprefix('torch.')} tensor; the "
                              f"templates compute on fp32/fp16/bf16 tensors")
        shape = val_shape(node)
        return Node("load", shape=shape, dtype=dtype,
                    operand=Operand(ph.expr, _label(ph.expr), shape, dtype))

    def call(self, node: torch.fx.Node) -> Any:
        name = op_name(node)
        if name == "getitem":
            return self.getitem(node)
        if name in IDENTITY:
            return self.lower(node.args[0])  # type: ignore[arg-type]
        if name in UNARY:
            return self.unary(node, name)
        if name in BINARY:
            return self.binary(node, name)
        handler = getattr(self, "op_" + name.lstrip("_"), None)
        if handler is None:
            raise Unsupported(f"fx trace found aten op '{name}' which no template covers")
        return handler(node)

    def getitem(self, node: torch.fx.Node) -> Any:
        parent = self.lower(node.args[0])  # type: ignore[arg-type]
        index = node.args[1]
        if not isinstance(parent, tuple) or not isinstance(index, int):
            raise Unsupported("indexing a tensor with getitem, which no template covers")
        item = parent[index]
        if isinstance(item, str):
            raise Unsupported(item)
        return item

    # -- elementwise -----------------------------------------------------------------------
    def unary(self, node: torch.fx.Node, name: str) -> Node:
        x = self.value(node, 0)
        assert x is not None
        return ew(name, x)

    def binary(self, node: torch.fx.Node, name: str) -> Node:
        a, b = self.value(node, 0), self.value(node, 1)
        assert a is not None and b is not None
        if name in {"gt", "lt", "ge", "le", "eq", "ne"}:
            return ew(name, a, b, dtype=torch.bool)
        if name in {"div"} and self.arg(node, "rounding_mode") is not None:
            raise Unsupported("division with a rounding mode, which no template covers")
        alpha = self.arg(node, "alpha")
        if alpha is not None and alpha != 1:
            b = ew("mul", b, const(*self._scalar(node, "alpha", alpha, True)))
        if name == "rsub":
            a, b, name = b, a, "sub"
        if name == "sub":
            factored = factor_difference(a, b, val_dtype(node))
            if factored is not None:
                return factored
        return ew(name, a, b, dtype=val_dtype(node))

    def op_gelu(self, node: torch.fx.Node) -> Node:
        x = self.value(node, 0)
        assert x is not None
        approximate = self.arg(node, "approximate", "none")
        return ew("gelu", x, attrs=(approximate,))

    def op_leaky_relu(self, node: torch.fx.Node) -> Node:
        return ew("leaky_relu", self._v(node, 0), self._v(node, 1, 0.01))

    def op_elu(self, node: torch.fx.Node) -> Node:
        return ew("elu", self._v(node, 0), self._v(node, 1, 1.0), self._v(node, 2, 1.0),
                  self._v(node, 3, 1.0))

    def op_softplus(self, node: torch.fx.Node) -> Node:
        return ew("softplus", self._v(node, 0), self._v(node, 1, 1.0), self._v(node, 2, 20.0))

    def op_threshold(self, node: torch.fx.Node) -> Node:
        x, th, value = self._v(node, 0), self._v(node, 1), self._v(node, 2)
        return ew("where", ew("gt", x, th, dtype=torch.bool), x, value, dtype=x.dtype)

    def op_hardtanh(self, node: torch.fx.Node) -> Node:
        x = self._v(node, 0)
        return ew("minimum", ew("maximum", x, self._v(node, 1, -1.0)), self._v(node, 2, 1.0))

    def op_clamp(self, node: torch.fx.Node) -> Node:
        x = self._v(node, 0)
        lo, hi = self.value(node, 1) or self.value(node, "min"), (
            self.value(node, 2) or self.value(node, "max"))
        if lo is not None:
            x = ew("maximum", x, lo)
        if hi is not None:
            x = ew("minimum", x, hi)
        return x

    def op_clamp_min(self, node: torch.fx.Node) -> Node:
        return ew("maximum", self._v(node, 0), self._v(node, 1))

    def op_clamp_max(self, node: torch.fx.Node) -> Node:
        return ew("minimum", self._v(node, 0), self._v(node, 1))

    def op_pow(self, node: torch.fx.Node) -> Node:
        base, exponent = self.arg(node, 0), self.arg(node, 1)
        if isinstance(base, torch.fx.Node) and not isinstance(exponent, torch.fx.Node):
            return ew("pow", self._v(node, 0), attrs=(self.number(node, 1, None),))
        if isinstance(exponent, torch.fx.Node) and not isinstance(base, torch.fx.Node):
            b = self.number(node, 0, None)
            if b <= 0:
                raise Unsupported("a power with a non-positive scalar base")
            return ew("rpow", self._v(node, 1), attrs=(b,))
        raise Unsupported("a power of two tensors, which no template covers")

    def op_triu(self, node: torch.fx.Node) -> Node:
        # Only the matmul epilogue renders it: it knows each element's row and column.
        return ew(op_name(node), self._v(node, 0), attrs=(int(self.arg(node, 1, 0) or 0),))

    op_tril = op_triu

    def op_xlogy(self, node: torch.fx.Node) -> Node:
        a, b = self._v(node, 0), self._v(node, 1)
        zero = ew("eq", a, const(0.0), dtype=torch.bool)
        return ew("where", zero, const(0.0), ew("mul", a, ew("log", b)), dtype=val_dtype(node))

    def op_where(self, node: torch.fx.Node) -> Node:
        c, a, b = self._v(node, 0), self._v(node, 1), self._v(node, 2)
        return ew("where", c, a, b, dtype=val_dtype(node))

    def op_scalar_tensor(self, node: torch.fx.Node) -> Node:
        return self._v(node, 0)

    def op_to_copy(self, node: torch.fx.Node) -> Node:
        x = self._v(node, 0)
        dtype = self.arg(node, "dtype")
        if dtype is None or dtype == x.dtype:
            return x
        if dtype not in FLOAT_DTYPES:
            raise Unsupported(f"a cast to {dtype}, which no template covers")
        return ew("cast", x, attrs=(str(dtype).removeprefix("torch."),), dtype=dtype)

    def _v(self, node: torch.fx.Node, i: int, default: Any = None) -> Node:
        keys = {0: "input", 1: "other"}
        v = self.value(node, i) if i < len(node.args) else None
        if v is None:
            schema = node.target._schema  # type: ignore[union-attr]
            names = [a.name for a in schema.arguments]
            if i < len(names) and names[i] in node.kwargs:
                v = self.value(node, names[i])
        if v is None and default is not None:
            v = const(default)
        if v is None:
            raise Unsupported(f"{op_name(node)} is missing its argument {keys.get(i, i)}")
        return v

    # -- views -----------------------------------------------------------------------------
    def view_to(self, x: Node, out: tuple[int, ...], node: torch.fx.Node) -> Node:
        if out == x.shape:
            return x
        if x.op == "load":
            return leaf_view(x, out)
        if x.op == "gemm" and x.spec.a_flatten and not x.spec.unflatten and (
                out == (*x.spec.a.shape[:-1], x.shape[-1])):
            unflat = Node("gemm", shape=out, dtype=x.dtype, spec=replace(x.spec, unflatten=True))
            self.gemms[self.gemms.index(x)] = unflat
            return unflat
        return Node("reshape", (x,), (), out, x.dtype)

    def op_view(self, node: torch.fx.Node) -> Node:
        collapsed = self.reshape_chain(node)
        if collapsed is not None:
            return collapsed
        return self.view_to(self._v(node, 0), val_shape(node), node)

    def reshape_chain(self, node: torch.fx.Node) -> Node | None:
        """A chain of views with permutes that, taken together, only reshapes its start (two
        permutes that cancel around a size-1 dim): the start viewed once. None otherwise."""
        found = view_chain(node)
        if found is None or not in_order(found[1]):
            return None
        start, dims = found
        x = self.lower(start)
        if not isinstance(x, Node):
            return None
        if x.op != "load":
            return self.view_to(x, val_shape(node), node) if x.op == "gemm" else None
        assert x.operand is not None
        if x.operand.chunk is not None or any(len(key) > 1 for d in dims for key, _ in d):
            return None  # a piece of a dim has no size expression
        expr = x.operand.expr
        sizes = [" * ".join(f"{expr}.shape[{key[0]}]" for key, _ in d) or "1" for d in dims]
        return replace_operand(x, f"{expr}.reshape({', '.join(sizes)})", val_shape(node))

    op_unsafe_view = op_reshape = op_unsqueeze = op_squeeze = op_view

    def op_expand(self, node: torch.fx.Node) -> Node:
        x = self._v(node, 0)
        if x.shape == val_shape(node):
            return x
        # Broadcasting is implicit in every template: a computed value is only marked.
        return Node("expand", (x,), (), val_shape(node), x.dtype)

    def _transposing(self, node: torch.fx.Node, suffix: str) -> Node:
        x = self._v(node, 0)
        if x.op != "load" or x.operand is None or x.operand.chunk is not None:
            raise Unsupported(f"{op_name(node)} of a computed tensor, which no template covers")
        return replace_operand(x, x.operand.expr + suffix, val_shape(node))

    def op_t(self, node: torch.fx.Node) -> Node:
        return self._transposing(node, ".t()")

    def op_transpose(self, node: torch.fx.Node) -> Node:
        rank = len(val_shape(node))
        args = args_of(node)
        d0, d1 = sorted((int(args[1]) % rank, int(args[2]) % rank))
        return self._transposing(node, f".transpose({d0 - rank}, {d1 - rank})")

    def op_permute(self, node: torch.fx.Node) -> Node:
        dims = [int(d) for d in args_of(node)[1]]
        return self._transposing(node, f".permute({', '.join(map(str, dims))})")

    def _chunks(self, node: torch.fx.Node, x: Node, dim: int, size: int) -> tuple[Node, ...]:
        if x.op != "load" or x.operand is None or x.operand.chunk is not None:
            raise Unsupported("a split of a computed tensor, which no template covers")
        rank = len(x.shape)
        if dim % rank != rank - 1:
            raise Unsupported("a split along a dim other than the last, which no template covers")
        total = x.shape[-1]
        if size <= 0 or total % size:
            raise Unsupported(f"a split of {total} into unequal pieces of {size}")
        n = total // size
        shape = (*x.shape[:-1], size)
        return tuple(Node("load", shape=shape, dtype=x.dtype,
                          operand=replace(x.operand, chunk=(k, n), shape=shape))
                     for k in range(n))

    def op_split(self, node: torch.fx.Node) -> tuple[Node, ...]:
        x = self._v(node, 0)
        dim, size = int(self.arg(node, 2, -1) or -1), int(args_of(node)[1])
        return self._chunks(node, x, dim, size)

    def op_split_with_sizes(self, node: torch.fx.Node) -> tuple[Node, ...]:
        sizes = [int(s) for s in args_of(node)[1]]
        if len(set(sizes)) != 1:
            raise Unsupported("a split into unequal pieces, which no template covers")
        return self._chunks(node, self._v(node, 0), int(self.arg(node, 2, -1) or -1), sizes[0])

    def op_slice(self, node: torch.fx.Node) -> Node:
        x = self._v(node, 0)
        rank = len(x.shape)
        dim = int(self.arg(node, 1, 0) or 0) % rank
        total = x.shape[dim]
        start = int(self.arg(node, 2, 0) or 0)
        end = int(self.arg(node, 3) if self.arg(node, 3) is not None else total)
        start, end = (start + total if start < 0 else start), (end + total if end < 0 else end)
        start, end = max(0, min(start, total)), max(0, min(end, total))
        step = int(self.arg(node, 4, 1) or 1)
        if (start, end, step) == (0, total, 1):
            return x
        length = end - start
        if step != 1 or length <= 0 or total % length or start % length:
            raise Unsupported("a slice that is not one of equal pieces of the last dim")
        return self._chunks(node, x, dim, length)[start // length]


def reachable_ops(traced: Traced) -> list[str]:
    """The aten op of every call the output depends on, one entry per call."""
    output = next(n for n in traced.graph.nodes if n.op == "output")
    seen: set[str] = set()
    names: list[str] = []
    stack = list(output.all_input_nodes)
    while stack:
        node = stack.pop()
        if node.name in seen:
            continue
        seen.add(node.name)
        stack.extend(node.all_input_nodes)
        if node.op == "call_function":
            names.append(op_name(node))
    return names


def unknown_ops(traced: Traced) -> list[str]:
    """aten ops the output depends on that no template covers."""
    return sorted({n for n in reachable_ops(traced) if n != "getitem" and n not in KNOWN})
