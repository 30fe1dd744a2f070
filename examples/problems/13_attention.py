import math

import torch
import torch.nn as nn


class Model(nn.Module):
    """Non-causal scaled dot-product attention softmax(Q K^T / sqrt(d)) V on [batch*heads, seq, head_dim]."""

    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        scores = torch.bmm(q, k.transpose(1, 2)) * (1.0 / math.sqrt(q.shape[-1]))
        return torch.bmm(torch.softmax(scores, dim=-1), v)


batch_size = 8
num_heads = 16
seq_len = 1024
head_dim = 64


def get_inputs():
    shape = (batch_size * num_heads, seq_len, head_dim)
    return [torch.randn(shape), torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return []
