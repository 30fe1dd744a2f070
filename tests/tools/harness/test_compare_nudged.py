"""The float64 truth's slack when the fp32 reference lands near the truth by chance: an output
that cancels (KL divergence on inputs shifted by 4 is 1e-5 of its terms) is as inexact in any
fp32 kernel as in the reference, but the reference's own error, one sample, can be small. The
reference on inputs moved by one rounding is a second sample, and the slack takes the larger."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from kernelevolve.tools.harness.compare import COMPARE_CHUNK, compare_outputs, farther
from kernelevolve.tools.harness.worker import Evaluation, Verdict


def _kl_shifted(t: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    return (torch.xlogy(t, t) - t * torch.log(p)).sum() / t.shape[0]


def test_a_cancelling_output_is_judged_against_what_fp32_rounding_does_to_it():
    gen = torch.Generator().manual_seed(0)
    t = torch.rand(24, 96, generator=gen).softmax(-1) + 4
    p = torch.rand(24, 96, generator=gen).softmax(-1) + 4
    truth = _kl_shifted(t.double(), p.double())
    eps = torch.finfo(torch.float32).eps / 2
    moved_t = t * (1 + (2 * torch.rand(t.shape, generator=gen) - 1) * eps)
    moved_p = p * (1 + (2 * torch.rand(p.shape, generator=gen) - 1) * eps)
    nudged = _kl_shifted(moved_t, moved_p)
    rounding = abs(float(nudged.double() - truth))
    assert rounding > 1e-3 * abs(float(truth))  # fp32 cannot hold this output to 1e-4

    lucky = truth.float()  # a reference that landed on the truth
    honest = (truth + 2 * rounding).float()  # a kernel off by twice what one rounding does
    errors, problem = compare_outputs(lucky, honest, truth=truth)
    assert problem is not None  # the reference's own error gives no slack
    errors, problem = compare_outputs(lucky, honest, truth=truth, nudged=nudged)
    assert problem is None, problem
    wrong = (truth + 20 * rounding).float()  # beyond 8x any rounding: still refused
    errors, problem = compare_outputs(lucky, wrong, truth=truth, nudged=nudged)
    assert problem is not None and "outside" in problem
    assert errors[0].max_abs_error > 0


def test_a_nudged_output_of_another_shape_is_ignored():
    truth = torch.tensor([1.0], dtype=torch.float64)
    ref, cand = torch.tensor([1.0]), torch.tensor([1.1])
    _, problem = compare_outputs(ref, cand, truth=truth, nudged=torch.tensor([5.0, 5.0]))
    assert problem is not None


def _sharp_case():
    """An output whose first nudged sample landed on the truth by chance: the kernel is off by
    what rounding does there, which only the second sample shows."""
    truth = torch.tensor([3.0, 9.25, -1.5], dtype=torch.float64)
    rounding = 4e-3  # what one rounding of the inputs moves the middle element by
    lucky = truth.float()
    first = truth.float()  # the first nudge moved nothing much
    second = (truth + torch.tensor([0.0, rounding, 0.0], dtype=torch.float64)).float()
    return truth, rounding, lucky, first, second


def test_two_nudged_samples_take_the_farther_per_element():
    truth, rounding, lucky, first, second = _sharp_case()
    merged = farther(truth, first.clone(), second)
    assert torch.equal(merged[0], second)  # the middle element from the second sample
    merged = farther(truth, second.clone(), first)  # the order does not matter
    assert torch.equal(merged[0], second)
    into = first.clone()
    assert farther(truth, into, second)[0] is into  # merged in place: no copy of the output
    honest = (truth + torch.tensor([0.0, 2 * rounding, 0.0], dtype=torch.float64)).float()
    _, problem = compare_outputs(lucky, honest, truth=truth, nudged=first)
    assert problem is not None and "outside" in problem
    _, problem = compare_outputs(lucky, honest, truth=truth,
                                 nudged=farther(truth, first.clone(), second))
    assert problem is None, problem
    wrong = (truth + torch.tensor([0.0, 20 * rounding, 0.0], dtype=torch.float64)).float()
    _, problem = compare_outputs(lucky, wrong, truth=truth,
                                 nudged=farther(truth, first.clone(), second))
    assert problem is not None and "outside" in problem
    # leaves that do not match (another shape, an integer) are the first sample's
    odd = farther([truth, 1], [first, 1], [torch.zeros(5), 2])
    assert torch.equal(odd[0], first) and odd[1] == 1
    # in chunks: an output longer than one chunk is merged in each
    big_truth = torch.zeros(2 * COMPARE_CHUNK + 5, dtype=torch.float64)
    near, far = torch.zeros(big_truth.shape), torch.zeros(big_truth.shape)
    far[[0, COMPARE_CHUNK + 1, -1]] = 1e-3
    merged = farther(big_truth, near, far)[0]
    assert float(merged.sum()) == float(far.sum()) and merged[-1] == far[-1]


def test_the_judge_draws_a_second_sample_only_where_the_first_refuses():
    truth, rounding, lucky, first, second = _sharp_case()
    judge = SimpleNamespace(cfg={}, errors={}, contract_ops=list)
    draws: list[int] = []

    def nudged(draw: int = 0):
        draws.append(draw)
        return second if draw else first

    honest = (truth + torch.tensor([0.0, 2 * rounding, 0.0], dtype=torch.float64)).float()
    Evaluation.compare(judge, lucky, honest, "sharp", truth=lambda: truth, nudged=nudged)
    assert draws == [0, 1]
    draws.clear()
    Evaluation.compare(judge, lucky, truth.float(), "exact", truth=lambda: truth, nudged=nudged)
    assert draws == []  # it matched before any allowance was asked for
    wrong = (truth + torch.tensor([0.0, 20 * rounding, 0.0], dtype=torch.float64)).float()
    with pytest.raises(Verdict, match="sharp: output 0: 1 of 3 values outside"):
        Evaluation.compare(judge, lucky, wrong, "sharp", truth=lambda: truth, nudged=nudged)
    assert draws == [0, 1]
