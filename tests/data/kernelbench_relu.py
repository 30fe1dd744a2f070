import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Simple model that performs a ReLU activation (a KernelBench level-1 file, unmodified layout).
    """
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies ReLU activation to the input tensor.
        """
        return torch.relu(x)

batch_size = 4096
dim = 393216

def get_inputs():
    x = torch.rand(batch_size, dim, dtype=torch.bfloat16)
    return [x]

def get_init_inputs():
    return []  # No special initialization inputs needed
