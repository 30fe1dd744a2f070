import torch
import torch.nn as nn


class Model(nn.Module):
    """clamp(leaky_relu(x) * scale, lo, hi): an activation chain with constant parameters."""

    def __init__(self, negative_slope, scale, clamp_min, clamp_max):
        super().__init__()
        self.negative_slope = negative_slope
        self.scale = scale
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x):
        x = torch.nn.functional.leaky_relu(x, self.negative_slope)
        x = x * self.scale
        return torch.clamp(x, self.clamp_min, self.clamp_max)


batch_size = 4096
dim = 4096
negative_slope = 0.1
scale = 1.5
clamp_min = -0.25
clamp_max = 2.0


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [negative_slope, scale, clamp_min, clamp_max]
