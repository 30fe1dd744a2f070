import torch
import torch.nn as nn


class Model(nn.Module):
    """A 3x3 convolution with bias, padding 1 (fp32): cuDNN computes it in TF32 at PyTorch's
    default flags."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)

    def forward(self, x):
        return self.conv(x)


batch_size = 16
in_channels = 64
out_channels = 64
kernel_size = 3
height = 64
width = 64


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
