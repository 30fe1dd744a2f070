"""The full-reduction template: reductions over every element of a tensor (a loss' mean, a
Frobenius norm), with the elementwise ops before them fused and what follows them either a
scalar epilogue (``mean((p - t) ** 2)``) or a second elementwise pass over the same tensor
(``x / norm(x)``).

The tensor is viewed as [n_rows, period] rows, period being the elements of the longest
broadcast operand (the whole tensor when there is none), and walked in BLOCK-element tiles
[BLOCK_R, BLOCK_C] of it: a broadcast operand is read at the tile's columns, so no element pays
an integer division on the hot path. A first kernel gives each program a contiguous stretch of
tiles, keeping BLOCK lane accumulators per reduction; a single program combines the partials (in
chunks of FINAL_BLOCK, then a tree) and evaluates the scalar epilogue; for a tensor output a
third kernel applies it elementwise, one tile per program. Operands are the reduced tensor's
shape, a suffix of it (broadcast over the leading dims) or one value.

The grid has at least N_PROGRAMS programs, and more where a lane would otherwise add more than
LANE_CHAIN values in one fp32 chain: the error of such a chain grows with its length where the
terms are alike (16384 equal terms in one chain come out 1.5e-4 low, past the fp32 tolerance).
So the data is still read once, in a fixed order, and a value goes through at most LANE_CHAIN
sequential adds, trees, and a chain of n_parts / FINAL_BLOCK partials.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from kernelevolve.problem import Problem

from ..emit.expr import COMBINE, ExprWriter, reduce_call
from ..emit.operands import dtype_expr, signature
from ..emit.source import module_source
from ..frontend.ir import Lowered, Node
from ..frontend.trace import Traced
from ..plan import KernelPlan, Unsupported

SPACE = {"BLOCK": (256, 512, 1024, 2048, 4096, 8192), "N_PROGRAMS": (64, 128, 256, 512, 1024),
         "num_warps": (2, 4, 8, 16)}
DEFAULTS = {"BLOCK": 1024, "N_PROGRAMS": 256, "num_warps": 4}
# A reduction to one value of this many elements or more starts from 8192-wide blocks of 16
# warps: on the H200 (do_bench) 98_KLDivLoss (two logs an element) took 0.61-0.64 ms so against
# 0.76 ms at the defaults (torch.compile 0.64-0.66); MSE, Huber and hinge losses read at the
# bandwidth limit either way. A tensor output (x / ||x||) keeps the defaults: its one-tile
# apply programs ran 3% slower at 8192.
LARGE = 1 << 24
# The most values one lane adds in sequence: a chain of 256 equal fp32 terms errs by ~2e-6.
LANE_CHAIN = 256
# Partials the final program loads at a time (its lanes' chains are n_parts / FINAL_BLOCK long).
FINAL_BLOCK = 1024
_IDENTITY = {"sum": "0.0", "max": '-float("inf")', "min": 'float("inf")'}


def is_full(lowered: Lowered) -> bool:
    """Whether every reduction of the DAG reduces all dims of its argument."""
    reduces = lowered.reduces
    return bool(reduces) and all(
        tuple(r.attrs[1]) == tuple(range(len(r.args[0].shape))) and len(r.args[0].shape) > 0
        for r in reduces)


@dataclass
class FullReduceTemplate:
    problem: Problem
    traced: Traced
    lowered: Lowered
    description: str

    def __post_init__(self) -> None:
        self.reds = self.lowered.reduces
        self.main = self.reds[0].args[0].shape
        if any(r.args[0].shape != self.main for r in self.reds):
            raise Unsupported("full reductions of tensors of different shapes")
        below: set[int] = set()
        for r in self.reds:
            for n in r.args[0].walk():
                if n.op == "reduce":
                    raise Unsupported("a reduction of a reduced value, which no template covers")
                below.add(id(n))
        out = self.lowered.output
        self.tensor_out = out.shape not in ((), (1,) * len(out.shape))
        if self.tensor_out and out.shape != self.main:
            raise Unsupported(f"the output {list(out.shape)} after a full reduction is neither "
                              f"one value nor the reduced tensor's shape")
        for n in self.lowered.nodes:
            if n.op == "count" and tuple(n.attrs[0]) != tuple(range(len(self.main))):
                raise Unsupported("a count over part of the dims of a full reduction")
            if n.op in {"reshape", "gemm"} or (n.op == "load" and n.operand is not None
                                               and n.operand.chunk is not None):
                raise Unsupported(f"a {n.op} around a full reduction, which no template covers")
            if n.op == "load" and id(n) not in below and not self.tensor_out:
                raise Unsupported("a tensor combined with the result of a full reduction")
        self.operands = self.lowered.operands
        for op in self.operands:
            if op.shape != self.main and math.prod(op.shape) != 1 and tuple(
                    op.shape) != tuple(self.main[len(self.main) - len(op.shape):]):
                raise Unsupported(f"{op.expr} {list(op.shape)} broadcasts over part of "
                                  f"{list(self.main)} other than its leading dims")
        self.sig = signature(self.lowered, forward_args=self.traced.forward_args)
        # The longest broadcast suffix: the tensor is walked as rows of the elements it spans.
        self.period_rank = max((len(o.shape) for o in self.operands
                                if o.shape != self.main and math.prod(o.shape) != 1), default=0)

    def feasible(self, params: Mapping[str, int]) -> str | None:
        if params["BLOCK"] < 32 * params["num_warps"]:
            return f"a {params['BLOCK']}-wide block leaves threads of {params['num_warps']} warps idle"
        return None

    # -- kernels ---------------------------------------------------------------------------
    def _loader(self, writer_lines: list[str]):
        """Loads inside a [BLOCK_R, BLOCK_C] tile of the [n_rows, period] view: the reduced
        tensor's shape at ``offs``, the longest broadcast suffix at ``cols`` (no division), a
        shorter one at ``cols % numel``."""
        names = self.sig.operand_names
        cache: dict[int, str] = {}

        def load(n: Node) -> str | None:
            if n.op == "count":
                return f"(n_total - {n.attrs[1]})" if n.attrs[1] else "n_total"
            if n.op != "load":
                return None
            assert n.operand is not None
            op = n.operand
            if id(op) in cache:
                return cache[id(op)]
            name = names[id(op)]
            if math.prod(op.shape) == 1:
                expr = f"tl.load({name}_ptr).to(tl.float32)"
            elif op.shape == self.main:
                expr = f"tl.load({name}_ptr + offs, mask=mask, other=0.0).to(tl.float32)"
            elif len(op.shape) == self.period_rank:
                expr = (f"tl.load({name}_ptr + cols[None, :], mask=col_mask[None, :], "
                        f"other=0.0).to(tl.float32)")
            else:
                expr = (f"tl.load({name}_ptr + cols[None, :] % {name}_numel, "
                        f"mask=col_mask[None, :], other=0.0).to(tl.float32)")
            value = writer.tmp(expr)
            cache[id(op)] = value
            return value

        writer = ExprWriter(writer_lines, "        ", load, self.sig.scalars, prefix="v")
        return writer, load

    def _ptr_args(self) -> tuple[list[str], list[str]]:
        names = self.sig.operand_names
        ptrs = [f"{names[id(o)]}_ptr" for o in self.operands]
        numels = [f"{names[id(o)]}_numel" for o in self.operands
                  if o.shape != self.main and math.prod(o.shape) != 1]
        return ptrs, numels

    def _tile(self, ind: str, tile: str) -> list[str]:
        """Tile ``tile`` of the [n_rows, period] view: its rows, columns, mask and offsets (with
        no broadcast operand there is one row: no division at all)."""
        if self.period_rank == 0:  # 1-D tiles of the flat tensor (BLOCK_R is 1)
            return [f"{ind}offs = tl.cast({tile}, tl.int64) * BLOCK_C + offs_c",
                    f"{ind}mask = offs < period"]
        return [f"{ind}tile_r = {tile} // n_cb",
                f"{ind}rows = tile_r * BLOCK_R + offs_r",
                f"{ind}cols = tl.cast({tile} - tile_r * n_cb, tl.int64) * BLOCK_C + offs_c",
                f"{ind}col_mask = cols < period",
                f"{ind}mask = (rows < n_rows)[:, None] & col_mask[None, :]",
                f"{ind}offs = rows.to(tl.int64)[:, None] * period + cols[None, :]"]

    def _kernels(self) -> str:
        ptrs, numels = self._ptr_args()
        scalars = list(self.sig.scalars.values())
        sizes = ["n_rows", "period", "n_cb"]
        lines = ["@triton.jit", "def full_partial_kernel(", "    # Pointers",
                 f"    {', '.join(ptrs + ['part_ptr'])},",
                 "    # Sizes: the reduced tensor as [n_rows, period] (period: the elements the "
                 "longest",
                 "    # broadcast operand spans) in n_cb column tiles a row; the element count; "
                 "broadcast",
                 "    # operands' elements",
                 f"    {', '.join(sizes + ['n_blocks', 'blocks_per_part', 'n_total'] + numels)},"]
        if scalars:
            lines += ["    # Scalars (model attributes)", f"    {', '.join(scalars)},"]
        lines += ["    # Meta-parameters", "    BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr,",
                  "):",
                  "    # Program pid adds blocks_per_part consecutive tiles (blocks): a contiguous stretch.",
                  "    pid = tl.program_id(0)",
                  "    offs_r = tl.arange(0, BLOCK_R)", "    offs_c = tl.arange(0, BLOCK_C)"]
        shape = "[BLOCK_C]" if self.period_rank == 0 else "[BLOCK_R, BLOCK_C]"
        for k, r in enumerate(self.reds):
            lines.append(f"    acc{k} = tl.full({shape}, {_IDENTITY[r.attrs[0]]}, tl.float32)")
        lines += ["    first = pid * blocks_per_part",
                  "    for t in range(first, tl.minimum(first + blocks_per_part, n_blocks)):"]
        lines += self._tile("        ", "t")
        writer, _ = self._loader(lines)
        for k, r in enumerate(self.reds):
            v = writer.emit(r.args[0])
            ident = _IDENTITY[r.attrs[0]]
            lines.append("        " + f"acc{k} = " + COMBINE[r.attrs[0]].format(
                a=f"acc{k}", v=f"tl.where(mask, {v}, {ident})"))
        for k, r in enumerate(self.reds):
            kind = r.attrs[0]
            acc = f"acc{k}" if self.period_rank == 0 else reduce_call(kind, f"acc{k}", "1")
            lines.append(f"    tl.store(part_ptr + pid * {len(self.reds)} + {k}, "
                         f"{reduce_call(kind, acc, '0')})")
        lines += ["", "", "@triton.jit", "def full_final_kernel(", "    # Pointers",
                  f"    {', '.join(ptrs + ['part_ptr', 'res_ptr', 'out_ptr'])},",
                  "    # Sizes", f"    {', '.join(['n_parts', 'n_total'] + numels)},"]
        if scalars:
            lines += ["    # Scalars (model attributes)", f"    {', '.join(scalars)},"]
        lines += ["    # Meta-parameters", "    BLOCK_P: tl.constexpr,", "):"]
        for k, r in enumerate(self.reds):
            lines.append(f"    acc{k} = tl.full([BLOCK_P], {_IDENTITY[r.attrs[0]]}, tl.float32)")
        lines += ["    for start in range(0, n_parts, BLOCK_P):",
                  "        offs_p = start + tl.arange(0, BLOCK_P)",
                  "        mask_p = offs_p < n_parts"]
        for k, r in enumerate(self.reds):
            ident = _IDENTITY[r.attrs[0]]
            part = (f"tl.load(part_ptr + offs_p * {len(self.reds)} + {k}, mask=mask_p, "
                    f"other={ident})")
            lines.append(f"        acc{k} = " + COMBINE[r.attrs[0]].format(a=f"acc{k}", v=part))
        final = ExprWriter(lines, "    ", self._count_only, self.sig.scalars, prefix="e")
        for k, r in enumerate(self.reds):
            final.bind(r, final.tmp(reduce_call(r.attrs[0], f"acc{k}", "0")))
        if self.tensor_out:
            for k, r in enumerate(self.reds):
                lines.append(f"    tl.store(res_ptr + {k}, {final.names[id(r)]})")
        else:
            result = final.emit(self.lowered.output)
            lines.append(f"    tl.store(out_ptr, {result}.to(out_ptr.dtype.element_ty))")
        if self.tensor_out:
            lines += ["", "", "@triton.jit", "def full_apply_kernel(", "    # Pointers",
                      f"    {', '.join(ptrs + ['res_ptr', 'out_ptr'])},",
                      "    # Sizes (as the partial kernel's)",
                      f"    {', '.join(sizes + ['n_total'] + numels)},"]
            if scalars:
                lines += ["    # Scalars (model attributes)", f"    {', '.join(scalars)},"]
            lines += ["    # Meta-parameters", "    BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr,",
                      "):", "    offs_r = tl.arange(0, BLOCK_R)",
                      "    offs_c = tl.arange(0, BLOCK_C)"]
            lines += self._tile("    ", "tl.program_id(0)")
            apply_lines: list[str] = []
            writer, _ = self._loader(apply_lines)
            for k, r in enumerate(self.reds):
                writer.bind(r, f"tl.load(res_ptr + {k})")
            result = writer.emit(self.lowered.output)
            lines += [line[4:] for line in apply_lines]
            lines.append(f"    tl.store(out_ptr + offs, {result}.to(out_ptr.dtype.element_ty), "
                         f"mask=mask)")
        return "\n".join(lines)

    @staticmethod
    def _count_only(n: Node) -> str | None:
        if n.op == "count":
            return f"(n_total - {n.attrs[1]})" if n.attrs[1] else "n_total"
        if n.op == "load":
            raise Unsupported("a tensor in the scalar epilogue of a full reduction")
        return None

    def _launcher(self) -> str:
        sig, names = self.sig, self.sig.operand_names
        main = next(o for o in self.operands if o.shape == self.main) if any(
            o.shape == self.main for o in self.operands) else None
        if main is None:
            raise Unsupported("no input has the shape of the reduced tensor")
        m = names[id(main)]
        lines = ["def full_reduce(" + ", ".join(sig.params) + "):",
                 f'    """{self.description}."""']
        for src in sig.sources:
            lines.append(f"    {src.name} = {src.name}.contiguous()")
        for op in self.operands:
            other = names[id(op)]
            if op is main:
                continue
            if op.shape == self.main:
                lines += [f"    if {other}.shape != {m}.shape:",
                          f"        raise ValueError(\"{other} must have the shape of {m}\")"]
            elif math.prod(op.shape) == 1:
                lines += [f"    if {other}.numel() != 1:",
                          f"        raise ValueError(\"{other} must hold one value\")"]
            else:
                k = len(op.shape)
                lines += [f"    if tuple({other}.shape) != tuple({m}.shape[{m}.dim() - {k}:]):",
                          f"        raise ValueError(\"{other} must match the trailing dims of "
                          f"{m}\")"]
        numel_vals = [f"{names[id(o)]}.numel()" for o in self.operands
                      if o.shape != self.main and math.prod(o.shape) != 1]
        widest = next((names[id(o)] for o in self.operands
                       if o.shape != self.main and math.prod(o.shape) != 1
                       and len(o.shape) == self.period_rank), None)
        dtype = dtype_expr(self.lowered.output.dtype, self.operands, names)
        ptrs = [names[id(o)] for o in self.operands]
        scalars = list(sig.scalars.values())
        out_shape = (f"{m}.shape" if self.tensor_out else
                     f"[1] * {len(self.lowered.output.shape)}")
        sizes = ["n_rows", "period", "n_cb"]
        lines += [f"    total = {m}.numel()",
                  "    if total == 0:",
                  "        raise ValueError(\"cannot reduce an empty tensor\")",
                  f"    out = torch.empty({out_shape}, dtype={dtype}, device={m}.device)",
                  "    # The tensor as [n_rows, period] rows, so a broadcast operand is read at the "
                  "column",
                  f"    period = {f'{widest}.numel()' if widest else 'total'}",
                  "    n_rows = total // period",
                  "    block_c = min(BLOCK, triton.next_power_of_2(period))",
                  "    block_r = BLOCK // block_c",
                  "    n_cb = triton.cdiv(period, block_c)",
                  "    n_blocks = triton.cdiv(n_rows, block_r) * n_cb",
                  f"    # Enough programs that no lane adds more than {LANE_CHAIN} values in one "
                  "fp32 chain.",
                  f"    n_parts = min(n_blocks, max(N_PROGRAMS, triton.cdiv(n_blocks, "
                  f"{LANE_CHAIN})))",
                  "    blocks_per_part = triton.cdiv(n_blocks, n_parts)",
                  "    n_parts = triton.cdiv(n_blocks, blocks_per_part)",
                  "    part = torch.empty((n_parts, " + str(len(self.reds)) + "), "
                  f"dtype=torch.float32, device={m}.device)",
                  "    res = torch.empty((" + str(len(self.reds)) + ",), dtype=torch.float32, "
                  f"device={m}.device)",
                  "    full_partial_kernel[(n_parts,)](",
                  f"        {', '.join(ptrs + ['part'] + sizes + ['n_blocks', 'blocks_per_part', 'float(total)'] + numel_vals + scalars)},",
                  "        BLOCK_R=block_r, BLOCK_C=block_c, num_warps=NUM_WARPS)",
                  "    full_final_kernel[(1,)](",
                  f"        {', '.join(ptrs + ['part', 'res', 'out', 'n_parts', 'float(total)'] + numel_vals + scalars)},",
                  f"        BLOCK_P=min({FINAL_BLOCK}, triton.next_power_of_2(n_parts)))"]
        if self.tensor_out:
            lines += ["    full_apply_kernel[(n_blocks,)](",
                      f"        {', '.join(ptrs + ['res', 'out'] + sizes + ['float(total)'] + numel_vals + scalars)},",
                      "        BLOCK_R=block_r, BLOCK_C=block_c, num_warps=NUM_WARPS)"]
        shape = list(self.lowered.output.shape)
        lines.append("    return out" if self.tensor_out else
                     f"    return out.reshape({shape})")
        return "\n".join(lines)

    def render(self, params: Mapping[str, int]) -> str:
        return module_source(
            self.problem, self.description,
            {"BLOCK": params["BLOCK"], "N_PROGRAMS": params["N_PROGRAMS"],
             "NUM_WARPS": params["num_warps"]},
            [self._kernels()], [self._launcher()], self.traced.forward_args,
            self.sig.call("full_reduce"))

    @classmethod
    def plan(cls, problem: Problem, traced: Traced, lowered: Lowered) -> KernelPlan:
        kinds = sorted({r.attrs[0] for r in lowered.reduces})
        shape = "[" + ", ".join(map(str, lowered.reduces[0].args[0].shape)) + "]"
        desc = f"full {'/'.join(kinds)} reduction of a {shape} tensor with a fused epilogue"
        template = cls(problem, traced, lowered, desc)
        defaults = dict(DEFAULTS)
        if not template.tensor_out and math.prod(template.main) >= LARGE:
            defaults.update(BLOCK=8192, num_warps=16)
        return KernelPlan("full_reduction", desc, dict(SPACE), defaults, template)

