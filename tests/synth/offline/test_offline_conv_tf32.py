"""The convolution template's TF32X3 parameter: fp32 convolutions with a GEMM tune tf32x3 against
ieee products (tf32x3 by default, reading a K-major copy of the weight), and both are verified
by the real harness on the cpu target; 16-bit and depthwise-only convolutions have no such
parameter. The interpreter computes both precisions exactly: what is verified here is the
weight copy and its addressing, which TF32X3 = 1 and 2 take, and split once's operands: their
remainders read at the same offsets as the high parts, in both input layouts."""

from __future__ import annotations

import re

import pytest

from kernelevolve.synth.offline import analyze
from tests.synth.offline.test_offline_coverage import _problem

# A grouped transposed convolution (stride 3 with dilation 2: some phases get no tap) into a
# grouped strided, dilated, padded one: both weight copies, a transposed phase's taps and a
# standard weight's view, in one problem.
_CHAIN = (
    "class Model(nn.Module):\n"
    "    def __init__(self, c_in, c_mid, c_out):\n        super().__init__()\n"
    "        self.up = nn.ConvTranspose2d(c_in, c_mid, (3, 2), stride=(3, 2), padding=(1, 0), "
    "output_padding=(1, 1), dilation=(2, 1), groups=2, bias=True)\n"
    "        self.conv = nn.Conv2d(c_mid, c_out, (3, 2), stride=(2, 1), padding=(1, 1), "
    "dilation=(1, 2), groups=2, bias=False)\n\n"
    "    def forward(self, x):\n        return self.conv(self.up(x))\n\n\n"
    "batch = 2\nc_in = 4\nc_mid = 6\nc_out = 10\nh = 5\nw = 6\n\n\n"
    "def get_inputs():\n    return [torch.rand(batch, c_in, h, w)]\n\n\n"
    "def get_init_inputs():\n    return [c_in, c_mid, c_out]\n")


def _conv(dtype: str, groups: str) -> str:
    return ("class Model(nn.Module):\n"
            "    def __init__(self, c):\n        super().__init__()\n"
            f"        self.conv = nn.Conv2d(c, c, 3, padding=1, groups={groups}, "
            f"dtype=torch.{dtype})\n\n"
            "    def forward(self, x):\n        return self.conv(x)\n\n\n"
            "batch = 2\nc = 8\nh = 6\n\n\n"
            f"def get_inputs():\n    return [torch.rand(batch, c, h, h, dtype=torch.{dtype})]\n\n\n"
            "def get_init_inputs():\n    return [c]\n")


def test_an_fp32_convolution_tunes_tf32x3(tmp_path):
    plan = analyze(_problem(tmp_path, "conv_chain", _CHAIN))
    assert plan.operator_class == "convolution"
    # grouped convolutions read x through the window table: split once by default there
    assert plan.default_params()["CHANNELS_LAST"] == 0
    assert plan.space["TF32X3"] == (1, 0, 2) and plan.default_params()["TF32X3"] == 2
    source = plan.render(plan.default_params())
    assert re.search(r"^TF32X3 = 2$", source, re.M)
    assert source.count("tf32x3=TF32X3") == 2  # each convolution of the chain
    assert 'input_precision="tf32x3"' in source and 'input_precision="ieee"' in source
    assert re.search(r"^TF32X3 = 0$", plan.render({**plan.default_params(), "TF32X3": 0}),
                     re.M)


@pytest.mark.parametrize(("tf32x3", "layout"), [(1, 0), (0, 0), (2, 0), (2, 1)],
                         ids=["tf32x3", "ieee", "split-once-table", "split-once-channels-last"])
def test_every_precision_is_verified(tmp_path, small_pool, tf32x3, layout):
    problem = _problem(tmp_path, "conv_chain", _CHAIN)
    plan = analyze(problem)
    source = plan.render({**plan.default_params(), "BLOCK_M": 32, "BLOCK_N": 16,
                          "BLOCK_K": 16, "TF32X3": tf32x3, "CHANNELS_LAST": layout})
    result = small_pool.evaluate(problem, source)
    assert result.ok, f"{result.status}: {result.message}\n{result.stderr_tail[-2000:]}"
    assert any(c.name == "correct on other shapes" for c in result.checks)


@pytest.mark.parametrize(("dtype", "groups"), [("float16", "1"), ("bfloat16", "2"),
                                               ("float32", "c")],
                         ids=["fp16", "bf16", "fp32-depthwise"])
def test_no_tf32x3_without_fp32_products(tmp_path, dtype, groups):
    # 16-bit tiles keep their dot; a depthwise convolution has none.
    plan = analyze(_problem(tmp_path, "conv", _conv(dtype, groups)))
    assert plan.operator_class == "convolution"
    assert "TF32X3" not in plan.space and "TF32X3" not in plan.default_params()
    source = plan.render(plan.default_params())
    assert re.search(r"^TF32X3 = ", source, re.M) is None and "tf32x3=TF32X3" not in source
