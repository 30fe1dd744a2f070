import torch
import torch.nn as nn


class Model(nn.Module):
    """LayerNorm over the hidden dimension of a [batch, seq, hidden] activation, with affine weight and bias."""

    def __init__(self, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=1e-5)
        # Non-trivial affine parameters, so a kernel that ignores them fails.
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.1 * torch.randn(hidden))
            self.norm.bias.copy_(0.1 * torch.randn(hidden))

    def forward(self, x):
        return self.norm(x)


batch_size = 16
seq_len = 512
hidden = 4096


def get_inputs():
    x = torch.randn(batch_size, seq_len, hidden)
    return [x]


def get_init_inputs():
    return [hidden]
