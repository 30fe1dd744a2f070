"""Static (AST) checks of a candidate source: the cheap first stage of the cascade.

A candidate is untrusted code. Before it runs, this stage refuses sources that do not meet the
contract (no ``ModelNew``; a ``@triton.jit`` body a compiled Triton would refuse) or that reach
for the known ways to cheat: torch or another library doing the work, Python computing on tensor
data on the host, tensor subclasses and dispatch overrides that run torch ops the op recorder
cannot see, other streams or threads, the harness's timers, the RNG that makes the inputs, the
reference, or the interpreter's internals.

Attribute access must be written out. Every way to reach an attribute by a computed name
(``getattr`` with a non-literal name or passed around as a value, ``operator.attrgetter`` and
``methodcaller``, evaluated string annotations, ``vars()``, ``__dict__``, ``__getattribute__``)
is refused: such names are how every other rule here would be walked around.

A ``@triton.jit`` body may use only what compiled Triton accepts: ``tl.*``, other jit (or
``triton.constexpr_function``) functions of the candidate, the few Python builtins Triton's code
generator knows, its arguments and ``tl.constexpr`` globals. Triton's interpreter (the cpu and
mtia-sim targets) would run anything else as plain Python on its numpy buffers, so a kernel
could compute there in ways no GPU compiles and no check sees.

The runtime guard (guard.py) backs these up. Stdlib only: runs in the parent and in workers.
"""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass

from kernelevolve.pyparse import parse

# Modules a candidate may import: the kernel languages and harmless helpers.
ALLOWED_MODULES = {
    "torch", "triton", "math", "typing", "functools", "dataclasses", "itertools",
    "collections", "enum", "__future__", "operator",
}
# Submodules of allowed packages that reach past the contract.
FORBIDDEN_MODULE_PREFIXES = (
    "torch._C", "torch._dynamo", "torch._inductor", "torch.utils._python_dispatch",
    "torch.overrides", "torch.library", "torch.jit", "torch.compiler", "torch.multiprocessing",
    "torch.distributed", "torch.cuda.graphs", "triton.runtime", "triton.testing",
    "triton.compiler", "triton.knobs",
)
_HOST = ("it computes on the host instead of in a kernel (Python math on tensor data is "
         "invisible to the op recorder); compute with a Triton kernel")
_FROM_HOST = ("it builds a tensor from data Python computed on the host, where no check sees "
              "it; allocate with torch.empty and compute with a Triton kernel")
_COMPUTED_NAME = ("a computed attribute name hides what the candidate reaches for (the "
                  "interpreter, the harness, library internals); write the attribute access out")
_EVALUATES = "it evaluates strings as code, which the static check cannot read"
_DISPATCH = ("torch ops it runs are hidden from the op recorder (a tensor subclass's or dispatch "
             "override's handler runs them unrecorded); compute with a Triton kernel")
# Attribute paths (resolved through import aliases) and why each is refused.
FORBIDDEN_ATTRS: dict[str, str] = {
    "torch.compile": "torch.compile does the work with torch's own kernels",
    "torch.jit": "TorchScript does the work with torch's own kernels",
    "torch.cuda.Stream": "work on other streams escapes the timer",
    "torch.cuda.stream": "work on other streams escapes the timer",
    "torch.cuda.set_stream": "work on other streams escapes the timer",
    "torch.cuda.ExternalStream": "work on other streams escapes the timer",
    "torch.cuda.Event": "candidates must not touch the harness's timing events",
    "torch.cuda.CUDAGraph": "graph capture replays stale pointers and hides work from the timer",
    "torch.cuda.graph": "graph capture replays stale pointers and hides work from the timer",
    "torch.manual_seed": "the RNG that makes the inputs is off limits",
    "torch.seed": "the RNG that makes the inputs is off limits",
    "torch.set_rng_state": "the RNG that makes the inputs is off limits",
    "torch.get_rng_state": "the RNG that makes the inputs is off limits",
    "torch.random": "the RNG that makes the inputs is off limits",
    "torch.cuda.manual_seed": "the RNG that makes the inputs is off limits",
    "torch.cuda.set_rng_state": "the RNG that makes the inputs is off limits",
    "torch.backends": "global backend switches change the reference too",
    "torch.set_default_dtype": "global switches change the reference too",
    "torch.utils.cpp_extension.load": "only load_inline sources are allowed (they can be checked)",
    "torch.hub": "nothing may be fetched",
    "torch.save": "no files", "torch.load": "no files", "torch.serialization": "no files",
    "torch.autograd.Function": "autograd plumbing is not needed for a forward kernel",
    "torch.initial_seed": "the RNG that makes the inputs is off limits",
    "torch.cuda.initial_seed": "the RNG that makes the inputs is off limits",
    "torch.set_default_tensor_type": "global switches change the reference too",
    "torch.set_default_device": "global switches change the reference too",
    "torch.use_deterministic_algorithms": "global switches change the reference too",
    "torch.set_flush_denormal": "global switches change the reference too",
    "torch.set_grad_enabled": "global switches change the reference too",
    **{path: _FROM_HOST for path in (
        "torch.from_numpy", "torch.tensor", "torch.as_tensor", "torch.asarray",
        "torch.frombuffer", "torch.from_dlpack", "torch.utils.dlpack")},
    "operator.attrgetter": _COMPUTED_NAME,
    "operator.methodcaller": _COMPUTED_NAME,
    "typing.get_type_hints": _EVALUATES + " (string annotations)",
    "typing.ForwardRef": _EVALUATES + " (string annotations)",
}
# torch.FloatTensor(data), torch.cuda.HalfTensor(data), ...: legacy constructors from host data.
_LEGACY_CONSTRUCTOR = re.compile(r"torch\.(?:cuda\.)?[A-Z]\w*Tensor")
# Attribute names that lead from allowed modules to the interpreter (``torch.sys``,
# ``dataclasses.sys.modules``) or compute on the host instead of in a kernel.
FORBIDDEN_ATTR_NAMES: dict[str, str] = {
    **{name: "it leads from an allowed module to the interpreter and the harness"
       for name in ("sys", "os", "builtins", "importlib", "inspect", "modules", "gc",
                    "subprocess", "ctypes", "threading", "multiprocessing", "_thread")},
    **{name: _HOST
       for name in ("tolist", "numpy", "item", "apply_", "map_", "map2_", "untyped_storage",
                    "storage", "data_ptr_to_host")},
    "new_tensor": _FROM_HOST,
    # The only bridge from a Triton value to the numpy array behind it in the interpreter.
    "handle": ("it is the interpreter's buffer behind a Triton value: code that edits it runs "
               "only in the interpreter, as Python; compute with tl.* operations"),
    **{f"register_module_{hook}": "a global module hook runs on the reference's modules too"
       for hook in ("forward_hook", "forward_pre_hook", "backward_hook", "full_backward_hook",
                    "full_backward_pre_hook", "buffer_registration_hook",
                    "module_registration_hook", "parameter_registration_hook")},
}
_GEMM_OPS = {"mm", "matmul", "linear", "bmm", "addmm"}
# Receivers whose private attributes a candidate may touch (its own module state).
_OWN_RECEIVERS = {"self", "cls"}
FORBIDDEN_BUILTINS = {
    "eval", "exec", "compile", "open", "__import__", "globals", "locals", "vars", "setattr",
    "delattr", "breakpoint", "input", "memoryview", "exit", "quit",
}
# Dunder attributes that lead out of the candidate (frames, globals, class graph).
ALLOWED_DUNDERS = {"__init__", "__name__", "__doc__", "__len__", "__call__", "__future__"}
# Methods whose definition alone hides work: dispatch overrides, and finalizers (they run
# candidate code later, inside the harness, where nothing records it).
_HOOK_DUNDERS = {
    "__torch_dispatch__": _DISPATCH, "__torch_function__": _DISPATCH,
    "__del__": "a finalizer runs candidate code outside the forward, where nothing records it",
}
# Tensor types (torch.nn.Parameter is a Tensor subclass under torch.nn).
_TENSOR_TYPES = {"Tensor", "Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"}
_BUILTIN_CLASSES = {name for name, value in vars(builtins).items()
                    if isinstance(value, type) and not issubclass(value, type)}

# The Python builtins Triton's code generator accepts in a kernel body (its builtin_namespace in
# triton/compiler/code_generator.py; print is device_print, min/max are tl's).
JIT_BUILTINS = frozenset({"range", "len", "list", "float", "int", "isinstance", "getattr",
                          "hasattr", "print", "min", "max"})
# Host-side triton helpers that are ConstexprFunctions (evaluated at compile time in a kernel).
_TRITON_CONSTEXPR_FNS = {"triton.cdiv", "triton.next_power_of_2"}

# CUDA C++ inside load_inline: library calls that would do the work, and other streams.
_CPP_FORBIDDEN = [
    (re.compile(r"\bcublas\w*"), "cuBLAS does the work (allow the library op to use it)"),
    (re.compile(r"\bcudnn\w*"), "cuDNN does the work (allow the library op to use it)"),
    (re.compile(r"\bcudaStreamCreate\w*|\bcudaStreamNonBlocking\b"), "work on other streams"),
    (re.compile(r"\bstd::thread\b|\bpthread_create\b|#\s*include\s*<thread>"), "other threads"),
    (re.compile(r"\bc10::impl\b|\bDispatchKey\w*|\bExcludeDispatchKeyGuard\b|\bAutoDispatch\w*"),
     "dispatcher guards hide ATen calls from the op recorder"),
    (re.compile(r"\.\s*(?:matmul|mm|addmm|bmm|relu|softmax|log_softmax|conv\w*|linear|sum|mean|"
                r"exp|tanh|sigmoid|gelu|mul|add|sub|div|layer_norm)_?\s*\("),
     "ATen compute called as a tensor method from C++ does the work"),
    (re.compile(r"\b(?:at|torch)::(?!empty\b|empty_like\b|empty_strided\b|zeros\b|zeros_like\b|"
                r"Tensor\b|TensorOptions\b|ScalarType\b|k[A-Z]\w*\b|Device\b|DeviceType\b|"
                r"IntArrayRef\b|cuda::getCurrentCUDAStream\b|cuda::CUDAGuard\b|Half\b|BFloat16\b|"
                r"native\b|detail\b|indexing\b|Scalar\b|TensorAccessor\b|"
                r"PackedTensorAccessor\w*\b|RestrictPtrTraits\b|DefaultPtrTraits\b)(\w+)"),
     "ATen/torch compute called from C++ does the work"),
]


@dataclass(frozen=True)
class StaticFinding:
    """One reason to refuse a candidate. ``kind`` is ``contract`` (a compile_error) or ``cheat``."""

    kind: str
    line: int
    message: str


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


def _module_scope(tree: ast.Module) -> list[ast.AST]:
    """The nodes of the module's own scope (not inside functions, classes or lambdas)."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        out.append(node)
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            todo.extend(ast.iter_child_nodes(node))
    return out


class _Visitor(ast.NodeVisitor):
    def __init__(self, allowed_ops: set[str], class_names: set[str]) -> None:
        self.findings: list[StaticFinding] = []
        self.aliases: dict[str, str] = {}
        self.import_roots: set[str] = set()
        self.imported: set[str] = set()  # names bound by import statements
        self.allowed_ops = allowed_ops
        self.class_names = class_names
        self._called: set[int] = set()
        self._where = ""
        # Inside a constructor, building a tensor from Python numbers is how a module makes its
        # parameters (KernelBench's own ``nn.Parameter(torch.tensor(constant))``): no input
        # exists yet to compute on, and load_state_dict overwrites them with the reference's.
        self._in_init = 0

    def _refuse(self, node: ast.AST, message: str, kind: str = "cheat") -> None:
        line = getattr(node, "lineno", 0)
        self.findings.append(StaticFinding(kind, line, self._where + message))

    def _check_module(self, node: ast.AST, name: str) -> None:
        root = name.split(".")[0]
        if root not in ALLOWED_MODULES:
            self._refuse(node, f"import of {name!r} is not allowed (candidates may import "
                               f"{', '.join(sorted(ALLOWED_MODULES - {'__future__'}))})")
        elif any(name == p or name.startswith(p + ".") for p in FORBIDDEN_MODULE_PREFIXES):
            self._refuse(node, f"import of {name!r} is not allowed: it reaches past the contract")
        else:
            self._check_path(node, name)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_module(node, alias.name)
            self.aliases[alias.asname or alias.name.split(".")[0]] = (
                alias.name if alias.asname else alias.name.split(".")[0]
            )
            self.import_roots.add(alias.name.split(".")[0])
            self.imported.add(alias.asname or alias.name.split(".")[0])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self._refuse(node, "relative imports are not allowed: a candidate is self-contained")
            return
        module = node.module or ""
        self._check_module(node, module)
        self.import_roots.add(module.split(".")[0])
        for alias in node.names:
            full = f"{module}.{alias.name}"
            if alias.name == "*":
                self._refuse(node, f"'from {module} import *' hides what the candidate uses")
                continue
            if module != "__future__":
                # ``from dataclasses import sys`` is ``dataclasses.sys``.
                self._check_attr_name(node, alias.name, None)
            self._check_path(node, full)
            if any(full == p or full.startswith(p + ".") for p in FORBIDDEN_MODULE_PREFIXES):
                self._refuse(node, f"import of {full!r} is not allowed: it reaches past the contract")
            self.aliases[alias.asname or alias.name] = full
            self.imported.add(alias.asname or alias.name)

    def _resolve(self, node: ast.AST) -> str | None:
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        base = self.aliases.get(node.id, node.id)
        return ".".join([base, *reversed(parts)])

    def _check_path(self, node: ast.AST, path: str) -> None:
        for bad, why in FORBIDDEN_ATTRS.items():
            if path == bad or path.startswith(bad + "."):
                if why is _FROM_HOST and self._in_init:
                    return
                self._refuse(node, f"{path} is not allowed in a candidate: {why}")
                return
        if any(path == p or path.startswith(p + ".") for p in FORBIDDEN_MODULE_PREFIXES):
            self._refuse(node, f"{path} is not allowed: it reaches past the contract")
        elif (_LEGACY_CONSTRUCTOR.fullmatch(path) and path != "torch.Tensor"
              and not self._in_init):
            self._refuse(node, f"{path} is not allowed in a candidate: {_FROM_HOST}")

    def _check_attr_name(self, node: ast.AST, attr: str, receiver: ast.AST | None) -> None:
        if attr.startswith("__") and attr.endswith("__"):
            if attr not in ALLOWED_DUNDERS:
                self._refuse(node, f"access to {attr} is not allowed: it leads out of the "
                                   f"candidate")
        elif attr.startswith("_") and not (isinstance(receiver, ast.Name)
                                           and receiver.id in _OWN_RECEIVERS):
            self._refuse(node, f"access to the private attribute {attr} is not allowed: it "
                               f"reaches into library internals")
        if attr in FORBIDDEN_ATTR_NAMES:
            self._refuse(node, f".{attr} is not allowed in a candidate: "
                               f"{FORBIDDEN_ATTR_NAMES[attr]}")

    def _check_annotation(self, annotation: ast.AST | None) -> None:
        """String annotations are code: ``typing.get_type_hints`` and ``functools.singledispatch``
        evaluate them. Each is checked like the source around it."""
        if annotation is None:
            return
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
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._check_annotation(node.annotation)
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if node.name in _HOOK_DUNDERS:
            self._refuse(node, f"defining {node.name} is not allowed in a candidate: "
                               f"{_HOOK_DUNDERS[node.name]}")
        self._check_annotation(node.returns)
        init = node.name == "__init__"
        self._in_init += init
        try:
            self.generic_visit(node)
        finally:
            self._in_init -= init

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Assign(self, node: ast.Assign) -> None:
        # ``rng = torch`` makes ``rng.manual_seed`` resolve to ``torch.manual_seed``.
        path = self._resolve(node.value)
        if path is not None:
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.aliases[target.id] = path
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        self._check_attr_name(node, attr, node.value)
        if attr in {"f_back", "f_globals", "f_locals", "gi_frame", "tb_frame", "cr_frame"}:
            self._refuse(node, f"access to {attr} is not allowed: frames lead to the harness")
        path = self._resolve(node)
        if path is not None and isinstance(getattr(node, "ctx", None), ast.Load):
            self._check_path(node, path)
        if path is not None and isinstance(node.ctx, ast.Store | ast.Del):
            root = path.split(".")[0]
            if root in {"torch", "triton", "math"} or root in self.aliases.values():
                self._refuse(node, f"assigning to {path} patches a library the harness relies on")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in FORBIDDEN_BUILTINS:
            self._refuse(node, f"{node.id}() is not allowed in a candidate")
        if node.id == "__builtins__":
            self._refuse(node, "access to __builtins__ is not allowed")
        if node.id in {"getattr", "hasattr"} and id(node) not in self._called:
            # functools.reduce(getattr, ("sys", "modules"), typing), map(getattr, ...), g = getattr
            self._refuse(node, f"{node.id} passed as a value is called with names the check "
                               f"cannot read: {_COMPUTED_NAME}")
        if node.id in _HOOK_DUNDERS and isinstance(node.ctx, ast.Store):
            self._refuse(node, f"defining {node.id} is not allowed in a candidate: "
                               f"{_HOOK_DUNDERS[node.id]}")
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        # Module-level state written from forward is how results get memoized across calls.
        self._refuse(node, f"'global {', '.join(node.names)}' is not allowed: a forward must not "
                           f"keep results between calls")

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            self._check_base(node, base)
        for keyword in node.keywords:
            self._refuse(node, f"class {node.name}: '{keyword.arg}=' is not allowed: a metaclass "
                               f"builds classes the check cannot read")
        self.generic_visit(node)

    def _check_base(self, node: ast.ClassDef, base: ast.expr) -> None:
        """A base is a named class: one the candidate defines, a builtin, or one it imports that is
        not a tensor or runtime type. A computed base could be any of those."""
        path = self._resolve(base.value if isinstance(base, ast.Subscript) else base)
        if path is None:
            self._refuse(node, f"class {node.name} derives from a computed base "
                               f"({ast.unparse(base)}): bases must be named classes, such as "
                               f"nn.Module")
            return
        root = path.split(".")[0]
        if path == "type":
            self._refuse(node, f"class {node.name} is a metaclass: it builds classes the check "
                               f"cannot read")
        elif root not in self.import_roots | self.class_names | _BUILTIN_CLASSES:
            self._refuse(node, f"class {node.name} derives from {path}, which is neither an "
                               f"imported nor a defined class: bases must be named classes, "
                               f"such as nn.Module")
        elif root == "torch" and path != "torch.nn.Module" and (
                path.rsplit(".", 1)[-1] in _TENSOR_TYPES or not path.startswith("torch.nn.")
                or path.startswith("torch.nn.parameter.")):
            self._refuse(node, f"subclassing {path} is not allowed: a candidate defines modules, "
                               f"not new tensor or runtime types; {_DISPATCH}")

    def visit_Call(self, node: ast.Call) -> None:
        self._called.add(id(node.func))
        if isinstance(node.func, ast.Name) and node.func.id in {"getattr", "hasattr"}:
            name = node.args[1] if len(node.args) > 1 else None
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                self._refuse(node, f"{node.func.id}() needs a literal attribute name: "
                                   f"{_COMPUTED_NAME}")
            else:
                self._check_attr_name(node, name.value, node.args[0])
                base = self._resolve(node.args[0])
                if base is not None:
                    self._check_path(node, f"{base}.{name.value}")
        if isinstance(node.func, ast.Name) and node.func.id == "type" and (
                len(node.args) != 1 or node.keywords):
            self._refuse(node, "type() with three arguments builds a class the check cannot "
                               "read; write a class statement")
        path = self._resolve(node.func)
        if path in {"operator.attrgetter", "operator.methodcaller"}:
            # Name what the string reaches for, as if it were written out.
            names = node.args if path == "operator.attrgetter" else node.args[:1]
            for arg in names:
                text = _literal_str(arg)
                for part in (text or "").split("."):
                    if part:
                        self._check_attr_name(node, part, None)
        elif path == "torch.Tensor":
            self._refuse(node, f"torch.Tensor(...) is not allowed in a candidate: {_FROM_HOST}")
        elif path == "torch.utils.cpp_extension.load_inline":
            for value in [*node.args, *(k.value for k in node.keywords)]:
                for const in ast.walk(value):
                    if isinstance(const, ast.Constant) and isinstance(const.value, str):
                        self._check_cpp(node, const.value)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        # C++ sources are often module-level strings passed to load_inline by name.
        if isinstance(node.value, str) and "__global__" in node.value:
            self._check_cpp(node, node.value)

    def _check_cpp(self, node: ast.AST, source: str) -> None:
        for pattern, why in _CPP_FORBIDDEN:
            match = pattern.search(source)
            if match is None:
                continue
            name = match.group(0)
            bare = re.sub(r"^[.\s]+|[\s(]+$|^\w+::", "", name)
            if name in self.allowed_ops or bare in self.allowed_ops:
                continue
            if name.startswith("cublas") and self.allowed_ops & _GEMM_OPS:
                continue
            if name.startswith("cudnn") and any(op.startswith("conv") for op in self.allowed_ops):
                continue
            self._refuse(node, f"CUDA C++ source uses {name!r}: {why}")


class _Kernels:
    """The rules for ``@triton.jit`` bodies: only what compiled Triton accepts, so that nothing
    in a kernel runs as plain Python in the interpreter. Findings are ``contract``: a GPU would
    refuse to compile the kernel."""

    def __init__(self, tree: ast.Module, visitor: _Visitor) -> None:
        self.v = visitor
        self.jit: dict[str, ast.FunctionDef] = {}
        self.constexpr_fns: set[str] = set()
        self.plain_fns: set[str] = set()
        self.constexpr_globals: set[str] = set()
        self.other_globals: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                kinds = {self._decorator(d) for d in node.decorator_list}
                if "jit" in kinds:
                    self.jit[node.name] = node
                elif "constexpr_function" in kinds:
                    self.constexpr_fns.add(node.name)
            elif isinstance(node, ast.Call) and self._decorator(node.func) == "jit":
                for arg in node.args[:1]:  # kernel = triton.jit(body)
                    if isinstance(arg, ast.Name):
                        self.jit.update({d.name: d for d in ast.walk(tree)
                                         if isinstance(d, ast.FunctionDef) and d.name == arg.id})
        assigned: set[int] = set()
        for node in _module_scope(tree):
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
        for node in _module_scope(tree):  # for-targets, with-targets, walrus
            if (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
                    and id(node) not in assigned):
                self.other_globals.add(node.id)
        self.constexpr_globals -= self.other_globals

    def _decorator(self, node: ast.AST) -> str | None:
        path = self.v._resolve(node.func if isinstance(node, ast.Call) else node) or ""
        if path == "triton.jit":
            return "jit"
        if path in {"triton.constexpr_function", "triton.language.constexpr_function"}:
            return "constexpr_function"
        return None

    def _is_constexpr_value(self, value: ast.AST) -> bool:
        """``X = tl.constexpr(...)`` or a triton.language object (``DTYPE = tl.float16``)."""
        path = self.v._resolve(value.func if isinstance(value, ast.Call) else value) or ""
        if isinstance(value, ast.Call):
            return path == "triton.language.constexpr"
        return path.startswith("triton.language.")

    def _refuse(self, node: ast.AST, kernel: str, message: str) -> None:
        self.v._refuse(node, f"the @triton.jit function {kernel} {message}", kind="contract")

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

    def _allowed_path(self, path: str) -> bool:
        # math on constexprs is folded at compile time; Proton scopes are language extensions.
        return (path.startswith(("triton.language.", "triton.profiler.language.", "math."))
                or path in _TRITON_CONSTEXPR_FNS)

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
        path = self.v._resolve(func) or ast.unparse(func)
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


def check_source(source: str, allowed_ops: list[str] | tuple[str, ...] = ()) -> list[StaticFinding]:
    """Every static reason to refuse ``source``; an empty list means it may run."""
    try:
        tree = parse(source)
    except SyntaxError as exc:
        return [StaticFinding("contract", exc.lineno or 0, f"syntax error: {exc.msg}")]
    class_names = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    visitor = _Visitor(set(allowed_ops), class_names)
    visitor.visit(tree)
    _Kernels(tree, visitor).check()
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    if "ModelNew" not in classes:
        visitor.findings.insert(0, StaticFinding(
            "contract", 0, "the candidate defines no top-level class ModelNew(nn.Module)"))
    unique = {(f.kind, f.line, f.message): f for f in visitor.findings}
    return list(unique.values())
