"""Whether the interpreter's TF32 emulation (``tools/harness/interpreter.py``) computes what this
GPU computes for ``tl.dot`` of fp32 operands at "tf32" (the default), "tf32x3" and "ieee".

Two kinds of evidence, each against the compiled kernel on the GPU:

- bits: ``x @ I + 0`` is exact in any summation order, so the GPU's result shows exactly how it
  read ``x`` (tf32: truncated; tf32x3: a rounded high part plus its truncated remainder); the
  emulation must give the same bits;
- error: on random 64x64x64 products with an accumulator, the emulation's distance from the GPU
  (summation order only, ~1e-7 of the output) against full fp32's distance from it (~1e-3 at
  tf32), and an infinity in an operand (tf32x3 keeps it, its remainder's inf - inf masked).

    python benchmarks/experiments/tf32_interpreter_gpu.py --out /tmp/tf32emu

Experiment of 2026-12-07 (issue #47, item 4); fed docs/harness.md's account of the
interpreter's TF32 products (no note of its own).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
import triton
import triton.language as tl

from kernelevolve.tools.harness.interpreter import tf32_dot


@triton.jit
def dot_kernel(x_ptr, y_ptr, acc_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr,
               K: tl.constexpr, PREC: tl.constexpr):
    m = tl.arange(0, M)
    n = tl.arange(0, N)
    k = tl.arange(0, K)
    x = tl.load(x_ptr + m[:, None] * K + k[None, :])
    y = tl.load(y_ptr + k[:, None] * N + n[None, :])
    acc = tl.load(acc_ptr + m[:, None] * N + n[None, :])
    out = tl.dot(x, y, acc) if PREC == "default" else tl.dot(x, y, acc, input_precision=PREC)
    tl.store(out_ptr + m[:, None] * N + n[None, :], out)


def gpu_dot(x: torch.Tensor, y: torch.Tensor, acc: torch.Tensor, prec: str) -> torch.Tensor:
    m, k = x.shape
    n = y.shape[1]
    out = torch.empty(m, n, device="cuda")
    dot_kernel[(1,)](x.cuda(), y.cuda(), acc.cuda(), out, M=m, N=n, K=k, PREC=prec)
    return out.cpu()


def emulated(x: torch.Tensor, y: torch.Tensor, acc: torch.Tensor, prec: str) -> torch.Tensor:
    mode = {"default": "TF32", "tf32": "TF32", "tf32x3": "TF32X3"}.get(prec)
    if mode is None:  # ieee: the interpreter's own fp32 product
        return x @ y + acc
    return torch.from_numpy(tf32_dot(x.numpy(), y.numpy(), acc.numpy(), mode))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    torch.manual_seed(0)
    result: dict[str, object] = {"device": torch.cuda.get_device_name(0),
                                 "triton": triton.__version__, "torch": torch.__version__}
    # bits: every low mantissa bit pattern, ties included (low 13 bits exactly 0x1000)
    x = torch.randn(64, 64)
    bits = x.view(torch.int32)
    bits[0] = (bits[0] & -8192) | 0x1000
    eye, zero = torch.eye(64), torch.zeros(64, 64)
    for prec in ("default", "tf32", "tf32x3", "ieee"):
        g, e = gpu_dot(x, eye, zero, prec), emulated(x, eye, zero, prec)
        result[f"bits_{prec}_equal"] = bool(torch.equal(g, e))
        result[f"bits_{prec}_differing"] = int((g != e).sum())
    # error on random products with an accumulator
    x, y, acc = torch.randn(64, 64), torch.randn(64, 64), torch.randn(64, 64)
    exact = x.double() @ y.double() + acc.double()
    scale = float(exact.abs().max())
    fp32 = x @ y + acc
    for prec in ("default", "tf32", "tf32x3", "ieee"):
        g, e = gpu_dot(x, y, acc, prec), emulated(x, y, acc, prec)
        result[f"err_{prec}"] = {
            "gpu_vs_emulated": float((g - e).abs().max()) / scale,
            "gpu_vs_fp32": float((g - fp32).abs().max()) / scale,
            "gpu_vs_exact": float((g.double() - exact).abs().max()) / scale,
            "emulated_vs_exact": float((e.double() - exact).abs().max()) / scale,
        }
    # an infinity in an operand
    x[3, 5] = float("inf")
    for prec in ("tf32", "tf32x3"):
        g, e = gpu_dot(x, y, acc, prec), emulated(x, y, acc, prec)
        same = (g == e) | (g.isnan() & e.isnan()) | ((g - e).abs() <= 1e-4 * scale)
        result[f"inf_{prec}"] = {"gpu_nan": int(g.isnan().sum()), "emulated_nan": int(e.isnan().sum()),
                                 "gpu_inf": int(g.isinf().sum()), "emulated_inf": int(e.isinf().sum()),
                                 "all_agree": bool(same.all())}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "tf32_interpreter.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
