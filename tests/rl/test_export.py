"""Training data from real runs (tests/rl/runs.py): one record per synthesizer call, exactly as
the chat model received and answered it; offline kernels as rendered demonstrations; the
``export`` command's formats, filters and secret scrubbing; the store's schema upgrade."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelevolve.cli import app
from kernelevolve.graph.session import Session
from kernelevolve.graph.state import Draft
from kernelevolve.rl import ExportFilter, Redactor, collect, reward, write
from kernelevolve.rl.redact import REDACTED
from kernelevolve.store import SCHEMA_VERSION, CandidateRecord, RunRecord, RunStore
from kernelevolve.store import sqlite as store_sqlite
from kernelevolve.synth.llm.chat import LLMSynthesizer
from kernelevolve.synth.llm.reply import parse_reply
from tests.rl.runs import (
    API_KEY,
    BASE_URL,
    OPENAI_KEY,
    SCRIPT,
    SECRETS,
    Runs,
    home_settings,
    reply,
    tiny_problem,
)
from tests.synth.llm.scripted import ScriptedChatModel

runner = CliRunner()


def cli(home: Path, *args: str, env: dict[str, str] | None = None, ok: bool = True):
    result = runner.invoke(app, list(args), env={"KERNELEVOLVE_HOME": str(home),
                                                 "COLUMNS": "250", **(env or {})})
    if ok:
        assert result.exit_code == 0, (result.output, result.exception)
    return result


@pytest.fixture(autouse=True)
def _no_user_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("KERNELEVOLVE_"):
            monkeypatch.delenv(key)


def test_every_llm_call_is_a_record_as_the_model_saw_it(runs: Runs, store: RunStore) -> None:
    recs = collect(store, [runs.scripted.run_id])
    assert [(r.id.split(":")[1], r.role, r.status) for r in recs] == [
        ("n0001#0", "coder", "no_code"), ("n0001", "coder", "cheat"),
        ("n0002", "debugger", "crash"), ("n0003", "coder", "compile_error"),
        ("n0004", "debugger", "ok")]
    requests = runs.chat.requests
    assert len(requests) == len(recs) == len(SCRIPT)
    for rec, request, answer in zip(recs, requests, SCRIPT, strict=True):
        assert [(m.role, m.content) for m in rec.messages] == [
            ("system", request[0].text), ("user", request[1].text)]
        assert rec.completion == answer and rec.kind == "llm" and rec.prompt_source == "recorded"
        # the scripted model reports ~4 characters per token, as real endpoints report counts
        assert rec.prompt_tokens == sum(max(1, len(m.text) // 4) for m in request)
        assert rec.completion_tokens == max(1, len(answer) // 4)
        assert rec.model == "scripted-coder" and rec.target == "cpu" and not rec.timed
        assert "class Model" in rec.reference and rec.reference in rec.messages[1].content
    reask, cheat, crash, broken, repaired = recs
    assert reask.call == 0 and cheat.call == 1 and "no code block" in reask.message
    assert crash.repair_of == "n0001" and crash.parent_source is not None
    assert crash.parent_source in crash.messages[1].content  # the Debugger saw what it fixes
    assert repaired.repair_of == "n0003" and repaired.verified and repaired.lineage == []
    # F.leaky_relu: refused by the static allowlist (the op recorder would refuse it next)
    assert "leaky_relu" in cheat.message and "died" in crash.message
    assert broken.message.startswith("static check") and not broken.errors
    # the verdict's figures: error per output of the verified kernel
    assert repaired.errors and repaired.errors[0].total == 16 * 64
    assert repaired.errors[0].max_abs_error <= repaired.errors[0].atol
    assert repaired.latency_ms is None and repaired.speedup_vs_eager is None  # cpu: not timed


def test_rewards_of_recorded_verdicts(runs: Runs, store: RunStore) -> None:
    by_status = {r.status: r.reward for r in collect(store, [runs.scripted.run_id])}
    assert by_status == {"no_code": 0.0, "cheat": -1.0, "crash": -0.5, "compile_error": 0.0,
                         "ok": 1.0}
    for rec in collect(store):
        assert rec.reward == reward(rec.status, rec.speedup_vs_eager,
                                    reverified=rec.reverified)


def test_offline_kernels_are_rendered_demonstrations(runs: Runs, store: RunStore) -> None:
    (demo,) = collect(store, [runs.offline.run_id])
    assert demo.kind == "demonstration" and demo.prompt_source == "rendered" and demo.verified
    assert demo.model == "offline" and demo.operator == "fresh"
    system, user = demo.messages
    assert system.role == "system" and "ModelNew" in system.content
    assert user.role == "user" and demo.reference.strip() in user.content
    assert "cpu" in user.content
    code = store.candidate(runs.offline.run_id, "n0001")
    assert code is not None and code.code is not None
    assert parse_reply(demo.completion, None).source == code.code.rstrip("\n") + "\n"
    # the same prompt the LLM synthesizer renders for a fresh start of this run
    scripted_first = collect(store, [runs.scripted.run_id])[0].messages
    assert system.content == scripted_first[0].content


def test_filters(runs: Runs, store: RunStore) -> None:
    assert {r.run_id for r in collect(store)} == {runs.scripted.run_id, runs.offline.run_id}
    assert collect(store, where=ExportFilter(target="cuda")) == []
    ok = collect(store, where=ExportFilter(statuses=["ok"]))
    assert {r.id for r in ok} == {f"{runs.scripted.run_id}:n0004", f"{runs.offline.run_id}:n0001"}
    cls = ok[0].operator_class
    assert cls and len(collect(store, where=ExportFilter(operator_class=cls))) == 6
    assert collect(store, where=ExportFilter(operator_class="softmax")) == []


def test_export_command_formats_and_no_secret_leaves(runs: Runs, store: RunStore,
                                                     tmp_path: Path) -> None:
    cand = store.candidate(runs.scripted.run_id, "n0001")
    assert cand is not None and API_KEY in (cand.reasks[0].reply or "")  # the data had them
    env = {"KERNELEVOLVE_LLM__API_KEY": API_KEY, "KERNELEVOLVE_LLM__BASE_URL": BASE_URL}
    for fmt in ("trl", "verl", "jsonl"):
        out = tmp_path / fmt
        result = cli(runs.home, "export", "--format", fmt, runs.scripted.run_id,
                     runs.offline.run_id, "--out", str(out), env=env)
        assert "exported 6 record(s) of 2 run(s)" in result.output
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["records"] == 6 and manifest["verified"] == 2
        assert manifest["demonstrations"] == 1
        for path in out.iterdir():
            data = path.read_bytes()
            for secret in SECRETS:
                assert secret.encode() not in data, (path, secret)
    assert {p.name for p in (tmp_path / "trl").iterdir()} == {
        "sft.jsonl", "grpo.jsonl", "kto.jsonl", "manifest.json"}
    sft = [json.loads(line) for line in (tmp_path / "trl" / "sft.jsonl").read_text().splitlines()]
    assert sorted(row["kind"] for row in sft) == ["demonstration", "llm"]
    (llm,) = [row for row in sft if row["kind"] == "llm"]
    assert llm["completion"] == [{"role": "assistant", "content": reply("repaired")}]
    grpo = [json.loads(x) for x in (tmp_path / "trl" / "grpo.jsonl").read_text().splitlines()]
    assert {"prompt", "reference", "parent_source", "problem", "target"} <= set(grpo[0])
    # one row per distinct prompt (two fresh starts with the same intent ask the same)
    distinct = {json.dumps([m.model_dump() for m in r.messages]) for r in collect(store)}
    assert len(grpo) == len(distinct) and len(distinct) >= 5
    records = [json.loads(x) for x in
               (tmp_path / "jsonl" / "trajectories.jsonl").read_text().splitlines()]
    assert all(r["schema"] == "kernelevolve-trajectory/1" for r in records)
    (echo,) = [r for r in records if r["id"].endswith("#0")]
    assert REDACTED in echo["completion"] and "llm.internal.example/v1" in echo["completion"]
    # --status keeps calls of those verdicts; json stays the default and imports back
    cli(runs.home, "export", "--format", "jsonl", "--status", "cheat", "--status", "crash",
        "--out", str(tmp_path / "bad"))
    lines = (tmp_path / "bad" / "trajectories.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["status"] for x in lines) == ["cheat", "crash"]
    cli(runs.home, "export", runs.scripted.run_id, "--out", str(tmp_path / "runs.json"))
    doc = json.loads((tmp_path / "runs.json").read_text())
    assert doc["format"] == "kernelevolve-runs" and len(doc["runs"]) == 1
    other = tmp_path / "other-home"
    assert "imported 1 run(s)" in cli(other, "import", str(tmp_path / "runs.json")).output
    with RunStore(other / "store.sqlite") as imported:
        again = collect(imported)
    assert [r.model_dump(exclude={"at_s"}) for r in again] == [
        r.model_dump(exclude={"at_s"}) for r in collect(store, [runs.scripted.run_id])]


def test_export_errors_name_the_fix(runs: Runs, tmp_path: Path) -> None:
    from kernelevolve.errors import ConfigError

    (tmp_path / "file").write_text("")
    for args, fix in [(("--format", "parquet"), "one of: json, trl, verl, jsonl"),
                      (("--status", "ok"), "--format trl, verl or jsonl"),
                      (("--format", "trl", "--out", str(tmp_path / "file")),
                       "writes a directory")]:
        bad = cli(runs.home, "export", *args, ok=False)
        assert bad.exit_code != 0 and isinstance(bad.exception, ConfigError)
        assert fix in str(bad.exception)


def test_redactor_patterns_without_known_values() -> None:
    r = Redactor.from_environment(environ={})
    text = (f"GET {BASE_URL}/chat?api_key=abc123def456&x=1 Authorization: Bearer "
            f"eyJhbGciOiJIUzI1NiJ9.payload key={OPENAI_KEY} hf_AbCdEfGhIjKlMnOpQrStUv "
            "redis://:s3cretpassword@cache:6379/0")
    out = r.text(text)
    for leaked in ("hunter2pass", "abc123def456", "eyJhbGciOiJIUzI1NiJ9", OPENAI_KEY,
                   "hf_AbCdEfGhIjKlMnOpQrStUv", "s3cretpassword"):
        assert leaked not in out, leaked
    assert "llm.internal.example/v1/chat" in out and "&x=1" in out
    known = Redactor.from_environment(environ={"MY_SERVICE_TOKEN": API_KEY, "HOME": "/root"})
    assert known.text(f"echo {API_KEY} from /root") == f"echo {REDACTED} from /root"


def test_write_refuses_an_unknown_format(tmp_path: Path) -> None:
    from kernelevolve.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown export format"):
        write([], tmp_path, "csv")


def test_batch_branches_keep_their_re_asked_calls(tmp_path: Path) -> None:
    """search.batch > 1: a branch's re-asks stay on its node (the static check refuses the
    broken kernels, so no worker runs)."""
    asked: list[int] = []

    def script(messages: list) -> str:
        asked.append(1)
        return reply("no_code") if len(asked) == 1 else reply("compile_error")

    chat = ScriptedChatModel(script)
    settings = home_settings(tmp_path, rounds=1, batch=2, max_repairs=0)
    with Session.create(tiny_problem(tmp_path), target="cpu", settings=settings,
                        synthesizer=LLMSynthesizer(chat, "scripted-coder")) as session:
        session.run()
        tree = session.values()["tree"]
    nodes = [tree.nodes[i] for i in ("n0001", "n0002")]
    assert sorted(len(n.reasks) for n in nodes) == [0, 1]
    (reasked,) = [n for n in nodes if n.reasks]
    assert reasked.reasks[0].reply == reply("no_code") and reasked.reasks[0].system
    assert reasked.reasks[0].completion_tokens == len(reply("no_code")) // 4
    assert all(n.status == "compile_error" and n.system for n in nodes)


def test_draft_after_keeps_only_llm_calls_without_code() -> None:
    first = Draft(system="s", prompt="p", reply="no code", problem="no code block", model="m",
                  prompt_tokens=3, completion_tokens=2)
    second = Draft(system="s", prompt="p2", reply="still none", model="m").after(first)
    third = Draft(source="code", prompt="p3", reply="y", model="m", prompt_tokens=4,
                  completion_tokens=1).after(second)
    assert [(c.prompt, c.reply) for c in third.reasks] == [("p", "no code"),
                                                           ("p2", "still none")]
    assert Draft(prompt="p4").after(third).reasks == []  # a draft with code is no re-ask
    assert Draft(prompt="p").after(Draft(problem="offline gap")).reasks == []  # no call
    fields = third.call_fields()
    assert fields["tokens"] == 5 and fields["reasks"][0].prompt_tokens == 3


def test_a_version_1_store_gains_the_call_columns(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    v1 = store_sqlite._SCHEMA
    for column in ("    system TEXT,\n", "    prompt_tokens INTEGER NOT NULL DEFAULT 0,\n",
                   "    completion_tokens INTEGER NOT NULL DEFAULT 0,\n", "    reasks TEXT,\n",
                   "    tokens_estimated INTEGER NOT NULL DEFAULT 0,\n",
                   "    direction TEXT NOT NULL DEFAULT '',\n"):
        assert column in v1
        v1 = v1.replace(column, "")
    conn = sqlite3.connect(path)
    conn.executescript(v1)
    conn.execute("INSERT INTO schema_version (version) VALUES (1)")
    conn.commit()
    conn.close()
    with RunStore(path) as s:
        assert s.runs() == []
    conn = sqlite3.connect(path)
    columns = {r[1] for r in conn.execute("PRAGMA table_info(candidates)")}
    assert {"system", "prompt_tokens", "completion_tokens", "reasks", "tokens_estimated",
            "direction"} <= columns
    assert conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == 3
    assert SCHEMA_VERSION == 3
    conn.close()
    with RunStore(path) as s:  # and reads and writes as a new one
        s.record(RunRecord(run_id="r1", problem="p", problem_digest="d", target="cpu",
                           synthesizer="m", created="2026-12-01"),
                 [CandidateRecord(run_id="r1", node_id="n0001", parent="n0000",
                                  operator="draft", status="ok", tokens_estimated=True,
                                  direction="persistent")])
        (cand,) = s.candidates("r1")
        assert cand.tokens_estimated and cand.direction == "persistent"
    from kernelevolve.graph.inspect import calls_of  # `show` marks the estimate

    cand = cand.model_copy(update={"prompt": "p", "prompt_tokens": 5, "completion_tokens": 2})
    assert calls_of(cand)[-1].tokens_estimated
