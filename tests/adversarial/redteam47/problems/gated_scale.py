import torch
import torch.nn as nn


class Model(nn.Module):
    """x * sigmoid(gate) * exp(log_scale): a learned per-feature gate and scale."""

    def __init__(self, dim: int):
        super().__init__()
        self.gate = nn.Parameter(torch.randn(dim))
        self.log_scale = nn.Parameter(torch.randn(dim) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(self.gate) * torch.exp(self.log_scale)


batch_size = 32
dim = 512


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]
