"""Reading the traced aten graph directly, for the templates that match a whole operator (a
convolution, a pooling or normalization module, a scan, a loss) instead of lowering it into the
expression DAG: the forward's output, the calls it depends on, and what a placeholder names."""

from __future__ import annotations

from typing import Any

import torch

from ..plan import Unsupported
from .lower import IDENTITY, op_name
from .trace import Traced

# Views the whole-operator templates look through: they re-view memory and compute nothing.
PASS_THROUGH = IDENTITY | {"view", "_unsafe_view", "reshape", "unsqueeze", "squeeze"}


def output(traced: Traced) -> torch.fx.Node:
    """The node of the forward's single returned tensor."""
    out = next(n for n in traced.graph.nodes if n.op == "output")
    result = out.args[0]
    if isinstance(result, list | tuple):
        if len(result) != 1:
            raise Unsupported(f"the forward returns {len(result)} outputs; the templates write "
                              f"one tensor")
        result = result[0]
    if not isinstance(result, torch.fx.Node):
        raise Unsupported("the forward returns no tensor computed from its inputs")
    return result


def calls(traced: Traced) -> list[torch.fx.Node]:
    """Every call the output depends on, in graph order."""
    keep: set[str] = set()
    stack = [output(traced)]
    while stack:
        node = stack.pop()
        if node.name in keep:
            continue
        keep.add(node.name)
        stack.extend(node.all_input_nodes)
    return [n for n in traced.graph.nodes if n.name in keep and n.op == "call_function"]


def op_names(traced: Traced) -> set[str]:
    return {op_name(n) for n in calls(traced)}


def strip(node: Any) -> Any:
    """``node`` with identity ops and views peeled off (the value they pass through)."""
    while isinstance(node, torch.fx.Node) and node.op == "call_function" and (
            op_name(node) in PASS_THROUGH):
        node = node.args[0]
    return node


def input_expr(traced: Traced, node: Any) -> str | None:
    """The forward expression of a placeholder (``x``, ``self.conv.weight``), else None."""
    if isinstance(node, torch.fx.Node) and node.op == "placeholder":
        return traced.placeholders[node.name].expr
    return None


def shape(node: torch.fx.Node) -> tuple[int, ...]:
    val = node.meta.get("val")
    return tuple(val.shape) if isinstance(val, torch.Tensor) else ()


def dtype(node: torch.fx.Node) -> torch.dtype:
    val = node.meta.get("val")
    return val.dtype if isinstance(val, torch.Tensor) else torch.float32


def describe_dtype(dt: torch.dtype) -> str:
    return {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}.get(
        str(dt).removeprefix("torch."), str(dt).removeprefix("torch."))


def module_of(traced: Traced, param_expr: str, cls: type | tuple[type, ...]
              ) -> tuple[str | None, Any]:
    """(``self.conv``, the module) when ``param_expr`` is ``self.conv.weight`` and that module
    is a ``cls``, else (None, None)."""
    ph = next((p for p in traced.placeholders.values() if p.expr == param_expr), None)
    if ph is None or ph.kind != "param":
        return None, None
    module = traced.submodule_of(ph.name)
    if not isinstance(module, cls):
        return None, None
    return param_expr.rsplit(".", 1)[0], module


def modules_of(traced: Traced, cls: type | tuple[type, ...]) -> list[tuple[str, Any]]:
    """(forward expression, module) of every submodule of the model that is a ``cls`` and that
    the forward may call: one whose parameters or buffers the graph reads, or one that has none
    (a program's part keeps the whole model's constructor: a ResNet block's part of ``bn1`` has
    ``bn2`` too, never called)."""
    from .trace import self_expr

    read = {traced.placeholders[n.name].name for n in traced.graph.nodes
            if n.op == "placeholder" and n.users and n.name in traced.placeholders
            and traced.placeholders[n.name].kind == "param"}

    def called(name: str, module: Any) -> bool:
        own = [n for n, _ in (*module.named_parameters(), *module.named_buffers())]
        return not own or any(f"{name}.{n}" in read for n in own)

    return [(self_expr(name), m) for name, m in traced.model.named_modules()
            if name and isinstance(m, cls) and called(name, m)]


def float_inputs_only(traced: Traced) -> None:
    for node in traced.graph.nodes:
        ph = traced.placeholders.get(node.name)
        if ph is not None and ph.kind == "input" and dtype(node) not in (
                torch.float32, torch.float16, torch.bfloat16):
            raise Unsupported(f"{ph.name} is a {str(dtype(node)).removeprefix('torch.')} tensor; "
                              f"this template computes on fp32/fp16/bf16 tensors")
