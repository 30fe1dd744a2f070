import torch
import torch.nn as nn


class Model(nn.Module):
    """Row softmax; the row length is an expression (128 * 2), not an integer literal."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


batch_size = 16
dim = 128 * 2


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
