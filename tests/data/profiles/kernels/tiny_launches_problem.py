import torch
import torch.nn as nn


class Model(nn.Module):
    """Many dependent steps on a tiny vector: x <- 0.5 * x + 1, ``steps`` times. Each step is a
    microsecond of work, so launching it is what costs (launch-bound by construction)."""

    def __init__(self, steps):
        super().__init__()
        self.steps = steps

    def forward(self, x):
        for _ in range(self.steps):
            x = x * 0.5 + 1.0
        return x


n = 1024
steps = 200


def get_inputs():
    return [torch.randn(n, dtype=torch.float32)]


def get_init_inputs():
    return [steps]
