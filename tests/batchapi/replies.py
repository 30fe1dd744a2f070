"""Batch API output lines built from the scripted replies (tests/synth/llm/replies): what OpenAI's
Batch API writes for a chat completion request, a failed request and an error status."""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path
from typing import Any

REPLIES = Path(__file__).resolve().parents[1] / "synth" / "llm" / "replies"


def reply_text(name: str) -> str:
    return (REPLIES / f"{name}.md").read_text()


def completion(request: dict[str, Any], text: str) -> dict[str, Any]:
    """A ``chat.completion`` body answering ``request`` with ``text``."""
    prompt = sum(len(m["content"]) for m in request["body"]["messages"]) // 4
    return {
        "id": f"chatcmpl-{secrets.token_hex(8)}", "object": "chat.completion",
        "created": int(time.time()), "model": request["body"]["model"] + "-2024-07-18",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text,
                                             "refusal": None},
                     "logprobs": None, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": len(text) // 4,
                  "total_tokens": prompt + len(text) // 4},
        "system_fingerprint": "fp_batch",
    }


def ok_line(request: dict[str, Any], reply: str) -> dict[str, Any]:
    """The output line of a request answered with the reply fixture ``reply``."""
    return {"id": f"batch_req_{secrets.token_hex(12)}", "custom_id": request["custom_id"],
            "response": {"status_code": 200, "request_id": secrets.token_hex(16),
                         "body": completion(request, reply_text(reply))},
            "error": None}


def status_line(request: dict[str, Any], status: int = 500) -> dict[str, Any]:
    """The line of a request the endpoint refused with an error status."""
    return {"id": f"batch_req_{secrets.token_hex(12)}", "custom_id": request["custom_id"],
            "response": {"status_code": status, "request_id": secrets.token_hex(16),
                         "body": {"error": {"message": "The server had an error while "
                                            "processing your request.", "type": "server_error",
                                            "param": None, "code": None}}},
            "error": None}


def error_line(request: dict[str, Any]) -> dict[str, Any]:
    """The line of a request that failed without a response (the batch expired first)."""
    return {"id": f"batch_req_{secrets.token_hex(12)}", "custom_id": request["custom_id"],
            "response": None,
            "error": {"code": "batch_expired",
                      "message": "This request could not be executed before the completion "
                                 "window expired."}}


def read_requests(path: str | Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def write_output(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path
