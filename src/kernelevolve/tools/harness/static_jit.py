"""The rules for ``@triton.jit`` bodies: only what compiled Triton accepts.

A kernel body may use ``tl.*``, other jit (or ``triton.constexpr_function``) functions of the
candidate, the few Python builtins Triton's code generator knows, its arguments and
``tl.constexpr`` globals. Triton's interpreter (the cpu and mtia-sim targets) would run anything
else as plain Python on its numpy buffers, so a kernel could compute there in ways no GPU
compiles and no check sees. Findings are ``contract`` (rule ``jit-body``): a GPU would refuse to
compile the kernel.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable
from typing import Protocol

from .allowlist import JIT_BUILTINS, TRITON_CONSTEXPR_FNS


class Source(Protocol):
    """What the kernel rules need from the candidate-wide check."""

    imported: set[str]  # module-level names bound by import statements

    def resolve(self, node: ast.AST) -> str | None: ...

    def refuse(self, node: ast.AST, rule: str, message: str, kind: str = "cheat") -> None: ...


def module_scope(tree: ast.Module) -> list[ast.AST]:
    """The nodes of the module's own scope (not inside functions, classes or lambdas)."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        out.append(node)
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            todo.extend(ast.iter_child_nodes(node))
    return out


def jit_decorator(resolve: Callable[[ast.AST], str | None], node: ast.AST) -> str | None:
    """``jit`` for ``@triton.jit`` (or ``triton.jit(fn)``), ``constexpr_function`` for
    ``@triton.constexpr_function``, else None."""
    path = resolve(node.func if isinstance(node, ast.Call) else node) or ""
    if path == "triton.jit":
        return "jit"
    if path in {"triton.constexpr_function", "triton.language.constexpr_function"}:
        return "constexpr_function"
    return None


def jit_functions(nodes: list[ast.AST], resolve: Callable[[ast.AST], str | None]
                  ) -> tuple[dict[str, ast.FunctionDef], set[str]]:
    """The candidate's ``@triton.jit`` functions (and functions passed to ``triton.jit``), and
    the names of its ``triton.constexpr_function`` functions. ``nodes``: all of its nodes."""
    defs: dict[str, list[ast.FunctionDef]] = {}
    calls: list[ast.Call] = []
    for node in nodes:
        if isinstance(node, ast.FunctionDef):
            defs.setdefault(node.name, []).append(node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name):
            calls.append(node)
    jit = {fn.name: fn for fns in defs.values() for fn in fns
           if any(jit_decorator(resolve, d) == "jit" for d in fn.decorator_list)}
    for call in calls:
        if call.args and isinstance(call.args[0], ast.Name) and call.args[0].id in defs and (
                jit_decorator(resolve, call.func) == "jit"):
            jit.update({d.name: d for d in defs[call.args[0].id]})  # kernel = triton.jit(body)
    constexpr_fns = {fn.name for fns in defs.values() for fn in fns
                     if any(jit_decorator(resolve, d) == "constexpr_function"
                            for d in fn.decorator_list)}
    return jit, constexpr_fns


class Kernels:
    """Checks every jit body of a candidate."""

    def __init__(self, tree: ast.Module, source: Source, jit: dict[str, ast.FunctionDef],
                 constexpr_fns: set[str]) -> None:
        self.v = source
        self.jit = jit
        self.constexpr_fns = constexpr_fns
        self.plain_fns: set[str] = set()
        self.constexpr_globals: set[str] = set()
        self.other_globals: set[str] = set()
        assigned: set[int] = set()
        for node in module_scope(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                if node.name not in self.jit and node.name not in self.constexpr_fns:
                    self.plain_fns.add(node.name)
            elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
                value = node.value
                constexpr = value is not None and self._is_constexpr_value(value)
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name):
                            assigned.add(id(name))
                            (self.constexpr_globals if constexpr
                             else self.other_globals).add(name.id)
        for node in module_scope(tree):  # for-targets, with-targets, walrus
            if (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
                    and id(node) not in assigned):
                self.other_globals.add(node.id)
        self.constexpr_globals -= self.other_globals

    def _is_constexpr_value(self, value: ast.AST) -> bool:
        """``X = tl.constexpr(...)`` or a triton.language object (``DTYPE = tl.float16``)."""
        path = self.v.resolve(value.func if isinstance(value, ast.Call) else value) or ""
        if isinstance(value, ast.Call):
            return path == "triton.language.constexpr"
        return path.startswith("triton.language.")

    def _refuse(self, node: ast.AST, kernel: str, message: str) -> None:
        self.v.refuse(node, "jit-body", f"the @triton.jit function {kernel} {message}",
                      kind="contract")

    def check(self) -> None:
        for name, fn in self.jit.items():
            self._check_kernel(name, fn)

    def _check_kernel(self, kernel: str, fn: ast.FunctionDef) -> None:
        a = fn.args
        local = {p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
        local |= {p.arg for p in (a.vararg, a.kwarg) if p is not None}
        body = [n for stmt in fn.body for n in ast.walk(stmt)]
        local |= {n.id for n in body if isinstance(n, ast.Name)
                  and isinstance(n.ctx, ast.Store | ast.Del)}
        called: set[int] = set()
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
                self._refuse(node, kernel, "defines a nested function, lambda or class, which "
                                           "compiled Triton does not support; write a "
                                           "module-level @triton.jit function")
            elif isinstance(node, ast.Call):
                called.add(id(node.func))
                self._check_call(kernel, node, local)
        for node in body:
            if (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
                    and id(node) not in called and node.id not in local):
                self._check_name(kernel, node)

    @staticmethod
    def _allowed_path(path: str) -> bool:
        # math on constexprs is folded at compile time; Proton scopes are language extensions
        return (path.startswith(("triton.language.", "triton.profiler.language.", "math."))
                or path in TRITON_CONSTEXPR_FNS)

    def _check_call(self, kernel: str, call: ast.Call, local: set[str]) -> None:
        func = call.func
        root = func
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(func, ast.Name) and func.id in local:
            return  # an argument (a @triton.jit function passed in; the guard checks its type)
        if isinstance(func, ast.Name) and (func.id in self.jit or func.id in self.constexpr_fns):
            return
        named = self.v.imported | self.constexpr_globals  # module-level names of known paths
        if isinstance(func, ast.Name) and func.id in JIT_BUILTINS and func.id not in (
                named | self.plain_fns | self.other_globals):
            return
        if not isinstance(root, ast.Name):
            if isinstance(func, ast.Attribute):
                return  # a method of a value: tl.load(p).to(tl.float32)
            self._refuse(call, kernel, f"calls a computed function ({ast.unparse(func)}), which "
                                       f"compiled Triton does not support; call a @triton.jit "
                                       f"function or a tl.* operation by name")
            return
        if isinstance(func, ast.Attribute) and root.id not in named:
            return  # a method of an argument or local (x.to(...)); other roots are names, below
        path = self.v.resolve(func) or ast.unparse(func)
        if root.id in named and self._allowed_path(path):
            return
        builtin = (f" (of Python's builtins a kernel has only {', '.join(sorted(JIT_BUILTINS))})"
                   if path in vars(builtins) else "")
        self._refuse(call, kernel, f"calls {path}(), which is neither a @triton.jit function "
                                   f"nor a triton.language operation{builtin}: a compiled kernel "
                                   f"cannot call plain Python (only Triton's interpreter runs "
                                   f"it, as Python on numpy buffers); make it a @triton.jit "
                                   f"function or use tl.* operations")

    def _check_name(self, kernel: str, node: ast.Name) -> None:
        name = node.id
        if (name in self.jit or name in self.constexpr_fns or name in self.v.imported
                or name in self.constexpr_globals):
            return
        if name in self.plain_fns:
            self._refuse(node, kernel, f"uses the plain Python {name}, which a compiled kernel "
                                       f"cannot; make it a @triton.jit function")
        elif name in self.other_globals:
            self._refuse(node, kernel, f"reads the module-level {name}, which compiled Triton "
                                       f"refuses (a kernel sees only tl.constexpr globals); pass "
                                       f"it as a tl.constexpr argument or write "
                                       f"{name} = tl.constexpr(...)")
        elif name not in JIT_BUILTINS:
            self._refuse(node, kernel, f"uses {name}, which is neither an argument, a local, a "
                                       f"tl.constexpr global, a @triton.jit function nor one of "
                                       f"the builtins a kernel has "
                                       f"({', '.join(sorted(JIT_BUILTINS))})")
