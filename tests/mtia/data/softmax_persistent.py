"""Row softmax, persistent: 64 programs (one per PE of MTIA 2i) stride over the rows, each
row read once and written once (tools/mtia/MODEL.md, "Fidelity")."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

PERSISTENT = 1   # grid = PEs, each program strides over rows
BLOCK_M = 1         # rows per step
BLOCK_N = 0         # columns per step (0: the whole row)
PASSES = 1           # 1: row in registers; 2: online max/sum then output; 3: max, sum, output


@triton.jit
def softmax_kernel(
    # Pointers
    x_ptr, out_ptr,
    # Sizes
    n_rows, n_cols,
    # Strides
    stride_xm, stride_om,
    # Meta-parameters
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, PASSES: tl.constexpr, STEP: tl.constexpr,
):
    pid = tl.program_id(0)
    offs_n = tl.arange(0, BLOCK_N)
    for start in range(pid * BLOCK_M, n_rows, STEP):
        rows = start + tl.arange(0, BLOCK_M)
        row_mask = rows[:, None] < n_rows
        x_rows = x_ptr + rows[:, None].to(tl.int64) * stride_xm
        o_rows = out_ptr + rows[:, None].to(tl.int64) * stride_om
        if PASSES == 1:
            mask = row_mask & (offs_n[None, :] < n_cols)
            x = tl.load(x_rows + offs_n[None, :], mask=mask, other=-float("inf"))
            e = tl.exp(x - tl.max(x, axis=1)[:, None])
            out = e * (1.0 / tl.sum(e, axis=1))[:, None]
            tl.store(o_rows + offs_n[None, :], out, mask=mask)
        else:
            if PASSES == 2:
                m_lane = tl.full((BLOCK_M, BLOCK_N), -float("inf"), dtype=tl.float32)
                s_lane = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
                for c in range(0, n_cols, BLOCK_N):
                    mask = row_mask & (c + offs_n[None, :] < n_cols)
                    x = tl.load(x_rows + c + offs_n[None, :], mask=mask, other=-float("inf"))
                    m_new = tl.maximum(m_lane, x)
                    s_lane = s_lane * tl.exp(m_lane - m_new) + tl.exp(x - m_new)
                    m_lane = m_new
                m_row = tl.max(m_lane, axis=1)
                inv = 1.0 / tl.sum(s_lane * tl.exp(m_lane - m_row[:, None]), axis=1)
            else:
                m_acc = tl.full((BLOCK_M, BLOCK_N), -float("inf"), dtype=tl.float32)
                for c in range(0, n_cols, BLOCK_N):
                    mask = row_mask & (c + offs_n[None, :] < n_cols)
                    m_acc = tl.maximum(m_acc, tl.load(x_rows + c + offs_n[None, :], mask=mask, other=-float("inf")))
                m_row = tl.max(m_acc, axis=1)
                s_acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
                for c in range(0, n_cols, BLOCK_N):
                    mask = row_mask & (c + offs_n[None, :] < n_cols)
                    x = tl.load(x_rows + c + offs_n[None, :], mask=mask, other=-float("inf"))
                    s_acc += tl.exp(x - m_row[:, None])
                inv = 1.0 / tl.sum(s_acc, axis=1)
            for c in range(0, n_cols, BLOCK_N):
                mask = row_mask & (c + offs_n[None, :] < n_cols)
                x = tl.load(x_rows + c + offs_n[None, :], mask=mask, other=-float("inf"))
                tl.store(o_rows + c + offs_n[None, :], tl.exp(x - m_row[:, None]) * inv[:, None], mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if x.dim() != 2 or x.dtype != torch.float32:
            raise ValueError(f"expected a 2-D fp32 tensor, got {x.dtype} {list(x.shape)}")
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.empty_like(x)
        block_n = BLOCK_N or triton.next_power_of_2(n_cols)
        passes = PASSES if block_n < n_cols else 1
        groups = triton.cdiv(n_rows, BLOCK_M)
        programs = min(64, groups) if PERSISTENT else groups
        softmax_kernel[(programs,)](x, out, n_rows, n_cols, x.stride(0), out.stride(0),
                                    BLOCK_M=BLOCK_M, BLOCK_N=block_n, PASSES=passes,
                                    STEP=programs * BLOCK_M)
        return out
