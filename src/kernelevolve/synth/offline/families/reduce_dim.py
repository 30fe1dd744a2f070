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

Reductions chained over the same axis (softmax over channels: a max, then a sum of
``exp(x - max)``; logsumexp's max, then its sum) take one pass each, in dependency order, with the
per-column values between them (logsumexp's largest, zeroed where infinite) computed once per
column. A max followed by the sum of ``exp(v - max)`` is one online pass: each column keeps its
running max and a sum rescaled by ``exp(old max - new max)`` when a tile raises it, so softmax
reads its input twice and logsumexp's ``where(|max| = inf, 0, max)`` shift takes two plain passes
(an infinite max would make the rescale NaN). Inputs broadcast along whole groups of the
[outer, reduce, inner] view (a bias over channels, ``[C, 1, 1]``) are loaded at their own offsets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kernelevolve.problem import Problem

from ..emit.expr import COMBINE, ExprWriter, reduce_call
from ..emit.operands import dtype_expr, signature
from ..emit.source import module_source
from ..frontend.ir import Lowered, Node, Operand
from ..frontend.trace import Traced
from ..plan import KernelPlan, Unsupported
from .rows import _online_pair

SPACE = {"BLOCK_R": (8, 16, 32, 64, 128), "BLOCK_I": (16, 32, 64, 128, 256),
         "num_warps": (1, 2, 4, 8)}
DEFAULTS = {"BLOCK_R": 64, "BLOCK_I": 64, "num_warps": 4}
_IDENTITY = {"sum": "0.0", "max": '-float("inf")', "min": 'float("inf")'}
_NINF = '-float("inf")'


@dataclass
class ReduceDimTemplate:
    problem: Problem
    traced: Traced
    lowered: Lowered
    description: str

    def __post_init__(self) -> None:
        reduces = self.lowered.reduces
        self.red = red = reduces[0]
        self.kind, self.dims, self.keepdim = red.attrs
        self.main = red.args[0].shape
        if list(self.dims) != list(range(self.dims[0], self.dims[-1] + 1)):
            raise Unsupported("a reduction over non-adjacent dims, which no template covers")
        if len(reduces) > 1:
            if any(r.args[0].shape != self.main for r in reduces):
                raise Unsupported("a reduction of an already reduced value over a non-trailing "
                                  "dim, which no template covers")
            if not all(r.attrs[2] for r in reduces):
                raise Unsupported(f"{len(reduces)} reductions over a non-trailing dim, one "
                                  f"without keepdim; the strided template chains them with it")
        below: set[int] = set()
        for r in reduces:
            below |= {id(n) for n in r.args[0].walk()}
        # A tensor output: the reduced value broadcast back over the input it came from.
        self.tensor_out = self.keepdim and self.lowered.output.shape == self.main
        if len(reduces) == 1:
            self._check_single(below)
        else:
            self._check_chained(below)
        self.operands = self.lowered.operands
        if any(o.chunk is not None for o in self.operands):
            raise Unsupported("a split input inside a strided reduction")
        self.tiles = [o for o in self.operands if o.shape == self.main]
        if not self.tiles:
            raise Unsupported("the reduced tensor is not an input")
        self.sig = signature(self.lowered, forward_args=self.traced.forward_args)
        self.passes = _passes(reduces)

    def _check_single(self, below: set[int]) -> None:
        """One reduction: inputs of the reduced tensor's shape and scalars only (a broadcast
        input would change which parts the program split makes of plans it already writes)."""
        for n in self.lowered.nodes:
            if self.tensor_out and n.op == "load" and n.shape in (self.main, ()):
                continue
            if id(n) in below or n is self.red:
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

    def _check_chained(self, below: set[int]) -> None:
        """Chained reductions: inputs broadcast along whole groups too; after the reductions, a
        per-column output takes only what is constant over the reduced axis (keepdim frame)."""
        for n in self.lowered.nodes:
            if n.op == "load" and n.operand is not None:
                if id(n) not in below and not self.tensor_out and (
                        not self.keepdim or self._flags(n.operand)[1]):
                    raise Unsupported("a tensor combined with the result of a strided "
                                      "reduction, which no template covers")
                self._flags(n.operand)
            elif id(n) in below or n.op == "reduce":
                if n.op in {"reshape", "count", "gemm"}:
                    raise Unsupported(f"a {n.op} before a strided reduction")
            elif n.op == "reshape":
                raise Unsupported("a reshape after a strided reduction")

    def _flags(self, op: Operand) -> tuple[bool, bool, bool]:
        """Whether ``op`` varies over the outer, reduced and inner groups of the
        [outer, reduce, inner] view; Unsupported where it is broadcast over part of one."""
        frame, a, b = self.main, self.dims[0], self.dims[-1]
        if len(op.shape) > len(frame):
            raise Unsupported(f"{op.expr} has more dims than the strided reduction's input")
        aligned = (1,) * (len(frame) - len(op.shape)) + tuple(op.shape)
        flags = []
        for group in (range(0, a), range(a, b + 1), range(b + 1, len(frame))):
            full = [aligned[d] == frame[d] for d in group if frame[d] != 1]
            if any(aligned[d] not in (1, frame[d]) for d in group) or (
                    full and any(full) != all(full)):
                raise Unsupported(f"{op.expr} {list(op.shape)} is broadcast inside a strided "
                                  f"reduction, which no template covers")
            flags.append(bool(full) and all(full))
        return flags[0], flags[1], flags[2]

    def _broadcast_load(self, op: Operand, name: str, column: bool) -> str:
        """A load of ``op`` broadcast along whole groups: [BLOCK_R, BLOCK_I]-broadcastable in a
        pass over the reduced axis, [BLOCK_I] per column (``column``)."""
        o, r, i = self._flags(op)
        if not (o or r or i):
            return f"tl.load({name}_ptr).to(tl.float32)"
        assert not (column and r)
        stride_o = " * ".join(s for s, f in (("n_reduce", r), ("n_inner", i)) if f)
        terms = [f"outer * {stride_o}" if stride_o else "outer"] if o else []
        if r:
            terms.append("rows[:, None].to(tl.int64)" + (" * n_inner" if i else ""))
        if i:
            terms.append("offs_i" if column else "offs_i[None, :]")
        mask = ("mask_i" if column else "mask" if r else "mask_i[None, :]") if i else (
            "rows[:, None] < n_reduce" if r else "")
        masked = f", mask={mask}, other=0.0" if mask else ""
        return f"tl.load({name}_ptr + {' + '.join(terms)}{masked}).to(tl.float32)"

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
                  "    base = outer * n_reduce * n_inner + offs_i[None, :]"]

        def load(n: Node) -> str | None:
            if n.op == "load":
                assert n.operand is not None
                name = names[id(n.operand)]
                if n.operand.shape == ():
                    return writer[0].tmp(f"tl.load({name}_ptr).to(tl.float32)")
                if n.operand.shape != self.main:
                    return writer[0].tmp(self._broadcast_load(n.operand, name, column=False))
                return writer[0].tmp(f"tl.load({name}_ptr + offs, mask=mask, other=0.0)"
                                     f".to(tl.float32)")
            return epilogue(n)

        def epilogue(n: Node) -> str | None:
            if n.op == "count":
                return f"(n_reduce - {n.attrs[1]})" if n.attrs[1] else "n_reduce"
            if n.op == "load":  # per column: broadcast over the reduced axis
                assert n.operand is not None
                return after.tmp(self._broadcast_load(n.operand, names[id(n.operand)],
                                                      column=True))
            return None

        after = ExprWriter(lines, "    ", epilogue, self.sig.scalars, prefix="e")
        writer: list[ExprWriter] = []  # the writer whose loop the loads go into
        columns = self._per_column()
        single = len(self.passes) == 1 and len(self.passes[0][1]) == 1
        for p, (kind, nodes) in enumerate(self.passes):
            loop = ExprWriter(lines, "        ", load, self.sig.scalars,
                              prefix="v" if p == 0 else f"p{p}_")
            self._bind_columns(loop, after, columns)
            writer[:] = [loop]
            if kind == "online":
                self._online_pass(lines, p, nodes, loop, after)
            else:
                accs = ["acc"] if single else [f"acc{p}_{k}" for k in range(len(nodes))]
                if not single:
                    lines.append(f"    # pass {p + 1}: {', '.join(r.attrs[0] for r in nodes)} "
                                 f"over the reduced axis")
                for acc, r in zip(accs, nodes, strict=True):
                    lines.append(f"    {acc} = tl.full([BLOCK_R, BLOCK_I], "
                                 f"{_IDENTITY[r.attrs[0]]}, tl.float32)")
                lines += self._loop_head()
                for acc, r in zip(accs, nodes, strict=True):
                    v = loop.emit(r.args[0])
                    ident = _IDENTITY[r.attrs[0]]
                    step = COMBINE[r.attrs[0]].format(a=acc, v=f"tl.where(mask, {v}, {ident})")
                    lines.append(f"        {acc} = {step}")
                for acc, r in zip(accs, nodes, strict=True):
                    after.bind(r, after.tmp(reduce_call(r.attrs[0], acc, "0")))
            # the per-column values the next passes take, once
            for r in (r for _, later in self.passes[p + 1:] for r in later):
                for n in r.args[0].walk():
                    if id(n) in columns and n.op not in ("const", "load") and all(
                            id(d) in after.names for d in n.walk() if d.op == "reduce"):
                        after.emit(n)

        if not self.tensor_out:
            result = after.emit(self.lowered.output)
            lines.append("    tl.store(out_ptr + outer * n_inner + offs_i, "
                         f"{result}.to(out_ptr.dtype.element_ty), mask=mask_i)")
            return "\n".join(lines)
        # The per-column part of the epilogue (what depends on the reduction but on no tensor),
        # once; then a last pass over the reduced axis writes every element.
        for n in self.lowered.output.walk():
            if id(n) in columns and n.op not in ("const", "load"):
                after.emit(n)
        if not single:
            lines.append("    # last pass: the output")
        lines += self._loop_head()
        second = ExprWriter(lines, "        ", load, self.sig.scalars, prefix="w")
        self._bind_columns(second, after, columns)
        writer[:] = [second]
        result = second.emit(self.lowered.output)
        lines.append(f"        tl.store(out_ptr + offs, {result}.to(out_ptr.dtype.element_ty), "
                     f"mask=mask)")
        return "\n".join(lines)

    @staticmethod
    def _loop_head() -> list[str]:
        return ["    for start in range(0, n_reduce, BLOCK_R):",
                "        rows = start + offs_r",
                "        mask = (rows[:, None] < n_reduce) & mask_i[None, :]",
                "        offs = base + rows[:, None].to(tl.int64) * n_inner"]

    def _bind_columns(self, loop: ExprWriter, after: ExprWriter, columns: set[int]) -> None:
        """The per-column values computed so far, broadcast over a pass's rows."""
        for n in self.lowered.nodes:
            if id(n) in columns and n.op not in ("const", "load") and id(n) in after.names:
                loop.bind(n, f"{after.names[id(n)]}[None, :]")

    def _online_pass(self, lines: list[str], p: int, nodes: list[Node], loop: ExprWriter,
                     after: ExprWriter) -> None:
        """max(v) and sum(exp(v - max)) in one pass (the online softmax): each column keeps its
        running max and a sum rescaled by exp(old max - new max) when a tile raises the max."""
        mx, sm = nodes
        m_run, s_run = ("m_run", "s_run") if p == 0 else (f"m_run{p}", f"s_run{p}")
        lines += [f"    # pass {p + 1}: max and sum of exp over the reduced axis at once (online)",
                  f"    {m_run} = tl.full([BLOCK_I], {_NINF}, tl.float32)",
                  f"    {s_run} = tl.zeros([BLOCK_I], dtype=tl.float32)"]
        lines += self._loop_head()
        v = loop.emit(mx.args[0])
        lines += [
            f"        v_masked = tl.where(mask, {v}, {_NINF})",
            f"        m_new = max_nan({m_run}, {reduce_call('max', 'v_masked', '0')})",
            "        # a column with no finite max yet (or a NaN max): its sum stays 0",
            f"        {s_run} = tl.where(m_new > {_NINF}, {s_run} * tl.exp({m_run} - m_new) + "
            f"tl.sum(tl.exp(v_masked - m_new[None, :]), axis=0), 0.0)",
            f"        {m_run} = m_new"]
        after.bind(mx, m_run)
        after.bind(sm, s_run)

    def _per_column(self) -> set[int]:
        """Ids of the nodes that depend on a reduction and on no tensor load."""
        memo: dict[int, tuple[bool, bool]] = {}  # id -> (reads a tensor, reads a reduction)
        for n in self.lowered.nodes:
            if n.op == "reduce":
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
        groups = []  # operands broadcast along whole groups: checked once the sizes are known
        for op in self.operands:
            if op.shape not in (self.main, ()):
                o, r, i = self._flags(op)
                want = " * ".join(n for n, f in (("n_outer", o), ("n_reduce", r), ("n_inner", i))
                                  if f) or "1"
                groups += [f"    if {names[id(op)]}.numel() != {want}:",
                           f"        raise ValueError(f\"{names[id(op)]} has "
                           f"{{{names[id(op)]}.numel()}} elements, expected {{{want}}}\")"]
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
                  else "    n_outer = out.numel() // n_inner"]
        lines += groups
        lines += ["    block_i = min(BLOCK_I, triton.next_power_of_2(n_inner))",
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
        reduces = lowered.reduces
        red = reduces[0]
        kind, dims, _ = red.attrs
        what = "mean" if any(n.op == "count" for n in lowered.nodes) and kind == "sum" else kind
        if len(reduces) > 1:
            online = len(reduces) == 2 and _online_pair([reduces[0]], [reduces[1]])
            logsumexp = [r.attrs[0] for r in reduces] == ["max", "sum"] and any(
                n.op == "log" and n.args[0] is reduces[1] for n in lowered.nodes)
            what = ("softmax" if online and lowered.output.shape == red.args[0].shape else
                    "logsumexp" if logsumexp else
                    f"{len(reduces)} chained reductions ({', '.join(r.attrs[0] for r in reduces)})")
        shape = "[" + ", ".join(map(str, red.args[0].shape)) + "]"
        dtype = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}.get(
            str(lowered.output.dtype).removeprefix("torch."), "")
        where = f"dim {dims[0]}" if len(dims) == 1 else f"dims {', '.join(map(str, dims))}"
        desc = f"{what} over {where} of a {shape} {dtype} tensor (strided axis)"
        if lowered.output.shape == red.args[0].shape:
            desc += ", broadcast back over it in a fused second pass"
        return KernelPlan("reduction", desc, dict(SPACE), dict(DEFAULTS),
                          cls(problem, traced, lowered, desc))


def _passes(reduces: list[Node]) -> list[tuple[str, list[Node]]]:
    """The reductions in passes over the reduced axis, in dependency order: ``plain`` (the
    reductions of one level) or ``online`` ([max, sum of exp(v - max)])."""
    level: dict[int, int] = {}
    for r in reduces:  # dependencies first (walk order)
        level[id(r)] = 1 + max((level[id(d)] for d in r.args[0].walk() if d.op == "reduce"),
                               default=0)
    levels: list[list[Node]] = [[] for _ in range(max(level.values()))]
    for r in reduces:
        levels[level[id(r)] - 1].append(r)
    passes: list[tuple[str, list[Node]]] = []
    p = 0
    while p < len(levels):
        if p + 1 < len(levels) and _online_pair(levels[p], levels[p + 1]):
            passes.append(("online", [levels[p][0], levels[p + 1][0]]))
            p += 2
        else:
            passes.append(("plain", levels[p]))
            p += 1
    return passes
