"""Note, a grandchild that keeps it open: at construction the candidate starts a DataLoader
with one worker (a fork of the candidate process, inheriting every descriptor, the note pipes'
write ends included) whose worker_init_fn spins for ever. The forward is wrong (no relu). The
judge's reading of the note waits for the pipe's writers to close, and one never does."""
import torch
import torch.nn as nn
import torch.utils.data
import triton
import triton.language as tl


def spin(worker_id):
    n = 0
    while True:
        n += 1


@triton.jit
def mul_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * y + 1.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.loader = iter(torch.utils.data.DataLoader([0], num_workers=1, worker_init_fn=spin))

    def forward(self, x, y):
        x, y = x.contiguous(), y.contiguous()
        out = torch.empty_like(x)
        n = out.numel()
        mul_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)
        return out
