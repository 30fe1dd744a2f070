"""Which bits of an fp32 operand a TF32 tensor-core product reads, on this GPU.

Split once (``synth/offline/families/matmul.py``, ``TF32X3=2``) writes each operand's TF32 high part and
its remainder before the GEMM. If the tensor cores read only the top 10 mantissa bits of an
fp32 operand (truncating the other 13), the high part need not be written at all: the GEMM can
read the operand itself, with the remainder taken against its truncation, and the split pass
moves half the bytes. This script tells: ``tl.dot(x, y, input_precision="tf32")`` of raw fp32
tiles against the same product of the tiles truncated and rounded to TF32 first, bit for bit.

    python benchmarks/experiments/tf32_operand_bits_gpu.py --out /tmp/tf32bits

Experiment of 2026-12-02; fed docs/notes/2026-12-02-conv-split-once.md
(benchmarks/results/tf32_operand_bits_h200.json).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
import triton
import triton.language as tl


@triton.jit
def dot_kernel(x_ptr, y_ptr, out_ptr, K: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    m = tl.arange(0, M)
    n = tl.arange(0, N)
    k = tl.arange(0, K)
    x = tl.load(x_ptr + m[:, None] * K + k[None, :])
    y = tl.load(y_ptr + k[:, None] * N + n[None, :])
    tl.store(out_ptr + m[:, None] * N + n[None, :], tl.dot(x, y, input_precision="tf32"))


def tf32(t: torch.Tensor, mode: str) -> torch.Tensor:
    """``t`` with its low 13 mantissa bits cleared (``trunc``) or rounded to nearest (``round``)."""
    bits = t.view(torch.int32)
    if mode == "round":
        bits = bits + 0xFFF + ((bits >> 13) & 1)
    return (bits & -8192).view(torch.float32)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    torch.manual_seed(0)
    m, n, k = 64, 64, 64
    x = torch.randn(m, k, device="cuda")
    y = torch.randn(k, n, device="cuda")

    def dot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.empty(m, n, device="cuda")
        dot_kernel[(1,)](a, b, out, K=k, M=m, N=n)
        return out

    raw = dot(x, y)
    result = {"device": torch.cuda.get_device_name(0), "triton": triton.__version__,
              "torch": torch.__version__}
    for mode in ("trunc", "round"):
        ref = dot(tf32(x, mode), tf32(y, mode))
        result[f"raw_equals_{mode}"] = bool(torch.equal(raw, ref))
        result[f"max_diff_vs_{mode}"] = float((raw - ref).abs().max())
    # The split's remainder against a truncated high part: x = x_raw (read as trunc) + lo
    lo_x, lo_y = x - tf32(x, "trunc"), y - tf32(y, "trunc")
    three = dot(x, y) + dot(x, lo_y) + dot(lo_x, y)
    exact = (x.double() @ y.double())
    result["trunc_split_max_rel"] = float(((three.double() - exact).abs()
                                           / exact.abs().clamp_min(1e-3)).max())
    result["fp32_max_rel"] = float((((x @ y).double() - exact).abs()
                                    / exact.abs().clamp_min(1e-3)).max())
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "tf32_operand_bits.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
