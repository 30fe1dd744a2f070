import torch
import torch.nn as nn


class Model(nn.Module):
    """abs(x), elementwise."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.abs(x)


batch_size = 16
dim = 256


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
