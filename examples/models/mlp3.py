import torch
import torch.nn as nn


class Model(nn.Module):
    """A three-layer MLP: GELU and ReLU between the layers (a program of three GEMM parts)."""

    def __init__(self, d_in, d_hidden, d_out):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, d_hidden)
        self.fc3 = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        x = torch.nn.functional.gelu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


batch = 4096
d_in = 1024
d_hidden = 4096
d_out = 1024


def get_inputs():
    return [torch.randn(batch, d_in)]


def get_init_inputs():
    return [d_in, d_hidden, d_out]
