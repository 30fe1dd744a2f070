import torch
import torch.nn as nn


class Model(nn.Module):
    """Plain bf16 matrix multiply C = A @ B for A [M, K] and B [K, N]."""

    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


m = 4096
k = 4096
n = 4096


def get_inputs():
    a = torch.randn(m, k, dtype=torch.bfloat16)
    b = torch.randn(k, n, dtype=torch.bfloat16)
    return [a, b]


def get_init_inputs():
    return []
