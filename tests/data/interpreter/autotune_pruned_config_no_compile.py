"""A two-config @triton.autotune whose second config, pruned away at these sizes so it never runs
here, takes a branch no GPU compiler accepts (``scale`` an int in one branch of a runtime ``if``
and a float in the other): at other sizes a GPU's autotuner would try it."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


def first_only(configs, named_args, **kwargs):
    return configs[:1]


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 256, "SCALED": False}, num_warps=4),
        triton.Config({"BLOCK": 512, "SCALED": True}, num_warps=8),
    ],
    key=["n"],
    prune_configs_by={"early_config_prune": first_only},
)
@triton.jit
def relu_mul_add_kernel(
    # pointers
    x_ptr, y_ptr, out_ptr,
    # sizes
    n,
    # meta
    BLOCK: tl.constexpr, SCALED: tl.constexpr,
):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    out = tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0) * tl.load(y_ptr + offs, mask=mask)
    if SCALED:
        scale = 1
        if n > 0:
            scale = 1.0
        out = out * scale
    tl.store(out_ptr + offs, out + 1.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        x, y = x.contiguous(), y.contiguous()
        out = torch.empty_like(x)
        n = out.numel()
        relu_mul_add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
        return out
