"""Static (AST) checks of a candidate source: the cheap first stage of the cascade.

A candidate is untrusted code. Before it runs, this stage refuses sources that do not meet the
contract (no ``ModelNew``) or that reach for the known ways to cheat: torch or another library
doing the work, other streams or threads, the harness's timers, the RNG that makes the inputs,
the reference, or the interpreter's internals. The runtime guard (guard.py) backs these up.

Stdlib only: runs in the parent and in workers.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

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
    "torch.save": "no files", "torch.load": "no files",
    "torch.autograd.Function": "autograd plumbing is not needed for a forward kernel",
    "torch.initial_seed": "the RNG that makes the inputs is off limits",
    "torch.cuda.initial_seed": "the RNG that makes the inputs is off limits",
    "torch.set_default_tensor_type": "global switches change the reference too",
    "torch.set_default_device": "global switches change the reference too",
    "torch.use_deterministic_algorithms": "global switches change the reference too",
    "torch.set_flush_denormal": "global switches change the reference too",
    "torch.set_grad_enabled": "global switches change the reference too",
    "torch.from_numpy": "host-side numpy compute is not a kernel",
}
# Attribute names that lead from allowed modules to the interpreter (``torch.sys``,
# ``dataclasses.sys.modules``) or compute on the host instead of in a kernel.
FORBIDDEN_ATTR_NAMES: dict[str, str] = {
    **{name: "it leads from an allowed module to the interpreter and the harness"
       for name in ("sys", "os", "builtins", "importlib", "inspect", "modules", "gc",
                    "subprocess", "ctypes", "threading", "multiprocessing", "_thread")},
    **{name: "it computes on the host instead of in a kernel"
       for name in ("tolist", "numpy", "item", "apply_", "map_", "map2_", "untyped_storage",
                    "storage", "data_ptr_to_host")},
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


class _Visitor(ast.NodeVisitor):
    def __init__(self, allowed_ops: set[str]) -> None:
        self.findings: list[StaticFinding] = []
        self.aliases: dict[str, str] = {}
        self.allowed_ops = allowed_ops

    def _refuse(self, node: ast.AST, message: str, kind: str = "cheat") -> None:
        self.findings.append(StaticFinding(kind, getattr(node, "lineno", 0), message))

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

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self._refuse(node, "relative imports are not allowed: a candidate is self-contained")
            return
        module = node.module or ""
        self._check_module(node, module)
        for alias in node.names:
            full = f"{module}.{alias.name}"
            if alias.name == "*":
                self._refuse(node, f"'from {module} import *' hides what the candidate uses")
                continue
            self._check_path(node, full)
            if any(full == p or full.startswith(p + ".") for p in FORBIDDEN_MODULE_PREFIXES):
                self._refuse(node, f"import of {full!r} is not allowed: it reaches past the contract")
            self.aliases[alias.asname or alias.name] = full

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
                self._refuse(node, f"{path} is not allowed: {why}")
                return
        if any(path == p or path.startswith(p + ".") for p in FORBIDDEN_MODULE_PREFIXES):
            self._refuse(node, f"{path} is not allowed: it reaches past the contract")

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
            self._refuse(node, f".{attr} is not allowed: {FORBIDDEN_ATTR_NAMES[attr]}")

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
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        # Module-level state written from forward is how results get memoized across calls.
        self._refuse(node, f"'global {', '.join(node.names)}' is not allowed: a forward must not "
                           f"keep results between calls")

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            path = self._resolve(base)
            if path is not None and path != "torch.nn.Module" and (
                    path.startswith("torch.") and not path.startswith("torch.nn.")):
                self._refuse(node, f"subclassing {path} is not allowed: a candidate defines "
                                   f"modules, not new tensor or runtime types")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id in {"getattr", "hasattr"}:
            name = node.args[1] if len(node.args) > 1 else None
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                self._refuse(node, f"{node.func.id}() needs a literal attribute name: computed "
                                   f"names hide what the candidate reaches for")
            else:
                self._check_attr_name(node, name.value, node.args[0])
                base = self._resolve(node.args[0])
                if base is not None:
                    self._check_path(node, f"{base}.{name.value}")
        path = self._resolve(node.func)
        if path == "torch.utils.cpp_extension.load_inline":
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


def check_source(source: str, allowed_ops: list[str] | tuple[str, ...] = ()) -> list[StaticFinding]:
    """Every static reason to refuse ``source``; an empty list means it may run."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return [StaticFinding("contract", exc.lineno or 0, f"syntax error: {exc.msg}")]
    visitor = _Visitor(set(allowed_ops))
    visitor.visit(tree)
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    if "ModelNew" not in classes:
        visitor.findings.insert(0, StaticFinding(
            "contract", 0, "the candidate defines no top-level class ModelNew(nn.Module)"))
    unique = {(f.kind, f.line, f.message): f for f in visitor.findings}
    return list(unique.values())
