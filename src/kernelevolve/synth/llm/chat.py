"""The LLM synthesizer: a LangChain chat model behind the Synthesizer seam.

``make_chat_model`` builds the chat model the ``llm`` config names: any OpenAI-compatible endpoint
(OpenAI itself, or a local llama.cpp / vLLM / Ollama server through ``base_url``), or another
LangChain provider through ``init_chat_model``. ``LLMSynthesizer`` renders the prompts from the
PromptState, asks the model, and parses the reply into a Draft.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Literal

from langchain_core.exceptions import (
    ContextOverflowError,
    ModelAuthenticationError,
    ModelConnectionError,
    ModelError,
    ModelNotFoundError,
    ModelPermissionDeniedError,
    ModelRateLimitError,
    ModelTimeoutError,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import SecretStr

from kernelevolve.batchapi.exchange import REQUEST_NAME, request_name
from kernelevolve.config import LLMConfig
from kernelevolve.errors import ConfigError, LLMError
from kernelevolve.graph.state import Draft, PromptState
from kernelevolve.synth.llm.reply import coder_prompt, debugger_prompt, parse_reply, system_prompt

try:  # the OpenAI SDK comes with langchain-openai; other providers raise ModelError subclasses
    import openai
except ImportError:  # pragma: no cover - only without langchain-openai
    openai = None  # type: ignore[assignment]

__all__ = ["LLMError", "LLMSynthesizer", "make_chat_model"]

log = logging.getLogger(__name__)

OPENAI_DEFAULT_URL = "https://api.openai.com/v1"


def make_chat_model(cfg: LLMConfig) -> BaseChatModel:
    """The chat model ``cfg`` names.

    Provider ``openai`` speaks to any OpenAI-compatible endpoint; the key comes from
    ``llm.api_key`` or ``OPENAI_API_KEY``, and a local server (``base_url`` set) needs none.
    Other providers go through LangChain's ``init_chat_model`` (package ``langchain``).
    """
    if not cfg.model:
        raise ConfigError(
            "llm.model is not set: name a model (llm.model, KERNELEVOLVE_LLM__MODEL), or leave "
            "the llm section out to use the offline synthesizer"
        )
    key = cfg.api_key.get_secret_value() if cfg.api_key is not None else None
    if cfg.provider == "openai":
        from langchain_openai import ChatOpenAI

        key = key or os.environ.get("OPENAI_API_KEY")
        if not key:
            if not cfg.base_url:
                raise ConfigError(
                    "no API key for OpenAI: set llm.api_key or OPENAI_API_KEY, or point "
                    "llm.base_url at a local OpenAI-compatible server"
                )
            key = "not-needed"  # local servers ignore the key, the client insists on one
        return ChatOpenAI(
            model=cfg.model, base_url=cfg.base_url, api_key=SecretStr(key),
            temperature=cfg.temperature, max_tokens=cfg.max_tokens, timeout=cfg.timeout_s,
            max_retries=cfg.max_retries,
        )
    try:
        from langchain.chat_models import init_chat_model
    except ImportError as exc:
        raise ConfigError(
            f"llm.provider {cfg.provider!r} needs LangChain's provider registry: pip install "
            f"langchain langchain-{cfg.provider} (or use provider 'openai' with an "
            f"OpenAI-compatible base_url)"
        ) from exc
    kwargs: dict[str, Any] = {
        "temperature": cfg.temperature, "max_tokens": cfg.max_tokens,
        "timeout": cfg.timeout_s, "max_retries": cfg.max_retries,
    }
    if cfg.base_url:
        kwargs["base_url"] = cfg.base_url
    if key:
        kwargs["api_key"] = key
    try:
        return init_chat_model(cfg.model, model_provider=cfg.provider, **kwargs)
    except ImportError as exc:
        raise ConfigError(
            f"llm.provider {cfg.provider!r} needs its integration package: pip install "
            f"langchain-{cfg.provider} ({exc})"
        ) from exc
    except ValueError as exc:
        raise ConfigError(f"llm.provider {cfg.provider!r} cannot be used: {exc}") from exc


def _endpoint(cfg: LLMConfig) -> str:
    if cfg.base_url:
        return cfg.base_url
    return OPENAI_DEFAULT_URL if cfg.provider == "openai" else f"the {cfg.provider} API"


def _api_errors() -> tuple[type[BaseException], ...]:
    return (ModelError,) if openai is None else (ModelError, openai.APIError)


def _is(exc: BaseException, langchain_type: type[BaseException], openai_name: str) -> bool:
    """``exc`` is the LangChain error type or the OpenAI SDK's error of that name."""
    sdk_type = getattr(openai, openai_name, None) if openai is not None else None
    return isinstance(exc, langchain_type) or (
        isinstance(sdk_type, type) and isinstance(exc, sdk_type))


def _status_code(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


def _llm_error(exc: BaseException, endpoint: str, model: str, retries: int) -> LLMError:
    """An LLMError whose message names the endpoint and what to change."""
    what = f"{type(exc).__name__}: {str(exc).rstrip('.')}"
    if _is(exc, ModelTimeoutError, "APITimeoutError"):
        fix = "raise llm.timeout_s, lower llm.max_tokens, or check that the server is not stuck"
    elif _is(exc, ModelConnectionError, "APIConnectionError"):
        fix = ("start the server or fix llm.base_url (KERNELEVOLVE_LLM__BASE_URL); an "
               "OpenAI-compatible URL usually ends in /v1")
    elif isinstance(exc, ModelAuthenticationError | ModelPermissionDeniedError) or \
            _status_code(exc) in (401, 403):
        fix = "set a valid key in llm.api_key or OPENAI_API_KEY"
    elif isinstance(exc, ModelNotFoundError) or _status_code(exc) == 404:
        fix = (f"check that the server serves model {model!r} (llm.model) and that llm.base_url "
               f"is the API root (often ending in /v1)")
    elif isinstance(exc, ContextOverflowError):
        fix = ("the prompt plus llm.max_tokens exceed the model's context: lower llm.max_tokens "
               "or use a model with a longer context")
    elif isinstance(exc, ModelRateLimitError) or _status_code(exc) == 429:
        fix = "wait, or raise llm.max_retries"
    else:
        fix = "check the server's log; raise llm.max_retries if the failures are transient"
    return LLMError(f"the LLM endpoint {endpoint} (model {model!r}) failed after {retries} "
                    f"retries: {what}. Fix: {fix}")


def _text(message: BaseMessage) -> str:
    """The reply's text (content may be a string or a list of content blocks)."""
    text = message.text
    return text if isinstance(text, str) else ""


# Where an endpoint reports no usage, tokens are estimated from the text: BPE tokenizers of code
# models give about four characters per token on English and Python.
CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """Tokens of ``text`` by the characters-per-token estimate (at least 1 for any text)."""
    return max(1, len(text) // CHARS_PER_TOKEN) if text else 0


def _usage(message: AIMessage) -> tuple[int, int] | None:
    usage = message.usage_metadata
    if usage:
        return int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
    token_usage = message.response_metadata.get("token_usage")
    if isinstance(token_usage, dict) and token_usage:
        return (int(token_usage.get("prompt_tokens") or 0),
                int(token_usage.get("completion_tokens") or 0))
    return None


class LLMSynthesizer:
    """Writes and repairs candidates with a chat model (the Synthesizer protocol)."""

    reads_knowledge = True
    reads_guidance = True

    def __init__(self, chat: BaseChatModel, model: str, *, endpoint: str = "",
                 provider: str = "openai", retries: int = 0) -> None:
        self.chat = chat
        self.model = model
        self.name = f"{provider}:{model}"
        self.endpoint = endpoint or provider
        self.retries = retries
        self.unreported_usage = 0  # calls whose token counts the endpoint did not report

    @classmethod
    def from_config(cls, cfg: LLMConfig) -> LLMSynthesizer:
        """The synthesizer for the ``llm`` config section (see ``make_chat_model``)."""
        chat = make_chat_model(cfg)
        return cls(chat, cfg.model or "", endpoint=_endpoint(cfg), provider=cfg.provider,
                   retries=cfg.max_retries)

    def write(self, ps: PromptState) -> Draft:
        """A new candidate for the round ``ps`` describes."""
        parent = ps.parent.source if ps.parent is not None else None
        return self._ask(ps, coder_prompt(ps), parent, origin="coder", repair_of=None)

    def repair(self, ps: PromptState) -> Draft:
        """A repaired version of ``ps.last_error.source``."""
        if ps.last_error is None or ps.last_error.source is None:
            raise ValueError("repair needs ps.last_error with the failed source")
        return self._ask(ps, debugger_prompt(ps), ps.last_error.source, origin="debugger",
                         repair_of=ps.last_error.node_id)

    def _ask(self, ps: PromptState, prompt: str, parent_source: str | None, *,
             origin: Literal["coder", "debugger"], repair_of: str | None) -> Draft:
        system = system_prompt(ps)
        messages: list[BaseMessage] = [SystemMessage(content=system), HumanMessage(content=prompt)]
        # the call names what it asks for (batch mode's custom_id; a trace's metadata online)
        meta = {REQUEST_NAME: request_name(ps.node_id, origin, ps.attempt)} if ps.node_id else {}
        try:
            reply = self.chat.invoke(messages, config={"metadata": meta})
        except _api_errors() as exc:
            raise _llm_error(exc, self.endpoint, self.model, self.retries) from exc
        text = _text(reply)
        usage = _usage(reply) if isinstance(reply, AIMessage) else None
        estimated = usage is None
        if usage is None:
            if not self.unreported_usage:
                log.warning("the LLM endpoint %s reports no token usage; these calls are "
                            "counted by an estimate (%d characters per token)", self.endpoint,
                            CHARS_PER_TOKEN)
            self.unreported_usage += 1
            usage = (estimate_tokens(system) + estimate_tokens(prompt), estimate_tokens(text))
        parsed = parse_reply(text, parent_source)
        model = reply.response_metadata.get("model_name") or self.model
        return Draft(
            source=parsed.source, intent=ps.intent, system=system, prompt=prompt, reply=text,
            model=str(model), prompt_tokens=usage[0], completion_tokens=usage[1],
            tokens_estimated=estimated, problem=parsed.problem, origin=origin,
            attempt=ps.attempt, repair_of=repair_of,
        )
