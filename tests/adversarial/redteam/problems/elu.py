import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """ELU, elementwise."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.elu(x)


batch_size = 16
dim = 256


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
