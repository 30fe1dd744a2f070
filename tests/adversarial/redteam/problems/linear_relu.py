import torch
import torch.nn as nn


class Model(nn.Module):
    """relu(x @ W^T + b) with an nn.Linear layer."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))


batch_size = 16
in_features = 64
out_features = 48


def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features]
