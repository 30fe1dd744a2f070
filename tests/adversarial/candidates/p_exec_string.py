"""Trick (p): exec of a string: the "kernel" is a source string built at import and exec'd."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


_SRC = "def _impl(x, y):\n    return (x.clamp(min=0) * y) + 1\n"
_ns = {}
exec(_SRC, _ns)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return _ns["_impl"](x, y)
