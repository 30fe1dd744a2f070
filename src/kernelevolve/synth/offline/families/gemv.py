"""The matrix-vector template: ``A [M, K] @ x [K, 1]`` (and ``x [1, K] @ B [K, N]``) with the
matmul template's epilogue.

A product with one output column does no reuse a GEMM tiling can exploit: each element of
``A`` is used once, so it is memory-bound, and the goal is one pass over ``A`` at the memory
bandwidth (KernelBench's 2048 x 1048576 fp32 ``A`` is 8.6 GB: 2.1 ms at the H200's ~4.15 TB/s).
The GEMM tiling read it at 15% of that (a [BLOCK_M, BLOCK_K] x [BLOCK_K, 128] tile of which one
column is real, tensor-core work for nothing). Here each program reduces BLOCK rows of ``A`` over
a K range with plain vector loads along the contiguous dim and fp32 products, keeping a
[BLOCK, BLOCK_K] tile of partial sums in registers and reducing it across K once at the end;
every chain of fp32 additions is at most K / (SPLIT_K * BLOCK_K) long (512 at KernelBench's
sizes), then a tree, so the error stays at the fp32 matmul's level.

Split-K: with few rows (2048 rows in blocks of 8 are 256 programs, under two per SM of 132)
each of SPLIT_K programs per row block sums one K range into an fp32 workspace [SPLIT_K, M, N]
and a second launch adds them in a fixed order (deterministic) and applies the epilogue.

The thin side is a grid axis, so the kernel stays right for any N (or M) the harness tries; it
is fast where that side is 1. ``x [1, K] @ B [K, N]`` (the vector on the left) is the same
kernel with the roles of the operands swapped, reading ``B`` along its contiguous N.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

from kernelevolve.problem import Problem

from ..emit.source import module_source
from ..frontend.compound import GemmSpec
from ..frontend.ir import Lowered
from ..frontend.trace import Traced
from ..plan import KernelPlan
from .matmul import MatmulTemplate

SPACE = {"BLOCK": (1, 2, 4, 8, 16, 32, 64, 128), "BLOCK_K": (64, 128, 256, 512, 1024, 2048),
         "SPLIT_K": (1, 2, 4, 8, 16, 32, 64), "num_warps": (1, 2, 4, 8)}
DEFAULTS = {"BLOCK": 8, "BLOCK_K": 512, "num_warps": 4}
MIN_PROGRAMS = 4 * 132  # a few waves of programs on a large GPU (H100/H200: 132 SMs)
MIN_SPLIT_K = 8192  # each split's K range at least this long: the second pass stays negligible
MAX_TILE = 64  # fp32 partial sums per thread ([BLOCK, BLOCK_K] over the warps); more spills


def thin_side(spec: GemmSpec) -> str | None:
    """"n" when the product has one output column (``A @ x``), "m" when it has one output row
    (``x @ B``), None otherwise (batched products stay with the matmul template)."""
    if spec.batched:
        return None
    m = math.prod(spec.a.shape[:-1]) if spec.a_flatten else spec.a.shape[-2]
    if spec.b.shape[-1] == 1:
        return "n"
    if m == 1:
        return "m"
    return None


def split_k(spec: GemmSpec, params: Mapping[str, int], side: str) -> int:
    """The split the template starts from: enough programs for a few waves, each K range long."""
    m = math.prod(spec.a.shape[:-1]) if spec.a_flatten else spec.a.shape[-2]
    wide = m if side == "n" else spec.b.shape[-1]
    k = spec.a.shape[-1]
    programs = -(-wide // params["BLOCK"])
    split = 1
    while (split < SPACE["SPLIT_K"][-1] and programs * split < MIN_PROGRAMS
           and k // (2 * split) >= MIN_SPLIT_K):
        split *= 2
    return split


# The K loop of each side. ``x_ptrs`` walks the vector, ``t_ptrs`` the matrix tile; the tile of
# partial sums is reduced across K once, after the loop.
_LOOP_N = '''        offs_w = pid_w * BLOCK + tl.arange(0, BLOCK)
        t_ptrs = a_ptr + offs_w[:, None].to(tl.int64) * stride_am + (k_lo + offs_k[None, :]) * stride_ak
        x_ptrs = b_ptr + (k_lo + offs_k) * stride_bk + pid_t.to(tl.int64) * stride_bn
        part = tl.zeros((BLOCK, BLOCK_K), dtype=tl.float32)
        for k in range(k_lo, k_hi, BLOCK_K):
            if EVEN_K:
                t = tl.load(t_ptrs, mask=mask_w[:, None], other=0.0)
                x = tl.load(x_ptrs)
            else:
                k_mask = offs_k < k_hi - k
                t = tl.load(t_ptrs, mask=mask_w[:, None] & k_mask[None, :], other=0.0)
                x = tl.load(x_ptrs, mask=k_mask, other=0.0)
            part += t.to(tl.float32) * x.to(tl.float32)[None, :]
            t_ptrs += BLOCK_K * stride_ak
            x_ptrs += BLOCK_K * stride_bk
        acc = tl.sum(part, axis=1)[:, None]'''
_LOOP_M = '''        offs_w = pid_w * BLOCK + tl.arange(0, BLOCK)
        t_ptrs = b_ptr + (k_lo + offs_k[:, None]) * stride_bk + offs_w[None, :].to(tl.int64) * stride_bn
        x_ptrs = a_ptr + pid_t.to(tl.int64) * stride_am + (k_lo + offs_k) * stride_ak
        part = tl.zeros((BLOCK_K, BLOCK), dtype=tl.float32)
        for k in range(k_lo, k_hi, BLOCK_K):
            if EVEN_K:
                t = tl.load(t_ptrs, mask=mask_w[None, :], other=0.0)
                x = tl.load(x_ptrs)
            else:
                k_mask = offs_k < k_hi - k
                t = tl.load(t_ptrs, mask=k_mask[:, None] & mask_w[None, :], other=0.0)
                x = tl.load(x_ptrs, mask=k_mask, other=0.0)
            part += t.to(tl.float32) * x.to(tl.float32)[:, None]
            t_ptrs += BLOCK_K * stride_bk
            x_ptrs += BLOCK_K * stride_ak
        acc = tl.sum(part, axis=0)[None, :]'''


class GemvTemplate(MatmulTemplate):
    """A matrix-vector product and the matmul template's epilogue (bias, elementwise ops)."""

    def __init__(self, problem: Problem, traced: Traced, lowered: Lowered, description: str,
                 side: str) -> None:
        self.side = side
        super().__init__(problem, traced, lowered, description)

    def feasible(self, params: Mapping[str, int]) -> str | None:
        per_thread = params["BLOCK"] * params["BLOCK_K"] // (32 * params["num_warps"])
        if per_thread > MAX_TILE:
            return f"a {per_thread}-register tile of partial sums per thread (spills)"
        if params["BLOCK"] * params["BLOCK_K"] < 32 * params["num_warps"]:
            return (f"a {params['BLOCK']}x{params['BLOCK_K']} tile leaves threads of "
                    f"{params['num_warps']} warps idle")
        return None

    def _kernel(self) -> str:
        names = self.sig.operand_names
        others = list(self.epilogue_ops)
        if self.bias_op is not None:
            others = [self.bias_op] + [o for o in others if o is not self.bias_op]
        ptrs = ["a_ptr", "b_ptr"] + [f"{names[id(o)]}_ptr" for o in others] + ["out_ptr",
                                                                                "ws_ptr"]
        strides = ["stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_om"]
        strides += [f"stride_{names[id(o)]}_m" for o in others if self.kinds[id(o)] == "tile"]
        wide, thin = ("M", "N") if self.side == "n" else ("N", "M")
        tile = "(BLOCK, 1)" if self.side == "n" else "(1, BLOCK)"
        lines = self._kernel_head(ptrs, strides)
        lines += [f"    # Meta-parameters: BLOCK {'rows' if self.side == 'n' else 'columns'} "
                  f"of the output per program, K in BLOCK_K chunks; EVEN_K: every K range",
                  "    # is whole chunks (no mask along K)",
                  "    BLOCK: tl.constexpr, BLOCK_K: tl.constexpr, EVEN_K: tl.constexpr,",
                  "    # split-K: 0 one pass; 1 each program's K range into ws [SPLIT_K, M, N];",
                  "    # 2 the sum over ws, then the epilogue",
                  "    PHASE: tl.constexpr, SPLIT_K: tl.constexpr,",
                  "):",
                  f"    # Program (pid_w, pid_t): BLOCK outputs along {wide} at index pid_t of the",
                  f"    # thin {thin}.",
                  "    pid = tl.program_id(0)",
                  f"    num_pid_w = tl.cdiv({wide}, BLOCK)",
                  "    pid_w = pid % num_pid_w", "    pid_t = pid // num_pid_w"]
        if self.side == "n":
            lines += ["    offs_m = pid_w * BLOCK + tl.arange(0, BLOCK)",
                      "    offs_n = pid_t + tl.arange(0, 1)"]
        else:
            lines += ["    offs_m = pid_t + tl.arange(0, 1)",
                      "    offs_n = pid_w * BLOCK + tl.arange(0, BLOCK)"]
        lines += ["    offs_k = tl.arange(0, BLOCK_K)",
                  "    mask_m = offs_m < M", "    mask_n = offs_n < N",
                  f"    mask_w = {'mask_m' if self.side == 'n' else 'mask_n'}",
                  "    mask = mask_m[:, None] & mask_n[None, :]",
                  "    ws_tile = offs_m[:, None].to(tl.int64) * N + offs_n[None, :]",
                  "    ws_split = tl.cast(M, tl.int64) * N",
                  "    if PHASE == 2:",
                  f"        acc = tl.zeros({tile}, dtype=tl.float32)",
                  "        for s in range(0, SPLIT_K):",
                  "            acc += tl.load(ws_ptr + s * ws_split + ws_tile, mask=mask, "
                  "other=0.0)",
                  "    else:",
                  "        k_lo = 0",
                  "        k_hi = K",
                  "        if PHASE == 1:",
                  "            k_per = tl.cdiv(tl.cdiv(K, BLOCK_K), SPLIT_K) * BLOCK_K",
                  "            k_lo = tl.program_id(1) * k_per",
                  "            k_hi = tl.minimum(K, k_lo + k_per)"]
        lines += (_LOOP_N if self.side == "n" else _LOOP_M).splitlines()
        lines += ["    if PHASE == 1:",
                  "        tl.store(ws_ptr + tl.program_id(1) * ws_split + ws_tile, acc, "
                  "mask=mask)",
                  "    else:"]
        self._epilogue(lines, "        ", batched=False)
        return "\n".join(lines)

    def _launcher(self) -> str:
        names = self.sig.operand_names
        lines, others = self._launcher_head(tensor_cores=False)
        wide, thin = ("M", "N") if self.side == "n" else ("N", "M")
        tiles = [o for o in others if self.kinds[id(o)] == "tile"]
        strides = ["a.stride(0)", "a.stride(1)", "b.stride(0)", "b.stride(1)",
                   "out.stride(0)"] + [f"{names[id(o)]}.stride(0)" for o in tiles]
        ptrs = ["a", "b"] + [names[id(o)] for o in others] + ["out"]
        lines += [f"    grid = triton.cdiv({wide}, BLOCK) * {thin}",
                  "    # Whole BLOCK_K chunks in every K range: the loads need no K mask.",
                  "    even_k = K % (BLOCK_K * SPLIT_K) == 0"]

        def launch(grid: str, ws: str, phase: int) -> list[str]:
            call = [f"    fused_matmul_kernel[{grid}](",
                    f"        {', '.join(ptrs + [ws])},",
                    "        M, N, K,", f"        {', '.join(strides)},"]
            if self.sig.scalars:
                call.append(f"        {', '.join(self.sig.scalars.values())},")
            return call + ["        BLOCK=BLOCK, BLOCK_K=BLOCK_K, EVEN_K=even_k,",
                           f"        PHASE={phase}, SPLIT_K=SPLIT_K, num_warps=NUM_WARPS,",
                           "    )"]

        lines += ["    if SPLIT_K > 1:",
                  "        # A long K and too few row blocks to fill the GPU: each program sums",
                  "        # its K range into ws; a second pass adds them in a fixed order",
                  "        # (deterministic) and applies the epilogue.",
                  "        ws = torch.empty((SPLIT_K, M, N), dtype=torch.float32, "
                  "device=a.device)"]
        lines += ["    " + ln for ln in launch("(grid, SPLIT_K)", "ws", 1)]
        lines += ["    " + ln for ln in launch("(grid,)", "ws", 2)]
        lines.append("    else:")
        lines += ["    " + ln for ln in launch("(grid,)", "out", 0)]
        lines.append("    return out.view(out_shape)")
        return "\n".join(lines)

    def render(self, params: Mapping[str, int]) -> str:
        consts = {"BLOCK": params["BLOCK"], "BLOCK_K": params["BLOCK_K"],
                  "SPLIT_K": params["SPLIT_K"], "NUM_WARPS": params["num_warps"]}
        return module_source(self.problem, self.description, consts, [self._kernel()],
                             [self._launcher()], self.traced.forward_args,
                             self.sig.call("fused_matmul"))

    @classmethod
    def plan(cls, problem: Problem, traced: Traced, lowered: Lowered) -> KernelPlan:
        spec: GemmSpec = lowered.gemms[0].spec
        side = thin_side(spec)
        if side is None:
            raise ValueError("not a matrix-vector product")  # analyze checks thin_side first
        dtype = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}.get(
            str(spec.a.dtype).removeprefix("torch."), "")
        a = "[" + ", ".join(map(str, spec.a.shape)) + "]"
        b = "[" + ", ".join(map(str, spec.b.shape)) + "]"
        epilogue = [n.op for n in lowered.nodes if n.op not in {"gemm", "load", "const",
                                                                "expand"}]
        what = (f"matrix-vector product ({spec.op}) {a} @ {b} {dtype}"
                + (" + bias" if spec.bias is not None else ""))
        desc = what + (f" with a fused {', '.join(dict.fromkeys(epilogue))} epilogue"
                       if epilogue else "")
        defaults = dict(DEFAULTS)
        defaults["SPLIT_K"] = split_k(spec, defaults, side)
        if spec.a.dtype in (torch.float16, torch.bfloat16):
            defaults["BLOCK_K"] = 1024  # the same bytes per load as fp32's 512
        return KernelPlan("matmul", desc, dict(SPACE), defaults,
                          cls(problem, traced, lowered, desc, side))
