import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A small CNN head: a 3x3 convolution, ReLU, flatten, then a Linear classifier layer. At
    PyTorch's default flags cuDNN runs the convolution in TF32 while cuBLAS runs the Linear (most
    of the FLOPs here) in full fp32 (float32_matmul_precision 'highest').
    """

    def __init__(self, in_channels: int, mid_channels: int, size: int, out_features: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, mid_channels, 3, padding=1)
        self.fc = nn.Linear(mid_channels * size * size, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv(x))
        return self.fc(x.flatten(1))


batch_size = 128
in_channels = 32
mid_channels = 64
size = 16
out_features = 1024


def get_inputs():
    return [torch.randn(batch_size, in_channels, size, size)]


def get_init_inputs():
    return [in_channels, mid_channels, size, out_features]
