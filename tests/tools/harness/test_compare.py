from __future__ import annotations

import pytest
import torch

from kernelevolve.tools.harness import compare
from kernelevolve.tools.harness.compare import (
    bitwise_equal,
    compare_outputs,
    modified_inputs,
    tolerance,
)


def test_fp32_tolerance_is_tight_and_loosening_is_guarded():
    assert tolerance(torch.float32) == (1e-4, 1e-4)
    assert tolerance(torch.float32, atol=1e-3) == (1e-3, 1e-4)
    with pytest.raises(ValueError, match="looser than 0.001"):
        tolerance(torch.float32, atol=1e-2)
    assert tolerance(torch.float32, atol=1e-2, allow_loose_fp32=True)[0] == 1e-2
    assert tolerance(torch.bfloat16) == (2e-2, 2e-2)
    assert tolerance(torch.int64) == (0.0, 0.0)


def test_within_tolerance_passes_and_reports_error():
    ref = torch.linspace(-1, 1, 100)
    errors, problem = compare_outputs(ref, ref + 5e-5)
    assert problem is None
    assert errors[0].max_abs_error == pytest.approx(5e-5, rel=1e-3)


def test_outside_tolerance_names_the_first_bad_element():
    ref = torch.zeros(4, 4)
    out = ref.clone()
    out[2, 3] = 0.5
    errors, problem = compare_outputs(ref, out)
    assert problem is not None and "[2, 3]" in problem and "1 of 16" in problem
    assert errors[0].mismatched == 1


def test_nan_never_passes_unless_the_reference_has_it():
    ref = torch.ones(8)
    out = ref.clone()
    out[0] = float("nan")
    _, problem = compare_outputs(ref, out)
    assert problem is not None and "NaN/Inf" in problem
    ref_nan = ref.clone()
    ref_nan[0] = float("nan")
    assert compare_outputs(ref_nan, out)[1] is None
    inf = ref.clone()
    inf[1] = float("inf")
    assert compare_outputs(ref, inf)[1] is not None


def test_structure_dtype_and_shape_must_match():
    x = torch.ones(3)
    assert "dtype" in compare_outputs(x, x.double())[1]
    assert "shape" in compare_outputs(x, torch.ones(4))[1]
    assert "is a tuple, the reference returns a Tensor" in compare_outputs(x, (x, x))[1]
    assert "has 1 items, the reference 2" in compare_outputs((x, x), (x,))[1]


def test_integers_are_exact():
    ref = torch.arange(10)
    out = ref.clone()
    out[3] += 1
    assert compare_outputs(ref, out)[1] == "output 0: 1 of 10 values differ"


def test_modified_inputs_and_bitwise_equal():
    a = torch.randn(5)
    before = [a.clone(), 3]
    assert modified_inputs(before, [a, 3]) == []
    a[0] += 1
    assert modified_inputs(before, [a, 3]) == [0]
    nan = torch.tensor([float("nan"), 1.0])
    assert bitwise_equal(nan, nan.clone())
    assert not bitwise_equal(nan, torch.tensor([float("nan"), 1.0000001]))


def test_chunked_comparison_finds_the_first_bad_element_across_chunks(monkeypatch):
    import kernelevolve.tools.harness.compare as compare

    monkeypatch.setattr(compare, "COMPARE_CHUNK", 7)
    ref = torch.zeros(5, 6)
    out = ref.clone()
    out[3, 2] = 1.0  # flat index 20: the third chunk
    out[4, 5] = 2.0
    errors, problem = compare.compare_outputs(ref, out)
    assert "2 of 30" in problem and "first at [3, 2]" in problem
    assert errors[0].max_abs_error == 2.0 and errors[0].mismatched == 2
    nan = ref.clone()
    nan[4, 1] = float("nan")
    assert "NaN/Inf" in compare.compare_outputs(ref, nan)[1]
    assert compare.compare_outputs(ref, ref.clone())[1] is None


def test_tf32_round_keeps_ten_mantissa_bits_to_nearest_even() -> None:
    """The judge's TF32-class allowance (Evaluation.reference_tf32_class) rounds operands as the
    tensor cores take them: 10 mantissa bits, to nearest, ties to even, either sign; NaN,
    infinities and other dtypes untouched."""
    ulp = 2.0 ** -10
    x = torch.tensor([1.0, 1 + ulp / 2, 1 + 3 * ulp / 2, 1 + ulp + ulp / 4, -(1 + 3 * ulp / 2),
                      float("inf"), float("-inf"), 0.0, 3.4e38])
    got = compare.tf32_round(x)
    assert got[:5].tolist() == [1.0, 1.0, 1 + 2 * ulp, 1 + ulp, -(1 + 2 * ulp)]
    assert got[5:8].tolist() == [float("inf"), float("-inf"), 0.0]
    assert torch.isnan(compare.tf32_round(torch.tensor([float("nan")]))).all()
    y = torch.randn(10_000, generator=torch.Generator().manual_seed(0))
    r = compare.tf32_round(y)
    assert (r.view(torch.int32) & 0x1FFF).eq(0).all()
    assert float(((r - y).abs() / y.abs()).max()) <= 2.0 ** -11
    assert compare.tf32_round(y.double()).equal(y.double())
