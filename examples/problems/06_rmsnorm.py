import torch
import torch.nn as nn


class Model(nn.Module):
    """RMSNorm over the last dimension: x / sqrt(mean(x^2) + eps) * weight."""

    def __init__(self, hidden, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))

    def forward(self, x):
        rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * rms * self.weight


batch_size = 8192
hidden = 4096
eps = 1e-6


def get_inputs():
    x = torch.randn(batch_size, hidden)
    return [x]


def get_init_inputs():
    return [hidden, eps]
