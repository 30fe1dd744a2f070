"""The tracer on layers users bring (issue #50's tracing bugs): a dropout of probability 0 and
in-place ops are traced as what they compute; a forward that draws random numbers and a
recurrent layer are refused at once, each with its own reason. Each traced plan's default
candidate is run against its reference in Triton's interpreter."""

from __future__ import annotations

import time

import pytest

from kernelevolve.synth.offline import Unsupported, analyze
from tests.synth.offline.test_offline_coverage import _interpreted, _problem

_SIZES = '''
n = 64


def get_inputs():
    return [torch.randn(8, n), torch.randn(8, n)]


def get_init_inputs():
    return [n]
'''

DROPOUT_ZERO = '''
class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, n)
        self.drop = nn.Dropout(p=0.0)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x, y):
        return self.act(self.drop(self.fc(x)))
''' + _SIZES

IN_PLACE = '''
class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.scale = 0.5

    def forward(self, x, y):
        z = x * 2
        z.add_(y)
        z.mul_(self.scale)
        return torch.relu_(z)
''' + _SIZES

DROPOUT_TRAINING = DROPOUT_ZERO.replace("p=0.0", "p=0.25")

LSTM = '''
class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, dropout=0.0)
        self.fc = nn.Linear(hidden_size, 10)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.fc(out[:, -1, :])


def get_inputs():
    return [torch.randn(10, 512, 128)]


def get_init_inputs():
    return [128, 256, 6]
'''


@pytest.mark.parametrize(("name", "body", "operator_class", "words"), [
    ("dropout_zero", DROPOUT_ZERO, "matmul", "fused relu epilogue"),
    ("in_place", IN_PLACE, "elementwise", "mul, add, relu"),
], ids=["dropout_p0_relu_inplace", "add_mul_relu_in_place"])
def test_traced_as_what_they_compute(tmp_path, name, body, operator_class, words):
    problem = _problem(tmp_path, name, body)
    plan = analyze(problem)
    assert plan.operator_class == operator_class and words in plan.description
    if name == "in_place":  # the float attribute is still read at call time
        assert "self.scale" in plan.render(plan.default_params())
    _interpreted([problem.path])


def test_a_forward_drawing_random_numbers_is_refused_with_its_reason(tmp_path):
    with pytest.raises(Unsupported, match=r"draws random numbers \(bernoulli.*model\.eval\(\)"):
        analyze(_problem(tmp_path, "dropout_training", DROPOUT_TRAINING))


def test_a_recurrent_layer_is_refused_before_tracing(tmp_path):
    """An LSTM of 512 steps and 6 layers took minutes to trace into ~10^5 ops."""
    problem = _problem(tmp_path, "lstm", LSTM)
    start = time.perf_counter()
    with pytest.raises(Unsupported, match=r"lstm is a recurrent layer \(LSTM\)"):
        analyze(problem)
    assert time.perf_counter() - start < 10
