"""``LocalServer``: llama.cpp's OpenAI-compatible server (xllamacpp) for one GGUF file on a loopback
port, in a child process that exits when stopped, at interpreter exit, or when its parent dies."""

from __future__ import annotations

import atexit
import logging
import os
import queue
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from kernelevolve.errors import LLMError
from kernelevolve.synth.llm.local.models import XLLAMACPP, log_tail, server_available

log = logging.getLogger(__name__)

CONTEXT_TOKENS = 8192  # reply.Limits keep a prompt near 3k tokens; the rest is the reply


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
        tail = log_tail(self.log_path, 8) if self.log_path else ""
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
            if self.log_path is not None and "couldn't bind" in log_tail(self.log_path, 40):
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


