"""Class 1 (exec/eval via a gadget). Trick: ``builtins`` is loaded by name through
``torch.package.sys_importer.import_module("builtins")``; its ``exec`` attribute (the static
check only refuses the bare *name* ``exec``) runs a string the check never parses. The string
imports ``torch._C`` and defines a function that computes the forward with torch under
``_DisableTorchDispatch`` (private names the check would refuse in source). A no-op Triton
launch supplies the required kernel launch."""
import torch
import torch.nn as nn
import torch.package
import triton
import triton.language as tl

CASE = {"problem": "problems/relu_mul_add.py", "expect": "refused", "class": "1 string imports",
        "targets": ["cpu"]}

SOURCE = """
import torch
import torch._C as C

def hidden(x, y):
    with C._DisableTorchDispatch():
        return (torch.relu(x) * y + 1).contiguous()
"""
namespace = {}
torch.package.sys_importer.import_module("builtins").exec(SOURCE, namespace)
hidden = namespace["hidden"]


@triton.jit
def touch_kernel(ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(ptr + offs, tl.load(ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        out = hidden(x, y)
        n = out.numel()
        touch_kernel[(triton.cdiv(n, 1024),)](out, n, BLOCK=1024)
        return out
