import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A 3x3 convolution of raw readings that sit on a large constant offset: the model removes
    the offset (a constructor float) before convolving (a sensor's dark level, a pixel mean in
    raw units). The same sizes as p7_conv3x3: TF32 in cuDNN at its own size on an H100.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, offset: float):
        super().__init__()
        self.offset = offset
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size,
                              padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x - self.offset)


batch_size = 16
in_channels = 64
out_channels = 64
height = 64
width = 64
kernel_size = 3
offset = 1000.0


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width) + offset]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, offset]
