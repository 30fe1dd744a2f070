"""The row template: elementwise ops and reductions over the trailing dims, one row per lane row.

Softmax, log-softmax, layer norm, RMS norm, L2 normalisation, variance and plain reductions all
lower to the same DAG of elementwise ops and ``reduce`` nodes over the trailing dims (the "row").
Each program takes BLOCK_M rows. When a row fits in BLOCK_N columns it is read once and every
value stays in registers (SINGLE_PASS); otherwise the reductions run in as few passes as their
dependencies allow, recomputing elementwise values from the inputs in each pass instead of
storing them. Softmax and log-softmax take two reads and one write: max and sum of exp in one
online pass (a running max per row, the sum rescaled when it grows), then the output pass. A
mean and the sum of squared deviations from it (layer norm, variance) take one pass too: sums of
the values and their squares about a shift, the mean of the row's first tile, so the
cancellation in ``S2 - S1^2 / n`` stays small when the values sit far from zero.

When there are fewer row blocks than N_PROGRAMS (layer norm of 16 rows of 4M elements would
keep 16 of 132 SMs busy), each row is split into column chunks: one kernel per pass writes each
chunk's partial reductions to a workspace [passes, rows, splits, 3], the next kernel combines a
row's partials in its prologue (sums add, maxima max, online pairs rescale, moment sums add about
the shared shift), and the last kernel writes the output chunk by chunk. Each chunk is a whole
number of BLOCK_N tiles, so the column mask stays ``cols < n_cols`` and the loads vectorize.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kernelevolve.problem import Problem

from ..emit.expr import COMBINE, NAN, ExprWriter, reduce_call
from ..emit.operands import Signature, dtype_expr, signature
from ..emit.source import module_source
from ..frontend.ir import Lowered, Node, Operand
from ..frontend.lower import reachable_ops
from ..frontend.trace import Traced
from ..plan import KernelPlan, Unsupported

SPACE = {"BLOCK_M": (1, 2, 4, 8, 16), "BLOCK_N": (128, 256, 512, 1024, 2048, 4096, 8192),
         "num_warps": (1, 2, 4, 8, 16), "N_PROGRAMS": (256, 512, 1024, 2048, 4096)}
# Splits of one row at most: a program combining a row's partials loads them in one tile.
MAX_SPLITS = 1024
_IDENTITY = {"sum": "0.0", "max": '-float("inf")', "min": 'float("inf")'}
# Partial values per (pass, row, split) in the workspace: a moment pass keeps three.
_WS_WIDTH = 3
# The grid a split row aims at. Layer norm of 16 rows of 4M fp32 on the H200 (do_bench): 1024
# programs 0.43 ms, 2048 0.70 ms, 4096 0.23 ms (0.60 of the copy roofline; torch.compile 0.32).
DEFAULT_PROGRAMS = 4096


@dataclass
class RowsTemplate:
    problem: Problem
    traced: Traced
    lowered: Lowered
    operator_class: str
    description: str
    kinds: dict[int, str] = field(default_factory=dict)  # id(node) -> tile | row | col | scalar
    reduced: set[int] = field(default_factory=set)  # nodes of rank r - k (reductions w/o keepdim)
    reduced_leaves: set[int] = field(default_factory=set)  # loads read in that reduced frame

    def __post_init__(self) -> None:
        first = self.lowered.reduces[0]
        self.main = first.args[0].shape
        self.dims = first.attrs[1]
        self.r, self.k = len(self.main), len(self.dims)
        for n in self.lowered.nodes:
            if n.op != "load":
                self._kind(n)
        out = self.lowered.output
        if self.kinds[id(out)] not in {"tile", "row"}:
            raise Unsupported("the output does not vary over rows")
        self.out_kind = "tile" if out.shape == self.main else self.kinds[id(out)]
        self.operands = self.lowered.operands
        self.tiles = [o for o in self.operands if self._operand_kind(o) == "tile"]
        if not self.tiles:
            raise Unsupported("no input covers the whole reduced tensor")
        if any(o.shape != self.main for o in self.tiles):
            raise Unsupported("inputs of different shapes inside a row computation")
        if any(o.chunk is not None for o in self.operands):
            raise Unsupported("a split input inside a row computation, which no template covers")
        self.sig: Signature = signature(self.lowered, forward_args=self.traced.forward_args)
        self.levels = self._levels()
        self.passes = self._passes()

    # -- analysis --------------------------------------------------------------------------
    def _leaf_kind(self, op: Operand, reduced_frame: bool = False) -> str:
        frame = self.main[:self.r - self.k] if reduced_frame else self.main
        shape = op.shape
        if len(shape) > len(frame):
            raise Unsupported(f"{op.expr} has more dims than the rows it combines with")
        aligned = (1,) * (len(frame) - len(shape)) + shape
        full = [s == f for s, f in zip(aligned, frame, strict=True)]
        for s, f in zip(aligned, frame, strict=True):
            if s not in (1, f):
                raise Unsupported(f"{op.expr} {list(shape)} does not broadcast to {list(frame)}")
        n_outer = self.r - self.k
        outer = [full[d] for d in range(min(n_outer, len(frame))) if frame[d] != 1]
        inner = [full[d] for d in range(n_outer, len(frame)) if frame[d] != 1]
        if (outer and any(outer) != all(outer)) or (inner and any(inner) != all(inner)):
            raise Unsupported(f"{op.expr} {list(shape)} broadcasts over part of the rows or "
                              f"part of a row, which no template covers")
        o, i = bool(outer) and all(outer), bool(inner) and all(inner)
        return {(True, True): "tile", (True, False): "row", (False, True): "col",
                (False, False): "scalar"}[(o, i)]

    def _operand_kind(self, op: Operand) -> str:
        loads = [n for n in self.lowered.nodes if n.op == "load" and n.operand is op]
        return self.kinds[id(loads[0])]

    def _kind(self, n: Node) -> str:
        if id(n) in self.kinds:
            return self.kinds[id(n)]
        if n.op == "const" or n.op == "count":
            kind = "scalar"
        elif n.op == "load":
            assert n.operand is not None
            kind = self._leaf_kind(n.operand)
        elif n.op == "reduce":
            arg_kind = self._kind(n.args[0])
            if n.attrs[1] != self.dims or (n.args[0].shape != self.main and arg_kind == "tile"):
                raise Unsupported("reductions over different dims or shapes, which no template "
                                  "covers")
            if id(n.args[0]) in self.reduced:
                raise Unsupported("a reduction of an already reduced value")
            kind = "row"
            if not n.attrs[2]:
                self.reduced.add(id(n))
        elif n.op == "reshape":
            arg = n.args[0]
            outer = self.main[:self.r - self.k]
            kind = self._kind(arg)
            if kind != "row":
                raise Unsupported("a reshape inside a row computation, which no template covers")
            if id(arg) in self.reduced and n.shape == (*outer, *(1,) * self.k):
                pass
            elif id(arg) not in self.reduced and n.shape == outer:
                self.reduced.add(id(n))
            else:
                raise Unsupported("a reshape inside a row computation, which no template covers")
        else:
            in_reduced = any(id(a) in self.reduced for a in n.args if a.op != "load")
            args = []
            for a in n.args:
                if a.op == "load":
                    assert a.operand is not None
                    kind = self._leaf_kind(a.operand, reduced_frame=in_reduced)
                    self.kinds.setdefault(id(a), kind)
                    if in_reduced:
                        self.reduced_leaves.add(id(a))
                else:
                    kind = self._kind(a)
                    if in_reduced and id(a) not in self.reduced and kind != "scalar":
                        raise Unsupported("a reduction without keepdim broadcast against the "
                                          "full tensor, which no template covers")
                args.append(kind)
            if in_reduced:
                self.reduced.add(id(n))
            kinds = set(args)
            kind = ("tile" if "tile" in kinds or {"row", "col"} <= kinds else
                    "row" if "row" in kinds else "col" if "col" in kinds else "scalar")
        self.kinds[id(n)] = kind
        return kind

    def _levels(self) -> list[list[Node]]:
        level: dict[int, int] = {}
        for n in self.lowered.nodes:
            deps = [level[id(a)] for a in n.args if id(a) in level]
            own = max(deps, default=0)
            if n.op == "reduce":
                level[id(n)] = own + 1
            elif deps:
                level[id(n)] = own
        out: list[list[Node]] = []
        for n in self.lowered.reduces:
            lv = level[id(n)]
            while len(out) < lv:
                out.append([])
            out[lv - 1].append(n)
        return out

    def feasible(self, params: Mapping[str, int]) -> str | None:
        tile = params["BLOCK_M"] * params["BLOCK_N"]
        threads = 32 * params["num_warps"]
        if tile < threads:
            return f"a {tile}-element tile leaves some of the {threads} threads idle"
        if tile // threads > 64:
            return (f"a {tile}-element tile is {tile // threads} values per thread per live "
                    f"tensor (register pressure)")
        return None

    # -- kernel ----------------------------------------------------------------------------
    def _load(self, writer: ExprWriter, op: Operand, frame_reduced: bool = False) -> str:
        name = self.sig.operand_names[id(op)]
        kind = self._leaf_kind(op, frame_reduced)
        if kind == "tile":
            return writer.tmp(f"tl.load({name}_ptr + rows[:, None] * stride_{name} + "
                              f"cols[None, :], mask=mask, other=0.0).to(tl.float32)")
        if kind == "col":
            return writer.tmp(f"tl.load({name}_ptr + cols[None, :], mask=cols[None, :] < n_cols, "
                              f"other=0.0).to(tl.float32)")
        if kind == "row":
            return writer.tmp(f"tl.load({name}_ptr + rows[:, None], mask=row_mask[:, None], "
                              f"other=0.0).to(tl.float32)")
        return writer.tmp(f"tl.load({name}_ptr).to(tl.float32)")

    def _special(self, writer: ExprWriter, single: bool):  # type: ignore[no-untyped-def]
        def special(n: Node) -> str | None:
            if n.op == "load":
                assert n.operand is not None
                return self._load(writer, n.operand, id(n) in self.reduced_leaves)
            if n.op == "count":
                correction = n.attrs[1]
                return f"(n_cols - {correction})" if correction else "n_cols"
            if n.op == "reshape":
                return writer.names[id(n.args[0])]
            if n.op == "reduce":
                if not single:
                    raise AssertionError("a reduce is finalised outside the loop")
                kind = n.attrs[0]
                v = writer.names[id(n.args[0])]
                return writer.tmp(reduce_call(kind, f"tl.where(mask, {v}, {_IDENTITY[kind]})",
                                              "1", keep_dims=True))
            return None

        return special

    def _row_nodes(self, done: set[int]) -> list[Node]:
        """Row- and scalar-kind nodes computable from the finished reductions."""
        ready = []
        for n in self.lowered.nodes:
            if n.op == "reduce" or self.kinds[id(n)] not in {"row", "scalar"}:
                continue
            if all(r in done for r in (id(d) for d in n.walk() if d.op == "reduce")):
                ready.append(n)
        return ready

    def _store(self, lines: list[str], indent: str, value: str) -> None:
        if self.out_kind == "tile":
            lines.append(f"{indent}tl.store(out_ptr + rows[:, None] * n_cols + cols[None, :], "
                         f"{value}.to(out_ptr.dtype.element_ty), mask=mask)")
        else:
            lines.append(f"{indent}tl.store(out_ptr + rows[:, None], "
                         f"{value}.to(out_ptr.dtype.element_ty), mask=row_mask[:, None])")

    def _emit_rows(self, row_writer: ExprWriter, done: set[int]) -> None:
        for n in self._row_nodes(done):
            if id(n) not in row_writer.names:
                row_writer.emit(n)

    def _passes(self) -> list[tuple[str, list[Node]]]:
        """The reductions grouped into passes over the row: ``plain`` (one level), ``online``
        ([max, sum of exp]) or ``moment`` ([sum, sum of squared deviations, the mean])."""
        passes: list[tuple[str, list[Node]]] = []
        p = 0
        while p < len(self.levels):
            level = self.levels[p]
            nxt = self.levels[p + 1] if p + 1 < len(self.levels) else None
            mean = _moment_pair(level, nxt) if nxt is not None else None
            if nxt is not None and _online_pair(level, nxt):
                passes.append(("online", [level[0], nxt[0]]))
                p += 2
            elif nxt is not None and mean is not None:
                passes.append(("moment", [level[0], nxt[0], mean]))
                p += 2
            else:
                passes.append(("plain", list(level)))
                p += 1
        return passes

    @staticmethod
    def _loop(lines: list[str], ind: str, var: str, span: str) -> None:
        lines += [f"{ind}for {var} in {span}:", f"{ind}    cols = {var} + offs_n",
                  f"{ind}    mask = row_mask[:, None] & (cols[None, :] < n_cols)"]

    def _writer(self, lines: list[str], ind: str, prefix: str,
                row_writer: ExprWriter) -> ExprWriter:
        writer = ExprWriter(lines, ind, lambda n: None, self.sig.scalars, prefix=prefix)
        writer.special = self._special(writer, single=False)
        writer.names = dict(row_writer.names)
        return writer

    def _pass_values(self, lines: list[str], ind: str, p: int, kind: str, nodes: list[Node],
                     row_writer: ExprWriter, var: str, span: str) -> list[str]:
        """Emit pass ``p``'s loop over the columns of ``span``; return the names of its
        [BLOCK_M, 1] results: one per reduction (plain), [max, sum of exp] (online), or the
        sums of the values and of their squares about a shift, and the shift (moment)."""
        inner = ind + "    "
        loop = self._writer(lines, inner, f"p{p}_", row_writer)
        if kind == "online":
            return self._online_pass(lines, ind, p, nodes[0], row_writer, var, span, loop)
        if kind == "moment":
            lines.append(f"{ind}# pass {p + 1}: mean and squared deviations at once (sums about "
                         f"a shift, the mean of the row's first tile)")
            lines += [f"{ind}cols = offs_n", f"{ind}mask = row_mask[:, None] & (cols[None, :] "
                      f"< n_cols)"]
            head = self._writer(lines, ind, f"h{p}_", row_writer)
            first = head.emit(nodes[0].args[0])
            shift = row_writer.tmp(
                f"tl.sum(tl.where(mask, {first}, 0.0), axis=1, keep_dims=True) / "
                f"tl.maximum(tl.sum(mask.to(tl.float32), axis=1, keep_dims=True), 1.0)")
            acc1 = row_writer.tmp("tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)")
            acc2 = row_writer.tmp("tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)")
            self._loop(lines, ind, var, span)
            v = loop.emit(nodes[0].args[0])
            lines += [f"{inner}d{p} = tl.where(mask, {v} - {shift}, 0.0)",
                      f"{inner}{acc1} = {acc1} + d{p}", f"{inner}{acc2} = {acc2} + d{p} * d{p}"]
            return [row_writer.tmp(f"tl.sum({acc1}, axis=1, keep_dims=True)"),
                    row_writer.tmp(f"tl.sum({acc2}, axis=1, keep_dims=True)"), shift]
        lines.append(f"{ind}# pass {p + 1}: {', '.join(r.attrs[0] for r in nodes)} over the row")
        accs = [row_writer.tmp(f"tl.full([BLOCK_M, BLOCK_N], {_IDENTITY[r.attrs[0]]}, "
                               f"tl.float32)") for r in nodes]
        self._loop(lines, ind, var, span)
        for r, acc in zip(nodes, accs, strict=True):
            v = loop.emit(r.args[0])
            combined = COMBINE[r.attrs[0]].format(
                a=acc, v=f"tl.where(mask, {v}, {_IDENTITY[r.attrs[0]]})")
            lines.append(f"{inner}{acc} = {combined}")
        return [row_writer.tmp(reduce_call(r.attrs[0], acc, "1", keep_dims=True))
                for r, acc in zip(nodes, accs, strict=True)]

    @staticmethod
    def _bind_pass(row_writer: ExprWriter, kind: str, nodes: list[Node],
                   values: list[str]) -> None:
        if kind == "moment":
            total, squares, mean = nodes
            s1, s2, shift = values
            m = row_writer.tmp(f"{shift} + {s1} / n_cols")
            row_writer.bind(mean, m)
            row_writer.bind(total, row_writer.tmp(f"{m} * n_cols"))
            # S2 - S1^2 / n is the sum of squared deviations; rounding may leave it just below 0
            row_writer.bind(squares, row_writer.tmp(f"tl.maximum({s2} - {s1} * ({s1} / n_cols), "
                                                    f"0.0{NAN})"))
            return
        for r, v in zip(nodes, values, strict=True):
            row_writer.bind(r, v)

    def _multi_pass(self, lines: list[str]) -> None:
        ind = "        "
        row_writer = ExprWriter(lines, ind, lambda n: None, self.sig.scalars, prefix="r")
        row_writer.special = self._special(row_writer, single=False)
        done: set[int] = set()
        self._emit_rows(row_writer, done)
        for p, (kind, nodes) in enumerate(self.passes):
            values = self._pass_values(lines, ind, p, kind, nodes, row_writer, "start",
                                       "range(0, n_cols, BLOCK_N)")
            self._bind_pass(row_writer, kind, nodes, values)
            done |= {id(r) for r in nodes if r.op == "reduce"}
            self._emit_rows(row_writer, done)
        out = self.lowered.output
        if self.out_kind == "row":
            self._store(lines, ind, row_writer.emit(out))
            return
        lines.append(f"{ind}# last pass: the output")
        self._loop(lines, ind, "start", "range(0, n_cols, BLOCK_N)")
        loop = self._writer(lines, ind + "    ", "o", row_writer)
        self._store(lines, ind + "    ", loop.emit(out))

    def _online_pass(self, lines: list[str], ind: str, p: int, mx: Node, row_writer: ExprWriter,
                     var: str, span: str, loop: ExprWriter) -> list[str]:
        """max(v) and sum(exp(v - max)) in one pass (the online softmax): each row keeps its
        running max and a sum rescaled by exp(old max - new max) when a chunk raises the max;
        one exp per element."""
        ninf = '-float("inf")'
        m_run = row_writer.tmp(f"tl.full([BLOCK_M, 1], {ninf}, tl.float32)")
        s_run = row_writer.tmp("tl.zeros([BLOCK_M, 1], dtype=tl.float32)")
        lines.append(f"{ind}# pass {p + 1}: max and sum of exp over the row at once (online)")
        self._loop(lines, ind, var, span)
        v = loop.emit(mx.args[0])
        inner = ind + "    "
        lines += [
            f"{inner}v_masked = tl.where(mask, {v}, {ninf})",
            f"{inner}m_new = tl.maximum({m_run}, tl.max(v_masked, axis=1, keep_dims=True))",
            f"{inner}# a row with no finite max yet: its sum stays 0 (exp(-inf - -inf) is NaN)",
            f"{inner}{s_run} = tl.where(m_new > {ninf}, {s_run} * tl.exp({m_run} - m_new) + "
            f"tl.sum(tl.exp(v_masked - m_new), axis=1, keep_dims=True), 0.0)",
            f"{inner}{m_run} = m_new",
        ]
        return [m_run, s_run]

    def _combine_pass(self, lines: list[str], ind: str, q: int, kind: str, nodes: list[Node],
                      row_writer: ExprWriter) -> list[str]:
        """Pass ``q``'s results for the program's rows from every split's partials."""
        w = _WS_WIDTH
        base = f"ws_ptr + (({q} * n_rows + rows[:, None]) * n_splits + offs_s[None, :]) * {w}"

        def part(k: int, other: str) -> str:
            return row_writer.tmp(f"tl.load({base} + {k}, mask=s_mask, other={other})")

        lines.append(f"{ind}# pass {q + 1}'s partials, combined over the splits")
        if kind == "online":
            ninf = '-float("inf")'
            m_i, s_i = part(0, ninf), part(1, "0.0")
            m = row_writer.tmp(f"tl.max({m_i}, axis=1, keep_dims=True)")
            m_safe = row_writer.tmp(f"tl.where({m} == {ninf}, 0.0, {m})")
            return [m, row_writer.tmp(f"tl.sum({s_i} * tl.exp({m_i} - {m_safe}), axis=1, "
                                      f"keep_dims=True)")]
        if kind == "moment":
            shift = row_writer.tmp(f"tl.load(ws_ptr + ({q} * n_rows + rows[:, None]) * "
                                   f"n_splits * {w} + 2, mask=row_mask[:, None], other=0.0)")
            return [row_writer.tmp(f"tl.sum({part(0, '0.0')}, axis=1, keep_dims=True)"),
                    row_writer.tmp(f"tl.sum({part(1, '0.0')}, axis=1, keep_dims=True)"), shift]
        return [row_writer.tmp(reduce_call(r.attrs[0], part(k, _IDENTITY[r.attrs[0]]), "1",
                                           keep_dims=True)) for k, r in enumerate(nodes)]

    def _header(self, name: str, split: bool) -> list[str]:
        names = self.sig.operand_names
        ptrs = [f"{names[id(o)]}_ptr" for o in self.operands] + ["out_ptr"]
        strides = [f"stride_{names[id(o)]}" for o in self.tiles]
        lines = ["@triton.jit", f"def {name}("]
        if split:
            lines += ["    # Pointers (ws: each split's partial reductions [passes, n_rows, "
                      f"n_splits, {_WS_WIDTH}])", f"    {', '.join(ptrs + ['ws_ptr'])},",
                      "    # Sizes (each row is n_splits chunks of chunk columns)",
                      "    n_rows, n_cols, n_splits, chunk,"]
        else:
            lines += ["    # Pointers", f"    {', '.join(ptrs)},", "    # Sizes",
                      "    n_rows, n_cols,"]
        lines += ["    # Strides (row strides; a row is contiguous)", f"    {', '.join(strides)},"]
        if self.sig.scalars:
            lines += ["    # Scalars (model attributes)",
                      f"    {', '.join(self.sig.scalars.values())},"]
        lines += ["    # Meta-parameters", "    BLOCK_M: tl.constexpr,", "    BLOCK_N: tl.constexpr,"]
        lines += ["    BLOCK_S: tl.constexpr,", "):"] if split else [
            "    SINGLE_PASS: tl.constexpr,", "):"]
        return lines

    def _kernel(self, name: str) -> str:
        lines = self._header(name, split=False)
        lines += ["    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)",
                  "    row_mask = rows < n_rows", "    offs_n = tl.arange(0, BLOCK_N)",
                  "    if SINGLE_PASS:",
                  "        # The whole row fits in BLOCK_N columns: read it once, keep it in",
                  "        # registers.", "        cols = offs_n",
                  "        mask = row_mask[:, None] & (cols[None, :] < n_cols)"]
        single = ExprWriter(lines, "        ", lambda n: None, self.sig.scalars, prefix="s")
        single.special = self._special(single, single=True)
        self._store(lines, "        ", single.emit(self.lowered.output))
        lines.append("    else:")
        self._multi_pass(lines)
        return "\n".join(lines)

    def _split_kernel(self, name: str, upto: int) -> str:
        """The kernel of pass ``upto`` over one chunk of a split row (or, past the last pass,
        the output), after combining the earlier passes' partials."""
        last = upto == len(self.passes)
        per_row = last and self.out_kind == "row"  # one program per row block, no chunk
        lines = self._header(name, split=True)
        lines += ["    pid = tl.program_id(0)"]
        if per_row:
            lines.append("    rows = pid.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)")
        else:
            # Row blocks vary fastest: the programs reading the same columns of a col-kind
            # operand (layer norm's weight) run together and share its lines in L2.
            lines += ["    row_blocks = tl.cdiv(n_rows, BLOCK_M)", "    split = pid // row_blocks",
                      "    rows = (pid % row_blocks).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)"]
        lines += ["    row_mask = rows < n_rows", "    offs_n = tl.arange(0, BLOCK_N)",
                  "    offs_s = tl.arange(0, BLOCK_S)",
                  "    s_mask = row_mask[:, None] & (offs_s[None, :] < n_splits)"]
        ind = "    "
        row_writer = ExprWriter(lines, ind, lambda n: None, self.sig.scalars, prefix="r")
        row_writer.special = self._special(row_writer, single=False)
        done: set[int] = set()
        self._emit_rows(row_writer, done)
        for q, (kind, nodes) in enumerate(self.passes[:upto]):
            self._bind_pass(row_writer, kind, nodes,
                            self._combine_pass(lines, ind, q, kind, nodes, row_writer))
            done |= {id(r) for r in nodes if r.op == "reduce"}
            self._emit_rows(row_writer, done)
        span = "range(split * chunk, split * chunk + chunk, BLOCK_N)"
        if not last:
            kind, nodes = self.passes[upto]
            values = self._pass_values(lines, ind, upto, kind, nodes, row_writer, "col0", span)
            for k, v in enumerate(values):
                lines.append(f"{ind}tl.store(ws_ptr + (({upto} * n_rows + rows[:, None]) * "
                             f"n_splits + split) * {_WS_WIDTH} + {k}, {v}, "
                             f"mask=row_mask[:, None])")
        elif per_row:
            self._store(lines, ind, row_writer.emit(self.lowered.output))
        else:
            lines.append(f"{ind}# the output, chunk by chunk")
            self._loop(lines, ind, "col0", span)
            loop = self._writer(lines, ind + "    ", "o", row_writer)
            self._store(lines, ind + "    ", loop.emit(self.lowered.output))
        return "\n".join(lines)

    # -- launcher --------------------------------------------------------------------------
    def _launcher(self, name: str, kernel: str) -> str:
        sig, names = self.sig, self.sig.operand_names
        main = names[id(self.tiles[0])]
        k, r = self.k, self.r
        lines = [f"def {name}({', '.join(sig.params)}):", f'    """{self.description}."""']
        for src in sig.sources:
            lines.append(f"    {src.name} = {src.name}.contiguous()")
        lines += [f"    if {main}.dim() != {r}:",
                  f"        raise ValueError(f\"{main}: expected {r} dims, got {{{main}.dim()}}\")"]
        for op in self.tiles[1:]:
            other = names[id(op)]
            lines += [f"    if {other}.shape != {main}.shape:",
                      f"        raise ValueError(f\"{other} {{list({other}.shape)}} must match "
                      f"{main} {{list({main}.shape)}}\")"]
        if self.out_kind != "tile":
            lines.append(f"    outer_shape = list({main}.shape[:{r - k}])")
        lines += ["    n_cols = 1",
                  f"    for size in {main}.shape[{r - k}:]:", "        n_cols *= size",
                  f"    n_rows = {main}.numel() // n_cols if n_cols else 0"]
        if self.out_kind == "tile":
            shape = f"list({main}.shape)"
        elif id(self.lowered.output) in self.reduced:
            shape = "outer_shape"
        else:
            shape = f"outer_shape + [1] * {k}"
        dtype = dtype_expr(self.lowered.output.dtype, self.operands, names)
        lines += [f"    out = torch.empty({shape}, dtype={dtype}, device={main}.device)",
                  "    if out.numel() == 0:", "        return out",
                  "    if n_cols == 0:",
                  "        raise ValueError(\"cannot reduce over an empty row\")"]
        args = []
        for op in self.operands:
            n = names[id(op)]
            kind = self._operand_kind(op)
            if kind == "tile":
                lines.append(f"    {n} = {n}.view(n_rows, n_cols)")
            else:
                want = {"col": "n_cols", "row": "n_rows", "scalar": "1"}[kind]
                lines += [f"    if {n}.numel() != {want}:",
                          f"        raise ValueError(f\"{n} has {{{n}.numel()}} elements, "
                          f"expected {{{want}}}\")", f"    {n} = {n}.reshape(-1)"]
            args.append(n)
        strides = ", ".join(f"{names[id(o)]}.stride(0)" for o in self.tiles)
        scalars = f" {', '.join(sig.scalars.values())}," if sig.scalars else ""
        n_passes = len(self.passes)
        lines += ["    block_n = min(BLOCK_N, triton.next_power_of_2(n_cols))",
                  "    # Rows shorter than BLOCK_N are packed: a program still gets a full tile.",
                  "    block_m = BLOCK_M * (BLOCK_N // block_n)",
                  "    block_m = max(BLOCK_M, min(block_m, triton.next_power_of_2(n_rows), 256))",
                  "    row_blocks = triton.cdiv(n_rows, block_m)",
                  "    n_splits = 1",
                  "    if n_cols > block_n:",
                  "        # Fewer row blocks than N_PROGRAMS: split each row into chunks of whole",
                  "        # BLOCK_N tiles, so the grid fills the device.",
                  "        n_splits = min(triton.cdiv(N_PROGRAMS, row_blocks), "
                  f"triton.cdiv(n_cols, block_n), {MAX_SPLITS})",
                  "    if n_splits > 1:",
                  "        chunk = triton.cdiv(triton.cdiv(n_cols, n_splits), block_n) * block_n",
                  "        n_splits = triton.cdiv(n_cols, chunk)",
                  f"        ws = torch.empty(({n_passes}, n_rows, n_splits, {_WS_WIDTH}), "
                  f"dtype=torch.float32, device={main}.device)",
                  "        meta = dict(BLOCK_M=block_m, BLOCK_N=block_n, "
                  "BLOCK_S=triton.next_power_of_2(n_splits), num_warps=NUM_WARPS)"]
        split_args = (f"{', '.join(args + ['out', 'ws'])}, n_rows, n_cols, n_splits, chunk, "
                      f"{strides},{scalars}")
        for q in range(n_passes + 1):
            grid = ("row_blocks" if q == n_passes and self.out_kind == "row"
                    else "row_blocks * n_splits")
            lines.append(f"        {kernel.removesuffix('_kernel')}_split{q}_kernel[({grid},)]("
                         f"{split_args} **meta)")
        lines += ["        return out",
                  f"    {kernel}[(row_blocks,)](",
                  f"        {', '.join(args + ['out'])},", "        n_rows, n_cols,",
                  f"        {strides},"]
        if sig.scalars:
            lines.append(f"        {', '.join(sig.scalars.values())},")
        lines += ["        BLOCK_M=block_m, BLOCK_N=block_n, SINGLE_PASS=n_cols <= block_n,",
                  "        num_warps=NUM_WARPS,", "    )", "    return out"]
        return "\n".join(lines)

    def render(self, params: Mapping[str, int]) -> str:
        base = f"fused_{self.operator_class}"
        kernels = [self._kernel(base + "_kernel")] + [
            self._split_kernel(f"{base}_split{q}_kernel", q) for q in range(len(self.passes) + 1)]
        return module_source(
            self.problem, self.description,
            {"BLOCK_M": params["BLOCK_M"], "BLOCK_N": params["BLOCK_N"],
             "NUM_WARPS": params["num_warps"],
             # parameters recorded before N_PROGRAMS existed still render
            "N_PROGRAMS": params.get("N_PROGRAMS", DEFAULT_PROGRAMS)},
            kernels, [self._launcher(base, base + "_kernel")],
            self.traced.forward_args, self.sig.call(base))

    # -- planning --------------------------------------------------------------------------
    @classmethod
    def plan(cls, problem: Problem, traced: Traced, lowered: Lowered) -> KernelPlan:
        ops = set(reachable_ops(traced))
        names = [n.op for n in lowered.nodes]
        reduces = lowered.reduces
        first = reduces[0]
        main, dims = first.args[0].shape, first.attrs[1]
        shape = "[" + ", ".join(map(str, main)) + "]"
        dtype = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}.get(
            str(lowered.output.dtype).removeprefix("torch."), "")
        where = (f"dim {dims[0]}" if len(dims) == 1 else f"dims {', '.join(map(str, dims))}")
        of = f"over {where} of a {shape} {dtype} tensor"
        row_output = len(lowered.output.shape) < len(main) or all(
            lowered.output.shape[d] == 1 for d in dims)
        composite = [o for o in ("_softmax", "_log_softmax", "native_layer_norm",
                                 "linalg_vector_norm") if o in ops]
        mean_of_squares = len(reduces) == 1 and first.args[0].op in {"pow", "mul"} and (
            "rsqrt" in names)
        if row_output:
            cls_name = "reduction"
            kinds = ", ".join(dict.fromkeys(r.attrs[0] for r in reduces))
            what = "mean" if "count" in names and "var" not in ops else kinds
            desc = f"row {what} {of}"
        elif len(composite) == 1:
            cls_name, what = {"_softmax": ("softmax", "row softmax"),
                              "_log_softmax": ("log_softmax", "row log-softmax"),
                              "native_layer_norm": ("layernorm", "layer norm"),
                              "linalg_vector_norm": ("l2norm", "L2 normalisation")}[composite[0]]
            desc = f"{what} {of}"
        elif not composite and mean_of_squares:
            cls_name, desc = "rmsnorm", f"RMS norm {of}"
        else:
            cls_name = "rowwise"
            desc = f"fused row computation ({len(reduces)} reductions) {of}"
        template = cls(problem, traced, lowered, cls_name, desc)
        if cls_name == "reduction":
            defaults = {"BLOCK_M": 2, "BLOCK_N": 2048, "num_warps": 8}
        else:
            defaults = {"BLOCK_M": 1, "BLOCK_N": 4096, "num_warps": 8}
        defaults["N_PROGRAMS"] = DEFAULT_PROGRAMS
        return KernelPlan(cls_name, desc, dict(SPACE), defaults, template)


def _online_pair(first: list[Node], second: list[Node]) -> bool:
    """``max(v)`` then ``sum(exp(v - max))`` over the same row (softmax, log-softmax,
    logsumexp): one pass can compute both."""
    if len(first) != 1 or len(second) != 1:
        return False
    mx, sm = first[0], second[0]
    if mx.attrs[0] != "max" or sm.attrs[0] != "sum" or not mx.attrs[2]:
        return False
    e = sm.args[0]
    if e.op != "exp" or e.args[0].op != "sub":
        return False
    sub = e.args[0]
    return sub.args[0] is mx.args[0] and sub.args[1] is mx


def _moment_pair(first: list[Node], second: list[Node]) -> Node | None:
    """``sum(v)`` then ``sum((v - sum(v) / n) ** 2)`` over the same row (layer norm, variance):
    one pass of shifted sums computes both. Returns the mean node, or None."""
    if len(first) != 1 or len(second) != 1:
        return None
    total, squares = first[0], second[0]
    if total.attrs[0] != "sum" or squares.attrs[0] != "sum" or not total.attrs[2]:
        return None
    sq = squares.args[0]
    square = (sq.op == "mul" and sq.args[0] is sq.args[1]) or (
        sq.op == "pow" and bool(sq.attrs) and float(sq.attrs[0]) == 2.0)
    dev = sq.args[0]
    if not square or dev.op != "sub" or dev.args[0] is not total.args[0]:
        return None
    mean = dev.args[1]
    if mean.op != "div" or mean.args[0] is not total:
        return None
    count = mean.args[1]
    if count.op != "count" or count.attrs[1] or tuple(count.attrs[0]) != tuple(total.attrs[1]):
        return None
    return mean
