"""The prototype behind the matmul template's persistent kernel (``PERSISTENT``): KernelBench 7
and 9 (C [32768, 32768] = A [32768, K] @ B [K, 32768], K = 64 and 32, tf32x3 products), where
writing the output is the work. A program per output tile against a program per SM over the
tiles; pointer loads and stores against TMA descriptors; the tile and k loops nested or
flattened (``tl.range(..., flatten=True)``); the output tile stored whole or in halves; beside
cuBLAS SGEMM and a pure write of the output. Each variant's error is checked against float64.

    source benchmarks/device/device_env.sh
    python3 benchmarks/experiments/matmul_persistent_gpu.py OUT_DIR

writes OUT_DIR/mm_tma.json (``results/offline_variants_h200/matmul_persistent_probe.json``). On
the CPU (``TRITON_INTERPRET=1``) it checks every variant's result at 256 x 256, untimed.

Experiment of 2026-12-04; fed docs/notes/2026-12-04-persistent-gemm-and-in-bounds.md.
"""
import json
import os
import sys
import time

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def _tile(t, num_m, num_n, GROUP_M: tl.constexpr):
    in_group = GROUP_M * num_n
    group = t // in_group
    first = group * GROUP_M
    size = tl.minimum(num_m - first, GROUP_M)
    return first + (t % in_group) % size, (t % in_group) // size


@triton.jit
def mm_per_tile(a_ptr, bt_ptr, c_ptr, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                BK: tl.constexpr, GROUP_M: tl.constexpr, PREC: tl.constexpr, DS: tl.constexpr):
    # a program per output tile; the tile stored through pointers, or the descriptor (DS)
    pid_m, pid_n = _tile(tl.program_id(0), tl.cdiv(M, BM), tl.cdiv(N, BN), GROUP_M)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :], mask=rm[:, None] < M)
        bt = tl.load(bt_ptr + rn[:, None] * K + (k0 + rk)[None, :], mask=rn[:, None] < N)
        acc = tl.dot(a, tl.trans(bt), acc, input_precision=PREC)
    if DS:
        c_desc.store([pid_m * BM, pid_n * BN], acc)
    else:
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc,
                 mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def mm_persistent(a_desc, bt_desc, c_desc, a_ptr, bt_ptr, c_ptr, M, N, K, BM: tl.constexpr,
                  BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr, PREC: tl.constexpr,
                  NUM_SMS: tl.constexpr, SUB: tl.constexpr, FLAT: tl.constexpr,
                  DL: tl.constexpr, DS: tl.constexpr):
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    k_tiles = tl.cdiv(K, BK)
    rk = tl.arange(0, BK)
    for t in tl.range(tl.program_id(0), num_m * num_n, NUM_SMS, flatten=FLAT):
        pid_m, pid_n = _tile(t, num_m, num_n, GROUP_M)
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        acc = tl.zeros((BM, BN), tl.float32)
        for ki in range(k_tiles):
            if DL:
                a = a_desc.load([pid_m * BM, ki * BK])
                bt = bt_desc.load([pid_n * BN, ki * BK])
            else:
                a = tl.load(a_ptr + rm[:, None].to(tl.int64) * K + (ki * BK + rk)[None, :],
                            mask=rm[:, None] < M, other=0.0)
                bt = tl.load(bt_ptr + rn[:, None].to(tl.int64) * K + (ki * BK + rk)[None, :],
                             mask=rn[:, None] < N, other=0.0)
            acc = tl.dot(a, bt.T, acc, input_precision=PREC)
        if DS:
            if SUB:
                acc = tl.reshape(acc, (BM, 2, BN // 2))
                acc = tl.permute(acc, (0, 2, 1))
                c0, c1 = tl.split(acc)
                c_desc.store([pid_m * BM, pid_n * BN], c0)
                c_desc.store([pid_m * BM, pid_n * BN + BN // 2], c1)
            else:
                c_desc.store([pid_m * BM, pid_n * BN], acc)
        else:
            tl.store(c_ptr + rm[:, None].to(tl.int64) * N + rn[None, :], acc,
                     mask=(rm[:, None] < M) & (rn[None, :] < N))


def run(which, a, bt, c, cfg):
    M, K = a.shape
    N = bt.shape[0]
    BM, BN, BK = cfg["BM"], cfg["BN"], cfg["BK"]
    common = dict(BM=BM, BN=BN, BK=BK, GROUP_M=cfg.get("GROUP_M", 8), PREC=cfg.get("PREC", "tf32x3"),
                  num_warps=cfg.get("warps", 8), num_stages=cfg.get("stages", 3))
    tiles = triton.cdiv(M, BM) * triton.cdiv(N, BN)
    if which in ("plain", "desc_store"):
        cd = TensorDescriptor.from_tensor(c, [BM, BN])
        mm_per_tile[(tiles,)](a, bt, c, cd, M, N, K, DS=which == "desc_store", **common)
    else:
        sms = torch.cuda.get_device_properties(0).multi_processor_count if c.is_cuda else 4
        sub = cfg.get("SUB", 0)
        ad = TensorDescriptor.from_tensor(a, [BM, BK])
        bd = TensorDescriptor.from_tensor(bt, [BN, BK])
        cd = TensorDescriptor.from_tensor(c, [BM, BN // 2 if sub else BN])
        mm_persistent[(min(sms, tiles),)](ad, bd, cd, a, bt, c, M, N, K, NUM_SMS=sms, SUB=sub,
                                          FLAT=bool(cfg.get("FLAT", 1)), DL=cfg.get("DL", 1),
                                          DS=cfg.get("DS", 1), **common)


VARIANTS = [
    ("plain", dict(BM=128, BN=128)),
    ("persistent", dict(BM=128, BN=128, SUB=1)),
    ("persistent", dict(BM=128, BN=128)),
    ("persistent", dict(BM=128, BN=128, DL=0)),
    ("persistent", dict(BM=128, BN=128, DS=0)),
    ("persistent", dict(BM=128, BN=128, DL=0, DS=0)),
    ("persistent", dict(BM=128, BN=128, DL=0, DS=0, stages=2)),
    ("persistent", dict(BM=128, BN=128, DS=0, stages=2)),
    ("persistent", dict(BM=128, BN=128, stages=2)),
    ("persistent", dict(BM=128, BN=128, SUB=1, stages=2)),
    ("persistent", dict(BM=128, BN=128, GROUP_M=1)),
    ("persistent", dict(BM=128, BN=128, DL=0, DS=0, GROUP_M=1)),
    ("persistent", dict(BM=128, BN=256, SUB=1, stages=2)),
    ("persistent", dict(BM=128, BN=128, BK=32)),
    ("persistent", dict(BM=128, BN=128, BK=32, DL=0, DS=0)),
    ("persistent", dict(BM=128, BN=128, BK=32, SUB=1)),
    ("persistent", dict(BM=64, BN=128, warps=4)),
    ("persistent", dict(BM=64, BN=128, warps=4, DL=0, DS=0)),
]


def _problem(name: str, k: int, size: int, dev: str) -> list[dict]:
    """Every variant's error and (on the GPU) median time at C [size, size] = [size, k] @ [k, size]."""
    torch.manual_seed(0)
    a = torch.rand(size, k, device=dev)
    b = torch.rand(k, size, device=dev)
    bt = b.t().contiguous()
    ref = (a.double() @ b.double()).float()
    c = torch.empty(size, size, device=dev)
    rows = []
    if dev == "cuda":
        from triton.testing import do_bench
        rows.append(dict(problem=name, variant="eager torch.mm", ms=do_bench(lambda: torch.mm(a, b))))
        rows.append(dict(problem=name, variant="c.fill_ (write floor)", ms=do_bench(lambda: c.fill_(1.0))))
    for which, base in VARIANTS:
        cfg = dict(base, BK=min(base.get("BK", k), k))
        row = dict(problem=name, variant=f"{which} {cfg}")
        try:
            c.zero_()
            run(which, a, bt, c, cfg)
            row["max_rel_err"] = ((c - ref).abs() / ref.abs().clamp_min(1e-6)).max().item()
            if dev == "cuda":
                row["ms"] = do_bench(lambda w=which, g=cfg: run(w, a, bt, c, g))
        except Exception as e:  # noqa: BLE001 -- a variant that does not build is a result
            row["error"] = repr(e)[:300]
        rows.append(row)
        print(row, flush=True)
    return rows


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = False
    size = 32768 if dev == "cuda" else 256
    rows = []
    for name, k in (("7_Matmul_with_small_K_dimension_", 64), ("9_Tall_skinny", 32)):
        rows += _problem(name, k, size, dev)
        if dev == "cuda":
            torch.cuda.empty_cache()
    with open(os.path.join(out, "mm_tma.json"), "w") as f:
        json.dump(dict(device=torch.cuda.get_device_name(0) if dev == "cuda" else "cpu",
                       torch=torch.__version__, triton=triton.__version__,
                       when=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), rows=rows),
                  f, indent=1)


if __name__ == "__main__":
    main()
