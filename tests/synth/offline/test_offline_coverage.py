"""The last KernelBench level-1 operators the offline synthesizer learned (issue #17): a float
forward argument (5), the 4-D einsum (11), RMS norm over channels (36), attention (97), a loss
divided by the batch (98), and transposed convolutions split by the stride's phases (72, 77).
Each is analysed from the unmodified file; its candidate runs in Triton's interpreter in this
process against the reference at small sizes and at other sizes (fast), and is verified by the
real harness on the cpu target (slow, but for the batch-size case), at sizes shrunk further than
the default so the interpreter stays quick; the harness' checks are the same."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelevolve.problem import load_problem
from kernelevolve.synth.offline import Unsupported, analyze
from kernelevolve.synth.offline.frontend.trace import trace
from kernelevolve.tools.harness.pool import WorkerPool
from kernelevolve.tools.harness.static import check_source

# file -> (operator class, words the description holds, words the candidate source holds)
CASES = {
    "5_Matrix_scalar_multiplication": ("elementwise", "mul", "float(in1)"),
    "11_4D_tensor_matrix_multiplication": ("matmul", "[8, 256, 512, 256] @ [256, 768]",
                                           "flatten(0, -2)"),
    "36_RMSNorm_": ("reduction", "second pass", "fused_reduction_kernel"),
    "97_ScaledDotProductAttention": ("attention", "flash-attention", "in0.shape[-1] ** -0.5"),
    "98_KLDivLoss": ("full_reduction", "full sum", "float(predictions.shape[0])"),
    "72_conv_transposed_3D_asymmetric_input_asymmetric_kernel___strided_padded_grouped_": (
        "convolution", "conv_transpose3d", "_phase_taps"),
}
NEW = ["5_Matrix_scalar_multiplication", "11_4D_tensor_matrix_multiplication", "36_RMSNorm_",
       "97_ScaledDotProductAttention", "98_KLDivLoss"]


def _problem(tmp_path: Path, name: str, body: str):
    path = tmp_path / f"{name}.py"
    path.write_text("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
                    + body)
    return load_problem(path)


def _interpreted(paths: list[Path] | list[str]) -> None:
    """Each problem's default candidate (``path@KEY=V,...``: with those parameters changed)
    against its reference in Triton's interpreter, in one fresh process
    (interpret_candidates.py; the interpreter must be on before triton loads)."""
    script = Path(__file__).with_name("interpret_candidates.py")
    done = subprocess.run([sys.executable, str(script), *map(str, paths)], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    failed = {Path(k).name: v for k, v in results.items() if v is not None}
    assert not failed, failed
    assert len(results) == len(paths)


def _verify(pool: WorkerPool, problem) -> None:
    plan = analyze(problem)
    result = pool.evaluate(problem, plan.render(plan.default_params()))
    assert result.ok, (f"{problem.name}: {result.status}: {result.message}\n"
                       f"{result.stderr_tail[-2000:]}")
    assert any(c.name == "correct on other shapes" for c in result.checks)


@pytest.mark.parametrize("name", sorted(CASES))
def test_operator_is_analysed(kernelbench, name):
    problem = load_problem(kernelbench / "level1" / f"{name}.py")
    plan = analyze(problem)
    cls, described, written = CASES[name]
    assert plan.operator_class == cls
    assert described in plan.description
    source = plan.render(plan.default_params())
    assert written in source
    assert check_source(source, problem.allowed_ops) == []


@pytest.mark.slow
@pytest.mark.parametrize("name", NEW)
def test_operator_is_verified(kernelbench, small_pool, name):
    _verify(small_pool, load_problem(kernelbench / "level1" / f"{name}.py"))


def test_a_size_in_the_graph_is_read_from_the_input(kernelbench):
    # batchmean divides by the batch; both dims are 16384, so only a second trace at other
    # sizes tells which one it is.
    traced = trace(load_problem(kernelbench / "level1" / "98_KLDivLoss.py"))
    assert "predictions.shape[0]" in traced.scalars.values()


_CONV_T = (
    "class Model(nn.Module):\n"
    "    def __init__(self, c_in, c_out):\n        super().__init__()\n"
    "        self.conv = nn.ConvTranspose2d(c_in, c_out, (3, 2), stride=(3, 2), "
    "padding=(1, 0), output_padding=(1, 1), dilation=(2, 1), groups=2, bias=True)\n\n"
    "    def forward(self, x):\n        return self.conv(x)\n\n\n"
    "batch = 2\nc_in = 4\nc_out = 6\nh = 9\nw = 10\n\n\n"
    "def get_inputs():\n    return [torch.rand(batch, c_in, h, w)]\n\n\n"
    "def get_init_inputs():\n    return [c_in, c_out]\n")
_CONV_T_DEPTHWISE = (
    "class Model(nn.Module):\n"
    "    def __init__(self, c):\n        super().__init__()\n"
    "        self.conv = nn.ConvTranspose3d(c, c, 3, stride=2, padding=1, dilation=2, "
    "groups=c, bias=False)\n\n"
    "    def forward(self, x):\n        return self.conv(x)\n\n\n"
    "batch = 2\nc = 16\nd = 9\n\n\n"
    "def get_inputs():\n    return [torch.rand(batch, c, 3, d, 5)]\n\n\n"
    "def get_init_inputs():\n    return [c]\n")
_ATTENTION = (
    "class Model(nn.Module):\n"
    "    def forward(self, q, k, v):\n"
    "        return F.scaled_dot_product_attention(q, k, v, scale=0.3)\n\n\n"
    "batch = 2\nheads = 3\nqueries = 20\nkeys = 36\nd = 24\ndv = 40\n\n\n"
    "def get_inputs():\n    return [torch.randn(batch, heads, queries, d), "
    "torch.randn(batch, heads, keys, d), torch.randn(batch, heads, keys, dv)]\n\n\n"
    "def get_init_inputs():\n    return []\n")


def test_new_operators_match_the_reference_in_the_interpreter(kernelbench, tmp_path):
    # The transposed convolutions: stride 3 with dilation 2 (grouped, 2-D) and stride 2 with
    # dilation 2 (depthwise, 3-D): some phases get no tap and must still be written (with the
    # bias). The attention: a scale of its own, more keys than queries, wider values.
    own = {"convt_grouped": _CONV_T, "convt_depthwise": _CONV_T_DEPTHWISE,
           "attention_scaled": _ATTENTION}
    for name, body in own.items():
        _problem(tmp_path, name, body)
    _interpreted([kernelbench / "level1" / f"{n}.py" for n in NEW]
                 + [tmp_path / f"{n}.py" for n in own])


def test_attention_reads_its_own_scale(tmp_path):
    problem = _problem(tmp_path, "attention_scaled", _ATTENTION)
    source = analyze(problem).render(analyze(problem).default_params())
    assert "return attention(q, k, v, 0.3)" in source  # the given scale, not 1/sqrt(d)


@pytest.mark.slow
@pytest.mark.parametrize("body", [_CONV_T, _ATTENTION], ids=["conv_transpose", "attention"])
def test_new_templates_are_verified_on_their_own_problems(tmp_path, small_pool, body):
    _verify(small_pool, _problem(tmp_path, "own_problem", body))


def test_attention_with_a_mask_is_left_alone(tmp_path):
    problem = _problem(tmp_path, "attention_causal", (
        "class Model(nn.Module):\n"
        "    def forward(self, q, k, v):\n"
        "        return F.scaled_dot_product_attention(q, k, v, is_causal=True)\n\n\n"
        "def get_inputs():\n    return [torch.randn(2, 16, 8), torch.randn(2, 16, 8), "
        "torch.randn(2, 16, 8)]\n\n\n"
        "def get_init_inputs():\n    return []\n"))
    # The causal mask is built in the graph (ones, tril, where): not the attention template's.
    with pytest.raises(Unsupported, match="'_safe_softmax', 'ones' which no template covers"):
        analyze(problem)


def test_an_integer_forward_argument_is_refused_by_name(tmp_path):
    problem = _problem(tmp_path, "int_arg", (
        "class Model(nn.Module):\n"
        "    def forward(self, x, n):\n        return x * n\n\n\n"
        "def get_inputs():\n    return [torch.rand(8, 8), 3]\n\n\n"
        "def get_init_inputs():\n    return []\n"))
    with pytest.raises(Unsupported, match=r"returns a int \(3\).*tensors and float scalars"):
        analyze(problem)
