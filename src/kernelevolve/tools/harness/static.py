"""Static (AST) checks of a candidate source: the cheap first stage of the cascade.

A candidate is untrusted code, written in a stated subset of Python: the allowlist in
allowlist.py. Before it runs, this stage refuses sources that do not meet the contract (no
``ModelNew``; a ``@triton.jit`` body a compiled Triton would refuse) and every name the
allowlist does not hold, each finding with the name of the rule that refused it:

- ``import``: only the modules in ``ALLOWED_IMPORTS`` (torch, torch.nn, torch.nn.functional,
  triton, triton.language, math and a few named helpers); no relative or ``*`` imports.
- ``module-attribute``: every attribute path reached from an import, through aliases
  (``torch.empty``, ``F.conv2d``, ``tl.load``, ``triton.cdiv``), is listed under its module, or
  is a library op the user allowed. ``torch.ops``, ``torch._C``, ``torch.package``,
  ``torch.utils._*``, ``torch.relu`` and everything else unlisted are refused.
- ``constructor-only``: layers (``nn.Conv2d``), ``torch.randn``, ``torch.tensor``, ``nn.init``
  only inside an ``__init__``, where a candidate keeps the reference's constructor.
- ``library-module-call``: a layer attribute (``self.conv = nn.Conv2d(...)``) is a parameter
  holder; calling it runs the library unless its op is allowed.
- ``value-attribute``: on anything that is not a module (a tensor, a list, a layer), only the
  names that allocate, view, copy, cast or describe memory, Python containers' methods, layer
  settings, and the candidate's own names: ``x.sum()``, ``x.item()``, ``x.numpy()`` are refused.
  In a ``@triton.jit`` body, Triton's tensor and dtype API (never ``.handle``).
- ``module-value``: a module is used by name only, never as a value (an argument, an element,
  ``torch if c else x``) and never rebound (``for torch in ...``): what is reached from a value
  is read by the rules for values, which a module would walk around.
- ``dunder`` and ``private``: no dunder access but ``__init__``, ``__name__``, ``__doc__``; no
  dunder methods but ``__init__``, ``__post_init__``, ``__call__``, ``__len__``; no private
  attribute but the candidate's own on ``self``.
- ``builtin``: only the builtins in ``ALLOWED_BUILTINS``: no ``eval``, ``exec``, ``compile``,
  ``__import__``, ``globals``, ``locals``, ``vars``, ``setattr``, ``type``, ``open``.
- ``computed-name``: ``getattr``/``hasattr`` with a literal name only, never passed as a value.
- ``module-override``: a module may not redefine or reassign what nn.Module has
  (``load_state_dict``, ``__call__``, ``state_dict``...): the harness calls those outside the
  recorded forward.
- ``patch``, ``global-state``, ``class-base``, ``host-data``: no assignment to a library's
  attributes, no ``global``, no tensor subclasses, metaclasses, computed bases or torch bases
  but nn.Module and its containers (a layer's methods compute), no ``torch.Tensor(data)``.
- ``cpp-disabled``, ``cpp-source``, ``cpp-api``: ``load_inline`` only where CUDA C++ is enabled,
  called by name, with literal sources that define a ``__global__`` kernel, checked by the C++
  allowlist (static_cpp.py).
- ``jit-body`` (a contract error): kernel bodies use only what compiled Triton accepts
  (static_jit.py).

String annotations are code (``typing.get_type_hints`` evaluates them): each is checked like the
source around it. The runtime guard (guard.py) backs these checks up: it records every aten op a
forward dispatches. torch and triton are read for their own name lists on first use.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterable
from dataclasses import dataclass

from kernelevolve.pyparse import parse

from . import allowlist as al
from .allowlist import ALLOWED_MODULES
from .static_cpp import check_cpp
from .static_jit import Kernels, jit_functions

__all__ = ["ALLOWED_MODULES", "StaticFinding", "check_source"]

_HOST = ("it computes on the host instead of in a kernel (Python math on tensor data is "
         "invisible to the op recorder); compute with a Triton kernel")
_FROM_HOST = ("it builds a tensor from data Python computed on the host, where no check sees "
              "it; allocate with torch.empty and compute with a Triton kernel")
_COMPUTED_NAME = ("a computed attribute name hides what the candidate reaches for (the "
                  "interpreter, the harness, library internals); write the attribute access out")
_DISPATCH = ("torch ops it runs are hidden from the op recorder (a tensor subclass's or dispatch "
             "override's handler runs them unrecorded); compute with a Triton kernel")
_COMPUTE = ("torch computing is the work the candidate must do in its own kernel; compute with "
            "a Triton kernel, or have the user allow the op (--allow-op NAME)")
# Why some well-known paths are off the allowlist (messages only: the allowlist decides).
_WHY = {
    "torch.compile": "torch.compile does the work with torch's own kernels",
    "torch.jit": "TorchScript does the work with torch's own kernels",
    "torch.package": "it imports any module by name, past this check",
    "torch.ops": "it calls any registered op by name, past this check",
    "torch.library": "it registers ops the recorder does not know",
    "torch.utils": "torch.utils reaches the dispatcher and the interpreter (no_dispatch)",
    "torch.cuda.Stream": "work on other streams escapes the timer",
    "torch.cuda.stream": "work on other streams escapes the timer",
    "torch.cuda.set_stream": "work on other streams escapes the timer",
    "torch.cuda.Event": "candidates must not touch the harness's timing events",
    "torch.cuda.graph": "graph capture replays stale pointers and hides work from the timer",
    "torch.cuda.CUDAGraph": "graph capture replays stale pointers and hides work from the timer",
    "torch.backends": "global backend switches change the reference too",
    "torch.hub": "nothing may be fetched",
    "torch.save": "no files", "torch.load": "no files",
    "torch.from_numpy": _FROM_HOST, "torch.frombuffer": _FROM_HOST,
    "torch.from_dlpack": _FROM_HOST, "torch.asarray": _FROM_HOST,
    "operator.attrgetter": _COMPUTED_NAME, "operator.methodcaller": _COMPUTED_NAME,
    "typing.get_type_hints": "it evaluates strings as code (string annotations)",
    "typing.ForwardRef": "it evaluates strings as code (string annotations)",
}
_RNG = ("torch.manual_seed", "torch.seed", "torch.initial_seed", "torch.random",
        "torch.default_generator", "torch.Generator", "torch.get_rng_state",
        "torch.set_rng_state", "torch.cuda.manual_seed", "torch.cuda.initial_seed",
        "torch.cuda.set_rng_state")
_GLOBAL_SWITCHES = ("torch.set_default_dtype", "torch.set_default_tensor_type",
                    "torch.set_default_device", "torch.use_deterministic_algorithms",
                    "torch.set_flush_denormal", "torch.set_grad_enabled")
_WHY.update({p: "the RNG that makes the inputs is off limits" for p in _RNG})
_WHY.update({p: "global switches change the reference too" for p in _GLOBAL_SWITCHES})
# Modules other modules import, through which an allowed module leads to the interpreter.
_GADGETS = frozenset({"sys", "os", "builtins", "importlib", "inspect", "modules", "gc",
                      "subprocess", "ctypes", "threading", "multiprocessing", "_thread", "types",
                      "pkgutil"})
_WHY_VALUE = {
    **{n: _HOST for n in ("item", "tolist", "numpy", "storage", "untyped_storage", "apply_",
                          "map_", "map2_")},
    "new_tensor": _FROM_HOST,
    "handle": ("it is the interpreter's buffer behind a Triton value: code that edits it runs "
               "only in the interpreter, as Python; compute with tl.* operations"),
    **{n: "it leads from a value to the interpreter and the harness"
       for n in (*_GADGETS, "f_back", "f_globals", "f_locals", "gi_frame", "tb_frame")},
}
_WHY_BUILTIN = {
    **{n: "it evaluates strings as code, which the static check cannot read"
       for n in ("eval", "exec", "compile")},
    **{n: "it reaches modules and namespaces by name, past this check"
       for n in ("__import__", "globals", "locals", "vars", "dir")},
    **{n: _COMPUTED_NAME for n in ("setattr", "delattr")},
    "type": ("type(x) leads from a value to its class (and type with three arguments builds "
             "classes the check cannot read); use isinstance"),
    "open": "no files", "breakpoint": "nothing interactive", "input": "nothing interactive",
    "memoryview": _HOST, "bytes": _HOST, "bytearray": _HOST, "id": "identity is not data",
}
_CPP_KEYWORDS = frozenset({"name", "cpp_sources", "cuda_sources", "functions", "verbose",
                           "with_cuda", "extra_cflags", "extra_cuda_cflags"})
_CPP_FLAG = re.compile(
    r"-O[0-3]|--?use_fast_math|-arch=sm_\d+a?|-gencode=arch=compute_\d+a?,code=sm_\d+a?"
    r"|--expt-relaxed-constexpr|--expt-extended-lambda|-std=c\+\+\d+|-lineinfo|-DNDEBUG"
    r"|-D[A-Z_][A-Z0-9_]*(=-?\d+)?|-Xptxas=-v|--ptxas-options=-v|--?maxrregcount=\d+")
# Tensor types (torch.nn.Parameter is a Tensor subclass under torch.nn).
_TENSOR_TYPES = {"Tensor", "Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"}
_MODULE_BASES = {f"torch.nn.{name}" for name in ("Module", "ModuleList", "ModuleDict",
                                                   "ParameterList", "ParameterDict")}
_BUILTIN_CLASSES = {name for name, value in vars(builtins).items()
                    if isinstance(value, type) and not issubclass(value, type)}
_FUNCTION = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class StaticFinding:
    """One reason to refuse a candidate. ``kind`` is ``contract`` (a compile_error) or ``cheat``;
    ``rule`` names the allowlist rule that refused it (module docstring)."""

    kind: str
    line: int
    message: str
    rule: str = "contract"


def _literal_str(node: ast.AST) -> str | None:
    """The value of a string built from literals only (``"tol" + "ist"``, an f-string of
    constants), else None."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal_str(node.left), _literal_str(node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.FormattedValue) and node.format_spec is None:
        return _literal_str(node.value)
    if isinstance(node, ast.JoinedStr):
        parts = [_literal_str(v) for v in node.values]
        return None if None in parts else "".join(p for p in parts if p is not None)
    return None


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and len(name) > 4


class _Bindings:
    """Where every name of the candidate is bound, flow-insensitively: a name is an alias of a
    module path (``F`` -> ``torch.nn.functional``; ``props`` -> the result of
    ``torch.cuda.get_device_properties``) only if every binding of it anywhere says so."""

    def __init__(self, nodes: list[ast.AST]) -> None:
        self.sources: dict[str, list[ast.AST | str | None]] = {}
        self.sites: dict[str, list[ast.AST]] = {}  # where each name is bound
        self.own_attrs: set[str] = set()  # attributes the candidate assigns or defines
        self.layer_attrs: dict[str, list[ast.AST]] = {}  # attribute -> the values assigned
        self.classes: dict[str, ast.ClassDef] = {}
        self.parents: dict[int, ast.AST] = {}
        for node in nodes:
            self._bind(node)
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node

    def _add(self, name: str, source: ast.AST | str | None, site: ast.AST) -> None:
        self.sources.setdefault(name, []).append(source)
        self.sites.setdefault(name, []).append(site)

    def _targets(self, target: ast.AST, value: ast.AST | None) -> None:
        if isinstance(target, ast.Name):
            self._add(target.id, value, target)
        elif isinstance(target, ast.Attribute):
            self.own_attrs.add(target.attr)
            if value is not None:
                self.layer_attrs.setdefault(target.attr, []).append(value)
        elif isinstance(target, ast.Tuple | ast.List | ast.Starred):
            for name in ast.walk(target):
                if isinstance(name, ast.Name | ast.Attribute) and name is not target:
                    self._targets(name, None)

    def _bind(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                self._add(a.asname or a.name.split(".")[0],
                          a.name if a.asname else a.name.split(".")[0], node)
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                self._add(a.asname or a.name, f"{node.module}.{a.name}", node)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                self._targets(target, node.value)
        elif isinstance(node, ast.AnnAssign | ast.NamedExpr):
            self._targets(node.target, node.value)
        elif isinstance(node, ast.AugAssign | ast.For | ast.AsyncFor | ast.comprehension):
            self._targets(node.target, None)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            self._targets(node.optional_vars, None)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                self._targets(target, None)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            self._add(node.name, None, node)
        elif isinstance(node, ast.arg):
            self._add(node.arg, None, node)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            for name in node.names:
                self._add(name, None, node)
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            self._add(node.name, None, node)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            self._add(node.rest, None, node)
        elif isinstance(node, _FUNCTION):
            self._add(node.name, None, node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                node.func.attr in {"register_buffer", "register_parameter", "add_module"}):
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                self.own_attrs.add(first.value)  # self.register_buffer("boundaries", ...)
        elif isinstance(node, ast.ClassDef):
            self._add(node.name, None, node)
            self.classes[node.name] = node
            for stmt in node.body:
                if isinstance(stmt, _FUNCTION | ast.ClassDef):
                    self.own_attrs.add(stmt.name)
                for target in (stmt.targets if isinstance(stmt, ast.Assign) else
                               [stmt.target] if isinstance(stmt, ast.AnnAssign) else []):
                    for bound in ast.walk(target):
                        if isinstance(bound, ast.Name):
                            self.own_attrs.add(bound.id)


class _Visitor(ast.NodeVisitor):
    def __init__(self, nodes: list[ast.AST], allowed_ops: set[str], allow_cpp: bool) -> None:
        self.findings: list[StaticFinding] = []
        self.ops = allowed_ops
        self.allow_cpp = allow_cpp
        self.b = _Bindings(nodes)
        self.imported = {name for name, sources in self.b.sources.items()
                         if sources and all(isinstance(s, str) for s in sources)}
        self._resolved: dict[str, str | None] = {}
        self._resolving: set[str] = set()
        self.jit, self.constexpr_fns = jit_functions(nodes, self.resolve)
        self.jit_bodies = {id(fn) for fn in self.jit.values()}
        self.module_classes = self._module_classes()
        self._called: set[int] = set()
        self._refused: set[int] = set()  # attribute chains already refused
        self._where = ""
        self._in_init = 0
        self._in_jit = 0
        self._in_annotation = 0
        self._selves: list[str | None] = [None]
        self._methods: dict[int, ast.ClassDef] = {}
        self._check_rebound_imports()

    # -- plumbing --------------------------------------------------------------------------------
    def refuse(self, node: ast.AST, rule: str, message: str, kind: str = "cheat") -> None:
        line = getattr(node, "lineno", 0)
        self.findings.append(StaticFinding(kind, line, self._where + message, rule))

    def resolve(self, node: ast.AST) -> str | None:
        """The module path ``node`` stands for (``torch.nn.functional.conv2d``), with ``()`` for
        the result of calling one (``torch.finfo()``), or None for any other value."""
        if isinstance(node, ast.Name):
            return self._resolve_name(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return None if base is None else f"{base}.{node.attr}"
        if isinstance(node, ast.Call):
            base = self.resolve(node.func)
            return None if base is None or base.endswith("()") else base + "()"
        return None

    def _resolve_name(self, name: str) -> str | None:
        if name in self._resolved:
            return self._resolved[name]
        if name in self._resolving:
            return None
        self._resolving.add(name)
        paths = {s if isinstance(s, str) or s is None else self.resolve(s)
                 for s in self.b.sources.get(name, [None])}
        self._resolving.discard(name)
        path = paths.pop() if len(paths) == 1 else None
        self._resolved[name] = path
        return path

    def _module_classes(self) -> set[str]:
        """The candidate's classes that are nn.Modules (derive from torch.nn.* or from one)."""
        out: set[str] = set()
        changed = True
        while changed:
            changed = False
            for name, cls in self.b.classes.items():
                if name in out:
                    continue
                for base in cls.bases:
                    path = self.resolve(base) or ""
                    if path.startswith("torch.nn.") or path in out:
                        out.add(name)
                        changed = True
                        break
        return out

    def _check_rebound_imports(self) -> None:
        """A name an import binds is bound by that import only: rebound (``for torch in ...``,
        a parameter named ``tl``), it would no longer resolve, and what is reached from it would
        be read as a value's."""
        for name, sources in self.b.sources.items():
            if any(isinstance(s, str) for s in sources) and self._resolve_name(name) is None:
                first = next(i for i, s in enumerate(sources) if isinstance(s, str))
                for i, site in enumerate(self.b.sites[name]):
                    if i != first:
                        self.refuse(site, "module-value",
                                    f"{name} is imported and bound again here: a name an "
                                    f"import binds stays that module; use another name")

    @property
    def _self(self) -> str | None:
        return self._selves[-1]

    def _is_self(self, node: ast.AST | None) -> bool:
        return isinstance(node, ast.Name) and self._self is not None and node.id == self._self

    # -- imports ---------------------------------------------------------------------------------
    def _check_import(self, node: ast.AST, name: str) -> bool:
        if name in al.ALLOWED_IMPORTS or (self.allow_cpp and name in al.CPP_IMPORTS):
            return True
        if name in al.CPP_IMPORTS:
            self.refuse(node, "cpp-disabled", f"import of {name!r} is not allowed: " + _CPP_OFF)
        else:
            self.refuse(node, "import", f"import of {name!r} is not allowed: a candidate may "
                                        f"import only {_IMPORTS_TEXT}")
        return False

    def _in_class_body(self, node: ast.AST) -> bool:
        if isinstance(self.b.parents.get(id(node)), ast.ClassDef):
            self.refuse(node, "module-value", "an import in a class body makes the module a "
                                              "class attribute, read as a value's; import at "
                                              "the top of the module")
            return True
        return False

    def visit_Import(self, node: ast.Import) -> None:
        if self._in_class_body(node):
            return
        for alias in node.names:
            self._check_import(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if self._in_class_body(node):
            return
        if node.level:
            self.refuse(node, "import", "relative imports are not allowed: a candidate is "
                                        "self-contained")
            return
        module = node.module or ""
        if not self._check_import(node, module):
            return
        for alias in node.names:
            if alias.name == "*":
                self.refuse(node, "import", f"'from {module} import *' hides what the candidate "
                                            f"uses; import names one by one")
            elif not self._check_attr_name(node, alias.name, None):
                self._check_path(node, f"{module}.{alias.name}", anywhere=True)

    # -- module paths ----------------------------------------------------------------------------
    def _module_names(self, module: str) -> frozenset[str] | None:
        """The names listed under ``module``, or None when it is not a module of the list."""
        if module.startswith("triton.language"):
            tl = al.triton_language_names()
            if module in tl:
                return tl[module]
        names = al.MODULE_NAMES.get(module)
        if names is None and module in al.CONSTRUCTOR_NAMES:
            names = frozenset()  # torch.nn.init: constructor names only
        if module.startswith("torch.utils") and not self.allow_cpp:
            return None if names is None else frozenset()  # cpp_extension with CUDA C++ only
        return names

    def _check_path(self, node: ast.AST, path: str, anywhere: bool = False) -> None:
        """``path`` (``module.name``) against the list for its module; ``anywhere``: at an
        import, where names used only in constructors are fine too."""
        module, _, name = path.rpartition(".")
        if not module:
            return
        names = self._module_names(module)
        if names is None:
            # an attribute of a listed class, function or dtype (torch.float32.itemsize)
            if name in al.CLASS_NAMES.get(module, ()) or (
                    module.startswith("triton.language.") and not name.startswith("_")
                    and name != "handle"):
                return  # also tl.PropagateNan.ALL, tl.float32.primitive_bitwidth
            self._check_value_name(node, name, None, owner=module)
            return
        if name in names:
            return
        if name in al.CONSTRUCTOR_NAMES.get(module, ()) or (
                module == "torch.nn" and name in al.torch_layer_names()):
            if not (anywhere or self._in_init or self._in_annotation):
                why = (f" ({_FROM_HOST})" if name in {"tensor", "as_tensor"} else "")
                self.refuse(node, "constructor-only",
                            f"{path} is allowed only in an __init__, where a candidate keeps the "
                            f"reference's constructor (layers hold parameters; factories make "
                            f"them){why}; in the forward allocate with torch.empty and compute "
                            f"with a Triton kernel")
            return
        if module in {"torch", "torch.nn.functional"} and name in self.ops:
            return
        cpp = not self.allow_cpp and (path == "torch.utils"
                                      or path.startswith("torch.utils.cpp_extension"))
        self.refuse(node, "cpp-disabled" if cpp else "module-attribute",
                    self._module_message(path, module))

    def _module_message(self, path: str, module: str) -> str:
        why = next((w for p, w in _WHY.items() if path == p or path.startswith(p + ".")), None)
        if path.rsplit(".", 1)[-1] in _GADGETS - {"modules"}:
            why = "it leads from an allowed module to the interpreter and the harness"
        if path == "torch.utils" or path.startswith("torch.utils.cpp_extension"):
            why = _CPP_OFF if not self.allow_cpp else why
        if module.startswith("torch"):
            allowed = ", ".join(sorted(self.ops)) or "none for this problem"
            hint = (f"from torch a candidate may allocate (torch.empty, empty_like, zeros...), "
                    f"view and move memory (view, reshape, permute, cat...), name dtypes and "
                    f"devices and query them, keep nn.Module plumbing, and call the library "
                    f"ops the user allowed ({allowed}); {_COMPUTE}")
        elif module.startswith("triton"):
            hint = ("from triton a candidate uses jit, autotune, heuristics, Config, cdiv, "
                    "next_power_of_2, reinterpret, triton.language (tl.*) and TensorDescriptor")
        else:
            listed = sorted(self._module_names(module) or ())
            hint = (f"from {module} a candidate may use {', '.join(listed)}" if listed
                    else f"nothing from {module} is allowed")
        return (f"{path} is not in the candidate allowlist"
                + (f" ({why})" if why else "") + f": {hint}")

    # -- names on values -------------------------------------------------------------------------
    def _check_attr_name(self, node: ast.AST, attr: str, receiver: ast.AST | None) -> bool:
        """The dunder and private rules; True when ``attr`` was refused."""
        if _is_dunder(attr):
            if attr not in al.ALLOWED_DUNDERS:
                self.refuse(node, "dunder", f"access to {attr} is not allowed: dunder attributes "
                                            f"lead out of the candidate (classes, frames, "
                                            f"globals, modules); a candidate reads only "
                                            f"{', '.join(sorted(al.ALLOWED_DUNDERS))}")
                return True
        elif attr.startswith("_") and not (self._is_self(receiver) and attr in self.b.own_attrs):
            self.refuse(node, "private", f"access to the private attribute {attr} is not "
                                         f"allowed: it reaches into library internals (a "
                                         f"candidate's own private names are read on self)")
            return True
        return False

    def _check_value_name(self, node: ast.AST, attr: str, receiver: ast.AST | None,
                          owner: str | None = None) -> None:
        """``receiver.attr`` where the receiver is a value (or a listed class: ``owner``)."""
        if _is_dunder(attr) or (attr.startswith("_") and self._is_self(receiver)):
            return  # the dunder and private rules decided
        if self._in_jit:
            if attr not in al.jit_value_names():
                why = _WHY_VALUE.get(attr, "it is not in Triton's tensor, dtype or pointer API")
                self.refuse(node, "value-attribute", f".{attr} is not allowed in a @triton.jit "
                                                     f"body: {why}")
            return
        tensor_names = al.tensor_attribute_names()
        if attr in al.TENSOR_NAMES | al.PYTHON_NAMES | al.MODULE_STATE_NAMES | self.ops:
            return
        # a class or function from a module, or a layer: its names are the library's
        library = owner is not None or self._layer(receiver) is not None
        if attr in self.b.own_attrs and attr not in al.RUNTIME_NAMES and not library:
            if self._is_self(receiver):
                return
            if isinstance(receiver, ast.Name) and receiver.id in self.b.classes and any(
                    isinstance(s, _FUNCTION) and s.name == attr
                    for s in self.b.classes[receiver.id].body):
                self.refuse(node, "value-attribute",
                            f"{receiver.id}.{attr} reaches a method through its class, where "
                            f"any value can be passed as self; call it through self")
                return
            if attr not in tensor_names:
                return
        where = f"{owner}.{attr}" if owner else f".{attr}"
        if attr in _WHY_VALUE:
            why = _WHY_VALUE[attr]
        elif attr in tensor_names:
            why = (f"on a tensor it computes (a candidate's forward may only allocate, view, "
                   f"copy, cast or describe memory with torch); {_COMPUTE}")
        else:
            why = ("it is neither a tensor's allocation, view or metadata name, a Python "
                   "container's method, a layer's parameter or setting, nor a name the "
                   "candidate defines")
        self.refuse(node, "value-attribute", f"{where} is not in the candidate allowlist: {why}")

    def _layer(self, node: ast.AST | None) -> str | None:
        """The torch.nn layer class ``node`` holds (``self.conv`` after
        ``self.conv = nn.Conv2d(...)``; an element of an ``nn.ModuleList``), else None."""
        if isinstance(node, ast.Subscript):
            node = node.value
        if not isinstance(node, ast.Attribute) or self.resolve(node) is not None:
            return None  # F.linear is torch's function, whatever self.linear holds
        for value in self.b.layer_attrs.get(node.attr, []):
            path = self.resolve(value.func) if isinstance(value, ast.Call) else None
            if path and path.startswith("torch.nn.") and (
                    path.rsplit(".", 1)[-1] in al.torch_layer_names()):
                return path
        return None

    # -- visits ----------------------------------------------------------------------------------
    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.visit(node.value)
        if id(node.value) in self._refused:
            self._refused.add(id(node))  # one finding per chain: torch.utils._mode_utils.x
            return
        before = len(self.findings)
        attr = node.attr
        if isinstance(node.ctx, ast.Store | ast.Del):
            self._check_store(node)
        elif not self._check_attr_name(node, attr, node.value):
            receiver = self.resolve(node.value)
            if receiver is None:
                self._check_value_name(node, attr, node.value)
            elif receiver.endswith("()"):
                function = receiver[:-2]
                if not (function in al.OPEN_RESULTS
                        or attr in al.RETURN_NAMES.get(function, ())):
                    self._check_value_name(node, attr, node.value)
            else:
                self._check_path(node, f"{receiver}.{attr}")
                self._check_module_value(node, f"{receiver}.{attr}")
                self._check_load_inline_called(node, f"{receiver}.{attr}")
        if len(self.findings) > before:
            self._refused.add(id(node))

    def _check_load_inline_called(self, node: ast.AST, path: str) -> None:
        if path == "torch.utils.cpp_extension.load_inline" and id(node) not in self._called:
            self.refuse(node, "cpp-source", "load_inline must be called by name, so that its "
                                            "sources can be checked")

    def _check_module_value(self, node: ast.AST, path: str) -> None:
        """A module is used by name only (``torch.empty``, ``T = torch``): as a value (an
        argument, an element, ``torch if c else x``, a name also bound to something else) the
        names reached from it would be read as a value's, past the lists by module."""
        if self._module_names(path) is None:
            return
        parent = self.b.parents.get(id(node))
        if isinstance(parent, ast.Attribute) and parent.value is node:
            return
        if (isinstance(parent, ast.Call) and parent.args and parent.args[0] is node
                and isinstance(parent.func, ast.Name) and parent.func.id in {"getattr",
                                                                            "hasattr"}):
            return
        if isinstance(parent, ast.Assign | ast.AnnAssign) and parent.value is node and all(
                isinstance(t, ast.Name) and self.resolve(t) == path
                for t in (parent.targets if isinstance(parent, ast.Assign) else
                          [parent.target])) and not isinstance(
                    self.b.parents.get(id(parent)), ast.ClassDef):
            return  # an alias every binding of the name agrees with (not a class attribute)
        self.refuse(node, "module-value", f"the module {path} is used as a value (passed, "
                                          f"stored or chosen at runtime), where what is reached "
                                          f"from it cannot be checked; use it by name "
                                          f"({path}.name) or bind it once (T = {path})")

    def _check_store(self, node: ast.Attribute) -> None:
        receiver = self.resolve(node.value)
        path = f"{receiver}.{node.attr}" if receiver else ast.unparse(node)
        if receiver is not None and not receiver.endswith("()"):
            self.refuse(node, "patch", f"assigning to {path} patches a library the harness "
                                       f"relies on; keep state on self")
        elif _is_dunder(node.attr):
            self.refuse(node, "dunder", f"assigning {node.attr} is not allowed: dunder "
                                        f"attributes lead out of the candidate")
        elif node.attr in ("data", "grad"):
            self.refuse(node, "storage-rebind", f"assigning {ast.unparse(node)} rebinds a tensor "
                                                f"to other memory, past the checks that outputs "
                                                f"are new and inputs and weights unchanged: "
                                                f"allocate each output anew and leave inputs and "
                                                f"weights where they are")
        elif node.attr in al.module_attribute_names() - {"training"} or node.attr == "forward":
            self.refuse(node, "module-override", f"assigning {ast.unparse(node)} replaces "
                                                 f"nn.Module's {node.attr}: {_OVERRIDE}")

    def visit_Name(self, node: ast.Name) -> None:
        name = node.id
        if isinstance(node.ctx, ast.Load):
            bound = name in self.b.sources
            if _is_dunder(name):
                if name not in al.ALLOWED_DUNDERS:
                    why = _WHY_BUILTIN.get(name, "it leads out of the candidate")
                    self.refuse(node, "dunder", f"access to {name} is not allowed: {why}")
            elif not bound and name in vars(builtins) and name not in al.ALLOWED_BUILTINS:
                why = _WHY_BUILTIN.get(name, "it is not among the builtins a candidate uses")
                self.refuse(node, "builtin", f"{name}() is not allowed in a candidate: {why}")
            elif not bound and name in {"getattr", "hasattr"} and id(node) not in self._called:
                # functools.reduce(getattr, ("sys", "modules"), typing), map(getattr, ...)
                self.refuse(node, "computed-name", f"{name} passed as a value is called with "
                                                   f"names the check cannot read: "
                                                   f"{_COMPUTED_NAME}")
            path = self.resolve(node) if bound else None
            if path is not None and "()" not in path:
                self._check_module_value(node, path)
            if path is not None and "." in path and "()" not in path:
                self._check_path(node, path)
                self._check_load_inline_called(node, path)
        elif _is_dunder(name) and name not in al.DEFINABLE_DUNDERS:
            self.refuse(node, "dunder", f"defining {name} is not allowed in a candidate: "
                                        f"{_dunder_why(name)}")
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        # Module-level state written from forward is how results get memoized across calls.
        self.refuse(node, "global-state", f"'global {', '.join(node.names)}' is not allowed: a "
                                          f"forward must not keep results between calls")

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            self._check_base(node, base)
        for keyword in node.keywords:
            self.refuse(node, "class-base", f"class {node.name}: '{keyword.arg}=' is not "
                                            f"allowed: a metaclass builds classes the check "
                                            f"cannot read")
        module = node.name in self.module_classes
        for stmt in node.body:
            if isinstance(stmt, _FUNCTION):
                self._methods[id(stmt)] = node
            names = ([stmt.name] if isinstance(stmt, _FUNCTION) else
                     [t.id for s in (stmt.targets if isinstance(stmt, ast.Assign) else
                                     [stmt.target] if isinstance(stmt, ast.AnnAssign) else [])
                      for t in ast.walk(s) if isinstance(t, ast.Name)])
            for name in names:
                if module and name in al.module_attribute_names() - {"__init__", "forward"}:
                    self.refuse(stmt, "module-override",
                                f"{node.name}.{name} replaces nn.Module's {name}: {_OVERRIDE}")
        self.generic_visit(node)

    def _check_base(self, node: ast.ClassDef, base: ast.expr) -> None:
        """A base is a named class: one the candidate defines, a builtin, or one it imports that
        is not a tensor or runtime type. A computed base could be any of those."""
        path = self.resolve(base.value if isinstance(base, ast.Subscript) else base)
        if path is None and isinstance(base, ast.Name) and base.id in self.b.classes:
            return
        if isinstance(base, ast.Name) and base.id == "type" and "type" not in self.b.sources:
            path = "type"
        if path is None and isinstance(base, ast.Name) and base.id in _BUILTIN_CLASSES and (
                base.id not in self.b.sources):
            path = base.id
        if path is None or "()" in path:
            self.refuse(node, "class-base", f"class {node.name} derives from a computed base "
                                            f"({ast.unparse(base)}): bases must be named "
                                            f"classes, such as nn.Module")
            return
        if path == "type":
            self.refuse(node, "class-base", f"class {node.name} is a metaclass: it builds "
                                            f"classes the check cannot read")
        elif path.rsplit(".", 1)[-1] in _TENSOR_TYPES:
            self.refuse(node, "class-base", f"subclassing {path} is not allowed: a candidate "
                                            f"defines modules, not new tensor or runtime "
                                            f"types; {_DISPATCH}")
        elif path.split(".")[0] == "torch" and path not in _MODULE_BASES:
            self.refuse(node, "class-base", f"subclassing {path} is not allowed: a candidate "
                                            f"derives from nn.Module (or nn.ModuleList, "
                                            f"nn.ModuleDict), not from a layer whose methods "
                                            f"compute")

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        cls = self._methods.get(id(node))
        if _is_dunder(node.name) and (node.name not in al.DEFINABLE_DUNDERS or (
                node.name == "__call__" and cls is not None and cls.name in self.module_classes)):
            self.refuse(node, "dunder", f"defining {node.name} is not allowed in a candidate: "
                                        f"{_dunder_why(node.name)}")
        for decorator in node.decorator_list:
            self.visit(decorator)
        self._check_annotation(node.returns)
        self._enter_function(node, cls)
        init = node.name == "__init__"
        jit = id(node) in self.jit_bodies
        self._in_init += init
        self._in_jit += jit
        try:
            self.visit(node.args)
            for stmt in node.body:
                self.visit(stmt)
        finally:
            self._in_init -= init
            self._in_jit -= jit
            self._selves.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._enter_function(node, None)
        try:
            self.generic_visit(node)
        finally:
            self._selves.pop()

    def _enter_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
                        cls: ast.ClassDef | None) -> None:
        """Push the name ``self`` has in this function: a method's first parameter (unless
        rebound), inherited by closures that do not rebind it."""
        params = [*node.args.posonlyargs, *node.args.args]
        names = {p.arg for p in [*params, *node.args.kwonlyargs, node.args.vararg,
                                 node.args.kwarg] if p is not None}
        static = isinstance(node, _FUNCTION) and any(
            isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)
        if cls is not None:
            first = params[0].arg if params and not static else None
            rebound = first is not None and any(
                isinstance(n, ast.Name) and n.id == first and not isinstance(n.ctx, ast.Load)
                for n in ast.walk(node) if n is not node)
            self._selves.append(None if rebound else first)
        else:
            self._selves.append(None if self._self in names else self._self)

    def visit_Call(self, node: ast.Call) -> None:
        self._called.add(id(node.func))
        func = node.func
        if isinstance(func, ast.Name) and func.id in {"getattr", "hasattr"} and (
                func.id not in self.b.sources):
            name = node.args[1] if len(node.args) > 1 else None
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                self.refuse(node, "computed-name", f"{func.id}() needs a literal attribute "
                                                   f"name: {_COMPUTED_NAME}")
            elif node.args and not self._check_attr_name(node, name.value, node.args[0]):
                self.visit(ast.copy_location(
                    ast.Attribute(value=node.args[0], attr=name.value, ctx=ast.Load()), node))
        if isinstance(func, ast.Name) and func.id == "super" and len(node.args) == 2 and not (
                self._is_self(node.args[1])):
            self.refuse(node, "value-attribute", "super() with a second argument other than "
                                                 "self binds methods to any value; write super()")
        path = self.resolve(func)
        if path in al.NOT_CALLABLE:
            self.refuse(node, "host-data", f"{path}(...) is not allowed in a candidate: "
                                           f"{_FROM_HOST}")
        elif path == "torch.utils.cpp_extension.load_inline":
            self._check_load_inline(node)
        self._check_layer_call(node)
        self.generic_visit(node)

    def _check_layer_call(self, node: ast.Call) -> None:
        """``self.conv(x)`` where ``self.conv = nn.Conv2d(...)``: the library's convolution."""
        path = self._layer(node.func)
        op = al.layer_op(path.rsplit(".", 1)[-1]) if path else None
        if path is not None and op not in self.ops:
            func = node.func.value if isinstance(node.func, ast.Subscript) else node.func
            self.refuse(node, "library-module-call",
                        f"calling {ast.unparse(func)} runs {path} ({op}), a library op the user "
                        f"has not allowed: a candidate keeps the reference's layers as parameter "
                        f"holders (read {ast.unparse(func)}.weight) and computes with a Triton "
                        f"kernel (or the user allows it: --allow-op {op})")

    def _check_load_inline(self, node: ast.Call) -> None:
        keywords = {k.arg or "**": k.value for k in node.keywords}
        for name in sorted(k for k in keywords if k not in _CPP_KEYWORDS):
            self.refuse(node, "cpp-source", f"load_inline's {name}= is not allowed (it reaches "
                                            f"files, libraries or flags past the check); pass "
                                            f"name, cpp_sources, cuda_sources, functions")
        positional = ["name", "cpp_sources", "cuda_sources", "functions"]
        args = {**dict(zip(positional, node.args, strict=False)), **keywords}
        cuda: list[str] = []
        texts: list[str] = []
        for key in ("cpp_sources", "cuda_sources"):
            if key not in args:
                continue
            given = self._literal_texts(args[key])
            if given is None:
                self.refuse(node, "cpp-source", f"load_inline's {key} must be literal strings "
                                                f"(or names bound once to them), so that the "
                                                f"C++ can be checked")
                continue
            texts += given
            if key == "cuda_sources":
                cuda = given
        check_cpp(texts, self.ops, al.tensor_attribute_names(),
                  lambda rule, message: self.refuse(node, rule, message))
        if not any("__global__" in text for text in cuda):
            self.refuse(node, "cpp-source", "an extension must launch a CUDA kernel: pass "
                                            "cuda_sources with a __global__ function (host C++ "
                                            "computes where no kernel runs)")
        for key in ("extra_cflags", "extra_cuda_cflags"):
            flags = self._literal_texts(args[key]) if key in args else []
            for flag in flags if flags is not None else [None]:
                if flag is None or not _CPP_FLAG.fullmatch(flag):
                    self.refuse(node, "cpp-source", f"load_inline's {key} holds {flag!r}, which "
                                                    f"is not among the optimization and "
                                                    f"architecture flags a kernel may set")

    def _literal_texts(self, node: ast.AST) -> list[str] | None:
        """The strings ``node`` spells: a literal, a list or tuple of them, or a name bound (only)
        to one; None for anything else."""
        if isinstance(node, ast.List | ast.Tuple):
            parts = [self._literal_texts(e) for e in node.elts]
            return None if any(p is None for p in parts) else [t for p in parts if p for t in p]
        if isinstance(node, ast.Name):
            sources = self.b.sources.get(node.id, [])
            if len(sources) != 1 or not isinstance(sources[0], ast.AST):
                return None
            return self._literal_texts(sources[0])
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self._literal_texts(node.left), self._literal_texts(node.right)
            if left is None or right is None or len(left) != 1 or len(right) != 1:
                return None
            return [left[0] + right[0]]
        text = _literal_str(node)
        return None if text is None else [text]

    # -- annotations -----------------------------------------------------------------------------
    def _check_annotation(self, annotation: ast.AST | None) -> None:
        """String annotations are code: ``typing.get_type_hints`` and ``functools.singledispatch``
        evaluate them. Each is checked like the source around it."""
        if annotation is None:
            return
        self._in_annotation += 1
        try:
            self.visit(annotation)
        finally:
            self._in_annotation -= 1
        for const in ast.walk(annotation):
            if not (isinstance(const, ast.Constant) and isinstance(const.value, str)):
                continue
            try:
                code = parse(const.value.strip(), mode="eval")
            except SyntaxError:
                continue  # not an expression: nothing can evaluate it
            ast.increment_lineno(code, const.lineno - 1)
            where, self._where = self._where, "in a string annotation: "
            self.visit(code)
            self._where = where

    def visit_arg(self, node: ast.arg) -> None:
        self._check_annotation(node.annotation)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._check_annotation(node.annotation)
        self.visit(node.target)
        if node.value is not None:
            self.visit(node.value)


_CPP_OFF = ("CUDA C++ (torch.utils.cpp_extension) is enabled only on the cuda target; write the "
            "kernel in Triton")
_OVERRIDE = ("the harness calls nn.Module's methods (load_state_dict, state_dict, __call__, to) "
             "outside the recorded forward; a module defines __init__, forward and helpers of "
             "its own names")
_IMPORTS_TEXT = ", ".join(sorted(al.ALLOWED_IMPORTS - {"__future__"}))


def _dunder_why(name: str) -> str:
    if name in {"__torch_dispatch__", "__torch_function__"}:
        return _DISPATCH
    if name == "__del__":
        return "a finalizer runs candidate code outside the forward, where nothing records it"
    return (f"dunder methods run candidate code inside the harness and the interpreter; a "
            f"candidate defines only {', '.join(sorted(al.DEFINABLE_DUNDERS))}")


def _expand(ops: Iterable[str]) -> set[str]:
    """The names allowing the library ops ``ops`` permits (the runtime guard's aliases:
    ``linear`` permits ``addmm`` and ``mm`` too)."""
    names = set(ops)
    if not names:
        return names
    from .guard import expand_allowed

    return names | expand_allowed(names)


def jit_function_names(source: str) -> set[str]:
    """The names of the candidate's Triton functions, as the static check finds them
    (``static_jit.jit_functions``: decorated, or passed to ``triton.jit``, however imported)."""
    try:
        tree = parse(source)
    except SyntaxError:
        return set()
    return set(_Visitor(list(ast.walk(tree)), set(), True).jit)


def check_source(source: str, allowed_ops: list[str] | tuple[str, ...] = (),
                 allow_cpp: bool = True) -> list[StaticFinding]:
    """Every static reason to refuse ``source``; an empty list means it may run.

    ``allowed_ops``: library ops the user allows (``["conv2d"]``). ``allow_cpp``: whether CUDA C++
    through ``torch.utils.cpp_extension.load_inline`` is enabled (the cuda target).
    """
    try:
        tree = parse(source)
    except SyntaxError as exc:
        return [StaticFinding("contract", exc.lineno or 0, f"syntax error: {exc.msg}", "syntax")]
    visitor = _Visitor(list(ast.walk(tree)), _expand(allowed_ops), allow_cpp)
    visitor.visit(tree)
    Kernels(tree, visitor, visitor.jit, visitor.constexpr_fns).check()
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    if "ModelNew" not in classes:
        visitor.findings.insert(0, StaticFinding(
            "contract", 0, "the candidate defines no top-level class ModelNew(nn.Module)",
            "model-new"))
    unique = {(f.kind, f.line, f.message): f for f in visitor.findings}
    return list(unique.values())
