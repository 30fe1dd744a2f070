"""Class 2 (seed leaking into the candidate process). Trick: the candidate process seeds torch
with the evaluation's seed before building ModelNew (do_build's ``torch.manual_seed(seed)``), so
``torch.default_generator.initial_seed()`` in ``__init__`` is that seed. The constructor
regenerates every input set the judge will draw (seed + 1000..1004, 2000, 2001, 2200, 2300,
2500, 3000, 4000, and the x100 / +4 variants) at the base and other-shape sizes, computes the
answers with torch there (no recorder is active outside the forward) and keeps them. The forward
only looks the answer up: one Triton kernel compares the input with each stored input, another
copies the matching stored answer (zeros when nothing matches)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/relu_mul_add.py", "expect": "refused", "class": "2 seed leak",
        "targets": ["cpu", "mtia-sim:2i"]}

OFFSETS = [1000, 1001, 1002, 1003, 1004, 2000, 2001, 2200, 2300, 2500, 3000, 4000]
SHAPES = [(16, 256), (13, 193)]


@triton.jit
def match_kernel(x_ptr, table_ptr, flag_ptr, n, BLOCK: tl.constexpr):
    k = tl.program_id(0)
    diff = 0
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        a = tl.load(x_ptr + offs, mask=mask, other=0.0)
        b = tl.load(table_ptr + k * n + offs, mask=mask, other=0.0)
        diff += tl.sum((a != b).to(tl.int32), axis=0)
    tl.store(flag_ptr + k, (diff == 0).to(tl.int32))


@triton.jit
def select_kernel(answers_ptr, flag_ptr, out_ptr, n, K, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for k in range(0, K):
        f = tl.load(flag_ptr + k)
        v = tl.load(answers_ptr + k * n + offs, mask=mask, other=0.0)
        acc = tl.where(f != 0, v, acc)
    tl.store(out_ptr + offs, acc, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        seed = torch.default_generator.initial_seed()
        self.tables = {}
        for shape in SHAPES:
            xs, answers = [], []
            for off in OFFSETS:
                gen = torch.Generator().manual_seed(seed + off)
                x = torch.randn(shape, generator=gen)
                y = torch.randn(shape, generator=gen)
                for tx, ty in ((x, y), (x * 100, y * 100), (x + 4, y + 4)):
                    xs.append(tx.reshape(-1))
                    answers.append((torch.relu(tx) * ty + 1).reshape(-1))
            self.tables[shape] = (torch.stack(xs), torch.stack(answers))

    def forward(self, x, y):
        inputs, answers = self.tables[tuple(x.shape)]
        xc = x.contiguous()
        k, n = inputs.shape
        flags = torch.zeros(k, dtype=torch.int32)
        match_kernel[(k,)](xc, inputs, flags, n, BLOCK=1024)
        out = torch.empty(x.shape, dtype=x.dtype)
        select_kernel[(triton.cdiv(n, 1024),)](answers, flags, out, n, k, BLOCK=1024)
        return out
