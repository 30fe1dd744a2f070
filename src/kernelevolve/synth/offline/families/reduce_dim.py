"""The strided-reduction template: one reduction over dims that are not the trailing ones
(``x.max(dim=1)`` of a [B, D1, D2] tensor).

The input is viewed as [outer, reduce, inner]; a program owns one outer index and BLOCK_I inner
columns and walks the reduced axis in BLOCK_R-row tiles, so every load stays contiguous along
the inner (last) dim. Elementwise ops before the reduction (on inputs of the same shape) and
after it (with constants) are fused.

When the output has the input's shape (``x / sqrt(mean(x ** 2, dim=1, keepdim=True) + eps)``,
an RMS norm over channels), the program walks the reduced axis a second time and writes each
element from its input and the column's reduced value: the per-column epilogue (``sqrt(. +
eps)``) is computed once between the passes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kernelevolve.problem import Problem

from ..emit.expr import COMBINE, ExprWriter, reduce_call
from ..emit.operands import dtype_expr, signature
from ..emit.source import module_source
from ..frontend.ir import Lowered, Node
from ..frontend.trace import Traced
from ..plan import KernelPlan, Unsupported

SPACE = {"BLOCK_R": (8, 16, 32, 64, 128), "BLOCK_I": (16, 32, 64, 128, 256),
         "num_warps": (1, 2, 4, 8)}
DEFAULTS = {"BLOCK_R": 64, "BLOCK_I": 64, "num_warps": 4}
_IDENTITY = {"sum": "0.0", "max": '-float("inf")', "min": 'float("inf")'}


@dataclass
class ReduceDimTemplate:
    problem: Problem
    traced: Traced
    lowered: Lowered
    description: str

    def __post_init__(self) -> None:
        reduces = self.lowered.reduces
        if len(reduces) != 1:
            raise Unsupported(f"{len(reduces)} reductions over a non-trailing dim; the strided "
                              f"template fuses one")
        self.red = red = reduces[0]
        self.kind, self.dims, self.keepdim = red.attrs
        self.main = red.args[0].shape
        if list(self.dims) != list(range(self.dims[0], self.dims[-1] + 1)):
            raise Unsupported("a reduction over non-adjacent dims, which no template covers")
        prologue = red.args[0].walk()
        below = {id(n) for n in prologue}
        # A tensor output: the reduced value broadcast back over the input it came from.
        self.tensor_out = self.keepdim and self.lowered.output.shape == self.main
        for n in self.lowered.nodes:
            if self.tensor_out and n.op == "load" and n.shape in (self.main, ()):
                continue
            if id(n) in below or n is red:
                if n.op == "load" and n.operand is not None and n.shape not in (self.main, ()):
                    raise Unsupported(f"{n.operand.expr} {list(n.shape)} is broadcast inside a "
                                      f"strided reduction, which no template covers")
                if n.op in {"reshape", "count", "gemm"}:
                    raise Unsupported(f"a {n.op} before a strided reduction")
            elif n.op == "load":
                raise Unsupported("a tensor combined with the result of a strided reduction, "
                                  "which no template covers")
            elif n.op == "reshape":
                raise Unsupported("a reshape after a strided reduction")
        self.operands = self.lowered.operands
        if any(o.chunk is not None for o in self.operands):
            raise Unsupported("a split input inside a strided reduction")
        self.tiles = [o for o in self.operands if o.shape == self.main]
        if not self.tiles:
            raise Unsupported("the reduced tensor is not an input")
        self.sig = signature(self.lowered, forward_args=self.traced.forward_args)

    def feasible(self, params: Mapping[str, int]) -> str | None:
        tile = params["BLOCK_R"] * params["BLOCK_I"]
        threads = 32 * params["num_warps"]
        if tile < threads:
            return f"a {tile}-element tile leaves some of the {threads} threads idle"
        if tile // threads > 64:
            return f"a {tile}-element tile is {tile // threads} values per thread"
        return None

    def _kernel(self) -> str:
        names = self.sig.operand_names
        ptrs = [f"{names[id(o)]}_ptr" for o in self.operands]
        lines = ["@triton.jit", "def fused_reduction_kernel(", "    # Pointers",
                 f"    {', '.join(ptrs + ['out_ptr'])},",
                 "    # Sizes: the input viewed as [outer, reduce, inner], all contiguous",
                 "    n_reduce, n_inner,"]
        if self.sig.scalars:
            lines += ["    # Scalars (model attributes)",
                      f"    {', '.join(self.sig.scalars.values())},"]
        ident = _IDENTITY[self.kind]
        lines += ["    # Meta-parameters", "    BLOCK_R: tl.constexpr,",
                  "    BLOCK_I: tl.constexpr,",
                  "):",
                  "    # A program owns one outer index and BLOCK_I inner columns; it walks the",
                  "    # reduced axis in BLOCK_R-row tiles, loads contiguous along the inner dim.",
                  "    pid = tl.program_id(0).to(tl.int64)",
                  "    n_blocks = tl.cdiv(n_inner, BLOCK_I)",
                  "    outer = pid // n_blocks",
                  "    offs_i = (pid % n_blocks) * BLOCK_I + tl.arange(0, BLOCK_I)",
                  "    mask_i = offs_i < n_inner",
                  "    offs_r = tl.arange(0, BLOCK_R)",
                  "    base = outer * n_reduce * n_inner + offs_i[None, :]",
                  f"    acc = tl.full([BLOCK_R, BLOCK_I], {ident}, tl.float32)",
                  "    for start in range(0, n_reduce, BLOCK_R):",
                  "        rows = start + offs_r",
                  "        mask = (rows[:, None] < n_reduce) & mask_i[None, :]",
                  "        offs = base + rows[:, None].to(tl.int64) * n_inner"]

        def load(n: Node) -> str | None:
            if n.op == "load":
                assert n.operand is not None
                name = names[id(n.operand)]
                if n.operand.shape == ():
                    return writer[0].tmp(f"tl.load({name}_ptr).to(tl.float32)")
                return writer[0].tmp(f"tl.load({name}_ptr + offs, mask=mask, other=0.0)"
                                     f".to(tl.float32)")
            return epilogue(n)

        def epilogue(n: Node) -> str | None:
            if n.op == "count":
                return f"(n_reduce - {n.attrs[1]})" if n.attrs[1] else "n_reduce"
            return None

        inner = ExprWriter(lines, "        ", load, self.sig.scalars, prefix="v")
        writer = [inner]  # the writer whose loop the loads go into
        v = inner.emit(self.red.args[0])
        step = COMBINE[self.kind].format(a="acc", v=f"tl.where(mask, {v}, {ident})")
        lines.append(f"        acc = {step}")

        after = ExprWriter(lines, "    ", epilogue, self.sig.scalars, prefix="e")
        after.bind(self.red, after.tmp(reduce_call(self.kind, "acc", "0")))
        if not self.tensor_out:
            result = after.emit(self.lowered.output)
            lines.append("    tl.store(out_ptr + outer * n_inner + offs_i, "
                         f"{result}.to(out_ptr.dtype.element_ty), mask=mask_i)")
            return "\n".join(lines)
        # The per-column part of the epilogue (what depends on the reduction but on no tensor),
        # once; then a second pass over the reduced axis writes every element.
        columns = self._per_column()
        for n in self.lowered.output.walk():
            if id(n) in columns and n.op not in ("const", "load"):
                after.emit(n)
        lines += ["    for start in range(0, n_reduce, BLOCK_R):",
                  "        rows = start + offs_r",
                  "        mask = (rows[:, None] < n_reduce) & mask_i[None, :]",
                  "        offs = base + rows[:, None].to(tl.int64) * n_inner"]
        second = ExprWriter(lines, "        ", load, self.sig.scalars, prefix="w")
        for n in self.lowered.output.walk():
            if id(n) in columns and n.op not in ("const", "load") and id(n) in after.names:
                second.bind(n, f"{after.names[id(n)]}[None, :]")
        writer[0] = second
        result = second.emit(self.lowered.output)
        lines.append(f"        tl.store(out_ptr + offs, {result}.to(out_ptr.dtype.element_ty), "
                     f"mask=mask)")
        return "\n".join(lines)

    def _per_column(self) -> set[int]:
        """Ids of the output's nodes that depend on the reduction and on no tensor load."""
        memo: dict[int, tuple[bool, bool]] = {}  # id -> (reads a tensor, reads the reduction)
        for n in self.lowered.output.walk(stop={id(self.red)}):
            if n is self.red:
                memo[id(n)] = (False, True)
            elif n.op == "load":
                memo[id(n)] = (True, False)
            else:
                flags = [memo[id(a)] for a in n.args]
                memo[id(n)] = (any(f[0] for f in flags), any(f[1] for f in flags))
        return {k for k, (tensor, reduced) in memo.items() if reduced and not tensor}

    def _launcher(self) -> str:
        sig, names = self.sig, self.sig.operand_names
        main = names[id(self.tiles[0])]
        r, a, b = len(self.main), self.dims[0], self.dims[-1]
        lines = ["def fused_reduction(" + ", ".join(sig.params) + "):",
                 f'    """{self.description}."""']
        for src in sig.sources:
            lines.append(f"    {src.name} = {src.name}.contiguous()")
        lines += [f"    if {main}.dim() != {r}:",
                  f"        raise ValueError(f\"{main}: expected {r} dims, got {{{main}.dim()}}\")"]
        for op in self.operands:
            other = names[id(op)]
            if op is not self.tiles[0] and op.shape == self.main:
                lines += [f"    if {other}.shape != {main}.shape:",
                          f"        raise ValueError(\"{other} must have the shape of {main}\")"]
            elif op.shape == ():
                lines += [f"    if {other}.numel() != 1:",
                          f"        raise ValueError(\"{other} must hold one value\")"]
        lines += [f"    shape = list({main}.shape)", "    n_reduce = 1",
                  f"    for size in shape[{a}:{b + 1}]:", "        n_reduce *= size",
                  "    n_inner = 1", f"    for size in shape[{b + 1}:]:", "        n_inner *= size",
                  "    if n_reduce == 0:",
                  "        raise ValueError(\"cannot reduce over an empty dim\")"]
        kept = (f"shape[{a}:{b + 1}]" if self.tensor_out else
                f"[1] * {b - a + 1}" if self.keepdim else "[]")
        dtype = dtype_expr(self.lowered.output.dtype, self.operands, names)
        lines += [f"    out = torch.empty(shape[:{a}] + {kept} + shape[{b + 1}:], dtype={dtype}, "
                  f"device={main}.device)", "    if out.numel() == 0:", "        return out",
                  "    n_outer = out.numel() // (n_inner * n_reduce)" if self.tensor_out
                  else "    n_outer = out.numel() // n_inner",
                  "    block_i = min(BLOCK_I, triton.next_power_of_2(n_inner))",
                  "    grid = (n_outer * triton.cdiv(n_inner, block_i),)",
                  "    fused_reduction_kernel[grid](",
                  f"        {', '.join([names[id(o)] for o in self.operands] + ['out'])},",
                  "        n_reduce, n_inner,"]
        if sig.scalars:
            lines.append(f"        {', '.join(sig.scalars.values())},")
        lines += ["        BLOCK_R=BLOCK_R, BLOCK_I=block_i, num_warps=NUM_WARPS,", "    )",
                  "    return out"]
        return "\n".join(lines)

    def render(self, params: Mapping[str, int]) -> str:
        return module_source(
            self.problem, self.description,
            {"BLOCK_R": params["BLOCK_R"], "BLOCK_I": params["BLOCK_I"],
             "NUM_WARPS": params["num_warps"]},
            [self._kernel()], [self._launcher()], self.traced.forward_args,
            self.sig.call("fused_reduction"))

    @classmethod
    def plan(cls, problem: Problem, traced: Traced, lowered: Lowered) -> KernelPlan:
        red = lowered.reduces[0]
        kind, dims, _ = red.attrs
        what = "mean" if any(n.op == "count" for n in lowered.nodes) and kind == "sum" else kind
        shape = "[" + ", ".join(map(str, red.args[0].shape)) + "]"
        dtype = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}.get(
            str(lowered.output.dtype).removeprefix("torch."), "")
        where = f"dim {dims[0]}" if len(dims) == 1 else f"dims {', '.join(map(str, dims))}"
        desc = f"{what} over {where} of a {shape} {dtype} tensor (strided axis)"
        if lowered.output.shape == red.args[0].shape:
            desc += ", broadcast back over it in a fused second pass"
        return KernelPlan("reduction", desc, dict(SPACE), dict(DEFAULTS),
                          cls(problem, traced, lowered, desc))
