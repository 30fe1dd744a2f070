"""The judge's one-pass Triton comparison (compare_gpu) gives the figures of the torch path
(compare._errors_by_chunks, compare.output_scale), run here in Triton's interpreter."""

from __future__ import annotations

import math

import pytest
import torch

from kernelevolve.tools.harness import compare, compare_gpu


def _pair(dtype: torch.dtype, n: int = 5000) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(7)
    e = torch.randn(n, generator=gen)
    a = e + 1e-4 * torch.randn(n, generator=gen)
    a[17] += 1.0  # one clearly wrong
    e[100], a[100] = float("nan"), float("nan")  # matching NaN: fine
    e[200], a[200] = float("inf"), float("inf")  # matching Inf: fine
    e[300], a[300] = 1.0, float("nan")  # NaN where the reference has a value: wrong
    e[400], a[400] = float("-inf"), float("inf")  # opposite infinities: wrong
    return e.to(dtype), a.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("programs", [compare_gpu.MAX_PROGRAMS, 2])
def test_one_pass_figures_match_the_torch_path(dtype, programs, monkeypatch):
    monkeypatch.setattr(compare_gpu, "MAX_PROGRAMS", programs)  # 2: several blocks a program
    e, a = _pair(dtype)
    atol = rtol = 1e-3 if dtype == torch.float32 else 3e-2  # bf16 rounds e and a apart
    got = compare_gpu.errors(e, a, atol, rtol)
    want = compare._errors_by_chunks(e, a, atol, rtol)
    assert got[:2] == want[:2]
    assert got[0] == 3 and got[1] == 2  # the wrong value, the NaN, the opposite infinities
    assert math.isclose(got[2], want[2], rel_tol=1e-6)
    assert math.isclose(got[3], want[3], rel_tol=1e-5)
    assert math.isclose(compare_gpu.mean_magnitude(e), compare.output_scale(e), rel_tol=1e-5)


def test_all_within_tolerance_and_no_finite_values():
    e = torch.linspace(-2, 2, 3000)
    assert compare_gpu.errors(e, e.clone(), 1e-6, 0.0) == (0, 0, 0.0, 0.0)
    nan = torch.full((100,), float("nan"))
    assert compare_gpu.mean_magnitude(nan) == compare.output_scale(nan) == 0.0
