import torch
import torch.nn as nn


class Model(nn.Module):
    """Jagged to padded dense: values + offsets -> [batch, max_len], each row truncated to max_len, zero padded."""

    def __init__(self, max_len):
        super().__init__()
        self.max_len = max_len

    def forward(self, values, offsets):
        lengths = offsets[1:] - offsets[:-1]
        positions = torch.arange(self.max_len, device=values.device)
        index = offsets[:-1, None] + positions[None, :]
        inside = positions[None, :] < lengths[:, None]
        # Out-of-row slots read one appended zero, so the result is exact and deterministic.
        padded = torch.cat([values, values.new_zeros(1)])
        index = torch.where(inside, index, values.numel())
        return padded[index]


batch_size = 16384
max_len = 256


def get_inputs():
    # Row lengths range over [0, 2 * max_len], so about half of the rows get truncated.
    lengths = torch.randint(0, 2 * max_len + 1, (batch_size,), dtype=torch.int64)
    offsets = torch.zeros(batch_size + 1, dtype=torch.int64)
    offsets[1:] = torch.cumsum(lengths, dim=0)
    values = torch.randn(int(offsets[-1]))
    return [values, offsets]


def get_init_inputs():
    return [max_len]
