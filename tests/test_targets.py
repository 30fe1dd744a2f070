"""The target registry, and the simulated MTIA target end to end through the harness."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelevolve.config import EvalConfig
from kernelevolve.errors import TargetError
from kernelevolve.targets import get_target, target_names
from kernelevolve.tools.harness.pool import WorkerPool

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_registry_names_and_errors():
    assert {"cpu", "cuda", "mtia-sim:2i", "mtia-sim:v1", "mtia-sim:300"} <= set(target_names())
    assert get_target("mtia-sim").name == "mtia-sim:2i"
    sim = get_target("mtia-sim:v1")
    assert sim.simulated and sim.timed and sim.interpreter and sim.device == "cpu"
    assert not get_target("cpu").timed
    with pytest.raises(TargetError, match="unknown target 'tpu'"):
        get_target("tpu")
    with pytest.raises(TargetError, match="unknown MTIA generation 'v9'"):
        get_target("mtia-sim:v9")


def test_cuda_without_gpu_says_what_to_do():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    with pytest.raises(TargetError, match="--target cpu"):
        get_target("cuda")
    assert get_target(None).name == "cpu"


@pytest.fixture(scope="module")
def mtia_pool():
    with WorkerPool("mtia-sim:2i", EvalConfig(n_input_sets=2), workers=1) as pool:
        yield pool


def test_mtia_sim_verifies_and_times_with_the_chip_model(mtia_pool):
    name = "04_row_softmax.py"
    result = mtia_pool.evaluate(EXAMPLES / "problems" / name, EXAMPLES / "solutions" / name)
    assert result.status == "ok", result.message
    t = result.timing
    assert t is not None and t.simulated and t.compiled is None
    assert t.sizes == {"batch_size": 4096, "dim": 4096}  # timed at the problem's own sizes
    assert t.candidate.median_ms > 0 and t.eager.median_ms > 0 and t.speedup_vs_eager > 0
    assert result.profile[0].instrument == "mtia-sim"
    assert result.profile[0].detail["candidate"]["simulated"] is True
    assert "simulated" in result.device


def test_mtia_sim_rejects_a_kernel_the_chip_cannot_run(mtia_pool):
    # Feature hashing writes int64 pairs at row strides that are not 32-byte aligned DMA.
    name = "14_feature_hashing.py"
    result = mtia_pool.evaluate(EXAMPLES / "problems" / name, EXAMPLES / "solutions" / name)
    assert result.status == "compile_error"
    assert "cannot run this kernel" in result.message and "align" in result.message


def test_tune_defaults_to_the_simulated_mtia_without_a_gpu():
    import torch

    from kernelevolve.targets import tune_target

    expected = "cuda" if torch.cuda.is_available() else "mtia-sim:2i"
    target = tune_target()
    assert target.name == expected
    assert target.timed  # a real timing signal to search on, unlike the cpu target


def test_an_interpreter_that_breaks_on_this_numpy_is_named_before_any_kernel_runs(monkeypatch):
    # Triton < 3.7's interpreter converts 1-element arrays with int(), which NumPy 2.4 refuses.
    import importlib.metadata

    from kernelevolve.errors import TargetError
    from kernelevolve.targets import get_target

    installed = {"triton": "3.6.0", "numpy": "2.4.1"}
    monkeypatch.setattr(importlib.metadata, "version", lambda name: installed[name])
    for name in ("cpu", "mtia-sim:2i"):
        with pytest.raises(TargetError, match=r"triton>=3\.7.*numpy<2\.4"):
            get_target(name)
    installed["numpy"] = "2.3.5"
    assert get_target("cpu").interpreter
