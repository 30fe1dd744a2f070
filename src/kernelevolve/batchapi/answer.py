"""Answer a Batch API input file against a live OpenAI-compatible endpoint, writing the Batch
API's output format: for a user who can reach an endpoint from somewhere, but not from the
machine the run is on (or who wants the replies in a file to keep)."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kernelevolve.batchapi.lines import BatchLineError, BatchReply, BatchRequest, BatchResponse
from kernelevolve.config import LLMConfig
from kernelevolve.errors import ConfigError


def _client(cfg: LLMConfig) -> Any:
    import openai

    key = cfg.api_key.get_secret_value() if cfg.api_key is not None else None
    key = key or os.environ.get("OPENAI_API_KEY")
    if not key:
        if not cfg.base_url:
            raise ConfigError("no API key for OpenAI: set llm.api_key or OPENAI_API_KEY, or "
                              "point --base-url (llm.base_url) at an OpenAI-compatible server")
        key = "not-needed"  # local servers ignore the key, the client insists on one
    return openai.OpenAI(base_url=cfg.base_url, api_key=key, timeout=cfg.timeout_s,
                         max_retries=cfg.max_retries)


def answer_one(client: Any, request: BatchRequest, model: str | None = None) -> BatchReply:
    """One request sent to the endpoint, as the Batch API's output line for it: a 200 with
    the chat completion, the endpoint's error status with its body, or an ``error`` where no
    response came."""
    import openai

    body = dict(request.body)
    if model:
        body["model"] = model
    line_id = f"batch_req_{secrets.token_hex(12)}"
    try:
        raw = client.chat.completions.with_raw_response.create(**body)
        completion = raw.parse()
        response = BatchResponse(status_code=raw.status_code,
                                 request_id=raw.headers.get("x-request-id"),
                                 body=completion.model_dump(mode="json"))
        return BatchReply(id=line_id, custom_id=request.custom_id, response=response)
    except openai.APIStatusError as exc:
        err_body = exc.body if isinstance(exc.body, dict) else {"error": {"message": str(exc)}}
        if "error" not in err_body:
            err_body = {"error": err_body}
        return BatchReply(id=line_id, custom_id=request.custom_id,
                          response=BatchResponse(status_code=exc.status_code,
                                                 request_id=exc.request_id, body=err_body))
    except openai.APIError as exc:  # no response: connection, timeout
        return BatchReply(id=line_id, custom_id=request.custom_id,
                          error=BatchLineError(code=type(exc).__name__, message=str(exc)))


def answer(requests: list[BatchRequest], cfg: LLMConfig, *, model: str | None = None,
           parallel: int = 4, on_reply: Callable[[BatchReply], None] | None = None
           ) -> list[BatchReply]:
    """Every request answered by the endpoint ``cfg`` names (``model`` replaces the one each
    request names), ``parallel`` at a time; the lines come back in the requests' order."""
    client = _client(cfg)

    def one(request: BatchRequest) -> BatchReply:
        reply = answer_one(client, request, model)
        if on_reply is not None:
            on_reply(reply)
        return reply

    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        return list(pool.map(one, requests))
