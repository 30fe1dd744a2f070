"""Chained reductions over a middle dim in the strided template (issue #50): softmax over
channels (an online max and sum, then the output pass) and logsumexp over channels (a max pass,
then a sum of exp about the largest, zeroed where infinite), with elementwise ops and inputs
broadcast over channels before and after. Checked against torch in Triton's interpreter; NaN and
infinities through nan_reductions.py; level 2's softmax-over-channels files become programs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from kernelevolve.problem import load_problem
from kernelevolve.synth.offline import analyze
from kernelevolve.synth.offline.families.reduce_dim import ReduceDimTemplate
from tests.synth.offline.test_offline_coverage import _interpreted, _problem
from tests.synth.offline.test_offline_nan_reductions import SCRIPT

_FOOT = "\n\ndef get_init_inputs():\n    return []\n"

SOFTMAX_4D = '''
class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(channels, 1, 1))
        self.scale = 1.5

    def forward(self, x):
        x = torch.softmax(torch.tanh(x) * 3.0, dim=1)
        return torch.sigmoid((x + self.bias) * self.scale)


batch = 2
channels = 8
height = 3
width = 5


def get_inputs():
    return [torch.randn(batch, channels, height, width)]


def get_init_inputs():
    return [channels]
'''

SOFTMAX_5D = '''
class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.softmax = nn.Softmax(dim=1)
        self.shift = nn.Parameter(torch.randn(1, channels, 1, 1, 1))

    def forward(self, x, y):
        return torch.relu(self.softmax(x - y + self.shift)) * 2.0


batch = 2
channels = 6
depth = 3
height = 4
width = 5


def get_inputs():
    return [torch.randn(batch, channels, depth, height, width),
            torch.randn(batch, channels, depth, height, width)]


def get_init_inputs():
    return [channels]
'''

# 40 channels: five BLOCK_R=8 tiles, so the online sum is rescaled as the max grows
SOFTMAX_WIDE = '''
class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x * 4.0, dim=1)


def get_inputs():
    return [torch.randn(2, 40, 3, 5)]
''' + _FOOT

LOGSUMEXP_4D = '''
class Model(nn.Module):
    def forward(self, x):
        return torch.relu(torch.logsumexp(x * 2.0, dim=1, keepdim=True))


def get_inputs():
    return [torch.randn(2, 8, 3, 5)]
''' + _FOOT

LOGSUMEXP_5D = '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(1, 1, 1, 1, 1))

    def forward(self, x, y):
        x = torch.logsumexp(x + y * 2.0, dim=1, keepdim=True)
        return torch.clamp(x * torch.sigmoid(x + 3) / 6 - self.bias, min=-1, max=1)


def get_inputs():
    return [torch.randn(2, 6, 3, 4, 5), torch.randn(2, 6, 3, 4, 5)]
''' + _FOOT

CASES = {"softmax_4d": SOFTMAX_4D, "softmax_5d": SOFTMAX_5D, "softmax_wide": SOFTMAX_WIDE,
         "logsumexp_4d": LOGSUMEXP_4D, "logsumexp_5d": LOGSUMEXP_5D}


def test_softmax_and_logsumexp_over_channels_are_one_strided_kernel(tmp_path):
    for name, body in CASES.items():
        plan = analyze(_problem(tmp_path, name, body))
        assert isinstance(plan.template, ReduceDimTemplate), name
        what = name.split("_")[0]
        assert plan.description.startswith(f"{what} over dim 1 of a ["), plan.description
        source = plan.render(plan.default_params())
        if what == "softmax":  # max and sum of exp in one online pass, then the output pass
            assert "(online)" in source and source.count("for start in range(") == 2
        else:  # the max, then the sum about it: the output is per column
            assert source.count("for start in range(") == 2 and "m_run" not in source


def test_chained_strided_reductions_match_torch_in_the_interpreter(tmp_path):
    paths = [_problem(tmp_path, name, body).path for name, body in CASES.items()]
    _interpreted([*paths, f"{paths[2]}@BLOCK_R=8,BLOCK_I=16",
                  f"{paths[4]}@BLOCK_R=8,BLOCK_I=16,num_warps=1"])


def test_softmax_and_logsumexp_over_channels_keep_nan_and_infinities():
    done = subprocess.run([sys.executable, str(SCRIPT), "cpu", "softmax_channels",
                           "logsumexp_channels"], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    for name in ("softmax_channels", "logsumexp_channels"):
        r = out[name]
        assert r["nan"] and r["inf"] and r["err"] < 1e-4, (name, r)
        assert r["n_nan"] >= 1 and r["nan_combine"], (name, r)


def test_level2_softmax_over_channels_is_a_program_part(kernelbench):
    plan = analyze(load_problem(kernelbench / "level2" /
                                "91_ConvTranspose2d_Softmax_BiasAdd_Scaling_Sigmoid.py"))
    assert plan.operator_class == "program"
    strided = [p.plan for p in plan.template.parts
               if p.plan is not None and isinstance(p.plan.template, ReduceDimTemplate)]
    assert len(strided) == 1 and strided[0].description.startswith("softmax over dim 1 of a ")
