import torch
import torch.nn as nn


class Model(nn.Module):
    """One step of a GRU cell (two matrix products and the gates): the offline synthesizer
    refuses it today (its gates trace into in-place ops no template covers); an LLM can write it."""

    def __init__(self, d_in, d_hidden):
        super().__init__()
        self.cell = nn.GRUCell(d_in, d_hidden)

    def forward(self, x, h):
        return self.cell(x, h)


batch = 4096
d_in = 1024
d_hidden = 1024


def get_inputs():
    return [torch.randn(batch, d_in), torch.randn(batch, d_hidden)]


def get_init_inputs():
    return [d_in, d_hidden]
