import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A 3x3 convolution with bias, same padding (KernelBench level1-style conv2d). At these sizes
    cuDNN computes it in TF32 on an H100 at PyTorch's default flags; at the judge's other
    shapes (13 x 49 x 49 x 49) exactly, per the judge's own note (precision.py).
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size,
                              padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 16
in_channels = 64
out_channels = 64
height = 64
width = 64
kernel_size = 3


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
