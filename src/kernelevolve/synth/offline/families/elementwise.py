"""The elementwise template: any chain of elementwise ops over broadcast operands, fused into one
pass, optionally after an allowed library op (the ``library_epilogue`` class) or after a
convolution written by the convolution template's kernels (``conv_nd``: the ``convolution``
class, a convolution with an epilogue).

The output's dims are grouped where every operand has the same broadcast pattern (a bias of
shape [C, 1, 1] on [N, C, H, W] gives groups N | C | H*W); the last group is walked in
contiguous blocks, the others by program index, so each operand is either a contiguous vector
load or one scalar load per program.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kernelevolve.problem import Problem

from ..emit.expr import ExprWriter
from ..emit.operands import Signature, dtype_expr, signature
from ..emit.source import module_source
from ..frontend.ir import Lowered, Node, Operand, broadcast
from ..frontend.trace import Traced
from ..plan import Unsupported
from .conv import template as conv
from .conv.source import KERNELS as CONV_KERNELS
from .conv.source import LAUNCHER as CONV_LAUNCHER

SPACE = {"BLOCK_SIZE": (256, 512, 1024, 2048, 4096, 8192), "num_warps": (1, 2, 4, 8, 16)}
DEFAULTS = {"BLOCK_SIZE": 1024, "num_warps": 4}
_ELEMENTWISE_OPS = {"load", "const", "expand"}

HELPERS = '''def _broadcast_shape(*shapes):
    """The broadcast of ``shapes`` (torch's rules), or ValueError."""
    rank = max(len(s) for s in shapes)
    out = []
    for d in range(rank):
        sizes = {s[d - rank + len(s)] for s in shapes if d - rank + len(s) >= 0} - {1}
        if len(sizes) > 1:
            raise ValueError(f"shapes {[list(s) for s in shapes]} do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return out


def _group_strides(t, groups, name):
    """The stride of each dim group of the broadcast view ``t``: 0 where it is broadcast, else
    the stride of the group's last dim (the group must be contiguous)."""
    strides = []
    for dims in groups:
        live = [d for d in dims if t.shape[d] != 1]
        if all(t.stride(d) == 0 for d in live):
            strides.append(0)
            continue
        for a, b in zip(live, live[1:]):
            if t.stride(a) != t.stride(b) * t.shape[b]:
                raise ValueError(f"{name} is not contiguous over dims {dims}")
        strides.append(t.stride(live[-1]) if live else 0)
    return strides'''


def _patterns(out: tuple[int, ...], operands: list[Operand]) -> list[list[str]]:
    """Per operand and output dim: 'f' (full), 'b' (broadcast) or 'c' (a chunk's last dim)."""
    rank = len(out)
    table = []
    for op in operands:
        if len(op.shape) > rank:
            raise Unsupported(f"operand {op.expr} has more dims than the output")
        aligned = (1,) * (rank - len(op.shape)) + op.shape
        row = []
        for d, (o, s) in enumerate(zip(out, aligned, strict=True)):
            if s == o:
                row.append("c" if op.chunk is not None and d == rank - 1 else "f")
            elif s == 1:
                row.append("b")
            else:
                raise Unsupported(f"operand {op.expr} {list(op.shape)} does not broadcast to "
                                  f"{list(out)}")
        table.append(row)
    return table


def _groups(out: tuple[int, ...], table: list[list[str]]) -> list[list[int]]:
    groups: list[list[int]] = []
    previous: tuple[str, ...] | None = None
    for d in range(len(out)):
        column = tuple(row[d] for row in table)
        if groups and (column == previous or out[d] == 1):
            groups[-1].append(d)
        else:
            groups.append([d])
            previous = column
    return groups or [[]]


@dataclass
class ElementwiseTemplate:
    """Renders the fused elementwise kernel for one lowered problem."""

    problem: Problem
    traced: Traced
    lowered: Lowered
    description: str
    sig: Signature = field(init=False)
    operands: list[Operand] = field(init=False)
    groups: list[list[int]] = field(init=False)
    table: list[list[str]] = field(init=False)

    def __post_init__(self) -> None:
        for n in self.lowered.nodes:
            if n.op == "reshape":
                raise Unsupported("a reshape of a computed value inside an elementwise chain, "
                                  "which no template covers")
            if n.op in {"reduce", "count", "gemm"}:
                raise Unsupported(f"a {n.op} inside an elementwise chain")
        out = self.lowered.output.shape
        self.operands = self.lowered.operands
        if not self.operands:
            raise Unsupported("the output depends on no tensor")
        if broadcast(*(o.shape for o in self.operands)) != out:
            raise Unsupported("the output is broadcast beyond its operands (an expand), which no "
                              "template covers")
        self.table = _patterns(out, self.operands)
        self.groups = _groups(out, self.table)
        if not out or all(row[self.groups[-1][0]] == "b" for row in self.table):
            raise Unsupported("no operand varies along the innermost dims")
        self.sig = signature(self.lowered, forward_args=self.traced.forward_args)

    @property
    def own_conv(self) -> bool:
        """The operand is a convolution this module writes (``conv_nd``), not the library's."""
        return bool(self.lowered.own_convs)

    def feasible(self, params: Mapping[str, int]) -> str | None:
        if params["BLOCK_SIZE"] < 32 * params["num_warps"]:
            return (f"BLOCK_SIZE {params['BLOCK_SIZE']} is smaller than the "
                    f"{32 * params['num_warps']} threads of {params['num_warps']} warps")
        return conv.feasible(params) if self.own_conv else None

    # -- kernel ----------------------------------------------------------------------------
    def _kernel(self) -> str:
        outer = self.groups[:-1]
        names = self.sig.operand_names
        ptrs = [f"{names[id(o)]}_ptr" for o in self.operands]
        strides = [f"stride_{names[id(o)]}_{g}" for o in self.operands for g in range(len(outer))
                   if self.table[self.operands.index(o)][outer[g][0]] != "b"]
        sizes = [f"size_{g}" for g in range(1, len(outer))]
        lines = ["@triton.jit", "def fused_elementwise_kernel(",
                 "    # Pointers", f"    {', '.join(ptrs + ['out_ptr'])},",
                 "    # Sizes: rows (the outer dim groups together), the outer groups after the",
                 "    # first, and the contiguous inner group",
                 f"    {', '.join(['n_rows'] + sizes + ['n_inner'])},"]
        if strides:
            lines += ["    # Strides of each operand along the outer groups",
                      f"    {', '.join(strides)},"]
        if self.sig.scalars:
            lines += ["    # Scalars (model attributes)",
                      f"    {', '.join(self.sig.scalars.values())},"]
        lines += ["    # Meta-parameters", "    BLOCK_ROWS: tl.constexpr,",
                  "    BLOCK_SIZE: tl.constexpr,", "):",
                  "    # A program covers BLOCK_ROWS rows by BLOCK_SIZE inner elements (several",
                  "    # rows when the inner group is short); a row index is split back into one",
                  "    # index per outer group.",
                  "    pid = tl.program_id(0).to(tl.int64)",
                  "    n_blocks = tl.cdiv(n_inner, BLOCK_SIZE)",
                  "    row = (pid // n_blocks) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)",
                  "    offs = (pid % n_blocks) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)",
                  "    row_mask = row < n_rows",
                  "    mask = row_mask[:, None] & (offs[None, :] < n_inner)"]
        rest = "row"
        for g in range(len(outer) - 1, -1, -1):
            if g == 0:
                lines.append(f"    i0 = {rest}")
            else:
                lines.append(f"    i{g} = {rest} % size_{g}")
                lines.append(f"    rest{g} = {rest} // size_{g}")
                rest = f"rest{g}"

        def special(n: Node) -> str | None:
            if n.op != "load":
                return None
            op = n.operand
            assert op is not None
            i = self.operands.index(op)
            name = names[id(op)]
            terms = [f"i{g} * stride_{name}_{g}" for g in range(len(outer))
                     if self.table[i][outer[g][0]] != "b"]
            start = f"({' + '.join(terms)})[:, None]" if terms else None
            if self.table[i][self.groups[-1][0]] == "b":
                if start is None:  # one value for the whole tensor
                    return writer.tmp(f"tl.load({name}_ptr).to(tl.float32)")
                return writer.tmp(f"tl.load({name}_ptr + {start}, mask=row_mask[:, None], "
                                  f"other=0.0).to(tl.float32)")
            ptr = " + ".join([f"{name}_ptr"] + ([start] if start else []) + ["offs[None, :]"])
            return writer.tmp(f"tl.load({ptr}, mask=mask, other=0.0).to(tl.float32)")

        writer = ExprWriter(lines, "    ", special, self.sig.scalars, prefix="v")
        result = writer.emit(self.lowered.output)
        lines.append("    tl.store(out_ptr + row[:, None] * n_inner + offs[None, :], "
                     f"{result}.to(out_ptr.dtype.element_ty), mask=mask)")
        return "\n".join(lines)

    # -- launcher --------------------------------------------------------------------------
    def _launcher(self) -> str:
        sig, names = self.sig, self.sig.operand_names
        outer, inner = self.groups[:-1], self.groups[-1]
        rank = len(self.lowered.output.shape)
        lines = [f"def fused_elementwise({', '.join(sig.params)}):",
                 f'    """{self.description}."""']
        for src in sig.sources:
            lines += [f"    if {src.name}.dim() != {src.rank}:",
                      f"        raise ValueError(f\"{src.name}: expected {src.rank} dim(s), got "
                      f"{{{src.name}.dim()}}\")",
                      f"    {src.name} = {src.name}.contiguous()"]
        checked: set[str] = set()
        for op in self.operands:
            if op.chunk is not None:
                src = sig.operand_source[id(op)]
                k, n = op.chunk
                if src.name not in checked:
                    checked.add(src.name)
                    lines += [f"    if {src.name}.shape[-1] % {n}:",
                              f"        raise ValueError(f\"{src.name}: the last dim "
                              f"({{{src.name}.shape[-1]}}) must split into {n} equal pieces\")"]
                lines.append(f"    {names[id(op)]} = {src.name}.chunk({n}, dim=-1)[{k}]")
        ops = [names[id(o)] for o in self.operands]
        lines += [f"    out_shape = _broadcast_shape({', '.join(f'{o}.shape' for o in ops)})",
                  f"    if len(out_shape) != {rank}:",
                  f"        raise ValueError(f\"expected a {rank}-dim result, got {{out_shape}}\")",
                  f"    out = torch.empty(out_shape, dtype="
                  f"{dtype_expr(self.lowered.output.dtype, self.operands, names)}, "
                  f"device={ops[0]}.device)",
                  "    if out.numel() == 0:", "        return out",
                  f"    groups = {[list(g) for g in self.groups]}"]
        stride_args = []
        for i, op in enumerate(self.operands):
            name = names[id(op)]
            lines.append(f"    s_{name} = _group_strides({name}.expand(out_shape), groups, "
                         f"\"{name}\")")
            inner_kind = self.table[i][inner[0]]
            want = "!= 0" if inner_kind == "b" else "!= 1"
            lines += [f"    if s_{name}[-1] {want}:",
                      f"        raise ValueError(\"{name} is laid out differently from the "
                      f"traced problem\")"]
            for g in range(len(outer)):
                if self.table[i][outer[g][0]] == "b":
                    lines += [f"    if s_{name}[{g}] != 0:",
                              f"        raise ValueError(\"{name} broadcasts differently from "
                              f"the traced problem\")"]
                else:
                    stride_args.append(f"s_{name}[{g}]")
        sizes = [f"size_{g}" for g in range(len(outer))]
        for g, dims in enumerate(outer):
            lines.append(f"    size_{g} = {' * '.join(f'out_shape[{d}]' for d in dims)}")
        lines.append(f"    n_inner = {' * '.join(f'out_shape[{d}]' for d in inner) or '1'}")
        lines += [f"    n_rows = {' * '.join(sizes) or '1'}",
                  "    block = min(BLOCK_SIZE, triton.next_power_of_2(n_inner))",
                  "    # Short inner groups: several rows per program, so a program still moves",
                  "    # BLOCK_SIZE elements.",
                  "    block_rows = min(BLOCK_SIZE // block, triton.next_power_of_2(n_rows))",
                  "    grid = (triton.cdiv(n_rows, block_rows) * triton.cdiv(n_inner, block),)",
                  "    fused_elementwise_kernel[grid](",
                  f"        {', '.join(ops + ['out'])},",
                  f"        {', '.join(['n_rows'] + sizes[1:] + ['n_inner'])},"]
        if stride_args:
            lines.append(f"        {', '.join(stride_args)},")
        if sig.scalars:
            lines.append(f"        {', '.join(sig.scalars.values())},")
        lines += ["        BLOCK_ROWS=block_rows, BLOCK_SIZE=block, num_warps=NUM_WARPS,", "    )",
                  "    return out"]
        return "\n".join(lines)

    def render(self, params: Mapping[str, int]) -> str:
        consts = {"BLOCK_SIZE": params["BLOCK_SIZE"], "NUM_WARPS": params["num_warps"]}
        kernels, launchers = [self._kernel()], [HELPERS, self._launcher()]
        if self.own_conv:  # the convolution's kernels and launcher, its tiles beside ours
            consts.update(conv.conv_constants(params, "TF32X3" in params, True))
            kernels.insert(0, CONV_KERNELS)
            launchers.insert(0, CONV_LAUNCHER)
        return module_source(self.problem, self.description, consts, kernels, launchers,
                             self.traced.forward_args, self.sig.call("fused_elementwise"))
