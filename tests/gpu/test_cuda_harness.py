"""The harness on a real GPU: CUDA C++ candidates, device faults, timing and the suspicious-speedup
path. Marked ``gpu``: skipped where no CUDA device is visible (CI); run on the GPU machine with
``python -m pytest -m gpu tests/gpu``."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kernelevolve.config import EvalConfig
from kernelevolve.tools.harness.pool import WorkerPool

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

DATA = Path(__file__).resolve().parents[1] / "data"
# Small sizes: the unmodified KernelBench file holds 1.6e9 elements, minutes per check.
RELU = DATA / "relu_bf16_small.py"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

CUDA_RELU = r'''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = """
#include <torch/extension.h>
#include <cuda_bf16.h>

__global__ void relu_kernel(const __nv_bfloat16* x, __nv_bfloat16* out, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = __bfloat162float(x[i]);
        out[i] = __float2bfloat16(v > 0.f ? v : 0.f);
    }
}

torch::Tensor relu(torch::Tensor x) {
    auto out = torch::empty_like(x);
    long n = x.numel();
    relu_kernel<<<(n + 255) / 256, 256>>>(
        reinterpret_cast<const __nv_bfloat16*>(x.data_ptr()),
        reinterpret_cast<__nv_bfloat16*>(out.data_ptr()), n);
    return out;
}
"""
cpp_src = "torch::Tensor relu(torch::Tensor x);"
ext = load_inline("relu_inline_ext", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["relu"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.relu(x.contiguous())
'''


@pytest.fixture(scope="module")
def pool():
    with WorkerPool("cuda", EvalConfig(n_input_sets=2, min_trials=20, min_time_s=0.2,
                                       timeout_s=600)) as p:
        yield p


def test_cuda_cpp_candidate_is_verified_and_timed(pool):
    result = pool.evaluate(RELU, CUDA_RELU)
    assert result.status == "ok", result.message + result.stderr_tail
    assert result.kernel_launches == 1
    t = result.timing
    assert t is not None and not t.simulated and t.candidate.median_ms > 0
    assert t.speedup_vs_eager and t.speedup_vs_eager > 0
    assert t.compiled is not None or t.compile_error


def test_illegal_memory_access_ends_that_evaluation_only(pool):
    bad = (DATA / "relu_triton.py").read_text().replace(
        "tl.store(out_ptr + offs,", "tl.store(out_ptr + offs + (1 << 40),")
    result = pool.evaluate(RELU, bad)
    assert result.status in ("runtime_error", "crash"), result.message
    assert pool.evaluate(RELU, DATA / "relu_triton.py").status == "ok"


def test_suspicious_speedup_is_reverified():
    config = EvalConfig(n_input_sets=2, min_trials=20, min_time_s=0.2, suspicious_speedup=1.0001)
    name = "06_rmsnorm.py"
    with WorkerPool("cuda", config, workers=1) as p:
        result = p.evaluate(EXAMPLES / "problems" / name, EXAMPLES / "solutions" / name)
    assert result.status == "ok", result.message
    if result.speedup and result.speedup > 1.0001:
        assert any("re-verified" in f for f in result.flags)
        assert any(c.name == "correct on fresh other shapes" for c in result.checks)


LARGE_RELU = DATA / "relu_bf16_large.py"
RED_TEAM = Path(__file__).resolve().parents[1] / "adversarial" / "gpu"


def _judge_only(candidate: Path) -> dict:
    """The candidate evaluated by the judge alone, past the static stage (which refuses these
    patches): the judge's own bounds on reported timing must hold for code that escaped it."""
    import json

    from kernelevolve.targets import get_target
    from kernelevolve.tools.harness.pool import Worker

    config = EvalConfig(n_input_sets=1, extra_shapes=False, min_trials=20, min_time_s=0.2,
                        timeout_s=600)
    worker = Worker(get_target("cuda"), 0, config)
    try:
        job = {"id": "red-team", "problem": str(LARGE_RELU), "candidate": str(candidate),
               "config": json.loads(config.model_dump_json()), "timed": True}
        return worker.evaluate(job, config.timeout_s)
    finally:
        worker.close()


def test_reported_timing_below_the_judges_wall_clock_is_refused():
    reply = _judge_only(RED_TEAM / "fake_event_timing.py")
    assert reply["status"] == "cheat", reply.get("message")
    assert "judge's clock" in reply["message"]


def test_reported_timing_below_the_memory_floor_is_refused():
    reply = _judge_only(RED_TEAM / "fake_timing_skip_repeat.py")
    assert reply["status"] == "cheat", reply.get("message")
    assert "copy bandwidth" in reply["message"]


def test_honest_kernel_passes_the_judges_timing_bounds():
    reply = _judge_only(DATA / "relu_triton.py")
    assert reply["status"] == "ok", reply.get("message")
    names = [c["name"] for c in reply["checks"]]
    assert "reported timing within the judge's wall clock" in names
    assert "reported timing above the memory floor" in names
    timing = reply["timing"]
    # ReLU on 2 GiB in and out: eager streams at the copy bandwidth, and so does the kernel
    assert timing["roofline_beyond_l2"] and timing["traffic_bytes"] >= 2 << 30
    assert 0.8 <= timing["eager_roofline"] <= 1.3, timing
    assert 0.8 <= timing["candidate_roofline"] <= 1.3, timing


def test_references_are_timed_once_per_run_and_again_when_asked(pool):
    problem, solution = EXAMPLES / "problems" / "04_row_softmax.py", EXAMPLES / "solutions" / (
        "04_row_softmax.py")
    first = pool.evaluate(problem, solution)
    again = pool.evaluate(problem, solution)
    fresh = pool.evaluate(problem, solution, fresh_references=True)
    assert first.ok and again.ok and fresh.ok, (first.message, again.message, fresh.message)
    assert not first.timing.references_reused and not fresh.timing.references_reused
    assert again.timing.references_reused
    assert again.timing.eager == first.timing.eager  # the same figures, not re-measured
    assert fresh.timing.eager != first.timing.eager
    assert again.stages["timing"] < first.stages["timing"]  # no torch.compile the second time


def test_a_run_reports_its_best_kernel_beside_fresh_references(tmp_path):
    """During a search eager and torch.compile are timed once and reused; the figure the run
    reports for its best kernel is measured again beside freshly timed references."""
    import json

    from kernelevolve.config import load_settings
    from kernelevolve.graph.session import FINAL, tune

    settings = load_settings(
        search={"retrieve": False, "distill": False, "rounds": 3},
        eval={"n_input_sets": 2, "min_trials": 20, "min_time_s": 0.2},
        runs={"dir": str(tmp_path / "runs")})
    result = tune(EXAMPLES / "problems" / "04_row_softmax.py", target="cuda", llm="offline",
                  settings=settings)
    assert result.finished and result.best_result is not None, result
    timing = result.best_result.timing
    assert timing is not None and not timing.references_reused
    final = Path(result.run_dir) / FINAL
    if final.exists():  # the best came after the first timed candidate: re-timed at the end
        assert json.loads(final.read_text())["node"] == result.best_node
        assert result.best_speedup == pytest.approx(timing.speedup_vs_eager)
    else:  # the best is the candidate whose evaluation timed the references
        from kernelevolve.graph.session import Session
        from kernelevolve.tools.harness.result import EvalResult

        with Session.open(result.run_dir, settings=settings) as session:
            best = session.values()["tree"].nodes[result.best_node]
        searched = EvalResult.model_validate_json(best.result_json).timing
        assert searched is not None and not searched.references_reused


def test_a_run_on_an_operator_eager_runs_at_the_roofline_stops_at_once(tmp_path):
    """ReLU on 4 GiB of traffic: eager already streams at copy speed, so the run says there is
    nothing to gain after its first timed kernel instead of spending its rounds."""
    from kernelevolve.config import load_settings
    from kernelevolve.graph.session import tune

    settings = load_settings(
        search={"retrieve": False, "distill": False, "rounds": 6, "warm_start": 0},
        eval={"n_input_sets": 1, "min_trials": 20, "min_time_s": 0.2},
        runs={"dir": str(tmp_path / "runs")})
    result = tune(LARGE_RELU, target="cuda", llm="offline", settings=settings)
    assert result.ok, result
    assert result.stop_reason and result.stop_reason.startswith("nothing to gain"), result
    assert result.candidates == 1
