"""The REAL local model (Qwen2.5-Coder 0.5B on the CPU) through the server and the whole graph.

These check the plumbing, not the model's skill: requests reach the server (streamed, and plain),
replies are parsed into candidates, a failed first candidate goes to the Debugger and back, and
the run's token counts are the server's. The model comes from ``KERNELEVOLVE_LLM__LOCAL_DIR`` or
the default data directory (where ``kernelevolve llm install-local --model 0.5b`` puts it); when
it is not there it is installed, and the tests skip only when that download fails.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import platformdirs
import pytest

from kernelevolve.config import Settings, load_settings
from kernelevolve.graph.search import NO_CODE
from kernelevolve.graph.session import Session, TuneResult
from kernelevolve.graph.state import RunState
from kernelevolve.llm.local import (
    MODELS,
    LocalServer,
    LocalSynthesizer,
    ModelDownloadError,
    ensure_server_package,
    install,
    is_installed,
    model_file,
)
from tests.procs import alive, children

pytestmark = pytest.mark.llm

REPO = Path(__file__).resolve().parents[2]
PROBLEMS = REPO / "examples" / "problems"
SMALL = MODELS["0.5b"]


def _models_dir() -> Path:
    # tests/conftest.py points KERNELEVOLVE_HOME at a temporary directory: look where the
    # install command put the model, not there.
    configured = os.environ.get("KERNELEVOLVE_LLM__LOCAL_DIR")
    if configured:
        return Path(configured)
    return Path(platformdirs.user_data_dir("kernelevolve")) / "models"


@pytest.fixture(scope="session")
def small_model() -> Path:
    where = _models_dir()
    try:
        ensure_server_package()
        if not is_installed(SMALL, where):
            install(SMALL, where)
    except ModelDownloadError as exc:
        pytest.skip(f"the {SMALL.name} model is not installed in {where} and cannot be "
                    f"downloaded here: {exc}")
    return model_file(SMALL, where)


@pytest.fixture(scope="session")
def server(small_model: Path) -> Iterator[LocalServer]:
    with LocalServer(small_model, alias=SMALL.name) as srv:
        yield srv
    assert not srv.running


def _post(server: LocalServer, body: dict[str, Any]) -> bytes:
    req = urllib.request.Request(f"{server.base_url}/chat/completions",
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as resp:
        return resp.read()


def test_the_server_answers_plain_and_streamed_requests(server: LocalServer) -> None:
    with urllib.request.urlopen(f"{server.base_url}/models", timeout=10) as resp:
        assert SMALL.name in resp.read().decode()
    messages = [{"role": "system", "content": "Answer in one word."},
                {"role": "assistant", "content": ""},  # "" is accepted where None is not
                {"role": "user", "content": "Name a color."}]
    plain = json.loads(_post(server, {"messages": messages, "max_tokens": 8, "temperature": 0}))
    assert plain["choices"][0]["message"]["content"].strip()
    assert plain["usage"]["completion_tokens"] >= 1 and plain["model"] == SMALL.name
    streamed = _post(server, {"messages": messages, "max_tokens": 8, "temperature": 0,
                              "stream": True, "stream_options": {"include_usage": True}})
    events = [json.loads(line[6:]) for line in streamed.decode().splitlines()
              if line.startswith("data: {")]
    assert len(events) > 2 and events[-1]["usage"]["completion_tokens"] >= 1


def test_a_taken_port_moves_the_server_and_stopping_leaves_no_process(
        small_model: Path) -> None:
    srv = LocalServer(small_model, alias=SMALL.name)
    taken = srv.port
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", taken))
        blocker.listen()
        with srv:
            assert srv.running and srv.port != taken
            proc = srv.proc
            assert proc is not None
    assert proc.poll() is not None and not srv.running


def _settings(tmp_path: Path, repairs: int) -> Settings:
    # Greedy sampling: the same replies on every machine, so the same path through the graph.
    return load_settings(
        search={"rounds": 1, "max_repairs": repairs, "max_reply_retries": 0,
                "retrieve": False, "distill": False, "warm_start": 0},
        llm={"use": "local", "local_model": "0.5b", "temperature": 0.0,
             "local_max_tokens": 640},
        eval={"n_input_sets": 2}, runs={"dir": str(tmp_path / "runs")})


def _run(problem: str, server: LocalServer, tmp_path: Path, *, examples: bool, repairs: int
         ) -> tuple[TuneResult, RunState, dict[str, float]]:
    settings = _settings(tmp_path, repairs)
    synth = LocalSynthesizer(SMALL, settings.llm, examples=examples, seed=0, server=server)
    before = server.metrics()
    with Session.create(PROBLEMS / f"{problem}.py", target="cpu", settings=settings,
                        synthesizer=synth) as session:
        result = session.run()
        state = session.values()
    after = server.metrics()
    assert server.running  # Session.close() closed the synthesizer; the server is not its
    delta = {k: after[k] - before.get(k, 0.0) for k in after if k.endswith("_total")}
    return result, state, delta


def _check_plumbing(result: TuneResult, state: RunState, delta: dict[str, float],
                    repairs: int) -> None:
    tree = state["tree"]
    nodes = [n for n in tree.nodes.values() if n.id != "root"]
    assert result.synthesizer == f"local:{SMALL.name}" and nodes
    for node in nodes:  # every candidate is one real request and its parsed reply
        assert node.model == SMALL.name, node.id  # the name the server answered with
        assert node.prompt and node.reply and node.tokens > 0
        if node.source is not None:  # parsed from the reply: a whole file, or edits
            assert "class ModelNew" in node.reply or "SEARCH" in node.reply
    # Token accounting is the server's: each streamed reply's usage, summed by the run.
    assert result.usage.llm_calls == len(nodes)
    assert result.usage.completion_tokens == delta["llamacpp:tokens_predicted_total"]
    assert result.usage.prompt_tokens == delta["llamacpp:prompt_tokens_total"] + \
        delta.get("llamacpp:prompt_tokens_cached_total", 0.0)
    first = tree.nodes["n0001"]
    assert first.origin == "coder"
    if repairs and first.evaluated and first.status not in ("ok", NO_CODE):
        # The Debugger got it back, with why it failed.
        repair = next(n for n in nodes if n.repair_of == "n0001")
        assert repair.origin == "debugger" and repair.parent == first.parent
        assert first.source is not None and first.source.strip()[:200] in (repair.prompt or "")
        assert first.status in (repair.prompt or "")
        assert "repair" in [e.kind.value for e in state["events"]]
    elif first.ok:
        assert result.best_node == "n0001"
    if not repairs:
        assert all(n.origin == "coder" for n in nodes)


@pytest.mark.timeout(420)
def test_whole_graph_with_the_real_model_on_an_elementwise_chain(server: LocalServer,
                                                                tmp_path: Path) -> None:
    # With the worked example the 0.5B model copies it (greedy sampling, every time): a
    # candidate with the wrong constructor, which the Debugger then gets.
    result, state, delta = _run("03_leaky_relu_scale_clamp", server, tmp_path, examples=True,
                                repairs=1)
    _check_plumbing(result, state, delta, repairs=1)
    first = state["tree"].nodes["n0001"]
    assert "### Worked example" in (first.prompt or "")
    assert "### The exact contract of this task" in (first.prompt or "")


@pytest.mark.timeout(420)
def test_whole_graph_with_the_real_model_on_rmsnorm(server: LocalServer, tmp_path: Path) -> None:
    result, state, delta = _run("06_rmsnorm", server, tmp_path, examples=False, repairs=0)
    _check_plumbing(result, state, delta, repairs=0)


def _server_of(cli: subprocess.Popen[str], model: Path, timeout_s: float) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert cli.poll() is None, cli.communicate()
        for pid in children(cli.pid):
            if str(model) in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                return pid
        time.sleep(0.5)
    raise AssertionError(f"the CLI started no model server within {timeout_s:.0f} s")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("how", ["ctrl-c", "kill"])
def test_tune_with_the_local_model_leaves_no_server_behind(small_model: Path, tmp_path: Path,
                                                           how: str) -> None:
    # A real `kernelevolve tune` picks the installed model by itself, says so, starts the server
    # at its first request; stopped mid-request with Ctrl-C (SIGINT to the CLI alone, as a
    # notebook's interrupt does) or killed outright, it leaves no server process, and the run
    # stays resumable.
    env = {**os.environ, "KERNELEVOLVE_HOME": str(tmp_path / "home"),
           "KERNELEVOLVE_LLM__LOCAL_DIR": str(small_model.parent),
           "KERNELEVOLVE_LLM__LOCAL_MODEL": "0.5b", "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
    env.pop("KERNELEVOLVE_LLM__MODEL", None)
    env.pop("KERNELEVOLVE_LLM__USE", None)
    cli = subprocess.Popen(
        [sys.executable, "-m", "kernelevolve.cli", "tune", str(PROBLEMS / "06_rmsnorm.py"),
         "--target", "cpu", "--rounds", "2", "--no-kb", "--out", str(tmp_path / "best.py")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    try:
        server_pid = _server_of(cli, small_model, timeout_s=180)
        time.sleep(8)  # loaded (about 2 s) and into the first request
        assert alive(server_pid) and cli.poll() is None
        kids = children(cli.pid)  # the server, and the harness's workers
        os.kill(cli.pid, signal.SIGINT if how == "ctrl-c" else signal.SIGKILL)
        output, _ = cli.communicate(timeout=60)
        deadline = time.monotonic() + 20
        while any(map(alive, kids)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not alive(server_pid), f"the model server {server_pid} outlived the CLI ({how})"
        left = [Path(f"/proc/{p}/cmdline").read_bytes()[:120] for p in kids if alive(p)]
        assert not left, f"processes outlived the CLI ({how}): {left}"
    finally:
        if cli.poll() is None:
            os.killpg(cli.pid, signal.SIGKILL)
            cli.wait()
    if how == "ctrl-c":
        assert cli.returncode == 130, output
        assert f"the run is kept. Continue it with: kernelevolve resume {tmp_path}" in output
    else:
        assert cli.returncode == -signal.SIGKILL
    assert f"local:{SMALL.name}" in output  # the run said which LLM it used
    run_dirs = list((tmp_path / "home" / "runs").iterdir())
    assert len(run_dirs) == 1 and (run_dirs[0] / "checkpoints.sqlite").is_file()
    assert str(run_dirs[0]) in output  # printed first: where to resume from
