"""Class 6 (torch computing outside the recorded forward), against the allowlist. Trick: c6a's
work moved into a ``load_state_dict`` post-hook registered in ``__init__`` (nn.Module's own
method, not an override) and written with tensor operators only (``e ** -g``, ``1 / (1 + ...)``,
``*``), which the static check leaves to the runtime op recorder, since it cannot tell a tensor
operator from a number's by name. The candidate process calls ``load_state_dict`` with the
reference's weights outside any recorder, so sigmoid(gate) * exp(log_scale) is computed by
torch unrecorded; the forward's kernel only multiplies."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/gated_scale.py", "expect": "refused",
        "class": "6 outside the forward (own)", "targets": ["cpu"]}

E = 2.718281828459045


@triton.jit
def scale_kernel(x_ptr, s_ptr, out_ptr, n, D, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    s = tl.load(s_ptr + offs % D, mask=mask)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * s, mask=mask)


def _fold(module, incompatible):
    with torch.no_grad():
        module.scale = (1 / (1 + E ** -module.gate)) * E ** module.log_scale


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.gate = nn.Parameter(torch.randn(dim))
        self.log_scale = nn.Parameter(torch.randn(dim) * 0.1)
        self.scale = None
        self.register_load_state_dict_post_hook(_fold)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n, D = x.numel(), x.shape[-1]
        scale_kernel[(triton.cdiv(n, 1024),)](x, self.scale, out, n, D, BLOCK=1024)
        return out
