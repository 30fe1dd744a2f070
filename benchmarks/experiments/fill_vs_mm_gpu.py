"""What writing KernelBench 9's output costs on its own: a ``fill_`` of a [32768, 32768] fp32
tensor (4.3 GB written) beside eager ``torch.mm`` of [32768, 32] @ [32, 32768], do_bench
medians on the current GPU. Run on the device:
``python benchmarks/experiments/fill_vs_mm_gpu.py``.

Experiment of 2026-12-03; fed docs/notes/2026-12-03-matmul-padded-k-and-second-nudge.md
(the ``fill_`` figure) and benchmarks/results/offline_variants_h200/matmul_one_k_step.md.
"""

from __future__ import annotations

import torch
from triton.testing import do_bench


def main() -> None:
    torch.backends.cuda.matmul.allow_tf32 = False  # as the harness runs the reference
    out = torch.empty(32768, 32768, device="cuda")
    print("fill_ 4.3 GB:", do_bench(lambda: out.fill_(1.0)), "ms")
    a = torch.rand(32768, 32, device="cuda")
    b = torch.rand(32, 32768, device="cuda")
    print("eager mm:", do_bench(lambda: torch.mm(a, b)), "ms")


if __name__ == "__main__":
    main()
