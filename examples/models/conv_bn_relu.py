import torch
import torch.nn as nn


class Model(nn.Module):
    """Two convolution - batch norm - ReLU stages, as in a ResNet block without its shortcut
    (training mode: batch statistics)."""

    def __init__(self, c_in, c_mid, c_out):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_mid, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_mid)
        self.conv2 = nn.Conv2d(c_mid, c_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(x)))


batch = 32
c_in = 64
c_mid = 64
c_out = 64
size = 56


def get_inputs():
    return [torch.randn(batch, c_in, size, size)]


def get_init_inputs():
    return [c_in, c_mid, c_out]
