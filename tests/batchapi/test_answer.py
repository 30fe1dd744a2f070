"""`kernelevolve batch answer`: a requests file sent to a live OpenAI-compatible endpoint (a
small HTTP server here, spoken to by the real OpenAI client) comes back in the Batch API's
output format, which `resume --replies` reads; the line formats' failures say why."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelevolve.batchapi import BatchReply, BatchRequest
from kernelevolve.batchapi.lines import read_lines
from kernelevolve.cli import app
from kernelevolve.errors import RepliesError
from tests.batchapi.replies import completion, error_line, ok_line, reply_text, status_line

runner = CliRunner()


class Endpoint(BaseHTTPRequestHandler):
    """/v1/chat/completions: the good kernel, or a 500 where the prompt says FAIL."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        request = {"custom_id": "-", "body": body}
        if "FAIL" in body["messages"][-1]["content"]:
            status, out = 500, {"error": {"message": "overloaded", "type": "server_error"}}
        else:
            status, out = 200, completion(request, reply_text("good_block256"))
        data = json.dumps(out).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("x-request-id", "req_test")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def request(cid: str, text: str) -> BatchRequest:
    return BatchRequest(custom_id=cid, body={
        "model": "gpt-4o-mini", "temperature": 0.7, "max_tokens": 256,
        "messages": [{"role": "system", "content": "You write Triton."},
                     {"role": "user", "content": text}]})


def test_batch_answer_writes_the_batch_apis_output_format(tmp_path: Path, endpoint: str) -> None:
    requests = tmp_path / "requests-001.jsonl"
    requests.write_text(request("ke-1-n0001-coder-0", "write the kernel").model_dump_json()
                        + "\n" + request("ke-1-n0002-coder-0", "FAIL").model_dump_json()
                        + "\n")
    out = tmp_path / "replies.jsonl"
    result = runner.invoke(app, ["batch", "answer", str(requests), "--out", str(out),
                                 "--base-url", endpoint, "--parallel", "2"],
                           env={"OPENAI_API_KEY": "sk-test"})
    assert result.exit_code == 1, result.output  # one request failed
    assert "wrote 2 replies" in result.output and "(1 failed)" in result.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["custom_id"] for line in lines] == ["ke-1-n0001-coder-0",
                                                     "ke-1-n0002-coder-0"]
    ok, failed = (BatchReply.model_validate(line) for line in lines)
    assert set(lines[0]) == {"id", "custom_id", "response", "error"}
    assert lines[0]["id"].startswith("batch_req_") and lines[0]["error"] is None
    assert ok.response is not None and ok.response.status_code == 200
    assert ok.response.request_id == "req_test" and ok.failure is None
    assert ok.response.body is not None and ok.response.body["object"] == "chat.completion"
    assert ok.content == reply_text("good_block256")
    assert failed.failure == "HTTP 500: overloaded"


def test_what_makes_a_line_unusable() -> None:
    req = {"custom_id": "ke-1-n0001-coder-0", "body": request("x", "y").body}
    assert BatchReply.model_validate(ok_line(req, "no_code")).failure is None
    assert BatchReply.model_validate(status_line(req, 429)).failure.startswith("HTTP 429: ")
    assert BatchReply.model_validate(error_line(req)).failure.startswith("error batch_expired:")
    empty = ok_line(req, "no_code")
    empty["response"]["body"]["choices"] = []
    assert BatchReply.model_validate(empty).failure == "the response holds no message content"


def test_a_requests_line_with_more_than_the_batch_api_takes_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    line = json.loads(request("ke-1", "y").model_dump_json())
    path.write_text(json.dumps({**line, "extra": 1}) + "\n")
    with pytest.raises(RepliesError, match="line 1 of .* is not a request: extra"):
        read_lines(path, BatchRequest, "a request")
    path.write_text(json.dumps({**line, "custom_id": "k" * 65}) + "\n")
    with pytest.raises(RepliesError, match="custom_id: String should have at most 64"):
        read_lines(path, BatchRequest, "a request")
