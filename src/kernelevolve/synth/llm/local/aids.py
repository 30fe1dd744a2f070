"""Prompt aids for a small model: a verified kernel of the nearest operator class
(``worked_example``) and the problem's exact candidate contract (``contract_text``)."""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

from kernelevolve import prompts
from kernelevolve.config import StoreConfig
from kernelevolve.errors import KernelEvolveError
from kernelevolve.pyparse import parse

EXAMPLES_DIR = Path(__file__).resolve().parents[5] / "examples"  # a source checkout's examples

# Operator classes (kernelevolve.synth.factory.operator_class) whose kernels teach each other most.
_NEIGHBOURS: dict[str, tuple[str, ...]] = {
    "elementwise": ("elementwise", "library_epilogue"),
    "rmsnorm": ("rmsnorm", "l2norm", "layernorm", "softmax", "reduction"),
    "layernorm": ("layernorm", "rmsnorm", "l2norm", "softmax", "reduction"),
    "l2norm": ("l2norm", "rmsnorm", "layernorm", "softmax", "reduction"),
    "softmax": ("softmax", "l2norm", "rmsnorm", "layernorm", "reduction"),
    "reduction": ("reduction", "l2norm", "rmsnorm", "softmax", "layernorm"),
    "matmul": ("matmul", "library_epilogue"),
    "library_epilogue": ("library_epilogue", "elementwise", "matmul"),
}


@dataclass(frozen=True)
class WorkedExample:
    name: str
    operator_class: str | None
    reference: str  # the reference's Model class
    solution: str  # a candidate that passes the harness
    source: str = ""  # where it comes from: "examples/<name>" or "run <run id> <node>"


def _class_source(source: str, name: str) -> str:
    tree = parse(source)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return ast.get_source_segment(source, node) or source
    return source


@functools.lru_cache(maxsize=4)
def _catalogue(examples_dir: Path) -> tuple[WorkedExample, ...]:
    """The verified solutions beside their problems, with each problem's operator class."""
    from kernelevolve.problem import load_problem
    from kernelevolve.synth.factory import operator_class

    out = []
    for solution in sorted((examples_dir / "solutions").glob("*.py")):
        problem = examples_dir / "problems" / solution.name
        if not problem.is_file():
            continue
        ref = problem.read_text()
        try:
            cls = operator_class(load_problem(problem))
        except KernelEvolveError:  # an example that does not load teaches nothing
            continue
        out.append(WorkedExample(solution.stem, cls, _class_source(ref, "Model"),
                                 solution.read_text(), f"examples/{solution.stem}"))
    return tuple(out)


def _stored(store: StoreConfig, classes: tuple[str, ...]) -> list[WorkedExample]:
    """Verified kernels of earlier runs (the run store) of these operator classes."""
    from kernelevolve.store import open_store

    path = store.resolved_path()
    if str(path) != ":memory:" and not path.is_file():
        return []  # no runs yet (and no store file made just to look)
    out = []
    with open_store(store) as runs:
        for cls in classes:
            out += [WorkedExample(k.problem, k.operator_class,
                                  _class_source(k.reference_source, "Model"), k.code,
                                  f"run {k.run_id} {k.node_id}")
                    for k in runs.best_known(operator_class=cls, limit=20) if k.reference_source]
    return out


def worked_example(operator_class: str | None, problem_name: str, reference_source: str,
                   examples_dir: Path = EXAMPLES_DIR, store: StoreConfig | None = None
                   ) -> WorkedExample | None:
    """A verified kernel of the nearest operator class, never one of the problem itself (same
    name or same reference); the shortest of that class, as short ones teach a small model
    best. It comes from the bundled example solutions (a source checkout's ``examples/``), and
    where they have none of a related class, from the verified kernels of earlier runs in the
    run ``store``. None without either, or without a related class."""
    classes = _NEIGHBOURS.get(operator_class or "", ())
    own = _class_source(reference_source, "Model").strip()

    def pick(pool: list[WorkedExample]) -> WorkedExample | None:
        pool = [e for e in pool if e.name != problem_name and e.reference.strip() != own]
        for cls in classes:
            same = [e for e in pool if e.operator_class == cls]
            if same:
                return min(same, key=lambda e: (len(e.solution), e.name))
        return None

    bundled = list(_catalogue(examples_dir.resolve())) \
        if (examples_dir / "solutions").is_dir() else []
    found = pick(bundled)
    if found is None and store is not None and classes:
        found = pick(_stored(store, classes))
    return found


def _signature(fn: ast.FunctionDef) -> str:
    return ast.unparse(fn.args)


# Calls that only allocate, view or describe tensors (the candidate may make them too).
_NOT_MATH = {"contiguous", "view", "reshape", "size", "dim", "numel", "stride", "unsqueeze",
             "squeeze", "expand", "flatten", "permute", "transpose", "t", "to", "float", "half",
             "empty", "empty_like", "zeros", "zeros_like", "ones_like", "new_empty", "type_as"}


def _root(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Attribute | ast.Call | ast.Subscript):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


def _ops_used(fn: ast.FunctionDef) -> list[str]:
    """The torch functions and tensor methods ``fn`` computes with (``clamp``, ``mean``, ...),
    not those of submodules (``self.linear(x)``)."""
    ops: list[str] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            root = _root(node.func)
            if isinstance(root, ast.Name) and root.id != "self" \
                    and node.func.attr not in _NOT_MATH:
                ops.append(node.func.attr)
    return list(dict.fromkeys(ops))


def contract_text(reference_source: str) -> str:
    """The problem's exact candidate contract (signatures, attributes, ops to write in Triton),
    rendered by ``local_contract.j2``; empty when the reference has no parsable Model."""
    try:
        tree = parse(reference_source)
    except SyntaxError:
        return ""
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"),
                 None)
    methods = {n.name: n for n in (model.body if model else []) if isinstance(n, ast.FunctionDef)}
    init, forward = methods.get("__init__"), methods.get("forward")
    if init is None or forward is None:
        return ""
    body = "\n".join(ast.get_source_segment(reference_source, s) or "" for s in init.body
                     if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)))
    attrs = [t.attr for n in ast.walk(init) if isinstance(n, ast.Assign) for t in n.targets
             if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
             and t.value.id == "self"]
    attrs += [n.args[0].value for n in ast.walk(init) if isinstance(n, ast.Call)
              and isinstance(n.func, ast.Attribute) and n.func.attr == "register_buffer"
              and n.args and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str)]
    return prompts.render(
        "local_contract.j2", init_args=_signature(init), forward_args=_signature(forward),
        init_body="\n".join("        " + line for line in body.splitlines()),
        attributes=list(dict.fromkeys(attrs)), ops=_ops_used(forward)).strip()


