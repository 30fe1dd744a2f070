import torch
import torch.nn as nn


class Model(nn.Module):
    """A large bf16 matrix product (compute-bound by construction: 2*8192^3 FLOPs over
    3 * 128 MiB)."""

    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


m = 8192
k = 8192
n = 8192


def get_inputs():
    return [torch.randn(m, k, dtype=torch.bfloat16), torch.randn(k, n, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
