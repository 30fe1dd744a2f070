"""Programs of many operators: the forward split into parts the templates write, one ModelNew.

Where no single template covers a problem (a convolution, then a group norm, then a pooling and
an activation), ``analyze_program`` traces ``Model.forward`` at the module level with torch.fx
(``nn.Conv2d`` and ``torch.logsumexp`` calls as nodes, in program order) and splits the nodes into
consecutive parts, greedily: each part as long as one template still writes it (the template
fuses an anchor with its elementwise prologue and epilogue) and its only value used later is its
last. Each part is a problem of its own in KernelBench format (``part_source``): the problem's
file with ``forward`` replaced by the part's nodes and ``get_inputs`` computing the part's inputs
with the reference's earlier nodes, so the judge can check a part alone at the problem's sizes
and the part's constructor is the problem's (the same parameters at the same names).

The plan's space is every part's, each key suffixed with its part (``BLOCK_M@p1``); ``render``
composes the parts' candidates into one module: each part's top-level names prefixed
(``p1_conv_gemm_kernel``), its ``ModelNew.forward`` a method ``_p1_forward``, and a ``forward``
that calls the parts in order. The judge verifies and times the composed program whole.
"""

from __future__ import annotations

import ast
import hashlib
import operator
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.fx

from kernelevolve.problem import Problem, call_factory, load_problem
from kernelevolve.pyparse import parse

from .frontend.trace import float_attrs, float_markers, self_expr, twin_sizes
from .plan import KernelPlan, Unsupported

# Parts a template writes (glue, views the composed forward runs as written, not counted): a
# transformer block is ten (layer norms, four GEMMs, attention's two products and its softmax).
MAX_PARTS = 12
Single = Callable[[Problem], KernelPlan]  # one template's plan for a problem (analyze_single)
_SEP = "@p"


@dataclass(frozen=True)
class Part:
    """Nodes ``start`` to ``end`` (inclusive, compute nodes in program order), their plan (None
    for glue: views and metadata the composed forward runs as written, ``code``), the names of
    the values they take (placeholders or earlier parts' last nodes) and give, the part's
    problem file."""

    start: int
    end: int
    plan: KernelPlan | None
    inputs: tuple[str, ...]
    output: str
    path: Path | None
    code: str = ""


# Nodes that only view or describe a tensor (or lay it out: contiguous copies bytes and computes
# nothing): where no template writes a part starting at one, it runs as it is in the composed
# forward (views, metadata and copies are the candidate language's own).
_GLUE_METHODS = {"view", "reshape", "squeeze", "unsqueeze", "flatten", "permute", "transpose",
                 "size", "dim", "expand", "view_as", "reshape_as", "unflatten", "split", "chunk",
                 "unbind", "contiguous"}
_GLUE_FUNCTIONS = {getattr, operator.getitem, torch.flatten, torch.squeeze, torch.unsqueeze,
                   torch.reshape, torch.permute, torch.transpose, torch.split, torch.chunk,
                   torch.unbind}
SPLIT_BUDGET_S = 60.0  # the split's analyses of candidate parts, at most


def _is_shape(node: torch.fx.Node) -> bool:
    """A number the forward reads from a tensor's shape (``x.shape``, ``x.size(-1)``) or
    computes from such numbers alone (``d // heads``, ``math.sqrt(d)``)."""
    if node.op == "call_function" and node.target is getattr and node.args[1:2] == ("shape",):
        return True
    if node.op == "call_method" and node.target in ("size", "dim"):
        return True
    if node.op == "get_attr":
        return bool(node.meta.get("int_attribute"))  # self.n_heads (_int_attributes)
    inputs = node.all_input_nodes
    return (node.op in ("call_function", "call_method") and bool(inputs)
            and all(_is_shape(n) for n in inputs))


def _shape_roots(node: torch.fx.Node) -> list[torch.fx.Node]:
    """The tensors a shape number is read from."""
    if (node.op == "call_function" and node.target is getattr) or (
            node.op == "call_method" and node.target in ("size", "dim")):
        return [node.all_input_nodes[0]]
    if node.op == "get_attr":
        return []
    roots: list[torch.fx.Node] = []
    for arg in node.all_input_nodes:
        roots += [r for r in _shape_roots(arg) if r not in roots]
    return roots


def _int_values(value: object, path: tuple[int, ...] = ()) -> list[tuple[tuple[int, ...], int]]:
    if type(value) is int:
        return [(path, value)]
    if isinstance(value, tuple | list):
        return [found for i, v in enumerate(value) for found in _int_values(v, (*path, i))]
    return []


def _int_attributes(problem: Problem, model: torch.nn.Module, gm: torch.fx.GraphModule) -> None:
    """The module-level trace reads an int attribute (``self.n_heads``) as a number, which
    would bake it into the parts: find each argument that is one (its value changes with the
    sizes as the attribute's does, in a second trace at other sizes) and read the attribute
    there instead (a ``get_attr`` node: ``self.n_heads`` in the written code)."""

    def attributes(m: torch.nn.Module) -> dict[str, int]:
        return {name: v for name, v in vars(m).items()
                if type(v) is int and not name.startswith("_")}

    own = attributes(model)
    sizes = twin_sizes(problem) if own else None
    if sizes is None:
        return
    try:
        module = problem.module(sizes)
        with torch.device("meta"):
            twin_model = module.Model(*call_factory(module, "get_init_inputs", problem.path))
        twin = torch.fx.symbolic_trace(twin_model)
    except Exception:  # the numbers stay as traced; the judge's other sizes will tell
        return
    other = attributes(twin_model)
    nodes = list(gm.graph.nodes)
    if [(n.op, str(n.target)) for n in nodes] != [(n.op, str(n.target)) for n in twin.graph.nodes]:
        return
    reads: dict[str, torch.fx.Node] = {}
    for node, twin_node in zip(nodes, twin.graph.nodes, strict=True):
        args = list(node.args)
        for i, (arg, twin_arg) in enumerate(zip(node.args, twin_node.args, strict=False)):
            theirs = dict(_int_values(twin_arg))
            for path, value in _int_values(arg):
                names = [k for k, v in own.items() if v == value and other.get(k) == theirs.get(path)
                         and other.get(k) != value]
                if len(names) != 1:
                    continue
                if names[0] not in reads:
                    with gm.graph.inserting_before(nodes[0] if nodes[0].op != "placeholder"
                                                   else next(n for n in nodes
                                                             if n.op != "placeholder")):
                        reads[names[0]] = gm.graph.get_attr(names[0])
                    reads[names[0]].meta["int_attribute"] = True
                args[i] = _replace_at(args[i], path, reads[names[0]])
        node.args = tuple(args)


def _replace_at(value: object, path: tuple[int, ...], new: object) -> object:
    if not path:
        return new
    assert isinstance(value, tuple | list)
    items = list(value)
    items[path[0]] = _replace_at(items[path[0]], path[1:], new)
    return type(value)(items)


def _compute_nodes(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    """The nodes parts are made of, in program order; parameters (``get_attr``) are read by
    the parts that use them, and numbers read from shapes (_is_shape) are computed again by
    every part that uses them, from the tensors they are read from: a part takes tensors and
    float scalars only."""
    return [n for n in gm.graph.nodes
            if n.op in ("call_module", "call_function", "call_method") and not _is_shape(n)]


def _glue(node: torch.fx.Node) -> bool:
    return ((node.op == "call_method" and node.target in _GLUE_METHODS)
            or (node.op == "call_function" and node.target in _GLUE_FUNCTIONS))


def _trace(problem: Problem) -> tuple[torch.fx.GraphModule, list[str]]:
    """The forward at the module level. Float attributes (``self.scale_factor``) are read by
    the trace as numbers: they are traced as markers, which ``_code`` writes back as the
    attribute, so every part reads them at call time as the reference does."""
    module = problem.module(problem.sizes)
    with torch.device("meta"):
        init = call_factory(module, "get_init_inputs", problem.path)
        model = module.Model(*init)
    try:
        with float_markers(float_attrs(model)) as marks:
            gm = torch.fx.symbolic_trace(model)
        gm.meta["markers"] = marks
    except Exception as exc:  # data-dependent control flow, unsupported Python
        raise Unsupported(f"torch.fx could not trace Model.forward at the module level "
                          f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
                          ) from exc
    _int_attributes(problem, model, gm)
    args = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    outputs = [n for n in gm.graph.nodes if n.op == "output"]
    if len(outputs) != 1 or not isinstance(outputs[0].args[0], torch.fx.Node):
        raise Unsupported("the forward returns several values; a program's parts give one")
    return gm, args


def _span(nodes: list[torch.fx.Node], start: int, end: int) -> tuple[list[str], str] | None:
    """The values nodes[start..end] take from outside and the one they give, or None where a
    value other than the last is used after them (a part gives one value)."""
    inside = set(nodes[start:end + 1])
    inputs: list[str] = []
    for node in nodes[start:end + 1]:
        for arg in node.all_input_nodes:
            for value in _shape_roots(arg) if _is_shape(arg) else [arg]:
                if value not in inside and value.op != "get_attr" and value.name not in inputs:
                    inputs.append(value.name)
        if node is not nodes[end] and any(u not in inside for u in node.users):
            return None
    return inputs, nodes[end].name


class _Attributes(ast.NodeTransformer):
    """Marker numbers back to the float attributes they stand for (``self.scale_factor``)."""

    def __init__(self, marks: dict[float, str]) -> None:
        self.marks = marks

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if type(node.value) is float and node.value in self.marks:
            return ast.parse(self_expr(self.marks[node.value]), mode="eval").body
        return node


class _Globals(ast.NodeTransformer):
    """fx's names for the functions a graph calls (``math_sqrt``) back to where they live
    (``math.sqrt``): the written module has no fx globals."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.names:
            return ast.copy_location(ast.parse(self.names[node.id], mode="eval").body, node)
        return node


def _qualified(obj: object) -> str | None:
    """``math.sqrt`` for a module-level function importable under its module's public name;
    None for builtins and anything else (left as fx named it)."""
    import importlib

    mod, name = getattr(obj, "__module__", None), getattr(obj, "__name__", None)
    if not isinstance(mod, str) or not isinstance(name, str) or mod == "builtins" or (
            mod.split(".")[0] != mod or mod.startswith("_")):
        return None
    try:
        found = getattr(importlib.import_module(mod), name, None)
    except ImportError:
        return None
    return f"{mod}.{name}" if found is obj else None


def _code(gm: torch.fx.GraphModule, graph: torch.fx.Graph, name: str) -> str:
    """``graph`` as Python: a function ``name(self, ...)`` over the model's attributes."""
    python = graph.python_code(root_module="self")
    names = {k: q for k, v in python.globals.items() if (q := _qualified(v)) is not None}
    tree = _Attributes(gm.meta.get("markers", {})).visit(ast.parse(python.src))
    tree = _Globals(names).visit(tree)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    fn.name = name
    fn.returns = None
    for a in fn.args.args:
        a.annotation = None
    return ast.unparse(fn)


def _subgraph(gm: torch.fx.GraphModule, nodes: list[torch.fx.Node], inputs: list[str],
              outputs: list[str]) -> torch.fx.Graph:
    """A graph of ``nodes`` taking ``inputs`` (by name) and returning ``outputs``: one value,
    or a tuple of several."""
    by_name = {n.name: n for n in gm.graph.nodes}
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    for name in inputs:
        env[by_name[name]] = graph.placeholder(name)
    for node in nodes:  # the parameters they read, read from the model
        for arg in node.all_input_nodes:
            if arg.op == "get_attr" and arg not in env:
                env[arg] = graph.node_copy(arg, lambda n: env[n])

    def shape(node: torch.fx.Node) -> None:  # a number read from a shape, computed here
        for arg in node.all_input_nodes:
            if arg not in env:
                shape(arg)
        env[node] = graph.node_copy(node, lambda n: env[n])

    for node in nodes:
        for arg in node.all_input_nodes:
            if arg not in env and _is_shape(arg):
                shape(arg)
        env[node] = graph.node_copy(node, lambda n: env[n])
    outs = [env[by_name[n]] for n in outputs]
    graph.output(outs[0] if len(outs) == 1 else tuple(outs))
    return graph


def _target_name(node: torch.fx.Node) -> str:
    """What a node calls, by name (``softmax``, ``ln1``), never a repr with an address."""
    target = node.target
    if isinstance(target, str):
        return target.rsplit(".", 1)[-1]
    return str(getattr(target, "__name__", type(target).__name__))


def part_source(problem: Problem, gm: torch.fx.GraphModule, args: list[str],
                nodes: list[torch.fx.Node], start: int, end: int) -> str:
    """The KernelBench file of nodes[start..end]: the problem's source with ``Model.forward``
    the part's and ``get_inputs`` the part's inputs, computed from the problem's own inputs by
    the nodes before it (a model built apart, under a fixed seed, on the inputs' device)."""
    span = _span(nodes, start, end)
    assert span is not None
    inputs, output = span
    forward = _code(gm, _subgraph(gm, nodes[start:end + 1], inputs, [output]), "forward")
    prefix = _code(gm, _subgraph(gm, nodes[:start], args, inputs), "_part_inputs")
    tree = parse(problem.source)
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"),
                 None)
    if model is None:
        raise Unsupported("Model is not a class defined in the problem file")
    model.body = [s for s in model.body
                  if not (isinstance(s, ast.FunctionDef) and s.name == "forward")]
    model.body.append(ast.parse(forward).body[0])
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "get_inputs":
            stmt.name = "_program_inputs"
    first = " ".join(_target_name(n) for n in nodes[start:end + 1] if n.op != "get_attr")
    doc = (f'"""Part {start}-{end} of {problem.path.name} ({first}): written by kernelevolve\'s '
           f'program split (synth/offline/program.py)."""\n\n')
    tail = f'''

{prefix}


def get_inputs():
    inputs = _program_inputs()
    device = next((t.device for t in inputs if isinstance(t, torch.Tensor)),
                  torch.device("cpu"))
    cuda = [device.index or 0] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=cuda), torch.no_grad(), torch.device(device):
        torch.manual_seed(0)  # the earlier nodes' weights: fixed, apart from the inputs' draw
        out = _part_inputs(Model(*get_init_inputs()), *inputs)
    return list(out) if isinstance(out, tuple) else [out]
'''
    return doc + ast.unparse(tree) + "\n" + tail


def _parts_dir(problem: Problem) -> Path:
    from kernelevolve.config import data_dir

    key = hashlib.sha256(problem.source.encode()).hexdigest()[:12]
    path = data_dir() / "parts" / f"{problem.path.stem}-{key}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _plan_of(single: Single, problem: Problem, gm: torch.fx.GraphModule, args: list[str],
             nodes: list[torch.fx.Node], start: int, end: int, where: Path
             ) -> tuple[KernelPlan, Path] | str:
    source = part_source(problem, gm, args, nodes, start, end)
    path = where / f"part_{start:02d}_{end:02d}.py"
    path.write_text(source)
    try:
        part = load_problem(path, check=False).allowing(list(problem.allowed_ops))
        return single(part), path
    except Unsupported as exc:
        return str(exc)


def split(problem: Problem, single: Single) -> list[Part]:
    """The forward's nodes in consecutive parts, each as long as a template still writes it
    (``single``: one template's plan for a problem, or Unsupported); Unsupported naming the
    first node no template writes, even alone."""
    gm, args = _trace(problem)
    nodes = _compute_nodes(gm)
    if not nodes:
        raise Unsupported("the forward computes nothing")
    where = _parts_dir(problem)
    parts: list[Part] = []
    start = 0
    deadline = time.perf_counter() + SPLIT_BUDGET_S
    while start < len(nodes):
        best: Part | None = None
        why = ""
        failures = 0
        for end in range(start, len(nodes)):
            span = _span(nodes, start, end)
            if span is None:
                continue
            if time.perf_counter() > deadline:
                raise Unsupported(f"splitting the forward took over {SPLIT_BUDGET_S:.0f} s")
            found = _plan_of(single, problem, gm, args, nodes, start, end, where)
            if isinstance(found, str):
                why = why or found
                failures += 1
                if best is not None and failures > 1:
                    break  # two longer spans failed: the template's fusion ends here
                continue
            failures = 0
            best = Part(start, end, found[0], tuple(span[0]), span[1], found[1])
        if best is None and _glue(nodes[start]) and (span := _span(nodes, start, start)):
            graph = _subgraph(gm, nodes[start:start + 1], span[0], [span[1]])
            best = Part(start, start, None, tuple(span[0]), span[1], None,
                        _code(gm, graph, "forward"))
        if best is None:
            node = nodes[start]
            raise Unsupported(f"no template writes {node.op} {node.target} ({node.name}) of the "
                              f"forward, even alone: {why}")
        parts.append(best)
        if sum(p.plan is not None for p in parts) > MAX_PARTS:
            raise Unsupported(f"the forward splits into more than {MAX_PARTS} parts")
        start = best.end + 1
    return parts


class _Prefix(ast.NodeTransformer):
    """Rename a part module's top-level names (``names``), leaving a function's own locals."""

    def __init__(self, names: Mapping[str, str]) -> None:
        self.names = dict(names)
        self.local: list[set[str]] = [set()]

    def _locals(self, fn: ast.FunctionDef) -> set[str]:
        found = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
        found |= {a.arg for a in (fn.args.vararg, fn.args.kwarg) if a is not None}
        for node in ast.walk(fn):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                found.add(node.id)
        return found

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.args = self.visit(node.args)
        self.local.append(self._locals(node) - {node.name})
        node.body = [self.visit(s) for s in node.body]
        self.local.pop()
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.names and node.id not in self.local[-1]:
            node.id = self.names[node.id]
        return node


def _top_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.ClassDef):
            names.add(stmt.name)
        elif isinstance(stmt, ast.Assign | ast.AnnAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                names |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def compose(problem: Problem, parts: list[Part], sources: list[str], args: list[str]) -> str:
    """One module from the parts' candidates (``sources``, each defining ModelNew)."""
    imports: list[str] = []
    body: list[str] = []
    init: str | None = None
    methods: list[str] = []
    for i, (part, source) in enumerate(zip(parts, sources, strict=True)):
        if part.plan is None:  # glue: the view as the reference wrote it
            fn = ast.parse(part.code).body[0]
            assert isinstance(fn, ast.FunctionDef)
            fn.name = f"_p{i}_forward"
            methods.append(ast.unparse(fn))
            for module in sorted({n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
                                 & {"math", "operator"}):  # what _code qualified
                if f"import {module}" not in imports:
                    imports.append(f"import {module}")
            continue
        tree = parse(source)
        prefix = f"p{i}_"
        names = {n: prefix + n for n in _top_names(tree) - {"ModelNew"}}
        tree = _Prefix(names).visit(tree)
        for stmt in tree.body:
            if isinstance(stmt, ast.FunctionDef | ast.ClassDef) and stmt.name in names:
                stmt.name = names[stmt.name]
        for stmt in tree.body:
            if isinstance(stmt, ast.Import | ast.ImportFrom):
                text = ast.unparse(stmt)
                if text not in imports:
                    imports.append(text)
            elif isinstance(stmt, ast.ClassDef) and stmt.name == "ModelNew":
                for item in stmt.body:
                    if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                        text = ast.unparse(item)
                        if init is None:
                            init = text
                        elif text.replace(prefix, "p0_") != init:
                            raise Unsupported("the parts' candidates build different modules")
                    elif isinstance(item, ast.FunctionDef) and item.name == "forward":
                        item.name = f"_p{i}_forward"
                        methods.append(ast.unparse(item))
                    elif isinstance(item, ast.FunctionDef):
                        raise Unsupported(f"part {i}'s ModelNew has a method {item.name}")
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue  # the part's docstring
            else:
                body.append(ast.unparse(stmt))
    assert init is not None
    calls = [f"{p.output} = self._p{i}_forward({', '.join(p.inputs)})"
             for i, p in enumerate(parts)]
    forward = (f"def forward(self, {', '.join(args)}):\n"
               + "".join(f"    {c}\n" for c in calls) + f"    return {parts[-1].output}")
    described = "; ".join(f"part {i}: {p.plan.description if p.plan else 'views'}"
                          for i, p in enumerate(parts))
    cls = ("class ModelNew(nn.Module):\n"
           f'    """{problem.path.stem} in {len(parts)} parts."""\n\n'
           + "\n\n".join(_indent(m) for m in [init, *methods, forward]) + "\n")
    doc = (f'"""{problem.path.stem} as a program of {len(parts)} parts ({described}).\n\n'
           f'Written by the kernelevolve offline synthesizer: each part from a template, composed '
           f'into one ModelNew."""')
    return "\n\n\n".join([doc, "\n".join(imports), *body, cls])


def _indent(text: str) -> str:
    return "\n".join("    " + line if line.strip() else "" for line in text.splitlines())


@dataclass(frozen=True, eq=False)
class ProgramTemplate:
    """Renders the composed program from each part's parameters (keys ``KEY@pI``)."""

    problem: Problem
    parts: tuple[Part, ...]
    args: tuple[str, ...]

    def _split(self, params: Mapping[str, int]) -> list[dict[str, int]]:
        """Each part's parameters from the program's (``KEY@pI``)."""
        out: list[dict[str, int]] = [{} for _ in self.parts]
        for key, value in params.items():
            name, _, i = key.rpartition(_SEP)
            out[int(i)][name] = value
        return out

    def render(self, params: Mapping[str, int]) -> str:
        sources = [p.plan.render(q) if p.plan is not None else ""
                   for p, q in zip(self.parts, self._split(params), strict=True)]
        return compose(self.problem, list(self.parts), sources, list(self.args))

    def feasible(self, params: Mapping[str, int]) -> str | None:
        for i, (p, q) in enumerate(zip(self.parts, self._split(params), strict=True)):
            why = p.plan.feasible(q) if p.plan is not None else None
            if why is not None:
                return f"part {i}: {why}"
        return None


def analyze_program(problem: Problem, single: Single) -> KernelPlan:
    """A plan of two or more parts for ``problem``, each written by ``single`` (one template's
    analysis: ``analyze.analyze_single``), or Unsupported with the reason."""
    parts = split(problem, single)
    if sum(p.plan is not None for p in parts) < 2:
        raise Unsupported("the program is one part and views, which its template refused")
    _, args = _trace(problem)
    space: dict[str, tuple[int, ...]] = {}
    defaults: dict[str, int] = {}
    opt_in: dict[str, tuple[int, ...]] = {}
    for i, p in enumerate(parts):
        if p.plan is None:
            continue
        space.update({f"{k}{_SEP}{i}": v for k, v in p.plan.space.items()})
        defaults.update({f"{k}{_SEP}{i}": v for k, v in p.plan.defaults.items()})
        opt_in.update({f"{k}{_SEP}{i}": v for k, v in p.plan.opt_in.items()})
    description = (f"a program of {len(parts)} parts: "
                   + "; ".join(p.plan.description if p.plan else "views" for p in parts))
    return KernelPlan("program", description, space, defaults,
                      ProgramTemplate(problem, tuple(parts), tuple(args)), opt_in=opt_in)
