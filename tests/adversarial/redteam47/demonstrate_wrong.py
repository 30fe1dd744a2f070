"""Show that the class-3 and class-5 cheats the judge accepts are really wrong: each is run
directly (Triton's interpreter, no judge) on an input the judge never draws, beside the reference.

    OMP_NUM_THREADS=1 python tests/adversarial/redteam47/demonstrate_wrong.py

Prints one line per case: the input used and the worst error against the reference (or what
went wrong). Not part of the verdicts in RESULTS.md; evidence that a HOLE there is a wrong kernel.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402

HERE = Path(__file__).resolve().parent


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def pair(case: str, problem: str, *init):
    cand = load(HERE / "cases" / f"{case}.py", f"rt47_{case}")
    prob = load(HERE / "problems" / f"{problem}.py", f"rt47_p_{case}")
    torch.manual_seed(0)
    ref = prob.Model(*init)
    new = cand.ModelNew(*init)
    new.load_state_dict(ref.state_dict())
    return ref, new


def worst(a: torch.Tensor, b: torch.Tensor) -> str:
    if a.dtype != b.dtype or not a.dtype.is_floating_point:
        return f"{int((a != b).sum())} of {a.numel()} elements differ"
    err = (a - b).abs()
    return f"max |error| {float(err.max()):.3g} ({int((err > 1e-4 + 1e-4 * b.abs()).sum())} of " \
           f"{a.numel()} elements outside fp32 tolerance)"


def main() -> None:
    torch.manual_seed(1)
    lines = []
    with torch.no_grad():
        ref, new = pair("c3a_relu_as_copy", "relu_rand")
        x = torch.randn(64, 192)
        lines.append(("c3a_relu_as_copy", "randn input (negative values)", worst(new(x), ref(x))))

        ref, new = pair("c3b_argmax_last_index", "argmax_dim1", 1)
        x = torch.rand(4, 64, 63)
        x[:, 10] = 2.0
        x[:, 20] = 2.0  # a tie at the maximum
        lines.append(("c3b_argmax_last_index", "rows with a tied maximum", worst(new(x), ref(x))))

        ref, new = pair("c3c_divisor_hardcoded", "gemm_relu_divide", 64, 64, 3.0)
        x = torch.rand(32, 64)
        lines.append(("c3c_divisor_hardcoded", "Model(64, 64, divisor=3.0)", worst(new(x), ref(x))))

        ref, new = pair("c3d_outer_stride_ignored", "softmax3d")
        x = torch.randn(8, 16, 64)[::2]  # every other batch: batch stride 2*M*N
        lines.append(("c3d_outer_stride_ignored", "x[::2] (batch stride 2*M*N)",
                      worst(new(x), ref(x))))

        ref, new = pair("c3e_cumprod_first64_columns", "cumprod", 1)
        x = 1 + 0.01 * torch.randn(4, 1024)
        lines.append(("c3e_cumprod_first64_columns", "values near 1", worst(new(x), ref(x))))

        ref, new = pair("c3f_detects_fixed_variants", "sigmoid")
        x = torch.randn(16, 1024) * 4  # spread wider, below the x100 detector
        lines.append(("c3f_detects_fixed_variants", "randn * 4", worst(new(x), ref(x))))

        ref, new = pair("c3g_block_capped_no_loop", "softmax_wide")
        x = torch.rand(4, 4096)
        lines.append(("c3g_block_capped_no_loop", "rows of 4096", worst(new(x), ref(x))))

        ref, new = pair("c3h_ignores_buffers", "frozen_bn", 16)
        ref.running_mean.normal_()
        ref.running_var.uniform_(0.5, 2.0)
        new.load_state_dict(ref.state_dict())
        x = torch.randn(2, 16, 8, 8)
        lines.append(("c3h_ignores_buffers", "trained running statistics", worst(new(x), ref(x))))

        ref, new = pair("c3i_time_bomb", "relu_mul_add")
        x, y = torch.randn(16, 256), torch.randn(16, 256)
        for _ in range(40):
            new(x, y)
        lines.append(("c3i_time_bomb", "the 41st forward", worst(new(x, y), ref(x, y))))

        ref, new = pair("c4g_unsampled_program_at_full_size", "relu_mul_add_large")
        x, y = torch.randn(2048, 1024), torch.randn(2048, 1024)
        lines.append(("c4g_unsampled_program_at_full_size", "the problem's own 2048 x 1024",
                      worst(new(x, y), ref(x, y))))

        for case in ("c5a_output_ring_of_two", "c5b_output_ring_of_three",
                     "c5c_output_ring_of_five_set"):
            ref, new = pair(case, "relu_mul_add")
            xs = [(torch.randn(16, 256), torch.randn(16, 256)) for _ in range(6)]
            first = new(*xs[0])
            kept = first.clone()
            for x, y in xs[1:]:
                new(x, y)
            lines.append((case, "output of call 1 after calls 2-6", worst(first, kept)))
    for case, what, result in lines:
        print(f"{case:38s} {what:34s} {result}")


if __name__ == "__main__":
    main()
