"""The matmul template: a tiled ``tl.dot`` GEMM (nn.Linear, F.linear, matmul, mm, bmm) with the
elementwise ops that follow it fused into the epilogue.

Output tiles are visited in grouped order (GROUP_M rows of tiles share their B columns in L2).
Operands are read through their strides, so ``W^T`` of an nn.Linear is never copied.

fp32 products: plain TF32 (10 mantissa bits) misses the 1e-4 fp32 tolerance, but split precision
still reaches the tensor cores: ``input_precision="tf32x3"`` writes each operand as a TF32 high part
plus a TF32 remainder and sums three tensor-core products (hi*hi + hi*lo + lo*hi), leaving out only
lo*lo, a relative 2^-22 per product: fp32-level error (1e-6-7e-6 measured) on the tensor cores
(``benchmarks/results/matmul_tf32x3_h200.md`` measures both on twelve level-1 matmul shapes). The
template's ``TF32X3`` parameter picks it (1, the default), ``"ieee"`` (0: FMA units, no tensor
cores) or the same three products with the split done once, before the GEMM (2, "split once"):
Triton's tf32x3 splits every loaded tile in registers at every k step, between shared memory and
the tensor cores; instead a pass (``split_tf32``) writes each operand's TF32 high part and
remainder, both rounded to nearest, into rows padded with zeros to a multiple of 16 elements,
and the GEMM sums three plain ``"tf32"`` products of loaded tiles. K runs to the padded length
(the pad multiplies zeros), so the compiler proves the k tiles' masks whole in runs of 16 and
vectorizes the loads: KernelBench 8's K = 2949 ran 6.9 ms with scalar loads, 3.1 padded. The
tensor cores' own accumulation cuts low bits instead of rounding, a drift that grows with the
length of a chain of products summed on them
(on an H200, with KernelBench's positive inputs: 3.3e-5 of the result at K = 4096, 1.1e-4 at
16384, past the harness's 1e-4): so each program's K range is summed in at most ``MAX_CHAINS``
chains of at most ``CHAIN_K``, each from zero, each added to the result in fp32; the chains
are unrolled loops one after another, each pipelined on its own (on 4096^3, 1.30 ms; nested
in a loop, 1.72-1.86 ms; added to the result every k step as tf32x3 does, 5.8-7.3 ms).
An operand holding an infinity or NaN (its remainder 0, and inf * 0 = NaN) is multiplied on the
FMA units instead, the split pass having flagged it (``special``). History and figures:
``benchmarks/results/offline_variants_h200/matmul_split_once_bench.md`` and
``matmul_split_chains.md``.
Split once reads each operand and writes it twice before the GEMM reads it twice; ``TF32X3 = 3``
splits b only and takes a's parts from each tile it loads: the high part a's bits cut to TF32
(an exact TF32 value, which the tensor cores take as it is), the remainder ``a - a_hi`` exact and
rounded by the product, leaving out 2^-21 of a (2^-22 split once). An infinity or NaN in a makes
its remainder NaN, which reaches the sum, so a program whose sum holds a NaN sums its range
again on the FMA units. It pays where the pass over a costs more than the split in registers
repeated for every column of output tiles (``in_kernel_a_pays``).
The interpreter computes every precision exactly, so only a GPU run tells them apart. TF32
tensor-core products read both tiles K-major, so on the GPU an operand laid out otherwise (b of
``x @ w``, a of ``x.T @ w``) is first copied K-major: one pass over it, far cheaper than the
product it speeds up (measured on the H200 at 4096^2: 3.96 ms before the copy, 2.01 ms with it).

Split-K (``SPLIT_K``, non-batched): where the output has too few tiles to occupy the GPU and K
is long (KernelBench's 256x256 by K=524288 has 4 tiles of 128x128), each of SPLIT_K programs per
tile sums one K range into an fp32 workspace and a second launch adds the ranges in a fixed
order and applies the epilogue: deterministic, unlike atomics.

Persistent (``PERSISTENT``, non-batched fp32 with tf32x3 or ieee products, no split-K): one
program per SM walks the output tiles (``persistent_matmul_kernel``), its tile loop and k loop
flattened into one software-pipelined loop (``tl.range(..., flatten=True)``), the tiles read and
the output written through TMA tensor descriptors (the store leaves from shared memory while the
next tile's loads and products run). Where K is short the output's store is the work: KernelBench
7 ([32768, 64] @ [64, 32768]) and 9 (K = 32) ran on an H200 in 2.21 and 1.47 ms against 3.50
and 2.59 with a program per tile of the same size (the earlier defaults 3.32 and 1.90; cuBLAS
SGEMM 4.02 and 2.58; a pure write of the output 0.92; ``offline_variants_h200/
matmul_persistent.md``); the prototype with pointer loads and stores in the same flattened loop
2.45 and 1.81, with the loops nested 3.1 and 2.6. So it is the default where K is at most
PERSISTENT_MAX_K, and a move of the search elsewhere. TMA needs rows of a multiple of 16 bytes
and an sm_90 GPU (or the interpreter): the launcher copies a and b K-major into padded rows as
for tf32x3, and where the output's rows are not (N * its element size not a multiple of 16) or
the GPU is older, it launches the per-tile kernel instead.

fp16/bf16 tiles go to the tensor cores, except in the CPU interpreter, which multiplies 16-bit tiles
as raw integers, so there they are upcast first (exact: products of 16-bit floats fit fp32).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import torch

from kernelevolve.problem import Problem

from ..emit.expr import ExprWriter
from ..emit.operands import dtype_expr, signature
from ..emit.source import module_source
from ..emit.tf32 import TF32_PARTS
from ..frontend.compound import GemmSpec
from ..frontend.ir import Lowered, Node, Operand
from ..frontend.trace import Traced
from ..plan import KernelPlan, Unsupported

SPACE = {"BLOCK_M": (16, 32, 64, 128, 256), "BLOCK_N": (16, 32, 64, 128, 256),
         "BLOCK_K": (16, 32, 64, 128), "GROUP_M": (1, 4, 8, 16), "num_warps": (2, 4, 8),
         "num_stages": (1, 2, 3, 4, 5)}
DEFAULTS_FP32 = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 8,
                 "num_stages": 3, "TF32X3": 1, "CHAIN_K": 4096}
# 1: tf32x3 tensor-core products, 0: ieee FMA, 2: tf32x3 with the operands split once (the
# default where it measured faster: ``split_once_pays``), 3: b split once, a's parts taken in
# the kernel from its tiles (no pass over a)
# CHAIN_K: split once's longest run of K summed on the tensor cores before an fp32 add (their
# accumulation drifts with its length: 3.3e-5 of the result at 4096 on an H200, positive inputs)
SPACE_FP32 = {**SPACE, "TF32X3": (1, 0, 2, 3), "CHAIN_K": (1024, 2048, 4096)}
MAX_CHAINS = 8  # the chains are unrolled loops: more would only lengthen compiling
# Split once's tiles to try first: two 128 x 128 accumulators fit 8 warps' registers (128 x 256
# would hold 256 per thread), and four tiles a k step in 3 stages fit shared memory. (The
# chained form ran 4096^3 on an H200 in 1.58 ms at 128 x 128 x 32 with 3 stages, 1.46 at
# 128 x 256 x 32 with 2.)
SPLIT_ONCE_TILES = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 8,
                    "num_stages": 3, "TF32X3": 2}
DEFAULTS_16 = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8,
               "num_stages": 3}
# The fp32 tile where K fits one k step (``plan``)
ONE_STEP_FP32 = {"BLOCK_M": 64, "BLOCK_N": 128, "num_warps": 4, "num_stages": 1}
# The persistent kernel's tile (``offline_variants_h200/matmul_persistent.md``: 128 x 128 x 64 in
# 3 stages asks for 256 KB with the output tile's buffer; 128 x 256 more)
PERSISTENT_TILES = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 8,
                    "num_stages": 3, "TF32X3": 1}
PERSISTENT_MAX_K = 64  # K up to which the persistent kernel is the default (one or two k steps)
IN_KERNEL_A_MAX_COLUMNS = 16  # columns of output tiles up to which TF32X3 = 3 is the default
SPLIT_KS = (1, 2, 4, 8, 16, 32, 64)
SPLIT_MIN_PROGRAMS = 128  # about one program per SM of a large GPU (H100/H200: 132)
SPLIT_MAX_WORKSPACE = 2**30  # bytes of fp32 partial sums: more means the output needs no split
SPLIT_MIN_K = 2048  # each split's K range at least this long, or the second pass costs more
SMEM_BYTES = 227 * 1024  # Hopper's shared memory per block (H100/H200: 227 KB usable)


_TMA_IMPORT = "from triton.tools.tensor_descriptor import TensorDescriptor"
_ALIGNED_ROWS = '''def aligned_rows(t):
    """``t`` copied row-major into rows padded with zeros to a multiple of 16 elements (all of
    them: the GEMM may run K to the padded length, its k tiles' masks then provably whole in
    runs of 16, so the loads vectorize)."""
    k = t.shape[-1]
    rows = torch.empty((*t.shape[:-1], (k + 15) // 16 * 16), dtype=t.dtype, device=t.device)
    rows[..., :k].copy_(t)
    rows[..., k:].zero_()
    return rows'''

# The split-once pass (TF32X3 = 2): each operand's TF32 high part and remainder
_SPLIT_KERNEL = TF32_PARTS + '''


@triton.jit
def split_tf32_kernel(
    # Pointers: x [B, R, K] (any strides); hi and lo [B, R, KP] (rows padded with zeros to 16
    # elements); special [1] int32, set to 1 where x holds an infinity or NaN
    x_ptr, hi_ptr, lo_ptr, special_ptr,
    # Sizes and strides
    R, K, KP, s_xb, s_xr, s_xk,
    # Meta-parameters
    BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr,
):
    # x = hi + lo (tf32_parts), written into rows padded to 16 elements, the pad zeros (x's
    # 0.0 past K)
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    b = tl.program_id(2).to(tl.int64)
    mask = (rows < R)[:, None] & (cols < KP)[None, :]
    x = tl.load(x_ptr + (b * s_xb + rows[:, None].to(tl.int64) * s_xr
                         + cols[None, :].to(tl.int64) * s_xk), mask=mask & (cols < K)[None, :],
                other=0.0)
    hi, lo = tf32_parts(x, special_ptr)
    out = (b * R + rows[:, None].to(tl.int64)) * KP + cols[None, :]
    tl.store(hi_ptr + out, hi, mask=mask)
    tl.store(lo_ptr + out, lo, mask=mask)'''

_SPLIT_LAUNCHER = '''def split_tf32(t, special):
    """``t`` [..., R, K] (2 or 3 dims, fp32, any strides) as its TF32 high part and remainder,
    each [..., R, KP]: rows padded with zeros to KP, a multiple of 16 elements; ``special``
    (int32 [1]) is set to 1 if ``t`` holds an infinity or NaN."""
    k = t.shape[-1]
    kp = (k + 15) // 16 * 16
    t3 = t if t.dim() == 3 else t.unsqueeze(0)
    hi = torch.empty((*t.shape[:-1], kp), dtype=torch.float32, device=t.device)
    lo = torch.empty_like(hi)
    if t.numel():
        grid = (triton.cdiv(t3.shape[1], 32), triton.cdiv(kp, 128), t3.shape[0])
        split_tf32_kernel[grid](t3, hi, lo, special, t3.shape[1], k, kp, *t3.stride(), BLOCK_R=32,
                                BLOCK_K=128, num_warps=4)
    return hi, lo'''


def split_once_pays(spec: GemmSpec) -> bool:
    """Whether an fp32 GEMM defaults to split once (TF32X3 = 2) over tf32x3 in the kernel: on
    an H200 it ran KernelBench's level-1 GEMMs 1.05-1.7x faster than tf32x3 (1.2-2.1x of
    cuBLAS SGEMM, but 0.5x at K = 524288), except K = 32 (9, 0.97x vs 0.99x: one k step,
    nothing for the split pass to repay); ``offline_variants_h200/matmul_split_chains.md``.
    K = 2949 (8) lost too (6.9 ms against 6.0) while the split rows were padded but K was
    not: the k tiles' masks then have no provable runs, so every load was scalar. With the
    pad zeroed and K run to it, 8 took 3.1 ms split once, 4.4 with tf32x3 and 6.4 in cuBLAS
    (``offline_variants_h200/matmul_padded_k.md``)."""
    m = math.prod(spec.a.shape[:-1]) if spec.a_flatten else spec.a.shape[-2]
    k = spec.a.shape[-1]
    return min(m, spec.b.shape[-1]) >= 256 and k >= 64


def in_kernel_a_pays(spec: GemmSpec, params: Mapping[str, int]) -> bool:
    """Whether split once defaults to splitting b only (TF32X3 = 3), a's parts taken in the
    kernel: where a's tiles meet at most IN_KERNEL_A_MAX_COLUMNS columns of output tiles (the
    split in registers is repeated for each), against a pass that reads a and writes it twice.
    On an H200 (``offline_variants_h200/matmul_in_kernel_a.md``) it ran KernelBench 6 (2 columns
    of tiles, a 512 MB) in 1.26 ms against 1.71 split once (cuBLAS SGEMM 1.31), 10 and 11 (6
    columns) in 0.50 and 4.95 ms against 0.63 and 5.81, batched 3 (16) in 3.56 against 3.84,
    and lost on the 4096^2 ones (32 columns: 1, 16, 17: 1.46-1.59 ms against 1.29-1.31)."""
    return -(-spec.b.shape[-1] // params["BLOCK_N"]) <= IN_KERNEL_A_MAX_COLUMNS


def _grouped_order(tile: str, ind: str) -> list[str]:
    """Kernel lines setting ``pid_m`` and ``pid_n`` of output tile number ``tile`` in grouped
    order (GROUP_M rows of tiles a group; ``num_pid_m`` and ``num_pid_in_group`` in scope),
    shared by the per-tile and the persistent kernel."""
    return [f"{ind}group_id = {tile} // num_pid_in_group", f"{ind}first_pid_m = group_id * GROUP_M",
            f"{ind}group_size_m = min(num_pid_m - first_pid_m, GROUP_M)",
            f"{ind}pid_m = first_pid_m + (({tile} % num_pid_in_group) % group_size_m)",
            f"{ind}pid_n = ({tile} % num_pid_in_group) // group_size_m"]


def persistent_pays(spec: GemmSpec) -> bool:
    """Whether an fp32 GEMM defaults to the persistent kernel: a short K (at most
    PERSISTENT_MAX_K), where writing the output is the work, and output rows TMA can store
    (N fp32 elements a multiple of 16 bytes)."""
    return spec.a.shape[-1] <= PERSISTENT_MAX_K and spec.b.shape[-1] % 4 == 0


def program_k(k: int, split: int, block_k: int) -> int:
    """The length of K one program sums with K split ``split`` ways (the kernel's ``k_per``;
    the launcher counts split once's chains from it)."""
    if split == 1:
        return k
    steps = -(-k // block_k)  # k steps, rounded up
    return -(-steps // split) * block_k


def split_k(spec: GemmSpec, params: Mapping[str, int]) -> int:
    """The split of K the template starts from: 1, unless the output has too few tiles to give
    every SM a program and K is long enough to share out (KernelBench's 256x256 by K=524288).
    Split once splits further, until a program's K is at most two chains: on an H200 at
    KernelBench 6 its GEMM ran 1.77 ms as 32 splits of four chains of 4096 and 0.80 ms as 64 of
    two (``offline_variants_h200/matmul_large_k.md``)."""
    m = math.prod(spec.a.shape[:-1]) if spec.a_flatten else spec.a.shape[-2]
    k, n = spec.a.shape[-1], spec.b.shape[-1]
    tiles = -(-m // params["BLOCK_M"]) * -(-n // params["BLOCK_N"])
    split = 1
    while (split < SPLIT_KS[-1] and tiles * split < SPLIT_MIN_PROGRAMS
           and k // (2 * split) >= SPLIT_MIN_K):
        split *= 2
    if params.get("TF32X3") in (2, 3) and split > 1:
        most = 2 * params.get("CHAIN_K", DEFAULTS_FP32["CHAIN_K"])
        while (split < SPLIT_KS[-1] and program_k(k, split, params["BLOCK_K"]) > most
               and 4 * (2 * split) * m * n <= SPLIT_MAX_WORKSPACE):
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
        if params.get("TF32X3") in (2, 3):
            # four tiles a k step (both operands' parts; three where only b is split), in
            # every stage: on an H200, 128 x 256 x 32 with 3 stages asked for 288 KB
            rows = (2 * params["BLOCK_M"] if params["TF32X3"] == 2 else params["BLOCK_M"]) + (
                2 * params["BLOCK_N"])
            smem = rows * params["BLOCK_K"] * 4 * params["num_stages"]
        if params.get("PERSISTENT"):
            if params.get("TF32X3") not in (0, 1) or params.get("SPLIT_K", 1) != 1:
                return "the persistent kernel takes TF32X3 0 or 1 and no split-K"
            # the output tile's buffer for its TMA store besides the pipelined tiles
            smem = ((params["BLOCK_M"] + params["BLOCK_N"]) * params["BLOCK_K"]
                    * params["num_stages"] + params["BLOCK_M"] * params["BLOCK_N"]) * 4
        if smem > SMEM_BYTES:
            return f"{smem // 1024} KB of shared memory for the pipelined tiles (limit 227 KB)"
        per_thread = params["BLOCK_M"] * params["BLOCK_N"] // (32 * params["num_warps"])
        if per_thread > 128:
            return f"a {per_thread}-register accumulator per thread (spills)"
        split = params.get("SPLIT_K", 1)
        if params.get("TF32X3") in (2, 3):
            if per_thread > 64:
                # split once holds two accumulators: the sum and a chain's
                return f"two {per_thread}-register accumulators per thread (spills)"
            k_range = program_k(self.spec.a.shape[-1], split, params["BLOCK_K"])
            chain_k = params.get("CHAIN_K", DEFAULTS_FP32["CHAIN_K"])
            if k_range > MAX_CHAINS * chain_k:
                return (f"split once would sum K = {k_range} a program in chains longer than "
                        f"CHAIN_K = {chain_k} (at most {MAX_CHAINS}): split K further")
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
        others = self._others()
        ptrs = (["a_ptr", "b_ptr"] + ([] if self.half else ["alo_ptr", "blo_ptr", "special_ptr"])
                + [f"{names[id(o)]}_ptr" for o in others] + ["out_ptr"])
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
            lines += ["    # fp32 products: 1 tf32x3; 2 tf32x3 of operands split once (alo, blo: the",
                      "    # remainders, a and b the TF32 high parts); 0 ieee",
                      "    TF32X3: tl.constexpr,",
                      "    # split once: K in CHAINS ranges, each summed on the tensor cores from zero",
                      "    CHAINS: tl.constexpr,"]
        if not batched:
            lines += ["    # split-K: 0 one pass; 1 each program's K range into ws [SPLIT_K, M, N];",
                      "    # 2 the sum over ws, then the epilogue",
                      "    PHASE: tl.constexpr, SPLIT_K: tl.constexpr,"]
        lines += ["):",
                  "    # Grouped ordering: GROUP_M rows of output tiles share their b columns",
                  "    # in L2.",
                  "    pid = tl.program_id(0)",
                  "    num_pid_m = tl.cdiv(M, BLOCK_M)", "    num_pid_n = tl.cdiv(N, BLOCK_N)",
                  "    num_pid_in_group = GROUP_M * num_pid_n"] + _grouped_order("pid", "    ")
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
            lines += ["    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)"]
            lines += ["    ws_tile = offs_m[:, None].to(tl.int64) * N + offs_n[None, :]",
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
        lines += [f"{ind}a_offs = offs_m[:, None].to(tl.int64) * stride_am + "
                  f"({start} + offs_k[None, :]) * stride_ak",
                  f"{ind}b_offs = ({start} + offs_k[:, None]) * stride_bk + "
                  "offs_n[None, :].to(tl.int64) * stride_bn"]
        pointers = [f"a_ptrs = {a0} + a_offs", f"b_ptrs = {b0} + b_offs"]
        if not self.half:
            pointers += [f"alo_ptrs = {a0.replace('a_ptr', 'alo_ptr')} + a_offs",
                         f"blo_ptrs = {b0.replace('b_ptr', 'blo_ptr')} + b_offs"]
        lines += [f"{ind}{line}" for line in pointers]
        end = "k_hi" if not batched else "K"

        def k_step(b_lo: bool = False, bound: str = end) -> list[str]:
            # one k step's tile loads, masked past ``bound`` (K's end, or a chain's), with b's
            # remainder where ``b_lo``
            step = [f"k_mask = offs_k < {bound} - k",
                    "a = tl.load(a_ptrs, mask=mask_m[:, None] & k_mask[None, :], other=0.0)",
                    "b = tl.load(b_ptrs, mask=k_mask[:, None] & mask_n[None, :], other=0.0)"]
            if b_lo:
                step.append("b_lo = tl.load(blo_ptrs, mask=k_mask[:, None] & mask_n[None, :], "
                            "other=0.0)")
            return step

        # a's remainder, loaded where both operands are split once (2)
        a_lo = "a_lo = tl.load(alo_ptrs, mask=mask_m[:, None] & k_mask[None, :], other=0.0)"

        def modes(two: list[str], three: list[str]) -> list[str]:
            # split once's two forms: both operands split (2), or b only (3)
            return (["if TF32X3 == 3:"] + [f"    {line}" for line in three] + ["else:"]
                    + [f"    {line}" for line in two])

        advance = ["a_ptrs += BLOCK_K * stride_ak", "b_ptrs += BLOCK_K * stride_bk"]
        lo_advance = ["alo_ptrs += BLOCK_K * stride_ak", "blo_ptrs += BLOCK_K * stride_bk"]
        if self.half:
            body = k_step() + [
                "if UPCAST:",
                "    # The interpreter multiplies 16-bit tiles as raw integers.",
                "    acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc, "
                "input_precision=\"ieee\")",
                "else:", "    acc = tl.dot(a, b, acc)"] + advance
            lines.append(f"{ind}for k in range({start}, {end}, BLOCK_K):")
            lines += [f"{ind}    {line}" for line in body]
        else:
            chain = k_step(True, "c_hi") + modes([
                a_lo,
                "part = tl.dot(a_lo, b, part, input_precision=\"tf32\")",
                "part = tl.dot(a, b_lo, part, input_precision=\"tf32\")",
                "part = tl.dot(a, b, part, input_precision=\"tf32\")"], [
                "# a's TF32 high part: its bits cut; the remainder is exact",
                "a_hi = (a.to(tl.int32, bitcast=True) & -8192).to(tl.float32, bitcast=True)",
                "part = tl.dot(a - a_hi, b, part, input_precision=\"tf32\")",
                "part = tl.dot(a_hi, b_lo, part, input_precision=\"tf32\")",
                "part = tl.dot(a_hi, b, part, input_precision=\"tf32\")"]) + lo_advance + advance
            fallback = k_step(True) + modes([
                a_lo, "acc = tl.dot(a + a_lo, b + b_lo, acc, input_precision=\"ieee\")"],
                ["acc = tl.dot(a, b + b_lo, acc, input_precision=\"ieee\")"]
            ) + lo_advance + advance
            split = [
                "# split once: a and b hold TF32 high parts, alo and blo the remainders (3:",
                "# b only, a's parts taken from its tiles); three plain TF32 products of",
                "# loaded tiles, chained on the tensor cores.",
                "# Their accumulation cuts low bits instead of rounding, a drift that grows",
                "# with the chain (3e-5 of the result at K = 4096, 1.1e-4 at 16384 on an",
                "# H200, with positive inputs): so K is summed in CHAINS ranges from zero",
                "# (launched at most CHAIN_K long), each added to acc in fp32. The ranges are",
                "# unrolled loops one after another, each pipelined (nested in a loop, or",
                "# added to acc every step, the tensor cores waited).",
                "flag = tl.load(special_ptr)",
                "redo = flag != 0",
                "if flag == 0:",
                f"    k_len = tl.cdiv(tl.cdiv({end} - {start}, BLOCK_K), CHAINS) * BLOCK_K",
                "    for c in tl.static_range(CHAINS):",
                f"        c_hi = tl.minimum({end}, {start} + (c + 1) * k_len)",
                "        part = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)",
                f"        for k in range({start} + c * k_len, c_hi, BLOCK_K):"]
            split += [f"            {line}" for line in chain]
            split += ["        acc += part",
                      "    if TF32X3 == 3:",
                      "        # an infinity or NaN in a: its remainder (a - a_hi) is NaN, which",
                      "        # reaches the sum (NaN * 0 is NaN); so does inf - inf",
                      "        redo = tl.max((acc != acc).to(tl.int32), axis=None) > 0",
                      "if redo:",
                      "    # an infinity or NaN in a split operand: its remainder is 0, and",
                      "    # inf * 0 is NaN where the reference has an infinity; the parts' sums",
                      "    # (the value to 2^-22) multiplied on the FMA units instead",
                      "    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)"]
            split += [f"    {line}" for line in pointers]  # from the range's start again
            split += [f"    for k in range({start}, {end}, BLOCK_K):"]
            split += [f"        {line}" for line in fallback]
            other = [f"for k in range({start}, {end}, BLOCK_K):"] + [
                f"    {line}" for line in k_step() + [
                    "if TF32X3:",
                    "    # fp32 as three TF32 tensor-core products (hi*hi + hi*lo + lo*hi):",
                    "    # fp32-level error; plain TF32 would miss the tolerance.",
                    "    acc = tl.dot(a, b, acc, input_precision=\"tf32x3\")",
                    "else:",
                    "    acc = tl.dot(a, b, acc, input_precision=\"ieee\")"] + advance]
            body = (["if TF32X3 >= 2:"] + [f"    {line}" for line in split] + ["else:"]
                    + [f"    {line}" for line in other])
            lines += [f"{ind}{line}" for line in body]
        lines.append("    mask = mask_m[:, None] & mask_n[None, :]")
        if not batched:
            lines += ["    if PHASE == 1:",
                      "        tl.store(ws_ptr + tl.program_id(1) * ws_split + ws_tile, acc, "
                      "mask=mask)",
                      "    else:"]
        self._epilogue(lines, ind, batched)
        return "\n".join(lines)

    def _persistent_kernel(self) -> str:
        """``persistent_matmul_kernel``: a program per SM over the output tiles, the tile and k
        loops flattened into one pipelined loop, tiles in and out through TMA descriptors."""
        names = self.sig.operand_names
        others = self._others()
        tiles = [o for o in others if self.kinds[id(o)] == "tile"]
        lines = ["@triton.jit", "def persistent_matmul_kernel(",
                 "    # TMA descriptors: a [M, K] row-major, b K-major ([N, K] rows), out [M, N]",
                 "    a_desc, b_desc, out_desc,"]
        if others:
            lines += ["    # Epilogue operands",
                      f"    {', '.join(f'{names[id(o)]}_ptr' for o in others)},"]
        lines += ["    # Sizes", "    M, N, K,"]
        if tiles:
            lines += ["    # Strides of the epilogue's tiles (contiguous rows)",
                      f"    {', '.join(f'stride_{names[id(o)]}_m' for o in tiles)},"]
        if self.sig.scalars:
            lines += ["    # Scalars (model attributes)",
                      f"    {', '.join(self.sig.scalars.values())},"]
        lines += ["    # Meta-parameters", "    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,",
                  "    BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,",
                  "    # fp32 products: 1 tf32x3, 0 ieee",
                  "    TF32X3: tl.constexpr,",
                  "    # programs launched (one per SM)",
                  "    NUM_SMS: tl.constexpr,",
                  "):",
                  "    num_pid_m = tl.cdiv(M, BLOCK_M)", "    num_pid_n = tl.cdiv(N, BLOCK_N)",
                  "    num_pid_in_group = GROUP_M * num_pid_n",
                  "    k_tiles = tl.cdiv(K, BLOCK_K)",
                  "    # One loop over this program's tiles and their k steps (flatten): the next",
                  "    # tile's loads are issued while this one's products and store run.",
                  "    for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS,",
                  "                         flatten=True):",
                  "        # Grouped ordering, as in fused_matmul_kernel"]
        lines += _grouped_order("tile", "        ")
        lines += ["        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)",
                  "        for ki in range(k_tiles):",
                  "            # past K (and the rows' ends) the descriptors read zeros",
                  "            a = a_desc.load([pid_m * BLOCK_M, ki * BLOCK_K])",
                  "            b = b_desc.load([pid_n * BLOCK_N, ki * BLOCK_K]).T",
                  "            if TF32X3:",
                  "                acc = tl.dot(a, b, acc, input_precision=\"tf32x3\")",
                  "            else:",
                  "                acc = tl.dot(a, b, acc, input_precision=\"ieee\")",
                  "        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)",
                  "        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)",
                  "        mask_m = offs_m < M", "        mask_n = offs_n < N",
                  "        mask = mask_m[:, None] & mask_n[None, :]"]
        # the descriptor's store drops the rows and columns past the output's end
        self._epilogue(lines, "        ", False, store_desc=True)
        return "\n".join(lines)

    def _others(self) -> list[Operand]:
        """The epilogue's operands in kernel argument order (the bias first)."""
        others = list(self.epilogue_ops)
        if self.bias_op is not None:
            others = [self.bias_op] + [o for o in others if o is not self.bias_op]
        return others

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

    def _epilogue(self, lines: list[str], ind: str, batched: bool,
                  store_desc: bool = False) -> None:
        """Append the fused epilogue and the store: ``acc`` is the fp32 [BLOCK_M, BLOCK_N] tile
        of the product at rows ``offs_m`` and columns ``offs_n`` (``mask_m``, ``mask_n``,
        ``mask`` in scope), stored through ``out_ptr`` or, with ``store_desc``, the TMA
        descriptor ``out_desc`` at tile (``pid_m``, ``pid_n``); the matrix-vector template
        (gemv.py) shares it."""
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
        if store_desc:
            lines += [f"{ind}out_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], "
                      f"{result}.to(out_desc.dtype))"]
            return
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
        dtype = dtype_expr(self.gemm.dtype, [spec.a], {id(spec.a): a})
        if tensor_cores and not self.half:
            if batched:
                lines.append("    tma = False")
            else:
                lines += ["    # the persistent kernel's TMA descriptors: rows of a multiple of 16 bytes",
                          "    # (a and b are copied so below; the output's are N's) on sm_90 or later",
                          "    # (or in the interpreter, on the CPU)",
                          f"    tma = bool(PERSISTENT) and N * {dtype}.itemsize % 16 == 0 and (",
                          "        a.device.type == \"cpu\" or torch.cuda.get_device_capability(a.device)[0] >= 9)"]
            lines += ["    a_lo, b_lo = a, b  # the remainders, where the operands are split once",
                      "    special = a  # set where a split operand holds an infinity or NaN",
                      "    if TF32X3 == 2:",
                      "        special = torch.zeros(1, dtype=torch.int32, device=a.device)",
                      "        # split once (on every device, so the interpreter checks the",
                      "        # addressing the GPU runs): a and b become their TF32 high parts,",
                      "        # K-major in rows padded with zeros to 16 elements, beside their",
                      "        # remainders; K runs to the padded length (zeros times zeros)",
                      "        a, a_lo = split_tf32(a, special)",
                      "        b, b_lo = (t.transpose(-1, -2)",
                      "                   for t in split_tf32(b.transpose(-1, -2), special))",
                      "    elif TF32X3 == 3:",
                      "        # b split once; a read as it is (the kernel takes its TF32 parts from",
                      "        # each tile), K-major in rows of a multiple of 16 elements",
                      "        special = torch.zeros(1, dtype=torch.int32, device=a.device)",
                      "        if a.stride(-1) != 1 or a.stride(-2) % 16 or K % 16:",
                      "            a = aligned_rows(a)",
                      "        b, b_lo = (t.transpose(-1, -2)",
                      "                   for t in split_tf32(b.transpose(-1, -2), special))",
                      "    elif TF32X3 and a.device.type == \"cuda\" or tma:",
                      "        # TF32 tensor-core products read both tiles K-major (a row-major,",
                      "        # b column-major) from rows of a multiple of 16 elements; an",
                      "        # operand laid out otherwise is copied once into padded rows, a",
                      "        # pass over it that costs far less than the product it speeds up.",
                      "        # (TMA also needs 16-byte aligned starts.)",
                      "        if a.stride(-1) != 1 or a.stride(-2) % 16 or K % 16 or a.data_ptr() % 16:",
                      "            a = aligned_rows(a)",
                      "        if b.stride(-2) != 1 or b.stride(-1) % 16 or K % 16 or b.data_ptr() % 16:",
                      "            b = aligned_rows(b.transpose(-1, -2)).transpose(-1, -2)",
                      "    # Where the operands were copied, K to their padded length: its last",
                      "    # k tile multiplies zeros, and the compiler proves the k masks whole in",
                      "    # runs of 16 (K = 2949 unpadded: scalar loads, 6.0 ms on an H200).",
                      "    K = a.shape[-1]"]
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
        others = self._others()
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
        ptrs = (['a', 'b'] + ([] if self.half else ['a_lo', 'b_lo', 'special'])
                + [names[id(o)] for o in others] + ['out'])

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
                call.append("        TF32X3=TF32X3, CHAINS=chains,")
            if ws:
                call.append(f"        PHASE={phase}, SPLIT_K={split},")
            return call + ["        num_warps=NUM_WARPS, num_stages=NUM_STAGES,", "    )"]

        if not self.half:
            k_range = ("K" if batched else "K if SPLIT_K == 1 else "
                       "triton.cdiv(triton.cdiv(K, BLOCK_K), SPLIT_K) * BLOCK_K")
            lines += ["    # split once: each program's K range in chains of at most CHAIN_K (unrolled,",
                      f"    # so no more than {MAX_CHAINS}: beyond that they grow longer); from",
                      "    # 4096 on at least two (on an H200 4096^3 ran in 1.30 ms as two, 1.44 as",
                      "    # one, and K = 8192 in 1.31 as two, 3.3 as four)",
                      f"    k_range = {k_range}",
                      "    chains = min(max(triton.cdiv(k_range, CHAIN_K), 1 + (k_range >= 4096)), "
                      f"{MAX_CHAINS}) if TF32X3 >= 2 else 1"]
        if batched:
            lines += launch("grid", None, 0, "1")
        else:
            if not self.half:
                epi = [names[id(o)] for o in others] + ["M", "N", "K"] + [
                    f"{names[id(o)]}.stride(0)" for o in tiles] + list(sig.scalars.values())
                lines += [
                    "    if tma:",
                    "        # persistent: a program per SM over the output tiles",
                    "        sms = (torch.cuda.get_device_properties(a.device).multi_processor_count",
                    "               if a.device.type == \"cuda\" else 4)",
                    "        a_desc = TensorDescriptor.from_tensor(a, [BLOCK_M, BLOCK_K])",
                    "        b_desc = TensorDescriptor.from_tensor(b.transpose(-1, -2), [BLOCK_N, BLOCK_K])",
                    "        out_desc = TensorDescriptor.from_tensor(out, [BLOCK_M, BLOCK_N])",
                    "        persistent_matmul_kernel[(min(sms, grid[0]),)](",
                    "            a_desc, b_desc, out_desc," + "".join(f" {e}," for e in epi),
                    "            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M,",
                    "            TF32X3=TF32X3, NUM_SMS=sms, num_warps=NUM_WARPS, num_stages=NUM_STAGES,",
                    "        )",
                    "        return out.view(out_shape)"]
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
            consts["CHAIN_K"] = params.get("CHAIN_K", DEFAULTS_FP32["CHAIN_K"])
        if not self.spec.batched:
            consts["SPLIT_K"] = params["SPLIT_K"]
        persistent = not self.half and not self.spec.batched
        if persistent:
            consts["PERSISTENT"] = params.get("PERSISTENT", 0)
        return module_source(self.problem, self.description, consts,
                             ([] if self.half else [_SPLIT_KERNEL]) + [self._kernel()]
                             + ([self._persistent_kernel()] if persistent else []),
                             ([_TMA_IMPORT] if persistent else [])
                             + ([] if self.half else [_ALIGNED_ROWS, _SPLIT_LAUNCHER])
                             + [self._launcher()],
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
        if not half and split_once_pays(spec):
            defaults["TF32X3"] = 3 if in_kernel_a_pays(spec, defaults) else 2
        if spec.a.shape[-1] <= defaults["BLOCK_K"]:
            # one k step: the output's stores are the work, and tiles visited along a row of
            # the output write it in order; with nothing to pipeline, one stage and smaller
            # tiles keep more of them in flight (KernelBench 9, [32768, 32] @ [32, 32768] on
            # an H200: 2.59 ms grouped at 128 x 128 x 3 stages, 2.36 at GROUP_M = 1, 1.91 with
            # ONE_STEP_FP32's tile; offline_variants_h200/matmul_one_k_step.md)
            defaults["GROUP_M"] = 1
            if not half:
                defaults.update(ONE_STEP_FP32)
        if not half and not spec.batched:
            space["PERSISTENT"] = (0, 1)
            defaults["PERSISTENT"] = int(persistent_pays(spec))
            if defaults["PERSISTENT"]:
                defaults.update(PERSISTENT_TILES)
        if not spec.batched:
            space["SPLIT_K"] = SPLIT_KS
            defaults["SPLIT_K"] = 1 if defaults.get("PERSISTENT") else split_k(spec, defaults)
        return KernelPlan("matmul", desc, space, defaults,
                          cls(problem, traced, lowered, desc))
