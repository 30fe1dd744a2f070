import torch
import torch.nn as nn

# The linear layer may come from the library; the candidate writes the relu epilogue.
KERNELEVOLVE_ALLOWED_OPS = ["linear"]


class Model(nn.Module):
    """relu(x @ W^T + b): library linear allowed, the epilogue is the candidate's job."""

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
