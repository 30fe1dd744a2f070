import torch
import torch.nn as nn


class Model(nn.Module):
    """(tan(x), sigmoid(x)) as two outputs, on inputs of magnitude ~1000: the first is
    ill-conditioned near tan's poles, the second is well-conditioned everywhere."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.tan(x), torch.sigmoid(x)


batch_size = 16
dim = 256


def get_inputs():
    x = torch.randn(batch_size, dim) * 1000
    return [x]


def get_init_inputs():
    return []
