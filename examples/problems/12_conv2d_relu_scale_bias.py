import torch
import torch.nn as nn


class Model(nn.Module):
    """3x3 Conv2d, then ReLU, then a per-channel scale and bias (a folded affine epilogue)."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.scale = nn.Parameter(1.0 + 0.1 * torch.randn(out_channels, 1, 1))
        self.bias = nn.Parameter(0.1 * torch.randn(out_channels, 1, 1))

    def forward(self, x):
        x = torch.relu(self.conv(x))
        return x * self.scale + self.bias


batch_size = 16
in_channels = 64
out_channels = 128
height = 128
width = 128
kernel_size = 3


# Candidates may call the convolution itself and fuse the epilogue (a kernelevolve extension:
# plain KernelBench files do not have this line).
KERNELEVOLVE_ALLOWED_OPS = ["conv2d"]


def get_inputs():
    x = torch.randn(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
