import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over wide rows of torch.rand inputs, as KernelBench's level1 Softmax problem
    draws them: every probability is about 1/dim (here ~3e-5), below the fp32 atol of 1e-4."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


batch_size = 2
dim = 32768


def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
