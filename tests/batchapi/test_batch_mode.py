"""Batch mode end to end, as a user drives it: `tune --llm-mode batch` stops with one requests
file per stop (a batch round's requests together), `resume --replies` continues with Batch API
output files built from the scripted replies (a good kernel, a broken one, a reply without
code, an error line), and the run evaluates them, asks again for what is missing and finishes
with the tuned kernel written. Real parts everywhere: the LLM synthesizer and its prompts, the
graph and its SQLite checkpoints, the harness on the cpu target (Triton's interpreter)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelevolve.batchapi import BatchRequest, RepliesWanted, tag_of
from kernelevolve.batchapi.lines import MAX_CUSTOM_ID
from kernelevolve.cli import EXIT_AWAITING_REPLIES, app
from kernelevolve.config import load_settings
from kernelevolve.errors import ConfigError, RepliesError
from kernelevolve.graph.rundir import TuneResult
from kernelevolve.graph.session import Session
from kernelevolve.graph.session import resume as resume_run
from kernelevolve.graph.state import Event, EventKind
from tests.batchapi.replies import error_line, ok_line, read_requests, write_output

ROOT = Path(__file__).resolve().parents[2]
PROBLEM = ROOT / "examples" / "problems" / "03_leaky_relu_scale_clamp.py"
TUNED = "03_leaky_relu_scale_clamp_tuned.py"
ENV = {"COLUMNS": "200", "KERNELEVOLVE_EVAL__N_INPUT_SETS": "2"}

runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_user_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("KERNELEVOLVE_") and key != "KERNELEVOLVE_HOME":
            monkeypatch.delenv(key)


def tune(run_dir: Path, *, batch: int) -> tuple[int, str]:
    result = runner.invoke(app, ["tune", str(PROBLEM), "--target", "cpu", "--no-kb",
                                 "--llm", "gpt-4o-mini", "--llm-mode", "batch",
                                 "--batch", str(batch), "--run-dir", str(run_dir)], env=ENV)
    return result.exit_code, result.output


def resume(run_dir: Path, *replies: Path) -> tuple[TuneResult, list[str]]:
    """``kernelevolve.resume`` (what `kernelevolve resume --replies` runs): the result and the
    nodes this resume evaluated."""
    events: list[Event] = []
    result = resume_run(run_dir, replies=replies, on_event=events.append)
    return result, [str(e.node_id) for e in events if e.kind == EventKind.evaluate]


def test_a_batch_round_stops_for_its_replies_and_resumes_to_the_tuned_kernel(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    run_dir = tmp_path / "run"
    code, out = tune(run_dir, batch=3)
    assert code == EXIT_AWAITING_REPLIES, out
    first = run_dir / "batch" / "requests-001.jsonl"
    assert f"wrote 3 requests to {first}" in out
    assert f"kernelevolve resume {run_dir} --replies replies.jsonl" in out
    assert not (tmp_path / TUNED).exists()
    requests = read_requests(first)
    # every line is a Batch API input line: nothing else in it, a chat completion request
    assert len(requests) == 3
    for line in requests:
        assert set(line) == {"custom_id", "method", "url", "body"}
        BatchRequest.model_validate(line)
        assert line["method"] == "POST" and line["url"] == "/v1/chat/completions"
        assert line["body"]["model"] == "gpt-4o-mini"
        assert [m["role"] for m in line["body"]["messages"]] == ["system", "user"]
        assert "ModelNew" in line["body"]["messages"][1]["content"]
        assert len(line["custom_id"]) <= MAX_CUSTOM_ID
    assert len({line["custom_id"] for line in requests}) == 3
    assert len({line["body"]["messages"][1]["content"] for line in requests}) == 3
    assert not (run_dir / "candidates").exists()  # nothing was drafted, so nothing evaluated

    good, no_code, lost = requests
    replies1 = write_output(tmp_path / "output-1.jsonl", [
        ok_line(good, "good_block256"), ok_line(no_code, "no_code"), error_line(lost)])
    result, evaluated = resume(run_dir, replies1)
    assert evaluated == ["n0001"] and not result.finished
    wanted = result.awaiting
    assert isinstance(wanted, RepliesWanted)
    second = run_dir / "batch" / "requests-002.jsonl"
    assert wanted.requests_file == str(second) and wanted.new_file
    # the reply without code is asked again (a new request of the same branch), the error line's
    # request again as it was; the good kernel was evaluated
    requests2 = {line["custom_id"]: line for line in read_requests(second)}
    assert set(requests2) == set(wanted.custom_ids) == {
        no_code["custom_id"][:-1] + "1", lost["custom_id"]}
    assert set(wanted.errors) == {lost["custom_id"]}
    assert "batch_expired" in wanted.errors[lost["custom_id"]]
    re_ask = requests2[no_code["custom_id"][:-1] + "1"]["body"]["messages"][1]["content"]
    assert re_ask != no_code["body"]["messages"][1]["content"] and "no code" in re_ask.lower()
    assert requests2[lost["custom_id"]]["body"] == lost["body"]
    assert (run_dir / "batch" / "replies-001.jsonl").read_text() == replies1.read_text()

    replies2 = write_output(tmp_path / "output-2.jsonl", [
        ok_line(requests2[no_code["custom_id"][:-1] + "1"], "good_block1024"),
        ok_line(requests2[lost["custom_id"]], "compile_error")])
    result, evaluated = resume(run_dir, replies2)
    assert result.finished and result.awaiting is None
    assert result.best_node == "n0001" and "verified kernel found" in (result.stop_reason or "")
    assert result.candidates == 3 and result.verified == 2
    assert result.usage.llm_calls == 4 and result.usage.tokens > 0  # the error line is no call
    assert sorted(evaluated) == ["n0002", "n0003"]  # n0001 is not evaluated again
    tuned = (tmp_path / TUNED).read_text()
    assert tuned == (run_dir / "best.py").read_text() and "ModelNew" in tuned
    assert sorted(p.name for p in (run_dir / "batch").iterdir()) == [
        "replies-001.jsonl", "replies-002.jsonl", "requests-001.jsonl", "requests-002.jsonl"]


def test_a_sequential_run_goes_through_the_debugger_one_request_a_stop(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    run_dir = tmp_path / "run"
    code, out = tune(run_dir, batch=1)
    assert code == EXIT_AWAITING_REPLIES, out
    (draft,) = read_requests(run_dir / "batch" / "requests-001.jsonl")
    assert "-coder-0" in draft["custom_id"]
    result, evaluated = resume(run_dir, write_output(tmp_path / "o1.jsonl",
                                                     [ok_line(draft, "compile_error")]))
    assert result.awaiting is not None and evaluated == ["n0001"]
    (repair,) = read_requests(run_dir / "batch" / "requests-002.jsonl")
    # the run went on at the Debugger: its prompt carries the failed kernel and its error
    assert "-debugger-0" in repair["custom_id"]
    assert "negative_slop" in repair["body"]["messages"][1]["content"]
    result, evaluated = resume(run_dir, write_output(tmp_path / "o2.jsonl",
                                                     [ok_line(repair, "repaired")]))
    assert result.finished and result.best_node == "n0002" and evaluated == ["n0002"]
    assert (tmp_path / TUNED).read_text() == (run_dir / "best.py").read_text()


def test_partial_replies_write_a_requests_file_for_the_rest(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    monkeypatch.chdir(tmp_path)
    run_dir = tmp_path / "run"
    code, out = tune(run_dir, batch=3)
    assert code == EXIT_AWAITING_REPLIES, out
    requests = read_requests(run_dir / "batch" / "requests-001.jsonl")
    # one reply of three (a kernel the static checks refuse: evaluated in a second)
    result, evaluated = resume(run_dir, write_output(tmp_path / "o1.jsonl",
                                                     [ok_line(requests[0], "compile_error")]))
    assert evaluated == ["n0001"]
    wanted = result.awaiting
    assert wanted is not None and wanted.new_file
    rest = sorted(r["custom_id"] for r in requests[1:])
    assert wanted.custom_ids == rest and wanted.asked_before == rest and not wanted.errors
    assert [r["custom_id"] for r in read_requests(wanted.requests_file)] == rest
    # resumed with nothing new (the command): the same requests, no new file
    out = runner.invoke(app, ["resume", str(run_dir)], env=ENV)
    assert out.exit_code == EXIT_AWAITING_REPLIES, out.output
    out = out.output
    assert f"still waiting for the replies of 2 requests in {wanted.requests_file}" in out
    assert len(list((run_dir / "batch").glob("requests-*.jsonl"))) == 2


def names(custom_ids: list[str]) -> list[str]:
    """The ids without their run tag: what each request asks for."""
    return [cid.split("-", 2)[2] for cid in custom_ids]


def answer_round(tmp_path: Path, name: str, order: list[list[int]]) -> list[list[str]]:
    """A round of three, each resume answering the requests ``order`` names (indices into the
    first file) with a kernel the static checks refuse; the names each stop asked for. Every
    request any file holds is the first one of its id, word for word: an id never names two
    requests, and a reply answers exactly the request it was given for."""
    run_dir = tmp_path / name
    code, out = tune(run_dir, batch=3)
    assert code == EXIT_AWAITING_REPLIES, out
    first = read_requests(run_dir / "batch" / "requests-001.jsonl")
    stops = [[line["custom_id"] for line in first]]
    for k, picks in enumerate(order):
        output = write_output(tmp_path / f"{name}-{k}.jsonl",
                              [ok_line(first[i], "compile_error") for i in picks])
        result, evaluated = resume(run_dir, output)
        assert sorted(evaluated) == [f"n{i + 1:04d}" for i in picks]
        assert result.awaiting is not None
        stops.append(result.awaiting.custom_ids)
        if k == 0:  # a resume with nothing new asks for the same ids, in the same file
            again, evaluated = resume(run_dir)
            assert again.awaiting is not None and not evaluated
            assert again.awaiting.custom_ids == result.awaiting.custom_ids
            assert not again.awaiting.new_file
    seen: dict[str, dict] = {}
    for path in sorted((run_dir / "batch").glob("requests-*.jsonl")):
        for line in read_requests(path):
            assert seen.setdefault(line["custom_id"], line["body"]) == line["body"]
    assert {tag_of(cid) for stop in stops for cid in stop} == {tag_of(stops[0][0])}
    return [names(stop) for stop in stops]


def test_custom_ids_name_what_is_asked_whatever_the_resumes_and_the_order_of_the_replies(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    drafts = ["n0001-coder-0", "n0002-coder-0", "n0003-coder-0"]
    # the round's three refused kernels get a repair wave: each repair is the next new node
    repairs = ["n0004-debugger-0", "n0005-debugger-0", "n0006-debugger-0"]
    # one reply a resume, last request first (and a resume without replies between)
    one_by_one = answer_round(tmp_path, "a", [[2], [0], [1]])
    assert one_by_one == [drafts, ["n0001-coder-0", "n0002-coder-0"], ["n0002-coder-0"],
                          repairs]
    # a fresh run of the same problem answered in another order asks for the same requests
    together = answer_round(tmp_path, "b", [[0, 1], [2]])
    assert together == [drafts, ["n0003-coder-0"], repairs]


def test_every_branch_of_a_round_asks_at_its_stop_when_the_branches_wait_for_a_thread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """LangGraph cancels a superstep's tasks that have not started when one fails; a branch
    that waits for a thread (the pool also runs the checkpoint writes; a loaded host) must
    still ask before the run stops, or its request waits for the next file. One thread for the
    round's three branches, and a switch interval that hands the GIL over at once, make the
    branches wait whenever the first one stops."""
    monkeypatch.chdir(tmp_path)
    interval = sys.getswitchinterval()
    settings = load_settings(llm={"mode": "batch", "model": "gpt-4o-mini"},
                             search={"batch": 3, "retrieve": False, "distill": False},
                             eval={"n_input_sets": 2}, runs={"dir": str(tmp_path / "runs")})
    run_dir = tmp_path / "run"
    sys.setswitchinterval(1e-6)
    try:
        with Session.create(PROBLEM, target="cpu", settings=settings, run_dir=run_dir) as s:
            s.config["max_concurrency"] = 1
            result = s.run()
        assert result.awaiting is not None
        first = read_requests(result.awaiting.requests_file)
        assert names(result.awaiting.custom_ids) == [
            "n0001-coder-0", "n0002-coder-0", "n0003-coder-0"]
        output = write_output(tmp_path / "o1.jsonl", [ok_line(first[1], "compile_error")])
        with Session.open(run_dir, replies=[output]) as s:
            s.config["max_concurrency"] = 1
            result = s.run()
    finally:
        sys.setswitchinterval(interval)
    assert result.awaiting is not None
    assert names(result.awaiting.custom_ids) == ["n0001-coder-0", "n0003-coder-0"]
    # n0002's outcome waits in the checkpoint for its round: it is not evaluated again
    output = write_output(tmp_path / "o2.jsonl", [ok_line(first[i], "compile_error")
                                                  for i in (0, 2)])
    result, evaluated = resume(run_dir, output)
    assert sorted(evaluated) == ["n0001", "n0003"] and result.candidates == 3


def test_replies_to_requests_the_run_never_wrote_are_refused(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    monkeypatch.chdir(tmp_path)
    run_dir = tmp_path / "run"
    code, out = tune(run_dir, batch=2)
    assert code == EXIT_AWAITING_REPLIES, out
    requests = read_requests(run_dir / "batch" / "requests-001.jsonl")
    stranger = dict(requests[0], custom_id="ke-00000000-n0001-coder-0")
    bad = write_output(tmp_path / "other.jsonl", [ok_line(requests[1], "good_block256"),
                                                  ok_line(stranger, "good_block256")])
    with pytest.raises(RepliesError, match=r"1 of its 2 lines answer requests this run never "
                                           r"wrote: ke-00000000-n0001-coder-0.*another run"):
        Session.open(run_dir, replies=[bad])
    assert not list((run_dir / "batch").glob("replies-*"))  # nothing of it was taken
    result = runner.invoke(app, ["resume", str(run_dir), "--replies", str(bad)], env=ENV)
    assert result.exit_code == 1  # main() prints "RepliesError: ..."; the runner re-raises
    assert isinstance(result.exception, RepliesError)
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(ok_line(requests[0], "good_block256")) + "\n{\"id\": \"x\"}\n")
    with pytest.raises(RepliesError, match=r"line 2 of .*broken.jsonl is not a Batch API "
                                           r"output line: custom_id"):
        Session.open(run_dir, replies=[broken])


def test_batch_mode_needs_a_model_to_name_in_its_requests(tmp_path: Path) -> None:
    settings = load_settings(llm={"mode": "batch"}, search={"retrieve": False, "distill": False},
                             runs={"dir": str(tmp_path / "runs")})
    with pytest.raises(ConfigError, match=r"llm.mode = batch .* --llm MODEL"):
        Session.create(PROBLEM, target="cpu", settings=settings)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_a_bench_gathers_its_runs_requests_into_one_file_and_continues_with_the_output(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    problems, out = tmp_path / "problems", tmp_path / "bench"
    problems.mkdir()
    for name in ("a_leaky", "b_leaky"):
        (problems / f"{name}.py").write_text(PROBLEM.read_text())
    args = ["bench", str(problems), "--target", "cpu", "--no-kb", "--llm", "gpt-4o-mini",
            "--llm-mode", "batch", "--out", str(out)]
    result = runner.invoke(app, args, env=ENV)
    assert result.exit_code == EXIT_AWAITING_REPLIES, result.output
    gathered = read_requests(out / "requests-001.jsonl")
    assert f"2 run(s); their requests are gathered in {out / 'requests-001.jsonl'}" in \
        " ".join(result.output.split())
    tags = {tag_of(line["custom_id"]) for line in gathered}
    assert len(gathered) == 2 and len(tags) == 2  # one request of each run, one file
    stray = dict(gathered[0], custom_id="ke-00000000-n0001-coder-0")
    bad = write_output(tmp_path / "stray.jsonl", [ok_line(stray, "good_block256")])
    assert isinstance(runner.invoke(app, args + ["--replies", str(bad)], env=ENV).exception,
                      RepliesError)
    output = write_output(tmp_path / "output.jsonl",
                          [ok_line(line, "good_block256") for line in gathered])
    result = runner.invoke(app, args + ["--replies", str(output)], env=ENV)
    assert result.exit_code == 0, result.output
    report = json.loads((out / "bench.json").read_text())
    assert report["n_correct"] == 2 and report["requests_file"] is None
    assert all(p["awaiting"] is None and p["correct"] for p in report["problems"])
