import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Frozen batch normalization (inference-mode BatchNorm2d as detectron2's FrozenBatchNorm2d
    writes it): running statistics are buffers, the affine weight and bias are parameters.
    """

    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(num_features))
        self.bias = nn.Parameter(torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = self.weight * torch.rsqrt(self.running_var + self.eps)
        shift = self.bias - self.running_mean * scale
        return x * scale[None, :, None, None] + shift[None, :, None, None]


batch_size = 8
features = 32
dim1 = 16
dim2 = 16


def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [features]
