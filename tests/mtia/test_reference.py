"""The simulated eager baseline: one unfused kernel per aten op."""

from __future__ import annotations

import mtia_kernels as K
import pytest
import torch

from kernelevolve.tools.mtia import simulate_forward, simulate_reference


class AddRelu(torch.nn.Module):
    def forward(self, x, y):
        return torch.relu(x * 2.0 + y)


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(256, 512)

    def forward(self, x):
        return torch.softmax(torch.nn.functional.gelu(self.fc(x)), dim=-1)


def test_each_aten_op_is_one_kernel():
    x, y = torch.randn(1 << 16), torch.randn(1 << 16)
    report = simulate_reference(AddRelu(), [x, y])
    assert [launch.name for launch in report.launches] == ["aten.mul", "aten.add", "aten.relu"]
    assert all(launch.kind == "aten" and launch.launch_s > 0 for launch in report.launches)
    assert report.time_s == pytest.approx(sum(launch.time_s for launch in report.launches))
    assert report.simulated and any("eager baseline" in w for w in report.warnings)


def test_engines_of_a_small_mlp():
    report = simulate_reference(Mlp(), [torch.randn(512, 256)])
    names = [launch.name for launch in report.launches]
    assert names == ["aten.addmm", "aten.gelu", "aten._softmax"]  # aten.t is a view: free
    addmm, gelu, softmax = report.launches
    assert addmm.flops == 2 * 512 * 256 * 512 and addmm.unit_busy_s["dpe"] > 0
    assert gelu.unit_busy_s["se"] > 0 and softmax.unit_busy_s["re"] > 0
    assert addmm.dots == [{"m": 512, "n": 512, "k": 256, "dtype": "float32", "count": 1}]


def test_fusing_three_ops_into_one_kernel_beats_the_eager_baseline():
    x, y = torch.randn(1 << 20), torch.randn(1 << 20)
    reference = simulate_reference(AddRelu(), [x, y])
    candidate = simulate_forward(lambda: K.add(x, y, 4096))  # stands in for a fused kernel
    assert reference.time_s / candidate.time_s > 2.0


def test_torch_ops_in_a_candidate_forward_are_simulated_too():
    x = torch.randn(64, 1024)
    report = simulate_forward(lambda: K.softmax(x.t().contiguous().t().contiguous()))
    kinds = [(launch.kind, launch.name) for launch in report.launches]
    assert kinds == [("aten", "aten.clone"), ("aten", "aten.clone"), ("triton", "softmax_kernel")]
    assert report.launches[0].unit_busy_s["mlu"] > 0  # a transposing copy uses the layout unit


class MatMul(torch.nn.Module):
    def forward(self, a, b):
        return torch.relu(a @ b)


def test_large_gemms_are_costed_without_computing_them():
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)  # 2.1 GFLOP: above the default
    skipped = simulate_reference(MatMul(), [a, b])
    computed = simulate_reference(MatMul(), [a, b], skip_flops=None)
    assert [launch.name for launch in skipped.launches] == ["aten.mm", "aten.relu"]
    assert skipped.launches[0].flops == computed.launches[0].flops == 2 * 1024**3
    assert skipped.time_s == pytest.approx(computed.time_s, rel=1e-6)
