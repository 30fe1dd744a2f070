import torch
import torch.nn as nn


class Model(nn.Module):
    """Row softmax of a transposed (column-major) view."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


batch_size = 16
dim = 256


def get_inputs():
    x = torch.randn(dim, batch_size).t()
    return [x]


def get_init_inputs():
    return []
