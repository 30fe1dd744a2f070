"""Optimization rounds end to end through the real graph (issue #18): a scripted model answers
the optimization prompts with a no-op (its parent renamed and reformatted), a faster kernel, a
slower one, a broken one and a cheat, on the simulated MTIA, so time comes from the simulator.
Each prompt after a verified kernel carries the diagnosis with its evidence, the simulated
chip's ceiling and the parent's roofline fraction, eager's latency, the siblings already tried,
the design direction and the request for one concrete change; no two prompts of a run are the
same, also when a batch plans three siblings together. Every call's prompt, reply and token
counts stay inspectable (``show``, the HTML report)."""

from __future__ import annotations

import re
from pathlib import Path

from rich.console import Console

from kernelevolve.config import load_settings
from kernelevolve.graph.inspect import render_candidate
from kernelevolve.graph.session import Session
from kernelevolve.graph.state import EventKind
from kernelevolve.report import build_report
from kernelevolve.store import records_from_state
from kernelevolve.synth.llm.chat import LLMSynthesizer
from tests.synth.conftest import PROBLEM, fenced_code, reply_text
from tests.synth.llm.scripted import ScriptedChatModel


def fenced(code: str, words: str = "Here is the kernel.") -> str:
    return f"{words}\n\n```python\n{code}```\n"


def renamed(code: str) -> str:
    """``code`` with its locals, a parameter and the kernel renamed, comments and a docstring
    added and the layout changed: the same program."""
    out = (code.replace("offs", "offsets").replace("x_flat", "flat")
           .replace("leaky_relu_scale_clamp_kernel", "fused_chain_kernel")
           .replace("n_elements", "numel"))
    out = out.replace("    pid = tl.program_id(0)",
                      '    """One block of the flattened tensor."""\n'
                      "    # which block this program owns\n    pid = tl.program_id( 0 )")
    return "# A tidier version of the same kernel.\n" + out


def small_problem(tmp_path: Path) -> Path:
    """Example problem 03 at 512 x 512: the simulator times fewer programs."""
    source = PROBLEM.read_text()
    assert "batch_size = 4096\ndim = 4096\n" in source
    path = tmp_path / "03_leaky_relu_scale_clamp.py"
    path.write_text(source.replace("batch_size = 4096\ndim = 4096\n",
                                   "batch_size = 512\ndim = 512\n"))
    return path


def settings(tmp_path: Path, **search: object):
    return load_settings(
        search={"retrieve": False, "distill": False, "goal": 100.0, "warm_start": 0,
                "max_repairs": 0, **search},
        eval={"n_input_sets": 1, "cpu_max_elements": 4096, "gpu_compile_arch": None},
        runs={"dir": str(tmp_path / "runs")})


def test_optimization_rounds_with_faster_slower_broken_cheating_and_no_op_replies(
        tmp_path: Path) -> None:
    slow, fast = fenced_code("good_block256"), fenced_code("good_block1024")
    broken = fast.replace("mask = offs < n_elements", "mask = (offs < n_elements")
    replies = [
        reply_text("good_block256"),             # r1: n0001, the first verified kernel
        fenced(renamed(slow), "Renamed for clarity."),  # r2: a no-op of n0001: re-asked
        reply_text("good_block1024"),            # r2: n0002, faster: the new best
        fenced(slow),                            # r3: n0003 from n0002, slower
        fenced(broken),                          # r4: n0004 from n0003, does not compile
        reply_text("cheat_cache"),               # r5: n0005 from n0003, memoizes outputs
    ]
    chat = ScriptedChatModel(replies)
    # max_children 1: every round expands the newest node, so rounds 2-5 are optimizations
    cfg = settings(tmp_path, rounds=5, max_children=1, max_reply_retries=1)
    with Session.create(small_problem(tmp_path), target="mtia-sim:2i", settings=cfg,
                        synthesizer=LLMSynthesizer(chat, "scripted-coder")) as session:
        result = session.run()
        state = session.values()
        run_dir = session.run_dir
        spec = session.spec
    tree = state["tree"]
    prompts = [r[-1].text for r in chat.requests]
    assert len(prompts) == 6 and len(set(prompts)) == 6  # no request asked twice

    # what the graph did with each reply
    n = tree.nodes
    assert [n[i].parent for i in ("n0001", "n0002", "n0003", "n0004", "n0005")] == [
        "root", "n0001", "n0002", "n0003", "n0003"]
    assert n["n0001"].ok and n["n0002"].ok and n["n0003"].ok
    assert n["n0002"].latency_ms < n["n0001"].latency_ms  # faster: the new best
    assert n["n0003"].latency_ms > n["n0002"].latency_ms  # slower: kept, not the best
    assert result.best_node == "n0002" and result.simulated
    assert n["n0004"].status == "compile_error" and "never closed" in n["n0004"].message
    assert n["n0005"].status == "cheat" and "global _LAST" in n["n0005"].message
    events = state["events"]
    assert not [e for e in events if e.kind == EventKind.repair]  # max_repairs 0
    # the no-op was not evaluated: one noop event, one evaluation less, the call on record
    noops = [e for e in events if e.kind == EventKind.noop]
    assert len(noops) == 1 and "n0001's up to renaming" in noops[0].text
    assert result.usage.evaluations == 5 and result.usage.llm_calls == 6
    [reask] = n["n0002"].reasks
    assert "AST-level no-op" in reask.problem and reask.prompt == prompts[1]
    assert reask.prompt_tokens > 0 and reask.completion_tokens > 0 and reask.system

    # the optimization prompt of round 2: diagnosis, evidence, ceiling, latencies, one change
    p2 = prompts[1]
    diag = n["n0001"].diagnosis
    assert diag is not None and diag.source == "mtia-sim" and diag.ceiling_ms is not None
    assert diag.roofline_fraction is not None and 0 < diag.roofline_fraction <= 1
    assert f"## Diagnosis\nProfiling (mtia-sim) finds n0001 {diag.kind}, at " \
           f"{100 * diag.roofline_fraction:.0f}% of its roofline bound." in p2
    assert "Ceiling: simulated MTIA 2i: on-chip SRAM bandwidth 2.7 TB/s" in p2
    assert f"where n0001 takes {n['n0001'].latency_ms:.4g} ms" in p2
    assert "Eager PyTorch takes" in p2 and "- simulated MTIA 2i: time set by" in p2
    assert re.search(r"on-chip traffic [\d.]+ MB per forward \(eager's unfused ops", p2)
    assert "Direction for this candidate, " in p2
    assert "Make ONE concrete change to n0001" in p2
    assert "only renames, reformats or edits comments is discarded" in p2
    # the re-ask says why the last reply was not used
    assert "Your previous reply was not used: the reply's kernel is n0001's" in prompts[2]
    # round 5 from n0003 shows the failed sibling n0004 with its direction and its diff
    p5 = prompts[5]
    assert f"n0004 [{n['n0004'].direction}]" in p5 and "compile_error" in p5
    assert "```diff\n--- n0003\n+++ n0004" in p5 and "+    mask = (offs" in p5
    assert "## Best kernel so far: n0002" in p5
    assert n["n0004"].direction and n["n0005"].direction != n["n0004"].direction

    # `kernelevolve show` lists both calls behind n0002 with their tokens and the run's totals
    record, candidates, _ = records_from_state(spec, state, run_dir)
    console = Console(record=True, width=200)
    cand = next(c for c in candidates if c.node_id == "n0002")
    render_candidate(record, cand, candidates, console)
    shown = console.export_text()
    assert "call 1 of 2" in shown and "call 2 of 2" in shown
    assert f"{reask.prompt_tokens} prompt + {reask.completion_tokens} completion tokens" in shown
    assert "not used: the reply's kernel is n0001's" in shown
    assert "6 call(s), " in shown and f"{result.usage.prompt_tokens} prompt + " in shown
    assert "ceiling: simulated MTIA 2i" in shown or n["n0002"].diagnosis is None
    # the HTML report: a table of every call and each node's calls, prompts and replies
    html = build_report(run_dir)
    calls = html.split("<h2>Synthesizer calls</h2>")[1].split("<h2>")[0]
    assert calls.count("<tr data-node=") == 6
    assert f"{result.usage.prompt_tokens} prompt + {result.usage.completion_tokens} completion" \
        in calls
    section = re.search(r'<section [^>]*id="node-n0002".*?</section>', html, re.S)
    assert section is not None and "Call 1 of 2" in section.group(0)
    assert "(not used: the reply&#39;s kernel is n0001&#39;s" in section.group(0)


def test_a_batch_plans_siblings_with_distinct_directions_and_shows_each_the_others(
        tmp_path: Path) -> None:
    """Three fresh kernels of the root a round, two rounds, every reply the same cheat (refused
    by the static check, so no worker runs): still six different requests."""
    chat = ScriptedChatModel([reply_text("cheat_cache")] * 6)
    cfg = settings(tmp_path, rounds=2, batch=3, max_reply_retries=0)
    with Session.create(PROBLEM, target="cpu", settings=cfg,
                        synthesizer=LLMSynthesizer(chat, "scripted-coder")) as session:
        session.run()
        state = session.values()
    prompts = [r[-1].text for r in chat.requests]
    assert len(prompts) == 6 and len(set(prompts)) == 6
    tree = state["tree"]
    first = [tree.nodes[f"n000{i}"] for i in (1, 2, 3)]
    assert all(x.status == "cheat" and x.parent == "root" for x in first)
    assert len({x.direction for x in first}) == 3
    # round 1: each prompt names its own direction and the two drafted beside it
    for x in first:
        mine = next(p for p in prompts[:3] if f"Direction for this candidate, {x.direction}:"
                    in p)
        others = [y for y in first if y is not x]
        for y in others:
            assert f"- {y.id} [{y.direction}]: being written at the same time" in mine
    # round 2: the three tried ones with their outcome and a summary of how each was built
    second = [tree.nodes[f"n000{i}"] for i in (4, 5, 6)]
    assert second[0].direction not in {x.direction for x in first}  # an untried design first
    for p in prompts[3:]:
        assert "## Kernels already tried from scratch" in p
        for x in first:
            assert f"- {x.id} [{x.direction}]: cheat" in p
        assert "kernel leaky_relu_scale_clamp_kernel(x_ptr, out_ptr" in p
