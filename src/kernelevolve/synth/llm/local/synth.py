"""``LocalSynthesizer`` (the LLM synthesizer on a local model it serves itself) and ``choose``
(which synthesizer ``make_synthesizer`` builds)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Literal, NamedTuple

from langchain_core.language_models import BaseChatModel
from pydantic import SecretStr

from kernelevolve import prompts
from kernelevolve.config import LLMConfig, StoreConfig
from kernelevolve.errors import LLMError
from kernelevolve.graph.state import Draft, Knowledge, PromptState
from kernelevolve.synth.llm.chat import LLMSynthesizer
from kernelevolve.synth.llm.local.aids import contract_text, worked_example
from kernelevolve.synth.llm.local.models import (
    XLLAMACPP,
    LocalModel,
    installed_model,
    model_file,
    model_spec,
    server_available,
)
from kernelevolve.synth.llm.local.server import LocalServer
from kernelevolve.synth.llm.reply import Limits, clip, coder_prompt, debugger_prompt

log = logging.getLogger(__name__)

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
    ``examples``: add a verified kernel of the nearest operator class to every prompt (from the
    bundled examples, else from earlier runs in the run ``store``); ``seed``
    makes the sampling reproducible; ``server`` (shared between synthesizers: its owner stops
    it, ``close()`` does not) and ``chat`` replace the ones built from ``cfg``.
    """

    def __init__(self, model: LocalModel, cfg: LLMConfig, *, examples: bool = True,
                 seed: int | None = None, server: LocalServer | None = None,
                 chat: BaseChatModel | None = None, store: StoreConfig | None = None) -> None:
        self.local = model
        self._cfg, self._seed, self._calls = cfg, seed, 0
        self._owns_server = server is None
        self.server = server or LocalServer(model_file(model, cfg.resolved_local_dir()),
                                            threads=cfg.local_threads, alias=model.name)
        self.examples, self.store = examples, store
        super().__init__(chat or _local_chat(model, self.server.base_url, cfg, seed), model.name,
                         endpoint=self.server.base_url, provider="local",
                         retries=cfg.max_retries)

    def aided(self, ps: PromptState) -> PromptState:
        """``ps`` with the worked example and the contract ahead of fewer, shorter passages."""
        aids: list[Knowledge] = []
        example = worked_example(ps.task.operator_class, ps.task.problem_name,
                                 ps.task.reference_source, store=self.store) \
            if self.examples else None
        if example is not None:
            aids.append(Knowledge(
                title=f"Worked example: a verified candidate for another problem "
                      f"({example.name}, {example.operator_class})",
                tier="examples", reason="local model", doc_id=example.source,
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



Use = Literal["endpoint", "local", "offline"]


class Choice(NamedTuple):
    """Which synthesizer a run gets, and the reason the run prints in its first lines."""

    use: Use
    local: LocalModel | None
    why: str


def choose(cfg: LLMConfig, offline_gap: Callable[[], str | None] | None = None) -> Choice:
    """What ``make_synthesizer`` builds for ``cfg``.

    ``llm.model`` "offline", "local" or "local:<size>" (``--llm``) forces that choice; else
    ``llm.use``; ``auto``: an endpoint when ``llm.model`` is set; else, per operator, the offline
    synthesizer where it covers the operator (``offline_gap()`` returns None) and the installed
    local model where it does not (the small model is slow and rarely right where a template
    is certain); else the offline synthesizer.
    """
    use: str = cfg.use
    key = cfg.local_model
    model = (cfg.model or "").strip()
    forced = model == "offline" or model == "local" or model.startswith("local:")
    if forced:
        use = "offline" if model == "offline" else "local"
        if ":" in model:
            key = model.split(":", 1)[1]  # type: ignore[assignment]
            model_spec(key)
    asked = f"--llm {model}" if forced else f"llm.use = {cfg.use}"
    if use == "offline":
        return Choice("offline", None, f"asked for ({asked})")
    if use == "endpoint" or (use == "auto" and model):
        return Choice("endpoint", None, f"llm.model = {model} is configured")
    local = installed_model(cfg.model_copy(update={"local_model": key}))
    if use == "local":
        if local is None:
            size = "" if key == "auto" else f" --model {key}"
            what = "a local model is" if key == "auto" else f"the local model {key} is"
            raise LLMError(f"{what} asked for (llm.use or --llm local) but not installed in "
                           f"{cfg.resolved_local_dir()}. Fix: kernelevolve llm install-local{size}")
        return Choice("local", local, f"asked for ({asked})")
    if local is None:
        return Choice("offline", None, "no LLM endpoint configured and no local model installed")
    gap = offline_gap() if offline_gap is not None else "unknown operator"
    if gap is None:
        return Choice("offline", None, f"its templates cover this operator (the installed local "
                                       f"model {local.name} is used only where they do not, or "
                                       f"with --llm local)")
    if not server_available():
        log.warning("the local model %s is installed but xllamacpp is not; using the offline "
                    "synthesizer (pip install '%s')", local.name, XLLAMACPP)
        return Choice("offline", None, f"the local model {local.name} is installed but its "
                                       f"server (xllamacpp) is not")
    return Choice("local", local, f"the offline synthesizer does not cover this operator ({gap})")
