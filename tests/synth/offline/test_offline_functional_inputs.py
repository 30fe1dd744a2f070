"""Functional operators whose parameters are forward inputs, judged by the real harness on the
cpu target: the harness also passes them as strided views (its "non-contiguous inputs" check),
so every tensor a kernel reads must be addressed through its strides."""

from __future__ import annotations

import pytest

from kernelevolve.synth.offline import analyze
from kernelevolve.synth.offline.plan import Unsupported
from tests.synth.offline.test_offline_coverage import _problem

# The suite's nn.functional.conv1d sample 2: grouped, strided, dilated and padded, the weight and
# the bias forward inputs (the harness's strided bias is every other element of a buffer).
_CONV1D = (
    "class Model(nn.Module):\n"
    "    def forward(self, x0, x1, x2):\n"
    "        return F.conv1d(x0, x1, x2, stride=3, padding=1, groups=2, dilation=2)\n\n\n"
    "def get_inputs():\n"
    "    return [torch.randn(2, 4, 40), torch.randn(2, 2, 3), torch.randn(2)]\n\n\n"
    "def get_init_inputs():\n    return []\n")

# Depthwise (one input channel per group): the other kernel's bias load.
_CONV2D_DEPTHWISE = (
    "class Model(nn.Module):\n"
    "    def forward(self, x0, x1, x2):\n"
    "        return F.conv2d(x0, x1, x2, padding=1, groups=4, dilation=(1, 2))\n\n\n"
    "def get_inputs():\n"
    "    return [torch.randn(2, 4, 7, 9), torch.randn(4, 1, 3, 2), torch.randn(4)]\n\n\n"
    "def get_init_inputs():\n    return []\n")


@pytest.mark.parametrize("body", [_CONV1D, _CONV2D_DEPTHWISE], ids=["grouped", "depthwise"])
def test_a_convolution_by_input_weights_reads_their_strides(tmp_path, small_pool, body):
    problem = _problem(tmp_path, "conv_inputs", body)
    plan = analyze(problem)
    assert plan.operator_class == "convolution"
    result = small_pool.evaluate(problem, plan.render(plan.default_params()))
    assert result.ok, f"{result.status}: {result.message}\n{result.stderr_tail[-2000:]}"
    variants = next(c for c in result.checks if c.name == "correct on other input values")
    assert "non-contiguous inputs" in variants.detail.split("; skipped")[0]


def _functional(call: str, shapes: list[tuple[int, ...]], positive: tuple[int, ...] = ()) -> str:
    args = ", ".join(f"x{i}" for i in range(len(shapes)))
    draws = ", ".join(f"torch.rand{s}" + (" + 0.5" if i in positive else "")
                      for i, s in enumerate(shapes))
    return ("class Model(nn.Module):\n"
            f"    def forward(self, {args}):\n        return {call}\n\n\n"
            f"def get_inputs():\n    return [{draws}]\n\n\n"
            "def get_init_inputs():\n    return []\n")


@pytest.mark.parametrize(("call", "shapes", "positive"), [
    ("F.group_norm(x0, 2, weight=x1, bias=x2, eps=0.5)", [(3, 6, 5), (6,), (6,)], ()),
    ("F.group_norm(x0, 3)", [(2, 6, 4, 3)], ()),
    # eval mode: the running variance (x2) must be positive
    ("F.batch_norm(x0, x1, x2, x3, x4, training=False, momentum=-1.0, eps=0.5)",
     [(3, 2, 5, 4), (2,), (2,), (2,), (2,)], (2,)),
    ("F.batch_norm(x0, None, None, x1, x2, training=True)", [(4, 3, 7), (3,), (3,)], ()),
], ids=["group-affine", "group-plain", "batch-eval", "batch-train"])
def test_a_functional_norm_by_input_tensors_is_verified(tmp_path, small_pool, call, shapes,
                                                         positive):
    problem = _problem(tmp_path, "norm_inputs", _functional(call, shapes, positive))
    plan = analyze(problem)
    assert plan.operator_class == "normalization"
    result = small_pool.evaluate(problem, plan.render(plan.default_params()))
    assert result.ok, f"{result.status}: {result.message}\n{result.stderr_tail[-2000:]}"


def test_a_batch_norm_updating_its_running_stats_is_unsupported(tmp_path):
    body = _functional("F.batch_norm(x0, x1, x2, training=True)", [(4, 3, 7), (3,), (3,)])
    with pytest.raises(Unsupported, match="running statistics in place"):
        analyze(_problem(tmp_path, "norm_update", body))

