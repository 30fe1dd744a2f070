"""The numeric flags PyTorch runs fp32 work under, for the baselines a speedup is measured
against (``eval.baseline``, ``eval.baseline_flags``).

Two roles, kept apart: the *truth* a candidate is checked against is always computed with TF32
off (``worker.serve`` sets that for the whole process), while the *baselines* are timed with
the flags a user runs: by default PyTorch's own, under which cuDNN computes fp32 convolutions
in TF32 (``torch.backends.cudnn.allow_tf32`` is True since PyTorch 1.7) and matrix products in
full fp32 (``torch.get_float32_matmul_precision() == 'highest'``).

Worker-side: torch and the standard library only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

PRESETS: dict[str, dict[str, Any]] = {
    "defaults": {"cudnn_allow_tf32": True, "float32_matmul_precision": "highest",
                 "compile_mode": "default"},
    "fp32": {"cudnn_allow_tf32": False, "float32_matmul_precision": "highest",
             "compile_mode": "default"},
}
NUMERIC = ("cudnn_allow_tf32", "float32_matmul_precision")

# The aten ops whose fp32 results each flag changes on a GPU (cuDNN: convolutions and RNNs;
# the matmul precision: cuBLAS's products and what decomposes into them).
CUDNN_OPS = frozenset({
    "convolution", "_convolution", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "cudnn_convolution", "cudnn_convolution_transpose",
    "_cudnn_rnn", "lstm", "gru", "rnn_tanh", "rnn_relu",
})
MATMUL_OPS = frozenset({
    "mm", "bmm", "addmm", "baddbmm", "addbmm", "matmul", "linear", "_addmm_activation",
    "_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_cudnn_attention", "einsum", "tensordot", "chain_matmul",
    "linalg_multi_dot", "bilinear", "_trilinear",
})


def resolve(preset: str, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The flags of ``preset`` ('defaults' or 'fp32') with the fields of ``overrides`` that are
    set (``eval.baseline_flags``)."""
    if preset not in PRESETS:
        raise ValueError(f"unknown baseline {preset!r}: 'defaults' or 'fp32'")
    flags = dict(PRESETS[preset])
    flags.update({k: v for k, v in (overrides or {}).items() if v is not None})
    return flags


def label(flags: dict[str, Any]) -> str:
    """``PyTorch defaults (cuDNN TF32 on, matmul 'highest')`` and the like."""
    numeric = {k: flags[k] for k in NUMERIC}
    name = next((n for n, p in PRESETS.items() if {k: p[k] for k in NUMERIC} == numeric), None)
    title = {"defaults": "PyTorch defaults", "fp32": "fp32 (TF32 off)"}.get(name or "", "custom")
    text = (f"{title} (cuDNN TF32 {'on' if flags['cudnn_allow_tf32'] else 'off'}, matmul "
            f"'{flags['float32_matmul_precision']}'")
    if flags.get("compile_mode", "default") != "default":
        text += f", torch.compile mode '{flags['compile_mode']}'"
    return text + ")"


def differing_ops(a: dict[str, Any], b: dict[str, Any]) -> frozenset[str]:
    """The aten ops whose fp32 result differs between the flags ``a`` and ``b``."""
    ops: set[str] = set()
    if bool(a["cudnn_allow_tf32"]) != bool(b["cudnn_allow_tf32"]):
        ops |= CUDNN_OPS
    if a["float32_matmul_precision"] != b["float32_matmul_precision"]:
        ops |= MATMUL_OPS
    return frozenset(ops)


def inexact_ops(flags: dict[str, Any]) -> frozenset[str]:
    """The aten ops these flags let compute below fp32 precision on a GPU."""
    return differing_ops(flags, PRESETS["fp32"])


@contextlib.contextmanager
def applied(flags: dict[str, Any]) -> Iterator[None]:
    """Run under ``flags``' numeric switches, restoring the process's own after (the judge's
    are TF32 off: its truth must stay the accurate side)."""
    cudnn = torch.backends.cudnn.allow_tf32
    precision = torch.get_float32_matmul_precision()
    torch.backends.cudnn.allow_tf32 = bool(flags["cudnn_allow_tf32"])
    torch.set_float32_matmul_precision(str(flags["float32_matmul_precision"]))
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32 = cudnn
        torch.set_float32_matmul_precision(precision)
