"""Simulating a sample of a large grid, measured against simulating every program.

Bounds (documented in MODEL.md): kernels whose programs differ only at the grid's edges (tails,
partial tiles) are extrapolated exactly; smoothly varying work (here linear in the program id)
within 2% at 16 and 64 samples; work that jumps with a short period between neighbouring programs
is the worst case, within 25% on the busiest PE at 8-64 samples.
"""

from __future__ import annotations

import mtia_kernels as K
import numpy as np
import torch

from kernelevolve.tools.mtia import simulate_forward
from kernelevolve.tools.mtia.sampling import plan_samples

FIELDS = ("time_s", "pe_time_s", "bytes_loaded", "bytes_stored", "flops", "sram_bytes")


def _errors(fn, budgets):
    """Relative error of each field, worst over ``budgets``, against the full simulation."""
    full = simulate_forward(fn, max_programs_per_launch=10**9, max_sample_seconds=None).launches[-1]
    worst: dict[str, float] = {}
    for budget in budgets:
        part = simulate_forward(fn, max_programs_per_launch=budget, max_sample_seconds=None).launches[-1]
        assert part.programs_simulated <= budget < full.programs == full.programs_simulated
        for f in FIELDS:
            if getattr(full, f):
                err = abs(getattr(part, f) - getattr(full, f)) / getattr(full, f)
                worst[f] = max(worst.get(f, 0.0), err)
    return worst


def test_plan_keeps_first_last_and_edges():
    plan = plan_samples((10, 7, 1), 16)
    sampled = plan.sampled()
    assert len(sampled) <= 16
    assert {(0, 0, 0), (9, 0, 0), (0, 6, 0), (9, 6, 0)} <= sampled
    reps = plan.representatives()
    assert reps.shape == (70,)
    lin = {x + 10 * y for x, y, _ in sampled}
    assert set(reps.tolist()) <= lin and reps[9] == 9 and reps[69] == 69
    assert np.array_equal(plan_samples((5, 1, 1), 64).representatives(), np.arange(5))


def test_random_plan_can_pick_any_program():
    """With the judge's rng the interior programs are drawn within their strata: every program
    is simulated by some draws (a kernel wrong in program 1 only, which the fixed design never
    picks, is found; red team 47, c4g), while each plan keeps the edges, the budget and a valid
    representative for every program."""
    fixed = plan_samples((2048, 1, 1), 64).sampled()
    assert (1, 0, 0) not in fixed
    rng = np.random.default_rng(0)
    seen: set[int] = set()
    for _ in range(400):
        plan = plan_samples((2048, 1, 1), 64, rng)
        sampled = plan.sampled()
        assert len(sampled) <= 64 and {(0, 0, 0), (2047, 0, 0)} <= sampled
        lin = {x for x, _, _ in sampled}
        reps = plan.representatives()
        assert reps.shape == (2048,) and set(reps.tolist()) <= lin
        seen |= lin
    assert 1 in seen and len(seen) > 0.9 * 2048
    assert plan_samples((10, 7, 1), 16, rng).sampled() >= {(0, 0, 0), (9, 6, 0)}


def test_edge_only_variation_is_exact():
    torch.manual_seed(0)
    x, y = torch.randn(40 * 256 + 37), torch.randn(40 * 256 + 37)
    assert max(_errors(lambda: K.add(x, y, 256), [8]).values()) < 1e-9
    a, b = torch.randn(200, 200), torch.randn(200, 200)  # 7x7 tiles, partial last row/column
    assert max(_errors(lambda: K.matmul(a, b, 32, 32, 32), [9]).values()) < 1e-9


def test_smooth_variation_within_two_percent():
    x = torch.randn(32 * 256)
    errors = _errors(lambda: K.ragged_sum(x, 128, 4, 32), [16, 64])  # program p sums p//4 + 1 blocks
    assert max(errors.values()) < 0.02, errors


def test_jagged_variation_within_25_percent():
    x = torch.randn(8 * 256)
    errors = _errors(lambda: K.ragged_sum(x, 192, 1, 5), [8, 32, 64])  # p sums p % 5 + 1 blocks
    assert max(errors.values()) < 0.25, errors
