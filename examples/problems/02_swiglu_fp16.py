import torch
import torch.nn as nn


class Model(nn.Module):
    """SwiGLU gate in fp16: split the last dimension in half and return silu(gate) * up."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        gate, up = x.chunk(2, dim=-1)
        return torch.nn.functional.silu(gate) * up


num_tokens = 8192
hidden = 4096


def get_inputs():
    x = torch.randn(num_tokens, 2 * hidden, dtype=torch.float16)
    return [x]


def get_init_inputs():
    return []
