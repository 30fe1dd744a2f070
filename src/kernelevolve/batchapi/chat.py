"""The batch-mode chat model: answers from the replies a run was given, and where a reply is
missing records the request and stops the step (``RepliesNeeded``).

It sits behind the same seam as an endpoint's chat model (the LLM synthesizer calls
``invoke``, naming the request in the call's metadata), so prompts, reply parsing, token counts
and the trace are those of an online run.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, convert_to_openai_messages
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.errors import GraphBubbleUp

from kernelevolve.batchapi.exchange import REQUEST_NAME, Exchange
from kernelevolve.batchapi.lines import BatchReply, BatchRequest


class RepliesNeeded(GraphBubbleUp):  # noqa: N818 - not a failure: the run stops to wait
    """The run needs a reply it has not been given: it stops at this step (the session writes
    the requests file).

    A GraphBubbleUp, not a plain exception: LangGraph cancels the tasks of a superstep that
    have not started yet when one fails, so a batch round whose branches waited for a thread
    (the pool also runs the checkpoint writes) would lose their requests until the next stop;
    a bubble-up lets every branch run and ask, saves what the finished ones wrote, and is
    re-raised by ``invoke`` once the step is over."""


def request_of(run_manager: CallbackManagerForLLMRun | None) -> str:
    """The name the call gave its request (``REQUEST_NAME`` in its metadata)."""
    meta = run_manager.metadata if run_manager is not None else {}
    name = (meta or {}).get(REQUEST_NAME)
    if not isinstance(name, str) or not name:
        raise RuntimeError(f"a batch-mode call must name its request (metadata "
                           f"{REQUEST_NAME!r}): the LLM synthesizer does")
    return name


def reply_message(reply: BatchReply, model: str) -> AIMessage:
    """A usable output line as the AIMessage an endpoint's chat model would return."""
    body = (reply.response.body if reply.response is not None else None) or {}
    usage = body.get("usage")
    metadata: dict[str, Any] = {"model_name": body.get("model") or model,
                                "batch_custom_id": reply.custom_id}
    choices = body.get("choices") or [{}]
    if isinstance(choices[0], dict) and choices[0].get("finish_reason"):
        metadata["finish_reason"] = choices[0]["finish_reason"]
    usage_metadata = None
    if isinstance(usage, dict) and usage.get("prompt_tokens") is not None:
        prompt, completion = int(usage["prompt_tokens"]), int(usage.get("completion_tokens") or 0)
        usage_metadata = UsageMetadata(input_tokens=prompt, output_tokens=completion,
                                       total_tokens=prompt + completion)
    return AIMessage(content=reply.content or "", response_metadata=metadata,
                     usage_metadata=usage_metadata)


class BatchChatModel(BaseChatModel):
    """Replies from a run's Batch API output files (``exchange``); requests for the rest."""

    model_name: str
    temperature: float = 0.7
    max_tokens: int = 4096
    exchange: Any = None  # the run's Exchange, attached when the run opens

    @property
    def _llm_type(self) -> str:
        return "openai-batch"

    def body(self, messages: list[BaseMessage]) -> dict[str, Any]:
        """The chat completion request's body, as an endpoint's client would send it."""
        return {"model": self.model_name, "messages": convert_to_openai_messages(messages),
                "temperature": self.temperature, "max_tokens": self.max_tokens}

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None,
                  **kwargs: Any) -> ChatResult:
        exchange = self.exchange
        if not isinstance(exchange, Exchange):
            raise RuntimeError("BatchChatModel is not attached to a run (Session attaches it)")
        request = BatchRequest(custom_id=exchange.custom_id(request_of(run_manager)),
                               body=self.body(messages))
        reply = exchange.reply_for(request)
        if reply is None:
            raise RepliesNeeded(request.custom_id)
        return ChatResult(generations=[ChatGeneration(message=reply_message(reply,
                                                                            self.model_name))])
