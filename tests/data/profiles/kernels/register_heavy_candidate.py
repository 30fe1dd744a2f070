import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def chase_kernel(
    # pointers
    x_ptr, table_ptr, start_ptr, out_ptr,
    # sizes
    steps,
    # strides
    stride_xr, stride_or,
    # meta
    ROW: tl.constexpr,
):
    # Deliberately wasteful: the whole row (ROW / threads = 128 fp32 per thread) is loaded
    # before the chase and kept live in registers across it, so few programs fit on an SM
    # while each waits on one serial lookup at a time.
    pid = tl.program_id(0)
    offs = tl.arange(0, ROW)
    x = tl.load(x_ptr + pid.to(tl.int64) * stride_xr + offs)
    node = tl.load(start_ptr + pid)
    for _ in range(steps):
        node = tl.load(table_ptr + node)
    tl.store(out_ptr + pid.to(tl.int64) * stride_or + offs, x * 2.0 + node.to(tl.float32))


class ModelNew(nn.Module):
    def __init__(self, steps):
        super().__init__()
        self.steps = steps

    def forward(self, x, table, start):
        x = x.contiguous()
        rows, row = x.shape
        if row & (row - 1):
            raise ValueError(f"row length must be a power of two, got {row}")
        out = torch.empty_like(x)
        chase_kernel[(rows,)](x, table, start, out, self.steps, x.stride(0), out.stride(0),
                              ROW=row, num_warps=4)
        return out
