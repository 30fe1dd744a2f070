"""The OpenAI Batch API's file formats, as far as batch mode uses them.

An input file holds one request per line::

    {"custom_id": "...", "method": "POST", "url": "/v1/chat/completions",
     "body": {"model": "...", "messages": [...], "temperature": 0.7, "max_tokens": 4096}}

and the output (or error) file one line per request, in any order::

    {"id": "batch_req_...", "custom_id": "...",
     "response": {"status_code": 200, "request_id": "...", "body": {<chat.completion>}},
     "error": null}

A line whose ``error`` is set, or whose response is not a 200 with a message, holds no reply.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kernelevolve.errors import RepliesError

CHAT_URL: Literal["/v1/chat/completions"] = "/v1/chat/completions"
# OpenAI-compatible batch services cap custom_id (Together: 64 characters).
MAX_CUSTOM_ID = 64

T = TypeVar("T", bound=BaseModel)


class BatchRequest(BaseModel):
    """One line of a Batch API input file: a chat completion request."""

    model_config = ConfigDict(extra="forbid")

    custom_id: str = Field(min_length=1, max_length=MAX_CUSTOM_ID)
    method: Literal["POST"] = "POST"
    url: Literal["/v1/chat/completions"] = CHAT_URL
    body: dict[str, Any]

    @property
    def digest(self) -> str:
        """The request's messages, hashed: the same prompt gives the same digest."""
        messages = json.dumps(self.body.get("messages"), sort_keys=True)
        return hashlib.sha256(messages.encode()).hexdigest()[:16]


class BatchResponse(BaseModel):
    """The HTTP response a Batch API output line carries."""

    model_config = ConfigDict(extra="allow")

    status_code: int
    request_id: str | None = None
    body: dict[str, Any] | None = None


class BatchLineError(BaseModel):
    """A request that failed without an HTTP response (an output or error file's ``error``)."""

    model_config = ConfigDict(extra="allow")

    code: str | None = None
    message: str | None = None


class BatchReply(BaseModel):
    """One line of a Batch API output (or error) file."""

    model_config = ConfigDict(extra="allow")

    id: str | None = None
    custom_id: str = Field(min_length=1)
    response: BatchResponse | None = None
    error: BatchLineError | None = None

    @property
    def failure(self) -> str | None:
        """Why this line holds no usable reply; None where it holds one."""
        if self.error is not None:
            return f"error {self.error.code or ''}: {self.error.message or 'no message'}".strip()
        if self.response is None:
            return "no response"
        body = self.response.body or {}
        if self.response.status_code != 200:
            err = body.get("error")
            why = err.get("message") if isinstance(err, dict) else err
            return f"HTTP {self.response.status_code}: {why or 'no message'}"
        if not isinstance(self.content, str):
            return "the response holds no message content"
        return None

    @property
    def content(self) -> str | None:
        """The first choice's message text (None where there is none)."""
        body = self.response.body if self.response is not None else None
        choices = (body or {}).get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return None
        message = choices[0].get("message")
        content = message.get("content") if isinstance(message, dict) else None
        return content if isinstance(content, str) else None


def read_lines(path: Path, kind: type[T], what: str) -> list[T]:
    """The lines of a JSONL file as ``kind``; a line that is not one is an error naming it."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise RepliesError(f"cannot read {path}: {exc}") from exc
    out: list[T] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(kind.model_validate_json(line))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "the line"
            raise RepliesError(f"line {n} of {path} is not {what}: {where}: {first['msg']}"
                               ) from exc
    return out


def write_lines(path: Path, lines: list[BatchRequest] | list[BatchReply]) -> None:
    """One JSON object per line, as the Batch API reads and writes them."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text("".join(line.model_dump_json(exclude_none=False) + "\n" for line in lines))
    tmp.replace(path)
