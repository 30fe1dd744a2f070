"""The matmul template: a tiled ``tl.dot`` GEMM (nn.Linear, F.linear, matmul, mm, bmm) with the
elementwise ops that follow it fused into the epilogue.

Output tiles are visited in grouped order (GROUP_M rows of tiles share their B columns in L2).
Operands are read through their strides, so ``W^T`` of an nn.Linear is never copied.

fp32 products: plain TF32 (10 mantissa bits) misses the 1e-4 fp32 tolerance, but split precision
still reaches the tensor cores: ``input_precision="tf32x3"`` writes each operand as a TF32 high part
plus a TF32 remainder and sums three tensor-core products (hi*hi + hi*lo + lo*hi), leaving out only
lo*lo, a relative 2^-22 per product: fp32-level error (1e-6-7e-6 measured) on the tensor cores
(``benchmarks/results/matmul_tf32x3_h200.md`` measures both on twelve level-1 matmul shapes). The
template's ``TF32X3`` parameter picks it (the default) or ``"ieee"`` (FMA units, no tensor cores).
The interpreter computes every precision exactly, so only a GPU run tells them apart. TF32
tensor-core products read both tiles K-major, so on the GPU an operand laid out otherwise (b of
``x @ w``, a of ``x.T @ w``) is first copied K-major: one pass over it, far cheaper than the
product it speeds up (measured on the H200 at 4096^2: 3.96 ms before the copy, 2.01 ms with it).

Split-K (``SPLIT_K``, non-batched): where the output has too few tiles to occupy the GPU and K
is long (KernelBench's 256x256 by K=524288 has 4 tiles of 128x128), each of SPLIT_K programs per
tile sums one K range into an fp32 workspace and a second launch adds the ranges in a fixed
order and applies the epilogue: deterministic, unlike atomics.

fp16/bf16 tiles go to the tensor cores, except in the CPU interpreter, which multiplies 16-bit tiles
as raw integers, so there they are upcast first (exact: products of 16-bit floats fit fp32).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import torch

from kernelevolve.problem import Problem

from .compound import GemmSpec
from .expr import ExprWriter
from .ir import Lowered, Node, Operand
from .operands import dtype_expr, signature
from .plan import KernelPlan, Unsupported
from .source import module_source
from .trace import Traced

SPACE = {"BLOCK_M": (16, 32, 64, 128, 256), "BLOCK_N": (16, 32, 64, 128, 256),
         "BLOCK_K": (16, 32, 64, 128), "GROUP_M": (1, 4, 8, 16), "num_warps": (2, 4, 8),
         "num_stages": (1, 2, 3, 4, 5)}
DEFAULTS_FP32 = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 8,
                 "num_stages": 3, "TF32X3": 1}
SPACE_FP32 = {**SPACE, "TF32X3": (1, 0)}  # 1: tf32x3 tensor-core products, 0: ieee FMA
DEFAULTS_16 = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8,
               "num_stages": 3}
SPLIT_KS = (1, 2, 4, 8, 16, 32, 64)
SPLIT_MIN_PROGRAMS = 128  # about one program per SM of a large GPU (H100/H200: 132)
SPLIT_MAX_WORKSPACE = 2**30  # bytes of fp32 partial sums: more means the output needs no split
SPLIT_MIN_K = 2048  # each split's K range at least this long, or the second pass costs more
SMEM_BYTES = 227 * 1024  # Hopper's shared memory per block (H100/H200: 227 KB usable)


_ALIGNED_ROWS = '''def aligned_rows(t):
    """``t`` copied row-major into rows padded to a multiple of 16 elements (a view of them)."""
    k = t.shape[-1]
    rows = torch.empty((*t.shape[:-1], (k + 15) // 16 * 16), dtype=t.dtype, device=t.device)
    out = rows[..., :k]
    out.copy_(t)
    return out'''


def split_k(spec: GemmSpec, params: Mapping[str, int]) -> int:
    """The split of K the template starts from: 1, unless the output has too few tiles to give
    every SM a program and K is long enough to share out (KernelBench's 256x256 by K=524288)."""
    m = math.prod(spec.a.shape[:-1]) if spec.a_flatten else spec.a.shape[-2]
    k, n = spec.a.shape[-1], spec.b.shape[-1]
    tiles = -(-m // params["BLOCK_M"]) * -(-n // params["BLOCK_N"])
    split = 1
    while (split < SPLIT_KS[-1] and tiles * split < SPLIT_MIN_PROGRAMS
           and k // (2 * split) >= SPLIT_MIN_K):
        split *= 2
    return split


@dataclass
class MatmulTemplate:
    problem: Problem
    traced: Traced
    lowered: Lowered
    description: str

    def __post_init__(self) -> None:
        self.gemm = self.lowered.gemms[0]
        spec: GemmSpec = self.gemm.spec
        self.spec = spec
        self.out_shape = self.gemm.shape
        for n in self.lowered.nodes:
            if n.op == "reshape":
                raise Unsupported("a reshape of the matmul result, which no template covers")
        self.bias_op: Operand | None = None
        if spec.bias is not None:
            bias = spec.bias
            if bias.op != "load" or bias.operand is None or len(bias.shape) > 1:
                raise Unsupported("addmm with a bias that is not a vector, which no template "
                                  "covers")
            self.bias_op = bias.operand
        extra = [spec.a, spec.b] + ([self.bias_op] if self.bias_op else [])
        self.sig = signature(self.lowered, {"a", "b"}, extra, self.traced.forward_args)
        self.epilogue_ops = [o for o in self.lowered.operands]
        self.kinds = {id(o): self._kind(o) for o in self.epilogue_ops}
        if self.bias_op is not None:
            self.kinds[id(self.bias_op)] = "col" if self.bias_op.shape else "scalar"
        self.half = spec.a.dtype in (torch.float16, torch.bfloat16)

    def _kind(self, op: Operand) -> str:
        out = self.out_shape
        if op.chunk is not None or len(op.shape) > len(out):
            raise Unsupported(f"{op.expr} cannot join the matmul epilogue")
        aligned = (1,) * (len(out) - len(op.shape)) + op.shape
        full = []
        for s, o in zip(aligned, out, strict=True):
            if s not in (1, o):
                raise Unsupported(f"{op.expr} {list(op.shape)} does not broadcast to {list(out)}")
            full.append(s == o or o == 1)
        if all(full):
            return "tile"
        if not any(full[:-1]) and full[-1]:
            return "col"
        if all(full[:-1]) and not full[-1]:
            return "row"
        if not any(full):
            return "scalar"
        raise Unsupported(f"{op.expr} {list(op.shape)} broadcasts over part of the matmul "
                          f"result, which no template covers")

    def feasible(self, params: Mapping[str, int]) -> str | None:
        size = 2 if self.half else 4
        smem = (params["BLOCK_M"] + params["BLOCK_N"]) * params["BLOCK_K"] * size * max(
            1, params["num_stages"] - 1)
        if smem > SMEM_BYTES:
            return f"{smem // 1024} KB of shared memory for the pipelined tiles (limit 227 KB)"
        per_thread = params["BLOCK_M"] * params["BLOCK_N"] // (32 * params["num_warps"])
        if per_thread > 128:
            return f"a {per_thread}-register accumulator per thread (spills)"
        split = params.get("SPLIT_K", 1)
        if split > 1:
            spec = self.gemm.spec
            m = math.prod(spec.a.shape[:-1]) if spec.a_flatten else spec.a.shape[-2]
            ws = split * m * spec.b.shape[-1] * 4
            if ws > SPLIT_MAX_WORKSPACE:
                return (f"a {ws / 2**30:.1f} GiB split-K workspace (limit "
                        f"{SPLIT_MAX_WORKSPACE / 2**30:.0f} GiB): the output is large enough "
                        f"to occupy the GPU without splitting K")
        return None

    # -- kernel ----------------------------------------------------------------------------
    def _kernel(self) -> str:
        names = self.sig.operand_names
        batched = self.spec.batched
        others = [o for o in self.epilogue_ops]
        if self.bias_op is not None:
            others = [self.bias_op] + [o for o in others if o is not self.bias_op]
        ptrs = ["a_ptr", "b_ptr"] + [f"{names[id(o)]}_ptr" for o in others] + ["out_ptr"]
        if not batched:
            ptrs.append("ws_ptr")
        strides = ["stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_om"]
        tiles = [o for o in others if self.kinds[id(o)] == "tile"]
        strides += [f"stride_{names[id(o)]}_m" for o in tiles]
        if batched:
            strides += ["stride_ab", "stride_bb", "stride_ob"] + [
                f"stride_{names[id(o)]}_b" for o in tiles]
        lines = self._kernel_head(ptrs, strides)
        lines += ["    # Meta-parameters", "    BLOCK_M: tl.constexpr,",
                  "    BLOCK_N: tl.constexpr,", "    BLOCK_K: tl.constexpr,",
                  "    GROUP_M: tl.constexpr,"]
        if self.half:
            lines.append("    UPCAST: tl.constexpr,")
        else:
            lines.append("    TF32X3: tl.constexpr,")
        if not batched:
            lines += ["    # split-K: 0 one pass; 1 each program's K range into ws [SPLIT_K, M, N];",
                      "    # 2 the sum over ws, then the epilogue",
                      "    PHASE: tl.constexpr, SPLIT_K: tl.constexpr,"]
        lines += ["):",
                  "    # Grouped ordering: GROUP_M rows of output tiles share their b columns",
                  "    # in L2.",
                  "    pid = tl.program_id(0)",
                  "    num_pid_m = tl.cdiv(M, BLOCK_M)", "    num_pid_n = tl.cdiv(N, BLOCK_N)",
                  "    num_pid_in_group = GROUP_M * num_pid_n",
                  "    group_id = pid // num_pid_in_group", "    first_pid_m = group_id * GROUP_M",
                  "    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)",
                  "    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)",
                  "    pid_n = (pid % num_pid_in_group) // group_size_m"]
        if batched:
            lines.append("    batch = tl.program_id(1).to(tl.int64)")
        lines += ["    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)",
                  "    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)",
                  "    offs_k = tl.arange(0, BLOCK_K)",
                  "    mask_m = offs_m < M", "    mask_n = offs_n < N"]
        a0 = "a_ptr + batch * stride_ab" if batched else "a_ptr"
        b0 = "b_ptr + batch * stride_bb" if batched else "b_ptr"
        ind = "    " if batched else "        "  # the K loop sits under `else:` with split-K
        if not batched:
            lines += ["    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)",
                      "    ws_tile = offs_m[:, None].to(tl.int64) * N + offs_n[None, :]",
                      "    ws_split = tl.cast(M, tl.int64) * N  # int64: SPLIT_K * M * N can pass 2**31",
                      "    if PHASE == 2:",
                      "        for s in range(0, SPLIT_K):",
                      "            acc += tl.load(ws_ptr + s * ws_split + ws_tile,",
                      "                           mask=mask_m[:, None] & mask_n[None, :], other=0.0)",
                      "    else:",
                      "        k_lo = 0",
                      "        k_hi = K",
                      "        if PHASE == 1:",
                      "            k_per = tl.cdiv(tl.cdiv(K, BLOCK_K), SPLIT_K) * BLOCK_K",
                      "            k_lo = tl.program_id(1) * k_per",
                      "            k_hi = tl.minimum(K, k_lo + k_per)"]
        else:
            lines += ["    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)"]
        start = "k_lo" if not batched else "0"
        lines += [f"{ind}a_ptrs = {a0} + offs_m[:, None].to(tl.int64) * stride_am + "
                  f"({start} + offs_k[None, :]) * stride_ak",
                  f"{ind}b_ptrs = {b0} + ({start} + offs_k[:, None]) * stride_bk + "
                  "offs_n[None, :].to(tl.int64) * stride_bn",
                  f"{ind}for k in range({start}, {'k_hi' if not batched else 'K'}, BLOCK_K):",
                  f"{ind}    k_mask = offs_k < {'k_hi' if not batched else 'K'} - k",
                  f"{ind}    a = tl.load(a_ptrs, mask=mask_m[:, None] & k_mask[None, :], "
                  "other=0.0)",
                  f"{ind}    b = tl.load(b_ptrs, mask=k_mask[:, None] & mask_n[None, :], "
                  "other=0.0)"]
        if self.half:
            body = ["if UPCAST:",
                    "    # The interpreter multiplies 16-bit tiles as raw integers.",
                    "    acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc, "
                    "input_precision=\"ieee\")",
                    "else:", "    acc = tl.dot(a, b, acc)"]
        else:
            body = ["if TF32X3:",
                    "    # fp32 as three TF32 tensor-core products (hi*hi + hi*lo + lo*hi):",
                    "    # fp32-level error; plain TF32 would miss the tolerance.",
                    "    acc = tl.dot(a, b, acc, input_precision=\"tf32x3\")",
                    "else:",
                    "    acc = tl.dot(a, b, acc, input_precision=\"ieee\")"]
        body += ["a_ptrs += BLOCK_K * stride_ak", "b_ptrs += BLOCK_K * stride_bk"]
        lines += [f"{ind}    {line}" for line in body]
        lines.append("    mask = mask_m[:, None] & mask_n[None, :]")
        if not batched:
            lines += ["    if PHASE == 1:",
                      "        tl.store(ws_ptr + tl.program_id(1) * ws_split + ws_tile, acc, "
                      "mask=mask)",
                      "    else:"]
        self._epilogue(lines, ind, batched)
        return "\n".join(lines)

    def _kernel_head(self, ptrs: list[str], strides: list[str]) -> list[str]:
        """The kernel's signature up to its meta-parameters: pointers, sizes, strides and the
        model's scalar attributes."""
        lines = ["@triton.jit", "def fused_matmul_kernel(", "    # Pointers",
                 f"    {', '.join(ptrs)},", "    # Sizes", "    M, N, K,",
                 "    # Strides (a is [M, K], b is [K, N]; the output and epilogue tiles have",
                 "    # contiguous rows)", f"    {', '.join(strides)},"]
        if self.sig.scalars:
            lines += ["    # Scalars (model attributes)",
                      f"    {', '.join(self.sig.scalars.values())},"]
        return lines

    def _epilogue(self, lines: list[str], ind: str, batched: bool) -> None:
        """Append the fused epilogue and the store: ``acc`` is the fp32 [BLOCK_M, BLOCK_N] tile
        of the product at rows ``offs_m`` and columns ``offs_n`` (``mask_m``, ``mask_n``,
        ``mask`` in scope); the matrix-vector template (gemv.py) shares it."""
        names = self.sig.operand_names
        lines.append(f"{ind}# Epilogue, in fp32 registers")

        def leaf(n: Node) -> str | None:
            if n.op == "gemm":
                if self.bias_op is None:
                    return "acc"
                return writer.tmp(f"acc + {load(self.bias_op)}")
            if n.op == "load":
                assert n.operand is not None
                return load(n.operand)
            if n.op in ("triu", "tril"):
                # keep the elements on or above (triu) / on or below (tril) diagonal k
                cmp = ">=" if n.op == "triu" else "<="
                return writer.tmp(f"tl.where(offs_n[None, :] - offs_m[:, None] {cmp} "
                                  f"{n.attrs[0]}, {writer.names[id(n.args[0])]}, 0.0)")
            return None

        def load(op: Operand) -> str:
            name = names[id(op)]
            kind = self.kinds[id(op)]
            if kind == "tile":
                base = f"{name}_ptr + batch * stride_{name}_b" if batched else f"{name}_ptr"
                return writer.tmp(f"tl.load({base} + offs_m[:, None].to(tl.int64) * "
                                  f"stride_{name}_m + offs_n[None, :], mask=mask, "
                                  f"other=0.0).to(tl.float32)")
            if kind == "col":
                return writer.tmp(f"tl.load({name}_ptr + offs_n[None, :], mask=mask_n[None, :], "
                                  f"other=0.0).to(tl.float32)")
            if kind == "row":
                base = f"{name}_ptr + batch * M" if batched else f"{name}_ptr"
                return writer.tmp(f"tl.load({base} + offs_m[:, None], mask=mask_m[:, None], "
                                  f"other=0.0).to(tl.float32)")
            return writer.tmp(f"tl.load({name}_ptr).to(tl.float32)")

        writer = ExprWriter(lines, ind, leaf, self.sig.scalars, prefix="e")
        result = writer.emit(self.lowered.output)
        o0 = "out_ptr + batch * stride_ob" if batched else "out_ptr"
        lines += [f"{ind}out_ptrs = {o0} + offs_m[:, None].to(tl.int64) * stride_om + "
                  "offs_n[None, :]",
                  f"{ind}tl.store(out_ptrs, {result}.to(out_ptr.dtype.element_ty), mask=mask)"]

    # -- launcher --------------------------------------------------------------------------
    def _launcher_head(self, tensor_cores: bool) -> tuple[list[str], list[Operand]]:
        """The launcher's lines up to the launch (operands checked, ``a``, ``b``, ``M``, ``N``,
        ``K`` and ``out`` set, epilogue operands flattened) and the epilogue operands in kernel
        argument order; the matrix-vector template (gemv.py) shares it."""
        sig, names, spec = self.sig, self.sig.operand_names, self.spec
        a, b = names[id(spec.a)], names[id(spec.b)]
        batched = spec.batched
        lines = ["def fused_matmul(" + ", ".join(sig.params) + "):",
                 f'    """{self.description}."""']
        rank_a, rank_b = len(spec.a.shape), len(spec.b.shape)
        lines += [f"    if {a}.dim() != {rank_a} or {b}.dim() != {rank_b}:",
                  f"        raise ValueError(f\"expected {rank_a}-dim and {rank_b}-dim operands, "
                  f"got "
                  f"{{list({a}.shape)}} and {{list({b}.shape)}}\")",
                  f"    if {a}.dtype != {b}.dtype:",
                  f"        raise ValueError(f\"{a} is {{{a}.dtype}} but {b} is {{{b}.dtype}}\")"]
        a2 = f"{a}.flatten(0, -2)" if spec.a_flatten else a
        lines += [f"    a = {a2}", f"    b = {b}",
                  "    if a.shape[-1] != b.shape[-2]" + (" or a.shape[0] != b.shape[0]"
                                                         if batched else "") + ":",
                  f"        raise ValueError(f\"cannot multiply {{list({a}.shape)}} by "
                  f"{{list({b}.shape)}}\")",
                  "    M, K = a.shape[-2], a.shape[-1]", "    N = b.shape[-1]"]
        if tensor_cores and not self.half:
            lines += ["    if TF32X3 and a.device.type == \"cuda\":",
                      "        # TF32 tensor-core products read both tiles K-major (a row-major,",
                      "        # b column-major) from rows aligned to 16 elements; an operand",
                      "        # laid out otherwise is copied once into padded rows, a pass over",
                      "        # it that costs far less than the product it speeds up.",
                      "        if a.stride(-1) != 1 or a.stride(-2) % 16:",
                      "            a = aligned_rows(a)",
                      "        if b.stride(-2) != 1 or b.stride(-1) % 16:",
                      "            b = aligned_rows(b.transpose(-1, -2)).transpose(-1, -2)"]
        dtype = dtype_expr(self.gemm.dtype, [spec.a], {id(spec.a): a})
        if batched:
            lines.append(f"    out = torch.empty((a.shape[0], M, N), dtype={dtype}, "
                         f"device=a.device)")
        else:
            lines.append(f"    out = torch.empty((M, N), dtype={dtype}, device=a.device)")
        if spec.unflatten:
            lines.append(f"    out_shape = (*{a}.shape[:-1], N)")
        else:
            lines.append("    out_shape = out.shape")
        lines += ["    if out.numel() == 0:", "        return out.view(out_shape)"]
        others = list(self.epilogue_ops)
        if self.bias_op is not None:
            others = [self.bias_op] + [o for o in others if o is not self.bias_op]
        rows = "a.shape[0] * M" if batched else "M"
        for op in others:
            n = names[id(op)]
            kind = self.kinds[id(op)]
            lines.append(f"    {n} = {n}.contiguous()")
            if kind == "tile":
                want = "out.shape"
                lines += [f"    if {n}.numel() != out.numel():",
                          f"        raise ValueError(f\"{n} {{list({n}.shape)}} does not match "
                          f"the result {{list(out_shape)}}\")", f"    {n} = {n}.view({want})"]
            else:
                want = {"col": "N", "row": rows, "scalar": "1"}[kind]
                lines += [f"    if {n}.numel() != {want}:",
                          f"        raise ValueError(f\"{n} has {{{n}.numel()}} elements, "
                          f"expected {{{want}}}\")", f"    {n} = {n}.reshape(-1)"]
        return lines, others

    def _launcher(self) -> str:
        sig, names, spec = self.sig, self.sig.operand_names, self.spec
        batched = spec.batched
        lines, others = self._launcher_head(tensor_cores=True)
        grid = "triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)"
        lines.append(f"    grid = ({grid}, a.shape[0])" if batched else f"    grid = ({grid},)")
        tiles = [o for o in others if self.kinds[id(o)] == "tile"]
        d = 1 if batched else 0
        strides = [f"a.stride({d})", f"a.stride({d + 1})", f"b.stride({d})", f"b.stride({d + 1})",
                   f"out.stride({d})"] + [f"{names[id(o)]}.stride({d})" for o in tiles]
        if batched:
            strides += ["a.stride(0)", "b.stride(0)", "out.stride(0)"] + [
                f"{names[id(o)]}.stride(0)" for o in tiles]
        ptrs = ['a', 'b'] + [names[id(o)] for o in others] + ['out']

        def launch(grid_expr: str, ws: str | None, phase: int, split: str) -> list[str]:
            call = [f"    fused_matmul_kernel[{grid_expr}](",
                    f"        {', '.join(ptrs + ([ws] if ws else []))},",
                    "        M, N, K,", f"        {', '.join(strides)},"]
            if sig.scalars:
                call.append(f"        {', '.join(sig.scalars.values())},")
            call.append("        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, "
                        "GROUP_M=GROUP_M,")
            if self.half:
                call.append("        UPCAST=a.device.type == \"cpu\",")
            else:
                call.append("        TF32X3=TF32X3,")
            if ws:
                call.append(f"        PHASE={phase}, SPLIT_K={split},")
            return call + ["        num_warps=NUM_WARPS, num_stages=NUM_STAGES,", "    )"]

        if batched:
            lines += launch("grid", None, 0, "1")
        else:
            lines += ["    if SPLIT_K > 1:",
                      "        # split-K: too few output tiles to fill the GPU, a long K. Each",
                      "        # program sums its K range into ws; a second pass adds them up in",
                      "        # a fixed order (deterministic) and applies the epilogue.",
                      "        ws = torch.empty((SPLIT_K, M, N), dtype=torch.float32, "
                      "device=a.device)"]
            lines += ["    " + ln for ln in launch("(grid[0], SPLIT_K)", "ws", 1, "SPLIT_K")]
            lines += ["    " + ln for ln in launch("grid", "ws", 2, "SPLIT_K")]
            lines.append("    else:")
            lines += ["    " + ln for ln in launch("grid", "out", 0, "1")]
        lines.append("    return out.view(out_shape)")
        return "\n".join(lines)

    def render(self, params: Mapping[str, int]) -> str:
        consts = {"BLOCK_M": params["BLOCK_M"], "BLOCK_N": params["BLOCK_N"],
                  "BLOCK_K": params["BLOCK_K"], "GROUP_M": params["GROUP_M"],
                  "NUM_WARPS": params["num_warps"], "NUM_STAGES": params["num_stages"]}
        if not self.half:
            consts["TF32X3"] = params["TF32X3"]
        if not self.spec.batched:
            consts["SPLIT_K"] = params["SPLIT_K"]
        return module_source(self.problem, self.description, consts, [self._kernel()],
                             ([] if self.half else [_ALIGNED_ROWS]) + [self._launcher()],
                             self.traced.forward_args,
                             self.sig.call("fused_matmul"))

    @classmethod
    def plan(cls, problem: Problem, traced: Traced, lowered: Lowered) -> KernelPlan:
        gemm = lowered.gemms[0]
        spec: GemmSpec = gemm.spec
        dtype = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}.get(
            str(spec.a.dtype).removeprefix("torch."), "")
        a = "[" + ", ".join(map(str, spec.a.shape)) + "]"
        b = "[" + ", ".join(map(str, spec.b.shape)) + "]"
        epilogue = [n.op for n in lowered.nodes if n.op not in {"gemm", "load", "const",
                                                                "expand"}]
        what = f"{spec.op} {a} @ {b} {dtype}" + (" + bias" if spec.bias is not None else "")
        desc = what + (f" with a fused {', '.join(dict.fromkeys(epilogue))} epilogue"
                       if epilogue else "")
        half = spec.a.dtype in (torch.float16, torch.bfloat16)
        defaults = dict(DEFAULTS_16 if half else DEFAULTS_FP32)
        space = dict(SPACE) if half else dict(SPACE_FP32)
        if not spec.batched:
            space["SPLIT_K"] = SPLIT_KS
            defaults["SPLIT_K"] = split_k(spec, defaults)
        return KernelPlan("matmul", desc, space, defaults,
                          cls(problem, traced, lowered, desc))
