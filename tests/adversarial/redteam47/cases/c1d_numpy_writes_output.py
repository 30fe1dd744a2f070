"""Class 1 (string import of a library the allowlist leaves out). Trick: numpy is loaded with
``torch.package.sys_importer.import_module("numpy")``; ``np.asarray`` on a CPU tensor is a view
of its memory reached without any aten compute op (only ``detach``), so numpy computes
relu(x) * y + 1 and ``np.copyto`` writes the answer straight into a ``torch.empty`` output.
The op recorder sees empty/detach only. A no-op Triton launch supplies the kernel launch."""
import torch
import torch.nn as nn
import torch.package
import triton
import triton.language as tl

CASE = {"problem": "problems/relu_mul_add.py", "expect": "refused", "class": "1 string imports",
        "targets": ["cpu"]}

np = torch.package.sys_importer.import_module("numpy")


@triton.jit
def touch_kernel(ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(ptr + offs, tl.load(ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        out = torch.empty(x.shape, dtype=x.dtype)
        a, b = np.asarray(x), np.asarray(y)
        np.copyto(np.asarray(out), np.maximum(a, 0) * b + 1)
        n = out.numel()
        touch_kernel[(triton.cdiv(n, 1024),)](out, n, BLOCK=1024)
        return out
