import torch
import torch.nn as nn


class Model(nn.Module):
    """Each row follows a chain of ``steps`` dependent lookups through a large random table,
    then adds where it ended to twice its row. The lookups are serial, so only many rows in
    flight hide their latency: a kernel that holds its whole row in registers while it chases
    runs few rows per SM (occupancy-bound by construction)."""

    def __init__(self, steps):
        super().__init__()
        self.steps = steps

    def forward(self, x, table, start):
        node = start.long()
        for _ in range(self.steps):
            node = table[node].long()
        return x * 2.0 + node.to(x.dtype)[:, None]


rows = 2048
row = 16384
nodes = 33554432  # 2**25 int32 = 128 MiB: lookups miss L2
steps = 256


def get_inputs():
    x = torch.randn(rows, row, dtype=torch.float32)
    table = torch.randperm(nodes, dtype=torch.int64).to(torch.int32)
    start = torch.randint(0, nodes, (rows,), dtype=torch.int32)
    return [x, table, start]


def get_init_inputs():
    return [steps]
