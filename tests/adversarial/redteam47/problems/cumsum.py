import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A simple model that performs a cumulative sum (prefix sum) operation along a specified
    dimension (KernelBench level1/89_cumsum, smaller).
    """

    def __init__(self, dim):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumsum(x, dim=self.dim)


batch_size = 8
input_shape = (2048,)
dim = 1


def get_inputs():
    return [torch.randn(batch_size, *input_shape)]


def get_init_inputs():
    return [dim]
