"""LLMSynthesizer with a scripted chat model, make_chat_model's config checks, and one round trip
through ChatOpenAI to a real (local, stdlib) OpenAI-compatible HTTP server."""

from __future__ import annotations

import json
import logging
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI

from kernelevolve.config import LLMConfig
from kernelevolve.errors import ConfigError, KernelEvolveError
from kernelevolve.synth.llm.chat import LLMError, LLMSynthesizer, make_chat_model
from kernelevolve.synth.llm.reply import coder_prompt, debugger_prompt, system_prompt
from kernelevolve.synth.synthesizer import Synthesizer
from tests.synth.conftest import fenced_code, reply_text
from tests.synth.llm.scripted import ScriptedChatModel, ScriptExhaustedError

GOOD = fenced_code("good_block256")


def synth(*replies: str, **kwargs: Any) -> tuple[LLMSynthesizer, ScriptedChatModel]:
    chat = ScriptedChatModel(list(replies), **kwargs)
    return LLMSynthesizer(chat, "scripted-coder", endpoint="scripted"), chat


# -- the synthesizer --------------------------------------------------------------------------


def test_write_returns_a_draft(make_ps):
    s, chat = synth(reply_text("good_block1024"))
    ps = make_ps("inherit", attempt=1)
    seam: Synthesizer = s  # the Protocol the agents use
    draft = seam.write(ps)
    assert seam.name == "openai:scripted-coder"
    assert draft.source == fenced_code("good_block1024")
    assert draft.problem == "" and draft.origin == "coder" and draft.repair_of is None
    assert draft.intent == ps.intent and draft.attempt == 1
    assert draft.prompt == coder_prompt(ps)
    assert draft.reply == reply_text("good_block1024")
    assert draft.model == "scripted-coder"
    (request,) = chat.requests
    system, human = request
    assert isinstance(system, SystemMessage) and isinstance(human, HumanMessage)
    assert system.content == system_prompt(ps) and human.content == draft.prompt
    assert draft.prompt_tokens == len(system.content) // 4 + len(human.content) // 4
    assert draft.completion_tokens == len(draft.reply) // 4


def test_write_without_usable_code_says_why(make_ps):
    s, _ = synth(reply_text("no_code"), reply_text("truncated"))
    first = s.write(make_ps("fresh"))
    assert first.source is None and first.problem == "the reply holds no code block"
    assert first.reply == reply_text("no_code") and first.completion_tokens > 0
    second = s.write(make_ps("fresh", attempt=1))
    assert second.source is None and "cut off" in second.problem


def test_write_applies_edits_to_the_parent(make_ps):
    s, _ = synth(reply_text("edit_block"))
    draft = s.write(make_ps("inherit"))
    assert draft.source is not None and "BLOCK_SIZE = 512" in draft.source
    assert draft.problem == ""


def test_repair_uses_the_debugger_prompt(make_ps, failed):
    s, chat = synth(reply_text("repaired"))
    ps = make_ps("inherit", last_error=failed)
    draft = s.repair(ps)
    assert draft.origin == "debugger" and draft.repair_of == "n0006"
    assert draft.source == fenced_code("repaired")
    human = chat.requests[0][1].content
    assert human == debugger_prompt(ps) == draft.prompt
    assert human.startswith("# Repair") and failed.source in human


def test_repair_edits_apply_to_the_failed_source(make_ps, failed):
    fix = ("```python\n<<<<<<< SEARCH\n    y = tl.where(x > 0, x, x * negative_slop)\n=======\n"
           "    y = tl.where(x > 0, x, x * negative_slope)\n>>>>>>> REPLACE\n```\n")
    s, _ = synth(fix)
    draft = s.repair(make_ps("inherit", last_error=failed))
    assert draft.source == (failed.source or "").replace("negative_slop)", "negative_slope)")


def test_repair_needs_a_failed_source(make_ps):
    s, chat = synth()
    with pytest.raises(ValueError, match="last_error"):
        s.repair(make_ps("fresh"))
    assert chat.requests == []


def test_token_usage_fallbacks(make_ps, caplog):
    s, _ = synth(reply_text("good_block256"), usage="token_usage")
    draft = s.write(make_ps("fresh"))
    assert draft.prompt_tokens > 0 and draft.completion_tokens == len(draft.reply or "") // 4
    assert not draft.tokens_estimated
    s, _ = synth(reply_text("good_block256"), reply_text("good_block256"), usage="none")
    with caplog.at_level(logging.WARNING, logger="kernelevolve.synth.llm.chat"):
        drafts = [s.write(make_ps("fresh")), s.write(make_ps("fresh"))]
    # no usage reported: estimated at four characters per token, and flagged as estimates
    for d in drafts:
        assert d.tokens_estimated and d.completion_tokens == len(d.reply or "") // 4
        assert d.prompt_tokens == (len(d.system or "") // 4) + (len(d.prompt or "") // 4)
    assert s.unreported_usage == 2
    assert sum("reports no token usage" in r.message for r in caplog.records) == 1


def test_scripted_model_runs_out_loudly(make_ps):
    s, chat = synth(reply_text("good_block256"))
    s.write(make_ps("fresh"))
    assert chat.replies_left == 0
    with pytest.raises(ScriptExhaustedError, match="has 1 replies but got request 2"):
        s.write(make_ps("fresh"))


def test_scripted_model_from_a_function(make_ps):
    def answer(messages):
        return reply_text("repaired") if "# Repair" in messages[-1].text else reply_text("no_code")

    chat = ScriptedChatModel(answer)
    s = LLMSynthesizer(chat, "fn")
    assert s.write(make_ps("fresh")).source is None
    assert chat.replies_left is None and len(chat.requests) == 1


# -- make_chat_model --------------------------------------------------------------------------


def test_model_must_be_named():
    with pytest.raises(ConfigError, match="llm.model is not set"):
        make_chat_model(LLMConfig())


def test_openai_needs_a_key_or_a_local_base_url(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        make_chat_model(LLMConfig(model="gpt-4o-mini"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    chat = make_chat_model(LLMConfig(model="gpt-4o-mini"))
    assert isinstance(chat, ChatOpenAI)
    assert chat.openai_api_key is not None
    assert chat.openai_api_key.get_secret_value() == "sk-from-env"
    chat = make_chat_model(LLMConfig(model="gpt-4o-mini", api_key="sk-config"))
    assert chat.openai_api_key is not None
    assert chat.openai_api_key.get_secret_value() == "sk-config"


def test_openai_local_server_settings(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = LLMConfig(model="qwen2.5-coder-1.5b", base_url="http://127.0.0.1:8080/v1",
                    temperature=0.2, max_tokens=2048, timeout_s=60, max_retries=1)
    chat = make_chat_model(cfg)
    assert isinstance(chat, ChatOpenAI)
    assert chat.model_name == "qwen2.5-coder-1.5b"
    assert chat.openai_api_base == "http://127.0.0.1:8080/v1"
    assert chat.openai_api_key is not None
    assert chat.openai_api_key.get_secret_value() == "not-needed"
    assert (chat.temperature, chat.max_tokens, chat.request_timeout, chat.max_retries) == (
        0.2, 2048, 60.0, 1)
    assert LLMSynthesizer.from_config(cfg).name == "openai:qwen2.5-coder-1.5b"


def test_other_providers_need_langchain(monkeypatch):
    monkeypatch.setitem(sys.modules, "langchain", None)
    monkeypatch.setitem(sys.modules, "langchain.chat_models", None)
    with pytest.raises(ConfigError, match="pip install langchain langchain-anthropic"):
        make_chat_model(LLMConfig(provider="anthropic", model="claude-sonnet-4-5"))


# -- a real OpenAI-compatible endpoint (stdlib HTTP server on localhost) ----------------------


class _Endpoint(BaseHTTPRequestHandler):
    """Answers POST /v1/chat/completions like llama.cpp's or vLLM's server."""

    requests: list[dict[str, Any]] = []
    status = 200
    reply = ""

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "body": body,
                                    "auth": self.headers.get("Authorization")})
        if self.path != "/v1/chat/completions":
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
        elif self.status != 200:
            self._send(self.status, {"error": {"message": "model crashed", "type": "server"}})
        else:
            self._send(200, {
                "id": "chatcmpl-1", "object": "chat.completion", "created": 1_700_000_000,
                "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": self.reply}}],
                "usage": {"prompt_tokens": 812, "completion_tokens": 345, "total_tokens": 1157},
            })

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def endpoint(monkeypatch) -> Iterator[type[_Endpoint]]:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    handler = type("Handler", (_Endpoint,), {"requests": [], "status": 200,
                                            "reply": reply_text("good_block256")})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    handler.url = f"http://127.0.0.1:{server.server_address[1]}/v1"  # type: ignore[attr-defined]
    try:
        yield handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_round_trip_through_a_local_server(endpoint, make_ps):
    cfg = LLMConfig(model="tiny-coder", base_url=endpoint.url, max_tokens=1024,
                    temperature=0.3, max_retries=0, timeout_s=30)
    s = LLMSynthesizer.from_config(cfg)
    ps = make_ps("inherit")
    draft = s.write(ps)
    assert draft.source == GOOD and draft.problem == ""
    assert (draft.prompt_tokens, draft.completion_tokens) == (812, 345)
    assert draft.model == "tiny-coder" and draft.reply == reply_text("good_block256")
    (req,) = endpoint.requests
    assert req["path"] == "/v1/chat/completions" and req["auth"] == "Bearer not-needed"
    body = req["body"]
    assert body["model"] == "tiny-coder" and body["temperature"] == 0.3
    assert body.get("max_completion_tokens", body.get("max_tokens")) == 1024
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][0]["content"] == system_prompt(ps)
    assert body["messages"][1]["content"] == coder_prompt(ps) == draft.prompt


def test_server_error_raises_llm_error(endpoint, make_ps):
    endpoint.status = 500
    s = LLMSynthesizer.from_config(LLMConfig(model="tiny-coder", base_url=endpoint.url,
                                             max_retries=0))
    with pytest.raises(LLMError) as info:
        s.write(make_ps("fresh"))
    assert isinstance(info.value, KernelEvolveError)
    assert endpoint.url in str(info.value) and "model crashed" in str(info.value)


def test_wrong_path_says_to_check_the_base_url(endpoint, make_ps):
    base = endpoint.url.removesuffix("/v1")
    s = LLMSynthesizer.from_config(LLMConfig(model="tiny-coder", base_url=base, max_retries=0))
    with pytest.raises(LLMError, match="/v1"):
        s.write(make_ps("fresh"))


def test_unreachable_server_raises_llm_error(make_ps, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.server_close()  # nothing listens there now
    s = LLMSynthesizer.from_config(LLMConfig(model="tiny-coder", base_url=url, max_retries=0,
                                             timeout_s=10))
    with pytest.raises(LLMError, match="start the server or fix llm.base_url") as info:
        s.write(make_ps("fresh"))
    assert url in str(info.value)
