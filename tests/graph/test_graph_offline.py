"""The whole graph end to end with the built-in offline synthesizer (no LLM): real tracing and
templates, real worker subprocesses, Triton's interpreter, the MTIA simulator, SQLite
checkpoints."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelevolve.config import Settings, load_settings
from kernelevolve.errors import SynthesisError
from kernelevolve.graph.session import Session, tune
from kernelevolve.graph.state import EventKind

ROOT = Path(__file__).resolve().parents[2]
PROBLEMS = ROOT / "examples" / "problems"


def settings(tmp_path: Path, **search: object) -> Settings:
    return load_settings(search={"retrieve": False, "distill": False, **search},
                         eval={"n_input_sets": 2}, runs={"dir": str(tmp_path / "runs")})


@pytest.mark.parametrize("name", ["01_gelu_sigmoid_bias", "04_row_softmax", "06_rmsnorm",
                                  "07_row_mean", "10_linear_bias_gelu"])
def test_offline_run_reaches_a_verified_kernel_on_cpu(tmp_path: Path, name: str) -> None:
    result = tune(PROBLEMS / f"{name}.py", target="cpu", settings=settings(tmp_path, rounds=3))
    assert result.best_node is not None, result
    assert result.synthesizer == "offline" and result.usage.llm_calls == 0
    assert result.stop_reason is not None and "verified kernel found" in result.stop_reason
    best = Path(result.kernel_path or "").read_text()
    assert "class ModelNew" in best and "@triton.jit" in best
    assert result.best_result is not None and result.best_result.ok


def test_offline_search_on_the_simulated_mtia_mutates_and_keeps_the_fastest(tmp_path: Path
                                                                           ) -> None:
    with Session.create(PROBLEMS / "04_row_softmax.py", target="mtia-sim:2i",
                        settings=settings(tmp_path, rounds=4, goal=100.0)) as session:
        result = session.run()
        state = session.values()
    tree = state["tree"]
    verified = tree.verified()
    assert result.finished and result.stop_reason == "budget spent: 4 rounds"
    assert len(verified) >= 2 and result.simulated
    assert result.best_speedup == max(n.speedup or 0.0 for n in verified)
    params = {tuple(sorted((n.params or {}).items())) for n in tree.nodes.values() if n.params}
    assert len(params) == len([n for n in tree.nodes.values() if n.params])  # no repeats
    intents = [e.text for e in state["events"] if e.kind == EventKind.plan]
    assert any(" is " in t and "-bound" in t for t in intents[1:])  # diagnosis-driven intent


def test_offline_synthesizer_refuses_what_it_cannot_write(tmp_path: Path) -> None:
    with pytest.raises(SynthesisError, match="offline synthesizer cannot write") as info:
        tune(PROBLEMS / "14_feature_hashing.py", target="cpu", settings=settings(tmp_path))
    assert "--llm" in str(info.value)
