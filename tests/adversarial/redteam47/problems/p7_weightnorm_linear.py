import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A weight-normalised Linear layer (torch.nn.utils.weight_norm's reparametrisation written
    out): W = g * V / ||V|| row by row, y = x W^T + b, at a small batch, where the work on the
    weight (its norms and the normalised copy) costs as much as the product itself.
    """

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.v = nn.Parameter(torch.randn(out_features, in_features) / in_features ** 0.5)
        self.g = nn.Parameter(torch.rand(out_features) + 0.5)
        self.b = nn.Parameter(torch.randn(out_features) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.g[:, None] * self.v / self.v.norm(dim=1, keepdim=True)
        return torch.nn.functional.linear(x, w, self.b)


batch_size = 8
in_features = 4096
out_features = 4096


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
