import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.bucketize of float features into sorted boundaries held as a buffer (int64 bucket ids)."""

    def __init__(self, num_boundaries):
        super().__init__()
        boundaries, _ = torch.sort(torch.randn(num_boundaries))
        self.register_buffer("boundaries", boundaries)

    def forward(self, x):
        return torch.bucketize(x, self.boundaries)


batch_size = 4096
num_features = 4096
num_boundaries = 1023


def get_inputs():
    x = torch.randn(batch_size, num_features)
    return [x]


def get_init_inputs():
    return [num_boundaries]
