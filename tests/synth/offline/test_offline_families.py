"""The whole-operator templates (families.py, fullreduce.py, the triangular matmul epilogue):
one unmodified KernelBench file per family is analysed, rendered at its defaults and verified
by the real harness on the cpu target. The harness shrinks the sizes further than its default
(``cpu_max_elements``) so the interpreter stays quick; the checks are the same."""

from __future__ import annotations

import pytest

from kernelevolve.config import EvalConfig
from kernelevolve.problem import load_problem
from kernelevolve.synth.offline import OPERATOR_CLASSES, analyze
from kernelevolve.tools.harness.pool import WorkerPool
from kernelevolve.tools.harness.static import check_source

# One file per family: operator class and words its description must hold.
CASES = {
    "67_conv_standard_1D": ("convolution", "conv1d"),
    "64_conv_transposed_1D": ("convolution", "conv_transpose1d"),
    "79_conv_transposed_1D_asymmetric_input_square_kernel___padded____strided____dilated__": (
        "convolution", "conv_transpose1d"),
    "82_conv_depthwise_2D_square_input_square_kernel": ("convolution", "conv2d"),
    "86_conv_depthwise_separable_2D": ("convolution", "conv2d then conv2d"),
    "41_Max_Pooling_1D": ("pooling", "max pooling 1-d"),
    "46_Average_Pooling_3D": ("pooling", "average pooling 3-d"),
    "33_BatchNorm": ("normalization", "batch norm"),
    "35_GroupNorm_": ("normalization", "group norm"),
    "92_cumsum_exclusive": ("scan", "exclusive cumsum"),
    "93_masked_cumsum": ("scan", "masked cumsum"),
    "52_Argmin_over_a_dimension": ("argreduce", "argmin"),
    "96_HuberLoss": ("full_reduction", "full sum"),
    "37_FrobeniusNorm_": ("full_reduction", "full sum"),
    "95_CrossEntropyLoss": ("loss", "cross-entropy"),
    "99_TripletMarginLoss": ("loss", "triplet margin"),
    "14_Matmul_for_upper_triangular_matrices": ("matmul", ""),
}
# The subset verified by the harness (the rest share their kernels): about 10 s each.
VERIFIED = ["67_conv_standard_1D",
            "79_conv_transposed_1D_asymmetric_input_square_kernel___padded____strided____dilated__",
            "86_conv_depthwise_separable_2D", "41_Max_Pooling_1D", "46_Average_Pooling_3D",
            "35_GroupNorm_", "92_cumsum_exclusive", "52_Argmin_over_a_dimension",
            "96_HuberLoss", "95_CrossEntropyLoss", "14_Matmul_for_upper_triangular_matrices"]


@pytest.fixture(scope="module")
def small_pool():
    with WorkerPool("cpu", EvalConfig(n_input_sets=1, cpu_max_elements=1 << 13),
                    workers=1) as pool:
        yield pool


@pytest.mark.parametrize("name", sorted(CASES))
def test_family_is_analysed(kernelbench, name):
    problem = load_problem(kernelbench / "level1" / f"{name}.py")
    plan = analyze(problem)
    cls, words = CASES[name]
    assert plan.operator_class == cls and cls in OPERATOR_CLASSES
    assert words in plan.description
    source = plan.render(plan.default_params())
    assert check_source(source, problem.allowed_ops) == []


@pytest.mark.parametrize("name", VERIFIED)
def test_family_candidate_is_verified(kernelbench, small_pool, name):
    problem = load_problem(kernelbench / "level1" / f"{name}.py")
    plan = analyze(problem)
    result = small_pool.evaluate(problem, plan.render(plan.default_params()))
    assert result.ok, f"{name}: {result.status}: {result.message}\n{result.stderr_tail[-2000:]}"


def test_convolution_hyper_parameters_come_from_the_module(kernelbench):
    problem = load_problem(kernelbench / "level1" / "80_conv_standard_2D_square_input_"
                                                    "asymmetric_kernel___dilated____padded__.py")
    source = analyze(problem).render(analyze(problem).default_params())
    assert "self.conv2d.stride" in source and "self.conv2d.dilation" in source


def test_a_scan_of_a_computed_tensor_is_left_to_the_lowering(tmp_path):
    path = tmp_path / "cumsum_exp.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        "    def forward(self, x):\n        return torch.cumsum(torch.exp(x), dim=1)\n\n\n"
        "def get_inputs():\n    return [torch.randn(16, 32)]\n\n\n"
        "def get_init_inputs():\n    return []\n")
    from kernelevolve.synth.offline import Unsupported
    from kernelevolve.synth.offline.analyze import analyze_single

    with pytest.raises(Unsupported, match="scan of a computed tensor"):
        analyze_single(load_problem(path))
    # the program split writes it as two parts: the exponentials, then the scan
    plan = analyze(load_problem(path))
    assert [p.plan.operator_class for p in plan.template.parts] == ["elementwise", "scan"]
