import torch
import torch.nn as nn


class Model(nn.Module):
    """GELU(x) * sigmoid(y) + bias, with a learned bias broadcast over the last dimension."""

    def __init__(self, dim):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(dim))

    def forward(self, x, y):
        return torch.nn.functional.gelu(x) * torch.sigmoid(y) + self.bias


batch_size = 4096
dim = 4096


def get_inputs():
    x = torch.randn(batch_size, dim)
    y = torch.randn(batch_size, dim)
    return [x, y]


def get_init_inputs():
    return [dim]
