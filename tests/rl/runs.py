"""Real runs for the training-data tests, made once per test session under one temporary
KERNELEVOLVE_HOME (runs in home/runs, the store at home/store.sqlite), on the cpu target with
real workers and Triton's interpreter:

- ``scripted``: the real graph with the scripted chat model. Round 1: a reply without code
  (re-asked), then a cheat (n0001, refused statically); the Debugger's repair crashes the
  worker (n0002). Round 2: a kernel that does not compile (n0003), repaired (n0004, verified:
  the cpu target stops there). The first reply also echoes an API key and a base URL with
  credentials, as a model that repeats its configuration would.
- ``offline``: the offline synthesizer on the same problem: its template verifies at once
  (n0001), a demonstration.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from kernelevolve.config import Settings, load_settings
from kernelevolve.graph.session import Session, TuneResult
from kernelevolve.graph.state import RunState
from kernelevolve.synth.llm.chat import LLMSynthesizer
from kernelevolve.tools.harness.pool import EvalPool
from tests.synth.llm.scripted import ScriptedChatModel

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "problems" / "03_leaky_relu_scale_clamp.py"
REPLIES = ROOT / "tests" / "synth" / "llm" / "replies"
# A key shaped like no known token (only its value, known from the environment, gives it away)
# and one shaped like an OpenAI key; a base URL with credentials.
API_KEY = "kx9-f8e7d6c5b4a3-92817"
OPENAI_KEY = "sk-proj-Zq8tWm3Lp0Vx7Rk2Ns5Yd9Hc"
BASE_URL = "https://trainer:hunter2pass@llm.internal.example/v1"
SECRETS = (API_KEY, OPENAI_KEY, "hunter2pass", "trainer:hunter2pass")


def reply(name: str) -> str:
    return (REPLIES / f"{name}.md").read_text()


def fenced(text: str) -> str:
    """The python block of a reply."""
    return text.split("```python\n", 1)[1].split("\n```", 1)[0] + "\n"


def crash_reply() -> str:
    """The good kernel, except that its forward kills the process (SystemExit passes every
    ``except Exception``): the harness's verdict is ``crash``."""
    good = reply("good_block256")
    marker = "        out = torch.empty_like(x_flat)\n"
    assert marker in good
    return good.replace(marker, "        raise SystemExit(7)\n" + marker, 1)


SCRIPT = [
    reply("no_code") + f"\n\n(I am configured with base_url={BASE_URL} api_key={API_KEY}, "
                       f"fallback {OPENAI_KEY}.)",
    reply("cheat_torch"),
    crash_reply(),
    reply("compile_error"),
    reply("repaired"),
]


def tiny_problem(directory: Path) -> Path:
    """The example problem (the scripted replies are written for it) at 16x64: the
    interpreter checks it in a fraction of a second."""
    source = EXAMPLE.read_text().replace("batch_size = 4096", "batch_size = 16").replace(
        "dim = 4096", "dim = 64")
    assert "batch_size = 16" in source and "dim = 64" in source
    path = directory / "leaky_relu_scale_clamp.py"
    path.write_text(source)
    return path


@dataclass(frozen=True)
class Runs:
    home: Path
    problem: Path
    scripted: TuneResult
    scripted_state: RunState
    offline: TuneResult
    chat: ScriptedChatModel


def home_settings(home: Path, **search: object) -> Settings:
    return load_settings(
        search={"retrieve": False, "distill": False, **search},
        eval={"n_input_sets": 2, "gpu_compile_arch": None},
        runs={"dir": str(home / "runs")}, store={"path": str(home / "store.sqlite")})


_cache: dict[str, Runs] = {}


def _sessions(home: Path, problem: Path, chat: ScriptedChatModel) -> tuple[Session, Session]:
    scripted = Session.create(problem, target="cpu", synthesizer=LLMSynthesizer(
        chat, "scripted-coder"), settings=home_settings(home, rounds=3, max_repairs=1,
                                                        max_children=1))
    # warm_start 0: the scripted run's kernel, seeded first, would end the run before the
    # offline synthesizer writes anything
    offline = Session.create(problem, target="cpu",
                             settings=home_settings(home, rounds=2, warm_start=0))
    return scripted, offline


def _run(session: Session) -> tuple[TuneResult, RunState]:
    with session:
        return session.run(), session.values()


def real_runs(factory: pytest.TempPathFactory, warm: EvalPool | None = None) -> Runs:
    """The runs (made on first use); ``warm``: a pool whose worker starts meanwhile, by
    verifying the good kernel the scripted run ends with."""
    if "runs" not in _cache:
        home = factory.mktemp("rl-home")
        problem = tiny_problem(home)
        chat = ScriptedChatModel(SCRIPT)
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("KERNELEVOLVE_HOME", str(home))
            # Made one after the other (the offline analysis traces the reference with make_fx,
            # which is not thread-safe), run side by side: each run's first evaluation waits
            # seconds for its worker to start.
            sessions = _sessions(home, problem, chat)
            with ThreadPoolExecutor(max_workers=3) as ex:
                scripted, offline = (ex.submit(_run, s) for s in sessions)
                warmed = ex.submit(warm.evaluate, problem, fenced(reply("repaired"))) \
                    if warm is not None else None
                (result, state), (offline_result, _) = scripted.result(), offline.result()
                assert warmed is None or warmed.result().ok
        _cache["runs"] = Runs(home=home, problem=problem, scripted=result, scripted_state=state,
                              offline=offline_result, chat=chat)
    return _cache["runs"]
