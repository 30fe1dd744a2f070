"""The REAL local model (Qwen2.5-Coder 0.5B on the CPU) through the server and the whole graph.

These check the plumbing, not the model's skill: requests reach the server (streamed, and plain),
replies are parsed into candidates, a failed first candidate goes to the Debugger and back, and
the run's token counts are the server's. The model comes from ``KERNELEVOLVE_LLM__LOCAL_DIR`` or
the default data directory (where ``kernelevolve llm install-local --model 0.5b`` puts it); when
it is not there it is installed, and the tests skip only when that download fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import platformdirs
import pytest

from kernelevolve.config import Settings, load_settings
from kernelevolve.graph.search import NO_CODE, Node
from kernelevolve.graph.session import Session, TuneResult
from kernelevolve.graph.state import Draft, RunState
from kernelevolve.synth.llm.local import (
    MODELS,
    LocalServer,
    LocalSynthesizer,
    ModelDownloadError,
    ensure_server_package,
    install,
    is_installed,
    model_file,
)
from tests.procs import CLI, alive, children

pytestmark = pytest.mark.llm

REPO = Path(__file__).resolve().parents[3]
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


def _settings(tmp_path: Path, repairs: int, max_tokens: int) -> Settings:
    # Greedy sampling: the same replies run after run here, so the same path through the graph.
    return load_settings(
        search={"rounds": 1, "max_repairs": repairs, "max_reply_retries": 0,
                "retrieve": False, "distill": False, "warm_start": 0},
        llm={"use": "local", "local_model": "0.5b", "temperature": 0.0,
             "local_max_tokens": max_tokens},
        eval={"n_input_sets": 2}, runs={"dir": str(tmp_path / "runs")})


def _run(problem: str, server: LocalServer, tmp_path: Path, *, examples: bool, repairs: int,
         seeds: list[Draft] | None = None, max_tokens: int = 640
         ) -> tuple[TuneResult, RunState, dict[str, float]]:
    settings = _settings(tmp_path, repairs, max_tokens)
    synth = LocalSynthesizer(SMALL, settings.llm, examples=examples, seed=0, server=server)
    before = server.metrics()
    with Session.create(PROBLEMS / f"{problem}.py", target="cpu", settings=settings,
                        synthesizer=synth, seeds=seeds or []) as session:
        result = session.run()
        state = session.values()
    after = server.metrics()
    assert server.running  # Session.close() closed the synthesizer; the server is not its
    delta = {k: after[k] - before.get(k, 0.0) for k in after if k.endswith("_total")}
    return result, state, delta


def _check_plumbing(result: TuneResult, state: RunState, delta: dict[str, float]) -> list[Node]:
    """Every model-written candidate is one real request and its parsed reply, and the run's
    token counts are the server's; returns those candidates."""
    nodes = [n for n in state["tree"].nodes.values() if n.origin in ("coder", "debugger")]
    assert result.synthesizer == f"local:{SMALL.name}" and nodes
    for node in nodes:
        assert node.model == SMALL.name, node.id  # the name the server answered with
        assert node.prompt and node.reply and node.tokens > 0
        if node.source is not None:  # parsed from the reply: a whole file, or edits
            assert "class ModelNew" in node.reply or "SEARCH" in node.reply
            assert node.evaluated
        else:
            assert node.status == NO_CODE and node.message
    assert result.usage.llm_calls == len(nodes)
    assert result.usage.completion_tokens == delta["llamacpp:tokens_predicted_total"]
    assert result.usage.prompt_tokens == delta["llamacpp:prompt_tokens_total"] + \
        delta.get("llamacpp:prompt_tokens_cached_total", 0.0)
    return nodes


def _check_repair(state: RunState, failed_id: str) -> Node:
    """The Debugger got the failed candidate back, with why it failed, and asked the model."""
    tree = state["tree"]
    failed = tree.nodes[failed_id]
    repair = next(n for n in tree.nodes.values() if n.repair_of == failed_id)
    assert repair.origin == "debugger" and repair.parent == failed.parent
    prompt = repair.prompt or ""
    assert prompt.startswith("# Repair") and f"failed with status {failed.status}" in prompt
    assert failed.source is not None and failed.source.strip()[:300] in prompt
    assert f"The error: {failed.message.strip().splitlines()[0]}" in prompt
    assert "repair" in [e.kind.value for e in state["events"]]
    return repair


@pytest.mark.timeout(420)
def test_whole_graph_with_the_real_model_on_an_elementwise_chain(server: LocalServer,
                                                                tmp_path: Path) -> None:
    # The Coder's request carries the worked example and the contract; its reply is parsed
    # and evaluated (the Debugger's round trip is the next test's).
    result, state, delta = _run("03_leaky_relu_scale_clamp", server, tmp_path, examples=True,
                                repairs=0)
    nodes = _check_plumbing(result, state, delta)
    first = state["tree"].nodes["n0001"]
    assert [n.id for n in nodes] == ["n0001"] and first.origin == "coder"
    assert "### Worked example" in (first.prompt or "")
    assert "### The exact contract of this task" in (first.prompt or "")
    assert (result.best_node == "n0001") == first.ok


@pytest.mark.timeout(420)
def test_the_debugger_round_trip_with_the_real_model_on_rmsnorm(server: LocalServer,
                                                               tmp_path: Path) -> None:
    # A warm-start kernel from an earlier run that no longer compiles (a misspelt name) is
    # verified first, fails, and goes to the Debugger, whose request the real model answers.
    solution = (REPO / "examples" / "solutions" / "06_rmsnorm.py").read_text()
    broken = solution.replace("/ n_cols + eps)", "/ n_cols + epsilon)", 1)
    assert broken != solution
    seed = Draft(source=broken, origin="seed", intent="warm start: n0004 of an earlier run")
    result, state, delta = _run("06_rmsnorm", server, tmp_path, examples=False, repairs=1,
                                seeds=[seed], max_tokens=1280)
    seeded = state["tree"].nodes["n0001"]
    assert seeded.origin == "seed" and seeded.model == "" and not seeded.ok
    assert "epsilon" in seeded.message + seeded.stderr_tail
    repair = _check_repair(state, "n0001")
    assert _check_plumbing(result, state, delta) == [repair]  # one request: the repair
    assert "epsilon" in (repair.prompt or "")


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
    # A real `kernelevolve tune` picks the installed model by itself for an operator the offline
    # templates do not cover (dot interaction), says so, starts the server
    # at its first request; stopped mid-request with Ctrl-C (SIGINT to the CLI alone, as a
    # notebook's interrupt does) or killed outright, it leaves no server process, and the run
    # stays resumable.
    env = {**os.environ, "KERNELEVOLVE_HOME": str(tmp_path / "home"),
           "KERNELEVOLVE_LLM__LOCAL_DIR": str(small_model.parent),
           "KERNELEVOLVE_LLM__LOCAL_MODEL": "0.5b", "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
    env.pop("KERNELEVOLVE_LLM__MODEL", None)
    env.pop("KERNELEVOLVE_LLM__USE", None)
    cli = subprocess.Popen(
        [*CLI, "tune", str(PROBLEMS / "17_dot_interaction.py"),
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
    assert f"local:{SMALL.name}" in output  # the run said which LLM it used, and why
    assert "does not cover this operator" in output
    run_dirs = list((tmp_path / "home" / "runs").iterdir())
    assert len(run_dirs) == 1 and (run_dirs[0] / "checkpoints.sqlite").is_file()
    assert str(run_dirs[0]) in output  # printed first: where to resume from


@contextlib.contextmanager
def _serving(small_model: Path) -> Iterator[subprocess.Popen[str]]:
    """``kernelevolve llm serve`` in its own session, killed with its children if still up."""
    env = {**os.environ, "KERNELEVOLVE_LLM__LOCAL_DIR": str(small_model.parent)}
    cli = subprocess.Popen([*CLI, "llm", "serve", "--model", "0.5b", "--threads", "1"],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)
    try:
        yield cli
    finally:
        if cli.poll() is None:
            os.killpg(cli.pid, signal.SIGKILL)
            cli.wait()


@pytest.mark.timeout(120)
def test_llm_serve_answers_until_ctrl_c_then_stops_its_server(small_model: Path,
                                                              tmp_path: Path) -> None:
    with _serving(small_model) as cli:
        assert cli.stdout is not None
        base_url = cli.stdout.readline().strip()  # printed once the model answers
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1"), \
            cli.communicate()
        with urllib.request.urlopen(f"{base_url}/models", timeout=10) as resp:
            assert SMALL.name in resp.read().decode()
        kids = children(cli.pid)
        assert kids
        os.kill(cli.pid, signal.SIGINT)
        _, err = cli.communicate(timeout=30)
    assert cli.returncode == 0 and "stopping" in err, err
    assert not any(map(alive, kids))
    with pytest.raises(OSError):  # nothing listens there any more
        urllib.request.urlopen(f"{base_url}/models", timeout=5)


@pytest.mark.timeout(120)
def test_llm_serve_stops_cleanly_on_a_ctrl_c_while_loading(small_model: Path) -> None:
    # Ctrl-C before the wait loop (while the model loads, or just after the address is
    # printed) ended the command with a traceback and status 130 (seen in CI, under load).
    with _serving(small_model) as cli:
        assert cli.stderr is not None
        assert "loading" in cli.stderr.readline()
        time.sleep(0.5)  # the server process is starting
        kids = children(cli.pid)
        os.kill(cli.pid, signal.SIGINT)
        _, err = cli.communicate(timeout=30)
    assert cli.returncode == 0 and "stopping" in err and "Traceback" not in err, err
    assert not any(map(alive, kids))
