"""One small real run shared by the store and CLI tests (each real evaluation costs seconds):
the scripted chat model writes a good kernel (n0001), then a child that does not compile
(n0002) which the Debugger repairs (n0003, a sibling of what it fixed), on the simulated MTIA,
with real workers, the Triton interpreter and SQLite checkpoints. Everything lives under one
temporary KERNELEVOLVE_HOME (runs in home/runs, the store at home/store.sqlite)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from kernelevolve.config import Settings, load_settings
from kernelevolve.graph.session import RunSpec, Session, TuneResult
from kernelevolve.graph.state import RunState
from kernelevolve.synth.llm.chat import LLMSynthesizer
from tests.synth.llm.scripted import ScriptedChatModel

ROOT = Path(__file__).resolve().parents[2]
PROBLEM = ROOT / "examples" / "problems" / "03_leaky_relu_scale_clamp.py"
REPLIES = ROOT / "tests" / "synth" / "llm" / "replies"
SCRIPT = ["good_block256", "compile_error", "repaired"]


@dataclass(frozen=True)
class RealRun:
    home: Path
    run_dir: Path
    spec: RunSpec
    state: RunState
    result: TuneResult


def home_settings(home: Path, **search: object) -> Settings:
    return load_settings(
        search={"retrieve": False, "distill": False, **search}, eval={"n_input_sets": 2},
        runs={"dir": str(home / "runs")}, store={"path": str(home / "store.sqlite")})


_cache: dict[str, RealRun] = {}


def real_run(factory: pytest.TempPathFactory) -> RealRun:
    """The shared run, made on first use in this test session."""
    if "run" not in _cache:
        home = factory.mktemp("store-home")
        chat = ScriptedChatModel([(REPLIES / f"{name}.md").read_text() for name in SCRIPT])
        settings = home_settings(home, rounds=2, goal=100.0, max_children=1)
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("KERNELEVOLVE_HOME", str(home))
            with Session.create(PROBLEM, target="mtia-sim:2i", settings=settings,
                                synthesizer=LLMSynthesizer(chat, "scripted-coder")) as session:
                result = session.run()
                _cache["run"] = RealRun(home=home, run_dir=session.run_dir, spec=session.spec,
                                        state=session.values(), result=result)
    return _cache["run"]
