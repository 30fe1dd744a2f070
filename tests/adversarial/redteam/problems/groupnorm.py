import torch
import torch.nn as nn


class Model(nn.Module):
    """GroupNorm with 4 groups over (batch, channels, length), as in KernelBench's level1
    GroupNorm problem: channels must stay divisible by the groups."""

    def __init__(self, num_groups, num_channels):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups, num_channels)

    def forward(self, x):
        return self.gn(x)


batch_size = 4
num_groups = 4
channels = 16
length = 64


def get_inputs():
    x = torch.randn(batch_size, channels, length)
    return [x]


def get_init_inputs():
    return [num_groups, channels]
