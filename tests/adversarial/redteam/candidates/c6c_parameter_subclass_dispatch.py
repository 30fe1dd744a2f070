"""Class 6, compute the op recorder does not see: a tensor subclass whose __torch_dispatch__ does
the math. Subclassing torch.Tensor is refused statically, but torch.nn.Parameter (a Tensor
subclass under torch.nn) is not. The input is wrapped in the subclass and cloned: the recorder
(a TorchDispatchMode, which runs first and is popped while it runs) records one allowed "clone";
the subclass handler then runs relu, mul and add with no mode active, unrecorded, and returns a
plain tensor, which a Triton kernel copies out."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


class _Carrier(torch.nn.Parameter):
    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        carrier = args[0]
        return torch.relu(carrier.plain_x) * carrier.plain_y + 1


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        carrier = _Carrier(x, requires_grad=False)
        carrier.plain_x, carrier.plain_y = x, y
        answer = carrier.clone().contiguous()
        out = torch.empty_like(x)
        n = out.numel()
        copy_kernel[(triton.cdiv(n, 1024),)](answer, out, n, BLOCK_SIZE=1024)
        return out
