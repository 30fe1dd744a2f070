"""Note, its sibling that escapes nothing: an ordinary exception (ValueError) with a 6 MB
message of "ok" lines. The candidate process catches it and replies runtime_error with
str(exc) whole; beside the 600-character note, this path has no bound (not today's change)."""
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        raise ValueError("ok\n" * (2 << 20))
