"""A scripted chat model: the LLM seam's fake for tests (and end-to-end graph runs).

It answers from a list of replies (in order) or a function of the request, records every request,
and reports token usage the way real endpoints do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

Script = Sequence[str] | Callable[[list[BaseMessage]], str]


class ScriptExhaustedError(RuntimeError):
    """The code under test asked the scripted model more often than the script has replies."""


def _tokens(text: str) -> int:
    # About four characters per token for English and code, as BPE tokenizers give.
    return max(1, len(text) // 4)


class ScriptedChatModel(BaseChatModel):
    """A chat model that replies from a script: ``ScriptedChatModel(["reply 1", "reply 2"])`` or
    ``ScriptedChatModel(lambda messages: ...)``. ``requests`` holds every request's messages."""

    script: Any
    model_name: str = "scripted-coder"
    usage: Literal["metadata", "token_usage", "none"] = Field(
        "metadata", description="how the token counts come back: usage_metadata (as LangChain's "
        "integrations report them), only response_metadata['token_usage'], or not at all")
    requests: list[list[BaseMessage]] = Field(default_factory=list)

    def __init__(self, script: Script, **kwargs: Any) -> None:
        if not callable(script):
            script = [str(s) for s in script]
        super().__init__(script=script, **kwargs)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def replies_left(self) -> int | None:
        """Replies not yet given (None for a function script)."""
        return None if callable(self.script) else len(self.script) - len(self.requests)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None,
                  **kwargs: Any) -> ChatResult:
        self.requests.append(list(messages))
        n = len(self.requests)
        if callable(self.script):
            text = self.script(list(messages))
        elif n <= len(self.script):
            text = self.script[n - 1]
        else:
            last = messages[-1].text[:200] if messages else ""
            raise ScriptExhaustedError(
                f"ScriptedChatModel has {len(self.script)} replies but got request {n}; the last "
                f"message began: {last!r}"
            )
        prompt_tokens = sum(_tokens(m.text) for m in messages)
        usage = UsageMetadata(input_tokens=prompt_tokens, output_tokens=_tokens(text),
                              total_tokens=prompt_tokens + _tokens(text))
        metadata: dict[str, Any] = {"model_name": self.model_name, "finish_reason": "stop"}
        if self.usage == "token_usage":
            metadata["token_usage"] = {"prompt_tokens": usage["input_tokens"],
                                       "completion_tokens": usage["output_tokens"],
                                       "total_tokens": usage["total_tokens"]}
        message = AIMessage(content=text, response_metadata=metadata,
                            usage_metadata=usage if self.usage == "metadata" else None)
        return ChatResult(generations=[ChatGeneration(message=message)])
