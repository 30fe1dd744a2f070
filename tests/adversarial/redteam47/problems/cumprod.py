import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A model that performs a cumulative product operation along a specified dimension
    (KernelBench level1/90_cumprod, smaller).
    """

    def __init__(self, dim):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumprod(x, dim=self.dim)


# Define input dimensions and parameters
batch_size = 64
input_shape = (4096,)
dim = 1


def get_inputs():
    return [torch.rand(batch_size, *input_shape)]


def get_init_inputs():
    return [dim]
