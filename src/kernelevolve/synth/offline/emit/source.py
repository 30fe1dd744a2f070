"""The parts of a candidate module every template shares: imports, launch constants, and
``ModelNew`` built from the reference's own class body, so the constructor signature and the
parameter/buffer names match ``Model``'s exactly."""

from __future__ import annotations

import ast
import builtins
from collections.abc import Mapping

from kernelevolve.problem import Problem
from kernelevolve.pyparse import parse
from kernelevolve.tools.harness.static import ALLOWED_MODULES

from ..plan import Unsupported
from .expr import nan_helpers

_BASE_IMPORTS = ["import torch", "import torch.nn as nn", "import triton",
                 "import triton.language as tl"]
_FACTORIES = {"get_inputs", "get_init_inputs", "Model"}


class _SuperFix(ast.NodeTransformer):
    """``super(Model, self)`` -> ``super()`` (the copied methods live in ModelNew)."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "super" and node.args:
            node.args = []
        return node


def _free_names(nodes: list[ast.stmt]) -> set[str]:
    loads: set[str] = set()
    stores: set[str] = set()
    for stmt in nodes:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name):
                (loads if isinstance(n.ctx, ast.Load) else stores).add(n.id)
            elif isinstance(n, ast.arg):
                stores.add(n.arg)
            elif isinstance(n, ast.FunctionDef | ast.ClassDef):
                stores.add(n.name)
    return loads - stores - set(dir(builtins))


def _import_names(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, ast.Import):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    if isinstance(stmt, ast.ImportFrom):
        return {a.asname or a.name for a in stmt.names}
    return set()


def _import_allowed(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Import):
        return all(a.name.split(".")[0] in ALLOWED_MODULES for a in stmt.names)
    if isinstance(stmt, ast.ImportFrom):
        return not stmt.level and (stmt.module or "").split(".")[0] in ALLOWED_MODULES
    return False


def model_class_parts(problem: Problem) -> tuple[list[str], list[str]]:
    """(extra module-level source blocks the class needs, the class body without ``forward``).

    Imports of allowed modules and module-level classes/functions the body uses are copied;
    anything else the constructor reads from module level (a size constant) is refused, since
    the harness changes sizes through the constructor arguments only.
    """
    tree = parse(problem.source)
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"),
                 None)
    if model is None:
        raise Unsupported("Model is not a class defined in the problem file")
    body = [s for s in model.body if not (isinstance(s, ast.FunctionDef) and s.name == "forward")]
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None),
                                                             ast.Constant):
        body = body[1:]  # the reference's docstring; ModelNew gets its own
    body = [_SuperFix().visit(s) for s in body]
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)
            and n.name not in _FACTORIES}
    imports = [s for s in tree.body if isinstance(s, ast.Import | ast.ImportFrom)]
    available = {"torch", "nn", "triton", "tl"}
    extra: list[str] = []
    for stmt in imports:
        if _import_allowed(stmt):
            text = ast.unparse(stmt)
            if text not in _BASE_IMPORTS:
                extra.append(text)
            available |= _import_names(stmt)
    needed, copied = _free_names(body), []
    while True:
        more = sorted(n for n in needed - available if n in defs and n not in copied)
        if not more:
            break
        for name in more:
            copied.append(name)
            needed |= _free_names([defs[name]])
    missing = sorted(needed - available - set(copied))
    if "Model" in missing:
        raise Unsupported("Model's body refers to the Model class itself")
    if missing:
        raise Unsupported(f"Model's constructor reads module-level name(s) {', '.join(missing)}; "
                          f"a candidate must take its sizes from the constructor arguments")
    blocks = extra + [ast.unparse(defs[n]) for n in sorted(copied, key=list(defs).index)]
    return blocks, [ast.unparse(s) for s in body]


def indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line if line.strip() else "" for line in text.splitlines())


def module_source(problem: Problem, doc: str, constants: Mapping[str, int], kernels: list[str],
                  launchers: list[str], forward_args: list[str], forward_body: list[str]) -> str:
    """The whole candidate file."""
    blocks, body = model_class_parts(problem)
    parts = [f'"""{doc}\n\nWritten by the kernelevolve offline synthesizer from a template."""',
             "\n".join(_BASE_IMPORTS + [b for b in blocks if b.startswith(("import", "from"))])]
    defs = [b for b in blocks if not b.startswith(("import", "from"))]
    parts.append("# Launch parameters (tuned by the search)\n" + "\n".join(
        f"{k} = {v}" for k, v in constants.items()))
    parts.extend(defs)
    parts.extend(nan_helpers("\n".join(kernels)))
    parts.extend(kernels)
    parts.extend(launchers)
    cls = ["class ModelNew(nn.Module):", f'    """{doc}"""', ""]
    cls.extend(indent(b) + "\n" for b in body)
    cls.append(f"    def forward(self, {', '.join(forward_args)}):")
    cls.extend("        " + line for line in forward_body)
    parts.append("\n".join(cls))
    text = "\n\n\n".join(p.rstrip() for p in parts) + "\n"
    # Blocks from several templates (and the reference's copied helpers) share one namespace:
    # a later def of a name would replace an earlier one for every caller
    seen: set[str] = set()
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            if node.name in seen:
                raise Unsupported(f"the candidate module would define {node.name!r} twice (the "
                                  f"reference's helpers or two templates' name one alike)")
            seen.add(node.name)
    return text
