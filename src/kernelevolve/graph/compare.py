"""How two candidate sources compare, in the terms a prompt or the Coder needs:

- ``same_kernel``: equal up to what cannot change a kernel's behaviour: formatting, comments,
  docstrings, and a consistent renaming of local names, parameters and module-level functions
  (an AST-level no-op). A reply that only does that is not worth an evaluation.
- ``summary``: a few lines that say how a kernel is built (its kernels' signatures, block sizes,
  grid, warps and stages), for a sibling whose code a prompt does not show.
- ``unified_diff``: what one candidate changed against another, clipped for a prompt.

Pure Python on source text (``ast``, ``difflib``); a source that does not parse compares by
its text with whitespace normalised.
"""

from __future__ import annotations

import ast
import difflib
import re

from kernelevolve.pyparse import parse

__all__ = ["same_kernel", "summary", "unified_diff"]


def _drop_docstrings(tree: ast.AST) -> None:
    """Remove string-constant statements (docstrings and bare strings: they do nothing)."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        kept = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                        and isinstance(s.value.value, str))]
        node.body = kept or [ast.Pass()]  # type: ignore[attr-defined]


def _is_function(node: ast.AST) -> bool:
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[ast.arg]:
    a = fn.args
    out = [*a.posonlyargs, *a.args]
    if a.vararg:
        out.append(a.vararg)
    out += a.kwonlyargs
    if a.kwarg:
        out.append(a.kwarg)
    return out


class _Renamer(ast.NodeTransformer):
    """Gives each function's parameters and local names canonical names in order of first
    appearance, and each module-level function a canonical name; keyword arguments of calls to
    those functions (a kernel launch's ``BLOCK_SIZE=...``) follow their parameters' names."""

    def __init__(self, module: ast.Module) -> None:
        self.functions: dict[str, str] = {}
        self.signatures: dict[str, dict[str, str]] = {}
        for stmt in module.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                canon = f"_f{len(self.functions)}"
                self.functions[stmt.name] = canon
                self.signatures[stmt.name] = {p.arg: f"_p{i}" for i, p in
                                              enumerate(_params(stmt))}
        self.scopes: list[dict[str, str]] = []

    def _local_names(self, fn: ast.AST) -> list[str]:
        """Names a function binds, in order of first appearance (nested functions excluded)."""
        seen: dict[str, None] = {}
        todo: list[ast.AST] = list(getattr(fn, "body", []))
        if isinstance(fn, ast.Lambda):
            todo = [fn.body]
        while todo:
            node = todo.pop(0)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                seen.setdefault(node.id, None)
            if _is_function(node) or isinstance(node, ast.ClassDef):
                continue
            todo[:0] = list(ast.iter_child_nodes(node))
        return list(seen)

    def _enter(self, fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
               top_level: bool) -> None:
        name = getattr(fn, "name", None)
        mapping = dict(self.signatures[name]) if top_level and name in self.signatures else {
            p.arg: f"_p{i}" for i, p in enumerate(_params(fn))}
        for i, local in enumerate(n for n in self._local_names(fn) if n not in mapping):
            mapping[local] = f"_l{i}"
        self.scopes.append(mapping)
        for p in _params(fn):
            p.arg = mapping.get(p.arg, p.arg)
            p.annotation = self.visit(p.annotation) if p.annotation is not None else None

    def _function(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, top_level: bool
                  ) -> ast.AST:
        fn.decorator_list = [self.visit(d) for d in fn.decorator_list]
        fn.args.defaults = [self.visit(d) for d in fn.args.defaults]
        fn.args.kw_defaults = [self.visit(d) if d is not None else None
                               for d in fn.args.kw_defaults]
        if fn.returns is not None:
            fn.returns = self.visit(fn.returns)
        self._enter(fn, top_level)
        fn.body = [self.visit(s) for s in fn.body]
        self.scopes.pop()
        if top_level:
            fn.name = self.functions[fn.name]
        return fn

    def visit_Module(self, node: ast.Module) -> ast.AST:
        body: list[ast.AST] = [self._function(s, True) if isinstance(
            s, ast.FunctionDef | ast.AsyncFunctionDef) else self.visit(s) for s in node.body]
        node.body = body  # type: ignore[assignment]
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return self._function(node, False)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        return self._function(node, False)

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        self._enter(node, False)
        node.body = self.visit(node.body)
        self.scopes.pop()
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        for scope in reversed(self.scopes):
            if node.id in scope:
                node.id = scope[node.id]
                return node
        if node.id in self.functions:
            node.id = self.functions[node.id]
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        callee = node.func
        while isinstance(callee, ast.Subscript):  # kernel[grid](...)
            callee = callee.value
        params = self.signatures.get(callee.id) if isinstance(callee, ast.Name) else None
        self.generic_visit(node)
        if params is not None:
            for kw in node.keywords:
                if kw.arg is not None and kw.arg in params:
                    kw.arg = params[kw.arg]
        return node


def _canonical(source: str) -> str | None:
    try:
        tree = parse(source)
    except (SyntaxError, ValueError):
        return None
    _drop_docstrings(tree)
    tree = _Renamer(tree).visit(tree)
    return ast.dump(tree, annotate_fields=False)


def same_kernel(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are the same program up to formatting, comments, docstrings and
    a consistent renaming of local names, parameters and module-level functions."""
    ca, cb = _canonical(a), _canonical(b)
    if ca is None or cb is None:
        return " ".join(a.split()) == " ".join(b.split())
    return ca == cb


# -- summaries --------------------------------------------------------------------------------

_META = re.compile(r"^(?:BLOCK|TILE|GROUP|NUM|ROWS|COLS|SPLIT|[A-Z][A-Z0-9]*_(?:SIZE|M|N|K))")


def _segment(source: str, node: ast.AST) -> str:
    text = ast.get_source_segment(source, node) or ""
    return " ".join(text.split())


def summary(source: str, limit: int = 600) -> str:
    """How the kernel is built, in a few lines: each ``@triton.jit`` kernel's signature and
    loops, then the launch's grid, block-size constants, warps and stages."""
    try:
        tree = parse(source)
    except (SyntaxError, ValueError):
        return "(does not parse)"
    lines: list[str] = []
    consts: dict[str, str] = {}
    launch: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(
                "jit" in _segment(source, d) for d in node.decorator_list):
            params = [p.arg + (": constexpr" if p.annotation is not None
                               and "constexpr" in _segment(source, p.annotation) else "")
                      for p in _params(node)]
            loops = sum(isinstance(n, ast.For | ast.While) for n in ast.walk(node))
            dots = sum(isinstance(n, ast.Attribute) and n.attr == "dot" for n in ast.walk(node))
            extra = [f"{loops} loop(s)"] if loops else []
            extra += [f"{dots} tl.dot"] if dots else []
            lines.append(f"kernel {node.name}({', '.join(params)})"
                         + (f": {', '.join(extra)}" if extra else ""))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(
                node.targets[0], ast.Name):
            name = node.targets[0].id
            if name == "grid" or _META.match(name):
                consts.setdefault(name, _segment(source, node.value))
        elif isinstance(node, ast.keyword) and node.arg is not None and (
                node.arg in ("num_warps", "num_stages") or _META.match(node.arg)):
            launch.setdefault(node.arg, _segment(source, node.value))
    if consts or launch:
        # a launch keyword that passes a constant of the same name adds nothing
        shown = {**consts, **{k: v for k, v in launch.items() if k not in consts or v != k}}
        lines.append("launch: " + ", ".join(f"{k} = {v}" for k, v in shown.items()))
    text = "\n".join(lines) or "(no @triton.jit kernel found)"
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def unified_diff(old: str, new: str, old_label: str, new_label: str, limit: int = 3000,
                 context: int = 2) -> str:
    """The unified diff from ``old`` to ``new`` (empty when equal), at most ``limit``
    characters (a clipped diff says how many lines it left out)."""
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), old_label, new_label,
                                      lineterm="", n=context))
    out: list[str] = []
    size = 0
    for i, line in enumerate(lines):
        if size + len(line) + 1 > limit:
            out.append(f"[... {len(lines) - i} more diff lines left out]")
            break
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)
