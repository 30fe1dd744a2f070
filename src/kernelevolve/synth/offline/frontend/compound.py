"""Lowering of reductions, composite row ops (softmax, layer norm, vector norms, variance),
matmuls and allowed library ops, and ``lower()``: the traced graph to one expression DAG."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ..families.conv.template import conv_shape, fma_call
from ..plan import Unsupported
from . import fxgraph
from .ir import FLOAT_DTYPES, Lowered, Node, Operand, const, count, ew, reduce
from .lower import (
    GEMMS,
    BaseLowerer,
    args_of,
    in_order,
    kwargs_of,
    leaf_view,
    normal_dims,
    op_name,
    reachable_ops,
    unknown_ops,
    val_dtype,
    val_shape,
    view_chain,
)
from .trace import Traced


@dataclass(frozen=True)
class GemmSpec:
    """``a @ b`` (+ ``bias``): ``a`` is [M, K] (or [..., K] flattened when ``a_flatten``),
    ``b`` is [K, N]; batched: [B, M, K] @ [B, K, N]. ``unflatten``: the result is viewed back
    to ``a``'s leading dims."""

    a: Operand
    b: Operand
    op: str
    batched: bool
    a_flatten: bool = False
    unflatten: bool = False
    bias: Node | None = None
    batch_one: bool = False  # a bmm of batch 1 taken as the flattened ``a`` times ``b``


class Lowerer(BaseLowerer):
    """BaseLowerer plus the ops that need a template of their own."""

    # -- reductions ------------------------------------------------------------------------
    def _reduction(self, node: torch.fx.Node, kind: str, mean: bool = False) -> Node:
        x = self._v(node, 0)
        rank = len(x.shape)
        dims = normal_dims(self.arg(node, 1, kwargs_of(node).get("dim")), rank)
        keep = bool(self.arg(node, 2) if len(node.args) > 2 else node.kwargs.get("keepdim", False))
        if node.kwargs.get("dtype") is not None:
            raise Unsupported(f"{op_name(node)} with a dtype argument")
        r = reduce(kind, x, dims, keep)
        return ew("div", r, count(x, dims)) if mean else r

    def op_sum(self, node: torch.fx.Node) -> Node:
        return self._reduction(node, "sum")

    def op_mean(self, node: torch.fx.Node) -> Node:
        return self._reduction(node, "sum", mean=True)

    def op_amax(self, node: torch.fx.Node) -> Node:
        return self._reduction(node, "max")

    def op_amin(self, node: torch.fx.Node) -> Node:
        return self._reduction(node, "min")

    def op_max(self, node: torch.fx.Node) -> Any:
        if len(node.args) < 2:
            return self._reduction(node, "max")
        return (self._reduction(node, "max"), "argmax indices (max(dim).indices), which no "
                                              "template covers")

    def op_min(self, node: torch.fx.Node) -> Any:
        if len(node.args) < 2:
            return self._reduction(node, "min")
        return (self._reduction(node, "min"), "argmin indices (min(dim).indices), which no "
                                              "template covers")

    def op_linalg_vector_norm(self, node: torch.fx.Node) -> Node:
        x = self._v(node, 0)
        order = self.number(node, 1, 2.0) if len(node.args) > 1 else float(
            kwargs_of(node).get("ord", 2.0))
        rank = len(x.shape)
        dims = normal_dims(self.arg(node, 2, kwargs_of(node).get("dim")), rank)
        keep = bool(self.arg(node, 3) if len(node.args) > 3 else node.kwargs.get("keepdim", False))
        if order == 2.0:
            return ew("sqrt", reduce("sum", ew("mul", x, x), dims, keep))
        if order == 1.0:
            return reduce("sum", ew("abs", x), dims, keep)
        if order == float("inf"):
            return reduce("max", ew("abs", x), dims, keep)
        raise Unsupported(f"a vector norm of order {order}, which no template covers")

    def op_smooth_l1_loss(self, node: torch.fx.Node) -> Node:
        p, t = self._v(node, 0), self._v(node, 1)
        reduction = int(self.arg(node, 2, self.arg(node, "reduction", 1)))
        beta = self.number(node, 3, 1.0) if len(node.args) > 3 else float(
            kwargs_of(node).get("beta", 1.0))
        d = ew("sub", p, t)
        ad = ew("abs", d)
        if beta == 0.0:
            loss = ad
        else:
            quad = ew("mul", ew("mul", d, d), const(0.5 / beta))
            loss = ew("where", ew("lt", ad, const(beta), dtype=torch.bool), quad,
                      ew("sub", ad, const(0.5 * beta)), dtype=d.dtype)
        dims = tuple(range(len(loss.shape)))
        if reduction == 0:
            return loss
        total = reduce("sum", loss, dims, False)
        return ew("div", total, count(loss, dims)) if reduction == 1 else total

    def _variance(self, node: torch.fx.Node) -> Node:
        x = self._v(node, 0)
        rank = len(x.shape)
        dims = normal_dims(self.arg(node, 1, kwargs_of(node).get("dim")), rank)
        given = kwargs_of(node).get("correction")
        correction = float(given) if given is not None else 1.0
        keep = bool(node.kwargs.get("keepdim", False))
        mean = ew("div", reduce("sum", x, dims, True), count(x, dims))
        xc = ew("sub", x, mean)
        return ew("div", reduce("sum", ew("mul", xc, xc), dims, keep), count(x, dims, correction))

    def op_var(self, node: torch.fx.Node) -> Node:
        return self._variance(node)

    def op_std(self, node: torch.fx.Node) -> Node:
        return ew("sqrt", self._variance(node))

    def op_softmax(self, node: torch.fx.Node, log: bool = False) -> Node:
        x = self._v(node, 0)
        if self.arg(node, 2):
            raise Unsupported("softmax with half_to_float")
        dims = normal_dims(int(node.args[1]), len(x.shape))  # type: ignore[arg-type]
        m = reduce("max", x, dims, True)
        shifted = ew("sub", x, m)
        e = ew("exp", shifted)
        s = reduce("sum", e, dims, True)
        return ew("sub", shifted, ew("log", s)) if log else ew("div", e, s)

    def op_log_softmax(self, node: torch.fx.Node) -> Node:
        return self.op_softmax(node, log=True)

    def op_native_layer_norm(self, node: torch.fx.Node) -> tuple[Any, ...]:
        x = self._v(node, 0)
        rank, k = len(x.shape), len(node.args[1])  # type: ignore[arg-type]
        dims = tuple(range(rank - k, rank))
        w, b = self.value(node, 2), self.value(node, 3)
        eps = const(*self._scalar(node, 4, node.args[4], True))
        mean = ew("div", reduce("sum", x, dims, True), count(x, dims))
        xc = ew("sub", x, mean)
        var = ew("div", reduce("sum", ew("mul", xc, xc), dims, True), count(x, dims))
        y = ew("mul", xc, ew("rsqrt", ew("add", var, eps)))
        if w is not None:
            y = ew("mul", y, w)
        if b is not None:
            y = ew("add", y, b)
        stat = "the mean/rstd outputs of layer_norm, which no template covers"
        return (y, stat, stat)

    # -- matmul and library ops --------------------------------------------------------------
    def _gemm_a(self, node: torch.fx.Node) -> tuple[Node, bool]:
        """The left operand, peeling a flatten of leading dims (Linear on a 3-D input)."""
        if isinstance(node, torch.fx.Node) and op_name(node) in {"view", "_unsafe_view", "reshape"}:
            src = self.lower(node.args[0])  # type: ignore[arg-type]
            out = val_shape(node)
            if (isinstance(src, Node) and src.op == "load" and len(src.shape) > len(out)
                    and src.shape[-1] == out[-1] and len(out) == 2):
                return src, True
        a = self.lower(node)  # type: ignore[arg-type]
        return a, False

    def _gemm(self, node: torch.fx.Node, a_node: Any, b_node: Any, bias: Node | None,
              batched: bool) -> Node:
        a, a_flatten = self._gemm_a(a_node)
        b = self.lower(b_node)
        for side, v in (("left", a), ("right", b)):
            if not isinstance(v, Node) or v.op != "load" or v.operand is None or (
                    v.operand.chunk is not None):
                raise Unsupported(f"the {side} operand of {op_name(node)} is computed in the "
                                  f"forward; the matmul template reads inputs and parameters only")
        if a.dtype != b.dtype:
            raise Unsupported(f"{op_name(node)} of {a.dtype} by {b.dtype}")
        assert a.operand is not None and b.operand is not None
        spec = GemmSpec(a.operand, b.operand, op_name(node), batched, a_flatten, bias=bias)
        out = Node("gemm", shape=val_shape(node), dtype=val_dtype(node), spec=spec)
        self.gemms.append(out)
        return out

    def op_mm(self, node: torch.fx.Node) -> Node:
        return self._gemm(node, node.args[0], node.args[1], None, False)

    def op_bmm(self, node: torch.fx.Node) -> Node:
        flat = self._batch_one(node)
        if flat is not None:
            return flat
        return self._gemm(node, node.args[0], node.args[1], None, True)

    def _batch_one(self, node: torch.fx.Node) -> Node | None:
        """``einsum("bijl,lk->bijk", A, B)``: a bmm of batch 1 between reshapes of an input
        ``A [..., K]`` (its leading dims flattened) and a matrix ``B [K, N]``, i.e. ``A @ B`` with
        ``A`` flattened; the result must be viewed back to ``A``'s leading dims (``lower``
        checks). None when the bmm is not one."""
        if val_shape(node)[:1] != (1,):
            return None
        found_a, found_b = view_chain(node.args[0]), view_chain(node.args[1])  # type: ignore[arg-type]
        if found_a is None or found_b is None or not (in_order(found_a[1])
                                                      and in_order(found_b[1])):
            return None
        (a_start, a_dims), (b_start, b_dims) = found_a, found_b
        a, b = self.lower(a_start), self.lower(b_start)
        if not (isinstance(a, Node) and isinstance(b, Node) and a.op == b.op == "load"):
            return None
        rank = len(a.shape)
        lead = [((d,), a.shape[d]) for d in range(rank - 1) if a.shape[d] != 1]
        if (len(b.shape) != 2 or rank < 2 or a_dims != [[], lead, [((rank - 1,), a.shape[-1])]]
                or b_dims != [[], [((0,), b.shape[0])], [((1,), b.shape[1])]]):
            return None
        if a.dtype != b.dtype:
            raise Unsupported(f"bmm of {a.dtype} by {b.dtype}")
        assert a.operand is not None and b.operand is not None
        spec = GemmSpec(a.operand, b.operand, "bmm", False, a_flatten=True, batch_one=True)
        out = Node("gemm", shape=val_shape(node), dtype=val_dtype(node), spec=spec)
        self.gemms.append(out)
        return out

    def op_addmm(self, node: torch.fx.Node) -> Node:
        if node.kwargs.get("beta", 1) != 1 or node.kwargs.get("alpha", 1) != 1:
            raise Unsupported("addmm with alpha/beta, which no template covers")
        bias = self._v(node, 0)
        return self._gemm(node, node.args[1], node.args[2], bias, False)

    def op_convolution(self, node: torch.fx.Node) -> Node:
        """A convolution whose result the elementwise template's epilogue reads: the library's
        where the op is allowed (``--allow-op``), else the convolution template's own kernels
        (``conv_nd``: the implicit GEMM, depthwise or pointwise one the launcher picks)."""
        x, w = self._v(node, 0), self._v(node, 1)
        b = self.value(node, 2)
        stride, padding, dilation, transposed, out_padding, groups = args_of(node)[3:9]
        nd = len(w.shape) - 2
        name = f"conv_transpose{nd}d" if transposed else f"conv{nd}d"
        library = bool({name, "convolution"} & self.allowed)
        for v in (x, w):
            if v.op != "load" or v.operand is None or v.operand.chunk is not None:
                raise Unsupported(f"{name} of a computed tensor; the convolution epilogue "
                                  f"template convolves inputs and parameters only")
        assert x.operand is not None and w.operand is not None
        ph = next((p for p in self.traced.placeholders.values() if p.expr == w.operand.expr),
                  None)
        module = self.traced.submodule_of(ph.name) if ph is not None and ph.kind == "param" \
            else None
        cls = getattr(torch.nn, f"ConvTranspose{nd}d" if transposed else f"Conv{nd}d")
        m = w.operand.expr.rsplit(".", 1)[0] if isinstance(module, cls) and ph else None
        # its hyper-parameters: the module's attributes where it is one (other sizes keep them)
        hp = ({k: f"{m}.{k}" for k in ("stride", "padding", "dilation", "groups",
                                       "output_padding")} if m is not None else
              {"stride": str(list(stride)), "padding": str(list(padding)),
               "dilation": str(list(dilation)), "groups": str(groups),
               "output_padding": str(list(out_padding))})
        if library:
            order = (["stride", "padding", "output_padding", "groups", "dilation"] if transposed
                     else ["stride", "padding", "dilation", "groups"])
            call = (f"torch.nn.functional.{name}({x.operand.expr}, {w.operand.expr}, None, "
                    f"{', '.join(hp[k] for k in order)})")
        else:
            fp32 = val_dtype(node) == torch.float32
            c_in_g = w.shape[0] // int(groups) if transposed else w.shape[1]
            own = conv_shape(c_in_g, int(groups), bool(transposed), w.shape[2:], stride,
                             padding, dilation)
            self.own_convs.append(own)
            call = (f"conv_nd({x.operand.expr}, {w.operand.expr}, None, {hp['stride']}, "
                    f"{hp['padding']}, {hp['dilation']}, {hp['groups']}, {bool(transposed)}, "
                    f"{hp['output_padding'] if transposed else 0}"
                    + (", tf32x3=TF32X3" if fp32 else "") + ", channels_last=CHANNELS_LAST"
                    + (", fma=FMA)" if fma_call(own) else ")"))
        shape = val_shape(node)
        out = Node("load", shape=shape, dtype=val_dtype(node),
                   operand=Operand(call, name, shape, val_dtype(node)))
        self.libraries.append(out)
        if b is not None:
            if b.op != "load":
                raise Unsupported(f"{name} with a computed bias")
            out = ew("add", out, leaf_view(b, (b.shape[0],) + (1,) * nd))
        return out


def lower(traced: Traced, allowed_ops: list[str]) -> Lowered:
    """The DAG of the forward's single output, or Unsupported with the reason."""
    unknown = unknown_ops(traced)
    random_ops = sorted({str(n.target.overloadpacket.__name__) for n in traced.graph.nodes
                         if n.op == "call_function"
                         and torch.Tag.nondeterministic_seeded in getattr(n.target, "tags", ())})
    if random_ops:
        raise Unsupported(f"the forward draws random numbers ({', '.join(random_ops)}: dropout "
                          f"with p > 0 in training mode, say), so its outputs differ on every "
                          f"call and no kernel can be checked against them; set p=0.0 or call "
                          f"model.eval() in the problem")
    if unknown:
        quoted = ", ".join(f"'{n}'" for n in unknown)
        raise Unsupported(f"fx trace found aten op{'s' if len(unknown) > 1 else ''} {quoted} "
                          f"which no template covers")
    ops = reachable_ops(traced)
    gemms = [n for n in ops if n in GEMMS]
    if len(gemms) > 1:
        softmax = "_softmax" in ops
        raise Unsupported(
            f"fx trace found {len(gemms)} matmuls ({', '.join(sorted(gemms))})"
            + (" with a softmax between them (attention)" if softmax else "")
            + "; the matmul template fuses one matmul with an elementwise epilogue")
    lowerer = Lowerer(traced, allowed_ops)
    out = lowerer.lower(fxgraph.output(traced))
    if not isinstance(out, Node):
        raise Unsupported("the forward returns a tuple")
    if out.op == "load":
        raise Unsupported("the forward returns an input or a view of one: nothing to compute")
    if any(g.spec.batch_one and not g.spec.unflatten for g in lowerer.gemms):
        raise Unsupported("a batch-1 bmm whose result is not viewed back to its left operand's "
                          "leading dims, which no template covers")
    if out.dtype not in FLOAT_DTYPES:
        raise Unsupported(f"the output is a {out.dtype} tensor; the templates write fp32/fp16/"
                          f"bf16 outputs")
    return Lowered(out, lowerer.gemms, lowerer.libraries, lowerer.own_convs)
