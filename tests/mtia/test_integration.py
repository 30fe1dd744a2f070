"""How the evaluation worker uses the simulator: results unchanged, patches undone, fast enough."""

from __future__ import annotations

import json
import time

import mtia_kernels as K
import pytest
import torch
import triton
import triton.language as tl
import triton.runtime.interpreter as interp
from triton.runtime.interpreter import InterpretedFunction

from kernelevolve.tools.harness.interpreter import ProgramOrder
from kernelevolve.tools.metrics import METRICS
from kernelevolve.tools.mtia import SimReport, simulate_forward


def _interpreter_state():
    return (
        interp.GridExecutor,
        sorted(k for k in vars(interp.interpreter_builder) if k.startswith("create_")),
        interp.ReduceOps.apply,
        interp.ScanOps.apply,
        interp._patch_lang,
        InterpretedFunction.run,
    )


def test_counting_does_not_change_results():
    torch.manual_seed(0)
    a, b = torch.randn(96, 80), torch.randn(80, 112)
    x = torch.randn(37, 264)  # 1056 B rows: 32 B aligned, masked tail in the 512-wide block
    plain = (K.matmul(a, b, 32, 32, 32), K.softmax(x), K.add(x, x, 128))
    seen = []
    simulate_forward(lambda: seen.extend([K.matmul(a, b, 32, 32, 32), K.softmax(x), K.add(x, x, 128)]),
                     max_programs_per_launch=10**6, max_sample_seconds=None)
    for want, got in zip(plain, seen, strict=True):
        assert torch.equal(want, got)


def test_patches_are_undone_and_a_worker_wrapper_keeps_counting():
    before = _interpreter_state()
    launches = []
    orig_run = InterpretedFunction.run

    def worker_run(self, *args, **kwargs):
        launches.append(self.fn.__name__)
        return orig_run(self, *args, **kwargs)

    InterpretedFunction.run = worker_run
    try:
        x = torch.randn(4096)
        report = simulate_forward(lambda: (K.add(x, x, 1024), K.add(x, x, 512)))
        assert launches == ["add_kernel", "add_kernel"]
        assert [launch.programs for launch in report.launches] == [4, 8]
        assert InterpretedFunction.run is worker_run
    finally:
        InterpretedFunction.run = orig_run
    assert _interpreter_state() == before


def _launch_then_fail():
    K.add(torch.randn(64), torch.randn(64), 64)
    raise RuntimeError("boom")


def test_a_failing_forward_raises_and_still_undoes_patches():
    before = _interpreter_state()
    with pytest.raises(RuntimeError, match="boom"):
        simulate_forward(_launch_then_fail)
    assert _interpreter_state() == before


def test_report_is_json_and_labelled_simulated():
    x = torch.randn(64, 256)
    report = simulate_forward(lambda: K.softmax(x), "v1")
    data = json.loads(json.dumps(report.to_dict()))
    assert data["simulated"] is True and data["gen"] == "v1"
    assert all(launch["simulated"] for launch in data["launches"])
    assert data["warnings"][0].startswith("simulated: MTIA v1")
    assert {m["name"] for m in data["metrics"]} <= set(METRICS)
    assert all(m["source"] == "mtia-sim" for m in data["metrics"])
    assert data["limiting_resource"] in ("launch", "sram", "dram") or data["limiting_resource"].startswith("pe:")
    assert isinstance(report, SimReport)


def test_a_time_budget_reduces_the_sample_of_slow_programs():
    a = torch.randn(256, 256)
    report = simulate_forward(lambda: K.matmul(a, a, 32, 32, 32), max_sample_seconds=1e-9)
    assert report.launches[0].programs_simulated == 4  # the corners of the 8x8 grid
    assert report.launches[0].flops == 2 * 256**3


def test_softmax_at_a_realistic_size_simulates_within_ten_seconds():
    x = torch.randn(4096, 4096)
    start = time.perf_counter()
    report = simulate_forward(lambda: K.softmax(x))
    assert time.perf_counter() - start <= 10.0
    launch = report.launches[0]
    assert launch.programs == 4096 and launch.programs_simulated <= 64
    assert launch.bytes_loaded == pytest.approx(x.numel() * 4)


@triton.jit
def order_kernel(out_ptr, counter_ptr):
    slot = tl.atomic_add(counter_ptr, 1)
    tl.store(out_ptr + slot, tl.program_id(0))


def _order(n: int) -> list[int]:
    ran = torch.full((n,), -1, dtype=torch.int32)
    order_kernel[(n,)](ran, torch.zeros(1, dtype=torch.int32))
    return ran.tolist()


def test_simulated_programs_run_in_id_order_where_the_worker_shuffles_them():
    # The evaluation worker runs programs in random orders (harness/interpreter.py); the sample
    # plan is made after program 0 and the SRAM model follows the run order, so a simulation
    # runs them in id order and then gives the worker's order back.
    builder = interp.interpreter_builder
    ProgramOrder().install(builder)
    try:
        shuffled = [_order(16) for _ in range(3)]
        assert any(o != list(range(16)) for o in shuffled)
        seen: list[list[int]] = []
        simulate_forward(lambda: seen.append(_order(16)), max_programs_per_launch=10**6,
                         max_sample_seconds=None)
        assert seen == [list(range(16))]
        assert "set_grid_idx" in vars(builder) and _order(16) != list(range(16))
    finally:
        for name in ("set_grid_dim", "set_grid_idx"):
            vars(builder).pop(name, None)
