"""Prototype on the GPU: KernelBench 6 (256 x 256, K = 524288, fp32) with only b split once into
K-major TF32 parts and a's parts taken in the kernel, the form the matmul template took as
``TF32X3 = 3`` (``benchmarks/results/offline_variants_h200/matmul_in_kernel_a.md``). MODE 0 feeds
raw a as its own high part (counting on the tensor cores to cut its low bits), MODE 1 cuts them.

    python benchmarks/experiments/matmul_large_k_prototype.py /tmp/out   # writes /tmp/out/mm6.json

Experiment of 2026-12-03; fed docs/notes/2026-12-03-matmul-b-only-split.md.
"""
import json
import os
import sys

import torch
import triton
import triton.language as tl
from triton.testing import do_bench


@triton.jit
def split_b_kernel(b_ptr, hi_ptr, lo_ptr, K, N, KP, BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr):
    k = tl.program_id(0) * BLOCK_K + tl.arange(0, BLOCK_K)
    n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (k < K)[:, None] & (n < N)[None, :]
    x = tl.load(b_ptr + k[:, None].to(tl.int64) * N + n[None, :], mask=mask, other=0.0)
    bits = x.to(tl.int32, bitcast=True)
    hi = ((bits + 0xFFF + ((bits >> 13) & 1)) & -8192).to(tl.float32, bitcast=True)
    r = x - hi
    rb = r.to(tl.int32, bitcast=True)
    lo = ((rb + 0xFFF + ((rb >> 13) & 1)) & -8192).to(tl.float32, bitcast=True)
    out = n[None, :].to(tl.int64) * KP + k[:, None]
    tl.store(hi_ptr + out, hi, mask=mask)
    tl.store(lo_ptr + out, lo, mask=mask)


@triton.jit
def gemm_kernel(a_ptr, bhi_ptr, blo_ptr, ws_ptr, M, N, K, KP, k_per,
                CHAINS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                BLOCK_K: tl.constexpr, MODE: tl.constexpr):
    pid = tl.program_id(0)
    n_tiles_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // n_tiles_n
    pid_n = pid % n_tiles_n
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    k_lo = tl.program_id(1) * k_per
    k_len = k_per // CHAINS
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for c in tl.static_range(CHAINS):
        part = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        start = k_lo + c * k_len
        for k in range(start, start + k_len, BLOCK_K):
            a = tl.load(a_ptr + offs_m[:, None].to(tl.int64) * K + (k + offs_k)[None, :])
            bh = tl.load(bhi_ptr + offs_n[None, :].to(tl.int64) * KP + (k + offs_k)[:, None])
            bl = tl.load(blo_ptr + offs_n[None, :].to(tl.int64) * KP + (k + offs_k)[:, None])
            if MODE == 0:
                a_hi = (a.to(tl.int32, bitcast=True) & -8192).to(tl.float32, bitcast=True)
                a_lo = a - a_hi
                part = tl.dot(a_lo, bh, part, input_precision="tf32")
                part = tl.dot(a, bl, part, input_precision="tf32")
                part = tl.dot(a, bh, part, input_precision="tf32")
            else:
                a_hi = (a.to(tl.int32, bitcast=True) & -8192).to(tl.float32, bitcast=True)
                a_lo = a - a_hi
                part = tl.dot(a_lo, bh, part, input_precision="tf32")
                part = tl.dot(a_hi, bl, part, input_precision="tf32")
                part = tl.dot(a_hi, bh, part, input_precision="tf32")
        acc += part
    ws = ws_ptr + tl.program_id(1).to(tl.int64) * M * N
    tl.store(ws + offs_m[:, None] * N + offs_n[None, :], acc)


def run(a, b, split, bm, bn, bk, warps, stages, mode, chains):
    M, K = a.shape
    N = b.shape[1]
    hi = torch.empty((N, K), device=a.device)
    lo = torch.empty_like(hi)
    split_b_kernel[(triton.cdiv(K, 128), triton.cdiv(N, 32))](b, hi, lo, K, N, K, BLOCK_K=128,
                                                             BLOCK_N=32, num_warps=4)
    ws = torch.empty((split, M, N), device=a.device)
    k_per = K // split
    gemm_kernel[(triton.cdiv(M, bm) * triton.cdiv(N, bn), split)](
        a, hi, lo, ws, M, N, K, K, k_per, CHAINS=chains, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
        MODE=mode, num_warps=warps, num_stages=stages)
    return ws.sum(0)


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    M, N, K = 256, 256, 131072 * 4
    a = torch.rand(M, K, device="cuda")
    b = torch.rand(K, N, device="cuda")
    ref = (a.double() @ b.double())
    eager = a @ b
    t_eager = do_bench(lambda: a @ b, rep=200)
    err_eager = ((eager.double() - ref).abs() / ref.abs()).max().item()
    rows = [{"variant": "eager", "ms": t_eager, "max_rel": err_eager}]
    for cfg in [(64, 128, 128, 32, 8, 3, 0, 2), (64, 128, 128, 32, 8, 3, 1, 2),
                (64, 128, 128, 32, 4, 3, 0, 2), (32, 128, 128, 32, 8, 3, 0, 4),
                (128, 128, 128, 32, 8, 3, 0, 1), (64, 64, 128, 32, 4, 3, 0, 2),
                (64, 128, 64, 32, 4, 4, 0, 2), (64, 128, 128, 64, 8, 2, 0, 2)]:
        split, bm, bn, bk, warps, stages, mode, chains = cfg
        name = f"split={split} {bm}x{bn}x{bk} w{warps} s{stages} mode{mode} chains{chains}"
        try:
            out = run(a, b, *cfg)
            torch.cuda.synchronize()
            err = ((out.double() - ref).abs() / ref.abs()).max().item()
            t = do_bench(lambda cfg=cfg: run(a, b, *cfg), rep=200)
            row = {"variant": name, "ms": t, "max_rel": err}
        except Exception as e:  # noqa: BLE001
            row = {"variant": name, "error": repr(e)[:300]}
        print(row, flush=True)
        rows.append(row)
    hi = torch.empty((N, K), device="cuda")
    lo = torch.empty_like(hi)
    t_split = do_bench(lambda: split_b_kernel[(triton.cdiv(K, 128), triton.cdiv(N, 32))](
        b, hi, lo, K, N, K, BLOCK_K=128, BLOCK_N=32, num_warps=4), rep=200)
    rows.append({"variant": "split b alone", "ms": t_split})
    print(rows[-1])
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    with open(f"{out}/mm6.json", "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "triton": triton.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
