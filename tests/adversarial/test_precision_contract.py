"""Red team of the precision contract 'baseline' (``eval.precision``, compare.within_baseline).

Under it a candidate passes where its error against the float64 truth is within
``precision_factor`` (3) times the error the timed baseline itself makes on the same inputs.
Here the baseline is what cuDNN does at PyTorch's default flags for an fp32 convolution: its
operands rounded to TF32 (10 mantissa bits) and the products summed in fp32. It is emulated on
the CPU by rounding the operands' bits, so the judge's rule is tested on the tensors it sees on
a GPU. Each candidate below is one way to be as inexact as the baseline and gain something by
it; the verdict it must get is in its name.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from kernelevolve.tools.harness import compare, flags

FACTOR = 3.0


def tf32(x: torch.Tensor, truncate: bool = False) -> torch.Tensor:
    """``x`` (fp32) rounded to TF32: to nearest (cuDNN, cuBLAS), or truncated (tensor cores
    fed raw fp32 bits)."""
    if not truncate:
        return compare.tf32_round(x.contiguous())
    return (x.contiguous().view(torch.int32) & -8192).view(torch.float32)


def bf16(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.bfloat16).to(torch.float32)


@pytest.fixture(scope="module")
def conv() -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(4, 32, 24, 24, generator=gen)
    w = (torch.rand(48, 32, 3, 3, generator=gen) * 2 - 1) / (32 * 9) ** 0.5
    b = (torch.rand(48, generator=gen) * 2 - 1) / (32 * 9) ** 0.5
    truth = F.conv2d(x.double(), w.double(), b.double(), padding=1)
    return {"x": x, "w": w, "b": b, "truth": truth,
            "expected": F.conv2d(x, w, b, padding=1),
            "baseline": F.conv2d(tf32(x), tf32(w), b, padding=1)}


def verdict(conv: dict[str, torch.Tensor], actual: torch.Tensor) -> tuple[bool, str]:
    return compare.within_baseline(conv["expected"], actual, conv["truth"], conv["baseline"],
                                   FACTOR)


def test_the_fp32_rule_refuses_a_tf32_convolution(conv):
    """Why the contract exists: the strict rule refuses what cuDNN itself computes."""
    _, problem = compare.compare_outputs(conv["expected"], conv["baseline"])
    assert problem is not None


def test_honest_tf32_rounded_to_nearest_passes(conv):
    ok, detail = verdict(conv, F.conv2d(tf32(conv["x"]), tf32(conv["w"]), conv["b"], padding=1))
    assert ok, detail
    assert "rms" in detail


def test_honest_tf32_truncated_passes(conv):
    """Tensor cores fed raw fp32 bits truncate them: about 2.6x the rounded error, inside 3x."""
    actual = F.conv2d(tf32(conv["x"], True), tf32(conv["w"], True), conv["b"], padding=1)
    ok, detail = verdict(conv, actual)
    assert ok, detail


def test_bf16_products_are_refused(conv):
    """bf16 keeps 7 mantissa bits to TF32's 10: about 8x the error."""
    ok, detail = verdict(conv, F.conv2d(bf16(conv["x"]), bf16(conv["w"]), conv["b"], padding=1))
    assert not ok
    assert "allowed 3x" in detail


def test_skipping_the_bias_is_refused(conv):
    ok, _ = verdict(conv, F.conv2d(tf32(conv["x"]), tf32(conv["w"]), None, padding=1))
    assert not ok


def test_skipping_an_input_channel_is_refused(conv):
    w = tf32(conv["w"]).clone()
    w[:, -1] = 0
    ok, _ = verdict(conv, F.conv2d(tf32(conv["x"]), w, conv["b"], padding=1))
    assert not ok


def test_skipping_the_smallest_weights_is_refused(conv):
    """Dropping the 5% smallest weights (5% fewer products) moves the result by ~1e-2 of its
    scale, far past TF32's ~5e-4: refused. (The bound leaves room for skipping ~1% of a random
    convolution's products, which changes it by less than TF32 does and saves nothing.)"""
    w = tf32(conv["w"])
    w = torch.where(w.abs() < 0.05 * w.abs().max(), 0.0, w)
    ok, _ = verdict(conv, F.conv2d(tf32(conv["x"]), w, conv["b"], padding=1))
    assert not ok


def test_one_wrong_element_is_refused(conv):
    """Right everywhere but one element, off by ten times the baseline's largest error: the
    root-mean-square barely moves, the largest error refuses it."""
    actual = F.conv2d(tf32(conv["x"]), tf32(conv["w"]), conv["b"], padding=1)
    base_max = float((conv["baseline"].double() - conv["truth"]).abs().max())
    actual.view(-1)[12345] += 10 * base_max
    ok, detail = verdict(conv, actual)
    assert not ok
    assert "largest" in detail


def test_a_scaled_result_is_refused(conv):
    ok, _ = verdict(conv, conv["expected"] * (1 + 1e-2))
    assert not ok


def test_a_nan_where_the_reference_is_finite_is_refused(conv):
    actual = F.conv2d(tf32(conv["x"]), tf32(conv["w"]), conv["b"], padding=1)
    actual.view(-1)[7] = float("nan")
    ok, detail = verdict(conv, actual)
    assert not ok
    assert "NaN/Inf" in detail


def test_a_baseline_that_overflows_loosens_nothing(conv):
    """Elements where the baseline is not finite do not count toward its error: a kernel wrong
    there is held to the others' figures (and to the fp32 reference's NaN and infinities)."""
    base = conv["baseline"].clone()
    base.view(-1)[:100] = float("inf")
    actual = F.conv2d(tf32(conv["x"]), tf32(conv["w"]), conv["b"], padding=1)
    actual.view(-1)[50] += 1.0
    ok, _ = compare.within_baseline(conv["expected"], actual, conv["truth"], base, FACTOR)
    assert not ok


def test_integer_outputs_stay_exact():
    e = torch.tensor([1, 2, 3])
    ok, detail = compare.within_baseline(e, torch.tensor([1, 2, 4]), e.double(), e, FACTOR)
    assert not ok and "not floating" in detail
    ok, _ = compare.within_baseline(e, e.clone(), e.double(), e, FACTOR)
    assert ok


def test_the_contract_applies_only_where_the_baseline_is_inexact():
    """At PyTorch's defaults cuDNN's convolutions run in TF32, cuBLAS's products in full fp32:
    a matmul problem keeps the fp32 rule, a convolution gets the baseline's."""
    defaults = flags.resolve("defaults")
    assert flags.inexact_ops(defaults) & {"mm", "addmm", "bmm", "linear"} == set()
    assert "convolution" in flags.inexact_ops(defaults)
    assert flags.inexact_ops(flags.resolve("fp32")) == frozenset()
    high = flags.resolve("defaults", {"float32_matmul_precision": "high"})
    assert {"mm", "addmm", "convolution"} <= flags.inexact_ops(high)
    # nothing of the problem reads the flags that differ: one timing stands for both presets
    assert not flags.differing_ops(defaults, flags.resolve("fp32")) & {"softmax", "mm", "sum"}


def test_flags_are_applied_and_restored():
    torch.backends.cudnn.allow_tf32 = False
    before = torch.get_float32_matmul_precision()
    with flags.applied(flags.resolve("defaults", {"float32_matmul_precision": "high"})):
        assert torch.backends.cudnn.allow_tf32 is True
        assert torch.get_float32_matmul_precision() == "high"
    assert torch.backends.cudnn.allow_tf32 is False
    assert torch.get_float32_matmul_precision() == before


def test_flag_labels_name_the_flags():
    assert flags.label(flags.resolve("defaults")).startswith("PyTorch defaults (cuDNN TF32 on")
    assert flags.label(flags.resolve("fp32")).startswith("fp32 (TF32 off)")
    custom = flags.label(flags.resolve("fp32", {"compile_mode": "max-autotune"}))
    assert "max-autotune" in custom
    with pytest.raises(ValueError, match="unknown baseline"):
        flags.resolve("tf32")
