import torch
import torch.nn as nn


class Model(nn.Module):
    """Row sums."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sum(x, dim=1)


batch_size = 8
length = 512


def get_inputs():
    return [torch.randn(batch_size, length)]


def get_init_inputs():
    return []
