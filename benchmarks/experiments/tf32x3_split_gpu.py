"""fp32 GEMM on the tensor cores, two ways to split the operands (issue #17's >= 1.5x over cuBLAS
SGEMM target), at KernelBench level 1's matmul shapes, beside cuBLAS fp32 (TF32 off):

- ``inkernel``: ``tl.dot(a, b, input_precision="tf32x3")``, as the matmul template does: each
  loaded tile is split into a TF32 high part and remainder in registers, every k step, before
  the three tensor-core products.
- ``presplit``: one pass writes each operand's high part and remainder once (``split_kernel``:
  the high part is the fp32 value with its low 13 mantissa bits cleared, so it is exactly a TF32
  value; the remainder is the exact difference), then the GEMM loads the four tiles and sums
  three plain ``input_precision="tf32"`` products (hi*lo + lo*hi + hi*hi). The split's time is
  counted in the end-to-end figure.

Each variant's error is the max relative error against a float64 product (relative to the
largest output magnitude, as the harness's fp32 tolerance reads it).

This is the first measurement of the idea (``results/offline_variants_h200/tf32x3_split.md``),
kept as it ran: its split truncates the high part and it chains the three products into one
accumulator, so its error (3.6e-5 at 4096^3) is ten times cuBLAS's. The matmul template's
split-once mode (``TF32X3=2``) rounds both parts to nearest and gives the small products an
accumulator of their own; ``offline_variants_gpu.py`` times that form.

    python benchmarks/experiments/tf32x3_split_gpu.py --out /tmp/split

Experiment of 2026-12-02 (issue #17), before the notes began; its figures are
benchmarks/results/offline_variants_h200/tf32x3_split.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

# (name, M, N, K): KernelBench level 1's 2-D matmuls at their own sizes
SHAPES = [("1_Square", 4096, 4096, 4096), ("2_Standard", 2048, 4096, 8192),
          ("8_Irregular", 8205, 5921, 2949), ("13_Symmetric", 4096, 4096, 4096),
          ("3_Batched_as_2d", 65536, 2048, 1024)]
TILES = [  # BLOCK_M, BLOCK_N, BLOCK_K, warps, stages
    (128, 128, 32, 8, 3), (128, 256, 32, 8, 3), (128, 128, 32, 4, 4), (128, 256, 32, 8, 2),
    (256, 128, 32, 8, 2), (128, 128, 64, 8, 2),
]


@triton.jit
def split_kernel(x_ptr, hi_ptr, lo_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    hi = (x.to(tl.uint32, bitcast=True) & 0xFFFFE000).to(tl.float32, bitcast=True)
    tl.store(hi_ptr + offs, hi, mask=mask)
    tl.store(lo_ptr + offs, x - hi, mask=mask)


@triton.jit
def gemm_kernel(a_ptr, b_ptr, a2_ptr, b2_ptr, c_ptr, M, N, K, s_am, s_ak, s_bk, s_bn, s_cm,
                PRESPLIT: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    a_off = offs_m[:, None].to(tl.int64) * s_am + offs_k[None, :] * s_ak
    b_off = offs_k[:, None] * s_bk + offs_n[None, :].to(tl.int64) * s_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        k_mask = offs_k < K - k
        a_m = mask_m[:, None] & k_mask[None, :]
        b_m = k_mask[:, None] & mask_n[None, :]
        a = tl.load(a_ptr + a_off, mask=a_m, other=0.0)
        b = tl.load(b_ptr + b_off, mask=b_m, other=0.0)
        if PRESPLIT:
            a2 = tl.load(a2_ptr + a_off, mask=a_m, other=0.0)
            b2 = tl.load(b2_ptr + b_off, mask=b_m, other=0.0)
            acc = tl.dot(a, b2, acc, input_precision="tf32")
            acc = tl.dot(a2, b, acc, input_precision="tf32")
            acc = tl.dot(a, b, acc, input_precision="tf32")
        else:
            acc = tl.dot(a, b, acc, input_precision="tf32x3")
        a_off += BLOCK_K * s_ak
        b_off += BLOCK_K * s_bk
    c = c_ptr + offs_m[:, None].to(tl.int64) * s_cm + offs_n[None, :]
    tl.store(c, acc, mask=mask_m[:, None] & mask_n[None, :])


def _split(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    hi, lo = torch.empty_like(x), torch.empty_like(x)
    n = x.numel()
    split_kernel[(triton.cdiv(n, 4096),)](x, hi, lo, n, BLOCK=4096, num_warps=8)
    return hi, lo


def gemm(a: torch.Tensor, b: torch.Tensor, presplit: bool, tile: tuple[int, ...]) -> torch.Tensor:
    """a [M, K] @ b [K, N] (b read K-major: b.T contiguous, as the template copies it)."""
    bm, bn, bk, warps, stages = tile
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), device=a.device, dtype=torch.float32)
    if presplit:
        (a1, a2), (b1, b2) = _split(a), _split(b)
    else:
        a1, a2, b1, b2 = a, a, b, b
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    gemm_kernel[grid](a1, b1, a2, b2, c, m, n, k, a.stride(0), a.stride(1), b1.stride(0),
                      b1.stride(1), c.stride(0), PRESPLIT=presplit, BLOCK_M=bm, BLOCK_N=bn,
                      BLOCK_K=bk, GROUP_M=8, num_warps=warps, num_stages=stages)
    return c


def one_shape(name: str, m: int, n: int, k: int) -> dict:
    """cuBLAS and every variant at one shape: times and errors."""
    from triton.testing import do_bench

    torch.manual_seed(0)
    a = torch.randn(m, k, device="cuda")
    # b K-major, as the template reads it: [K, N] with the K stride 1
    b = torch.randn(n, k, device="cuda").T
    truth = (a.double() @ b.double())
    scale = truth.abs().max().item()
    ref = a @ b.contiguous()
    cublas_ms = do_bench(lambda: a @ b, warmup=25, rep=200)
    row = {"shape": name, "M": m, "N": n, "K": k, "cublas_ms": cublas_ms,
           "cublas_err": (ref.double() - truth).abs().max().item() / scale, "variants": []}
    del ref
    for presplit in (False, True):
        for tile in TILES:
            rec = {"presplit": presplit, "tile": tile}
            try:
                out = gemm(a, b, presplit, tile)
                rec["err"] = (out.double() - truth).abs().max().item() / scale
                del out
                rec["ms"] = do_bench(lambda t=tile, p=presplit: gemm(a, b, p, t), warmup=25,
                                     rep=200)
                rec["vs_cublas"] = cublas_ms / rec["ms"]
            except Exception as exc:
                rec["error"] = f"{type(exc).__name__}: {exc}"[:300]
            row["variants"].append(rec)
            print(name, rec, flush=True)
    # the split alone: what presplit pays before its GEMM
    row["split_ms"] = do_bench(lambda: (_split(a), _split(b)), warmup=10, rep=100)
    return row


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "probes"))
    from offline_variants_gpu import run_meta

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--only", nargs="*", default=None)
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    meta = run_meta("experiments/tf32x3_split_gpu.py")
    rows = []
    args.out.mkdir(parents=True, exist_ok=True)
    for name, m, n, k in SHAPES:
        if args.only and not any(name.startswith(o) for o in args.only):
            continue
        rows.append(one_shape(name, m, n, k))
        torch.cuda.empty_cache()
        (args.out / "split.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = [f"# fp32 GEMM by TF32 tensor-core products: split in the kernel or before it, on "
             f"{meta['device']}", "", f"`{meta['command']}`; torch {meta['torch']}, Triton "
             f"{meta['triton']}, {meta['date']}. do_bench medians; the presplit time includes "
             f"its split pass. Error: max |out - float64| / max |float64|.", "",
             "| shape | cuBLAS fp32 ms (err) | variant | tile (M, N, K, warps, stages) | ms | "
             "vs cuBLAS | err |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        for v in r["variants"]:
            lines.append(f"| {r['shape']} {r['M']}x{r['N']}x{r['K']} | {r['cublas_ms']:.3f} "
                         f"({r['cublas_err']:.1e}) | {'presplit' if v['presplit'] else 'inkernel'}"
                         f" | {v['tile']} | {v.get('ms', float('nan')):.3f} | "
                         f"{v.get('vs_cublas', float('nan')):.2f}x | "
                         f"{v.get('err', v.get('error', ''))} |")
        lines.append(f"| {r['shape']} | | split pass alone | | {r['split_ms']:.3f} | | |")
    (args.out / "split.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
