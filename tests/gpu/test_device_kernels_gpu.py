"""The device profiler's account of who launched each kernel, on a real GPU: the attribution
of kernels to torch ops (device_kernels.trace_forward) and the judge's stage that refuses torch
doing the work where the Python recorder was switched off. CPU half:
tests/tools/harness/test_device_kernels.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from kernelevolve.config import EvalConfig

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

DATA = Path(__file__).resolve().parents[1] / "data"
RED_TEAM = Path(__file__).resolve().parents[1] / "adversarial" / "gpu"


def test_profiler_attributes_library_kernels_to_their_op_and_triton_to_none():
    import triton
    import triton.language as tl

    from kernelevolve.tools.harness.device_kernels import trace_forward

    @triton.jit
    def twice_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

    a = torch.randn(256, 256, device="cuda")
    twice_kernel[(64,)](a, a.numel(), BLOCK=1024)  # compiled before the profiled forward

    def forward():
        twice_kernel[(64,)](a, a.numel(), BLOCK=1024)
        c = a @ a
        torch.cuda.synchronize()
        return c

    _, kernels = trace_forward(forward)
    assert kernels is not None
    assert ["twice_kernel", None] in kernels, kernels
    ops = {op for _, op in kernels if op is not None}
    assert ops & {"aten::mm", "aten::matmul"}, kernels


def _judge_only(candidate: Path) -> dict:
    from kernelevolve.targets import get_target
    from kernelevolve.tools.harness.pool import Worker

    config = EvalConfig(n_input_sets=1, extra_shapes=False, min_trials=20, min_time_s=0.2,
                        timeout_s=600)
    worker = Worker(get_target("cuda"), 0, config)
    try:
        job = {"id": "device-kernels", "problem": str(DATA / "relu_bf16_small.py"),
               "candidate": str(candidate), "config": json.loads(config.model_dump_json()),
               "timed": True}
        return worker.evaluate(job, config.timeout_s)
    finally:
        worker.close()


def test_torch_unseen_by_the_python_recorder_is_seen_by_the_device_profiler():
    reply = _judge_only(RED_TEAM / "relu_torch_unrecorded.py")
    assert reply["status"] == "cheat", reply.get("message")
    assert "device profiler" in reply["message"], reply["message"]


def test_honest_triton_kernel_passes_the_device_profiler():
    reply = _judge_only(DATA / "relu_triton.py")
    assert reply["status"] == "ok", reply.get("message")
    seen = [c for c in reply["checks"] if c["name"] == "kernels seen by the device profiler"]
    assert seen and seen[0]["passed"] and not seen[0]["skipped"], reply["checks"]
