import torch
import torch.nn as nn


class Model(nn.Module):
    """LayerNorm over the features, then the mean over the features: with the affine parameters
    at their init (weight 1, bias 0) the output is 0 up to rounding, whatever the input (the
    shape of KernelBench's "...Norm_Mean" problems)."""

    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return self.norm(x).mean(dim=1)


batch_size = 16
dim = 256


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [dim]
