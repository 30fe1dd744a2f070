"""analyze(): every example problem is classified, or refused with a plain reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelevolve.errors import KernelEvolveError
from kernelevolve.problem import load_problem
from kernelevolve.synth.offline import OPERATOR_CLASSES, KernelPlan, Unsupported, analyze
from kernelevolve.tools.harness.static import check_source

PROBLEMS = Path(__file__).resolve().parents[3] / "examples" / "problems"

# Problem -> operator class, or the words the Unsupported reason must contain.
EXPECTED: dict[str, str | tuple[str, ...]] = {
    "01_gelu_sigmoid_bias": "elementwise",
    "02_swiglu_fp16": "elementwise",
    "03_leaky_relu_scale_clamp": "elementwise",
    "04_row_softmax": "softmax",
    "05_layernorm": "layernorm",
    "06_rmsnorm": "rmsnorm",
    "07_row_mean": "reduction",
    "08_max_middle_dim": "reduction",
    "09_l2_normalize": "l2norm",
    "10_linear_bias_gelu": "matmul",
    "11_matmul_bf16": "matmul",
    "12_conv2d_relu_scale_bias": "library_epilogue",
    "13_attention": "attention",
    "14_feature_hashing": ("'remainder'", "'stack'", "no template covers"),
    "15_bucketize": ("aten op 'bucketize' which no template covers",),
    "16_jagged_to_padded": ("'index'", "no template covers"),
    "17_dot_interaction": ("'triu_indices'", "no template covers"),
}


def test_every_example_has_an_expectation():
    assert {p.stem for p in PROBLEMS.glob("[0-9]*.py")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_classification(name):
    problem = load_problem(PROBLEMS / f"{name}.py")
    expected = EXPECTED[name]
    if isinstance(expected, str):
        plan = analyze(problem)
        assert plan.operator_class == expected
        assert plan.operator_class in OPERATOR_CLASSES
        assert plan.description and "\n" not in plan.description
        assert plan.validate(plan.default_params()) == plan.default_params()
        source = plan.render(plan.default_params())
        assert "class ModelNew(nn.Module)" in source and "@triton.jit" in source
        assert check_source(source, problem.allowed_ops) == []
    else:
        with pytest.raises(Unsupported) as info:
            analyze(problem)
        for words in expected:
            assert words in str(info.value)


def test_unsupported_is_data_not_a_tool_error():
    assert not issubclass(Unsupported, KernelEvolveError)


def test_descriptions_name_the_operator():
    softmax = analyze(load_problem(PROBLEMS / "04_row_softmax.py"))
    assert softmax.description == "row softmax over dim 1 of a [4096, 4096] fp32 tensor"
    swiglu = analyze(load_problem(PROBLEMS / "02_swiglu_fp16.py"))
    assert "fp16" in swiglu.description and "silu" in swiglu.description


def test_render_validates_params():
    plan = analyze(load_problem(PROBLEMS / "01_gelu_sigmoid_bias.py"))
    params = plan.default_params()
    with pytest.raises(ValueError, match="BLOCK_SIZE=1000"):
        plan.render({**params, "BLOCK_SIZE": 1000})
    with pytest.raises(ValueError, match="missing parameter.*num_warps"):
        plan.render({"BLOCK_SIZE": 1024})
    with pytest.raises(ValueError, match="unknown parameter.*BLOCK_K"):
        plan.render({**params, "BLOCK_K": 32})
    assert plan.render(params) == plan.render(dict(params))


def test_plans_are_frozen_and_spaces_contain_defaults():
    plan = analyze(load_problem(PROBLEMS / "10_linear_bias_gelu.py"))
    assert isinstance(plan, KernelPlan)
    with pytest.raises(AttributeError):
        plan.description = "x"  # type: ignore[misc]
    for key, value in plan.default_params().items():
        assert value in plan.space[key]
    # fp32 and not batched: the precision (tf32x3, split once, ieee), split once's chain
    # length, the split of K and the persistent kernel are tunable too
    assert {"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages", "TF32X3",
            "CHAIN_K", "SPLIT_K", "PERSISTENT"} == set(plan.space)


def test_model_attributes_are_read_at_call_time():
    source = analyze(load_problem(PROBLEMS / "03_leaky_relu_scale_clamp.py")).render(
        {"BLOCK_SIZE": 1024, "num_warps": 4})
    assert "float(self.negative_slope)" in source and "float(self.clamp_max)" in source
    assert "0.1" not in source.split("class ModelNew")[0]
    layernorm = analyze(load_problem(PROBLEMS / "05_layernorm.py"))
    assert "float(self.norm.eps)" in layernorm.render(layernorm.default_params())


def test_fp32_matmul_uses_split_precision_products_and_keeps_the_linear_module():
    plan = analyze(load_problem(PROBLEMS / "10_linear_bias_gelu.py"))
    source = plan.render(plan.default_params())
    # a 4096^2 layer: the operands split once by default (fp32-level error on the tensor
    # cores); tf32x3 in the kernel and ieee one parameter away
    assert 'input_precision="tf32x3"' in source and 'input_precision="ieee"' in source
    assert "TF32X3 = 2" in source and "split_tf32(a, special)" in source
    assert "TF32X3 = 0" in plan.render({**plan.default_params(), "TF32X3": 0})
    assert "self.linear = nn.Linear(in_features, out_features)" in source
    assert "self.linear.weight.t()" in source


def test_a_convolution_is_kept_from_the_library_only_with_permission(tmp_path):
    text = (PROBLEMS / "12_conv2d_relu_scale_bias.py").read_text()
    path = tmp_path / "conv_not_allowed.py"
    path.write_text(text.replace('KERNELEVOLVE_ALLOWED_OPS = ["conv2d"]', ""))
    own = analyze(load_problem(path))
    assert own.operator_class == "convolution"
    assert "`--allow-op conv2d` keeps the library's" in own.description
    # the implicit GEMM's parameters beside the epilogue's, one warp count for both
    assert {"BLOCK_SIZE", "BLOCK_M", "BLOCK_N", "BLOCK_K", "TF32X3", "CHANNELS_LAST"} <= set(
        own.space)
    assert own.space["num_warps"] == (2, 4, 8)
    assert own.default_params()["CHANNELS_LAST"] == 1  # 64 input channels
    assert "which ran faster" not in own.description  # wide: the own path is the advice
    # 3 input channels: the description says the library's ran faster there, and the template
    # takes the FMA kernel with its tile (the GEMM, one parameter away, walks k along window
    # rows)
    narrow_path = tmp_path / "conv_narrow.py"
    narrow_path.write_text(text.replace('KERNELEVOLVE_ALLOWED_OPS = ["conv2d"]', "")
                           .replace("in_channels = 64", "in_channels = 3"))
    narrow = analyze(load_problem(narrow_path))
    assert "which ran faster at fewer than 16 input channels per group" in narrow.description
    assert narrow.default_params()["CHANNELS_LAST"] == 2
    assert narrow.default_params()["FMA"] == 1 and "FMA" not in own.space  # 576 taps
    assert narrow.default_params()["BLOCK_M"] == 64 and narrow.default_params()["num_warps"] == 2
    source = own.render(own.default_params())
    assert "conv2d_out = conv_nd(x, self.conv.weight, None, self.conv.stride" in source
    assert "torch.nn.functional.conv2d" not in source
    assert check_source(source, []) == []
    library = analyze(load_problem(path).allowing(["conv2d"]))
    assert library.operator_class == "library_epilogue"
    assert "torch.nn.functional.conv2d(" in library.render(library.default_params())


def _write(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
                    + body)
    return path


def test_functional_and_method_forms_classify_alike(tmp_path):
    body = """
class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return {expr}


rows = 64
cols = 128


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
"""
    cases = {"F.layer_norm(x, (x.shape[-1],))": "layernorm",
             "x.log_softmax(dim=-1)": "log_softmax",
             "torch.nn.functional.softmax(x, -1)": "softmax",
             "x / x.norm(dim=1, keepdim=True)": "l2norm",
             "x.amax(dim=-1)": "reduction",
             "x.sum(dim=0)": "reduction",
             "torch.tanh(x).clamp(min=0.0) ** 2": "elementwise"}
    for i, (expr, cls) in enumerate(cases.items()):
        plan = analyze(load_problem(_write(tmp_path, f"p{i}", body.format(expr=expr))))
        assert plan.operator_class == cls, expr
        assert "super().__init__()" in plan.render(plan.default_params())


def test_multiple_outputs_are_unsupported(tmp_path):
    path = _write(tmp_path, "two", """
class Model(nn.Module):
    def forward(self, x):
        return x + 1, x * 2


n = 64


def get_inputs():
    return [torch.randn(n, n)]


def get_init_inputs():
    return []
""")
    with pytest.raises(Unsupported, match="2 outputs"):
        analyze(load_problem(path))
