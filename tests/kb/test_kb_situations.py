"""Retrieval for the situations the Librarian really sees, on the labelled set
``librarian_cases.json`` (KernelBench operators x fresh / repair / optimize; real error
messages of broken kernels run through the harness on the cpu target; profiler diagnoses with
the Planner's intents). ``benchmarks/suites/kb_retrieval.py`` measures the whole set, before and
after, with its held-out third; this test checks every other case, built through the Librarian's own
code (``librarian.situation``, ``reference_ops``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelevolve.agents import librarian
from kernelevolve.graph.search import DiagnosisInfo
from kernelevolve.graph.state import ErrorInfo
from kernelevolve.kb import KnowledgeBase, Situation, kb_target, lexical, retrieval
from kernelevolve.kb.corpus import bundled_documents
from kernelevolve.problem import load_problem
from kernelevolve.synth.factory import operator_class

CASES = json.loads((Path(__file__).parent / "librarian_cases.json").read_text())
K = 4


def _situation(case: dict) -> Situation:
    """The Situation the Librarian builds for a case, from the operator class and ops recorded
    in it (what ``operator_class`` and ``reference_ops`` gave for its problem; the benchmark and
    ``test_recorded_inputs_are_what_the_trace_gives`` recompute them)."""
    return librarian.situation(
        kb_target(case["target"], case["device"]),
        case["operator_class"],
        tuple(case["ops"]),
        DiagnosisInfo(**case["diagnosis"]) if case["diagnosis"] else None,
        ErrorInfo(node_id="n1", **case["error"]) if case["error"] else None,
        case["intent"],
    )


def test_the_labelled_set_covers_the_modes_and_names_real_documents() -> None:
    assert len(CASES) >= 60
    modes = {c["mode"] for c in CASES}
    assert modes == {"fresh", "repair", "optimize"}
    assert all(sum(c["mode"] == m for c in CASES) >= 20 for m in modes)
    held_out = sum(c["split"] == "held_out" for c in CASES)
    assert held_out >= len(CASES) // 3
    known = {d.doc_id for d in bundled_documents()}
    for case in CASES:
        assert case["expect"], case["id"]
        for group in case["expect"]:
            assert set(group) <= known, (case["id"], set(group) - known)
        if case["mode"] == "repair":
            assert case["error"]["message"], case["id"]
        if case["mode"] == "optimize":
            assert case["diagnosis"]["evidence"], case["id"]


def test_recall_at_4_on_every_other_situation(shared_kb: KnowledgeBase) -> None:
    subset = CASES[::2]
    misses, total = [], 0.0
    for case in subset:
        ids = [h.doc_id for h in shared_kb.retrieve(_situation(case), k=K)]
        met = [any(d in ids for d in group) for group in case["expect"]]
        total += sum(met) / len(met)
        if not all(met):
            misses.append((case["id"], ids))
    recall = total / len(subset)
    assert recall >= 0.9, f"recall@{K} = {recall:.3f} on {len(subset)} situations; {misses}"


def test_group_norm_gets_the_norm_guide_not_fusion_and_transposes(
    shared_kb: KnowledgeBase, kernelbench: Path
) -> None:
    """The issue's case: a first GroupNorm kernel on the cpu target."""
    problem = load_problem(kernelbench / "level1" / "35_GroupNorm_.py")
    ops = librarian.reference_ops(problem)
    assert "native_group_norm" in ops
    situation = librarian.situation(
        "cpu", operator_class(problem), ops, None, None,
        "write a first correct kernel that fuses the whole forward",
    )
    ids = [h.doc_id for h in shared_kb.retrieve(situation, k=K)]
    assert ids[0] == "guides/channel-norms", ids
    assert "hardware/cpu-interpreter-target" in ids
    assert "guides/transpose-and-layout" not in ids


def test_an_error_string_a_document_quotes_leads(shared_kb: KnowledgeBase) -> None:
    message = (
        "ModelNew.forward raised InterpreterError: AssertionError('input and other must have "
        "equal reduction dimensions')\nAssertionError: input and other must have equal "
        "reduction dimensions\n\nTraceback (most recent call last):\n  File \"/tmp/c.py\", "
        "line 32, in forward\n    matmul_kernel[grid](a, b, c)\n"
    )
    hits = shared_kb.retrieve(
        Situation(target="cpu", operator_class="matmul", ops=("mm",),
                  error_status="runtime_error", error_message=message),
        k=K,
    )
    assert hits[0].doc_id == "constraints/triton-tl-dot"
    assert "quotes this error" in hits[0].reason


def test_free_text_search_finds_the_tl_dot_rules_first(shared_kb: KnowledgeBase) -> None:
    hits = shared_kb.search("triton compile error: incompatible dimensions in tl.dot")
    assert hits[0].doc_id == "constraints/triton-tl-dot"


@pytest.mark.parametrize(
    "problem",
    [
        "level2/23_Conv3d_GroupNorm_Mean.py",
        # dropout in training mode: traced (its probability is never marked), random ops and all
        "level2/66_Matmul_Dropout_Softmax.py",
        "level1/97_ScaledDotProductAttention.py",
    ],
)
def test_recorded_inputs_are_what_the_trace_gives(kernelbench: Path, problem: str) -> None:
    case = next(c for c in CASES if c["problem"] == problem)
    loaded = load_problem(kernelbench / problem)
    assert operator_class(loaded) == case["operator_class"]
    assert list(librarian.reference_ops(loaded)) == case["ops"]


@pytest.mark.parametrize(
    ("cls", "ops", "expect"),
    [
        ("normalization", ("native_group_norm", "getitem"), ["channel-norm"]),
        (None, ("convolution", "relu", "add"), ["convolution", "fusion"]),
        (None, ("mul", "bmm", "_safe_softmax"), ["attention"]),
        ("pooling", ("max_pool2d_with_indices", "getitem"), ["pooling"]),
        ("conv2d", (), ["convolution"]),
        ("my own thing", (), ["my own thing"]),
    ],
)
def test_aspects_come_from_the_class_and_the_trace(
    cls: str | None, ops: tuple[str, ...], expect: list[str]
) -> None:
    found = retrieval.aspects(Situation(target="cpu", operator_class=cls, ops=ops))
    assert [a.name for a in found] == expect


def test_error_text_keeps_the_error_lines_and_drops_the_traceback() -> None:
    message = (
        "ModelNew.forward raised InterpreterError: ValueError(\"arange's range must be a power "
        "of 2\")\nValueError: arange's range must be a power of 2\n\nThe above exception was "
        "the direct cause of the following exception:\n\nTraceback (most recent call last):\n"
        "  File \"/x/candidate.py\", line 336, in do_forward\n    out = model(*args)\n"
        "          ^^^^^^^^^^^^\ntriton.runtime.errors.InterpreterError: ValueError(\"arange\")"
    )
    text = retrieval.error_text(message)
    assert text is not None
    assert text.splitlines() == [
        "ModelNew.forward raised InterpreterError: ValueError(\"arange's range must be a power "
        "of 2\")",
        "ValueError: arange's range must be a power of 2",
        "triton.runtime.errors.InterpreterError: ValueError(\"arange\")",
    ]


def test_signatures_treat_numbers_and_placeholders_as_wildcards() -> None:
    chunk = (
        "## `Input shapes should have M >= 16, N >= 16 and K >= 16`\n\n"
        "Use `tl.sum(a * b, axis=1)` for vectors; `NameError: Cannot access global variable X "
        "from within @jit'ed function` means a global."
    )
    sigs = lexical.signatures(chunk)
    assert [s.text for s in sigs] == [
        "Input shapes should have M >= 16, N >= 16 and K >= 16",
        "NameError: Cannot access global variable X from within @jit'ed function",
    ]
    triton_37 = lexical.normalise("CompilationError: Input shapes should have M >= 1, N >= 1 "
                                  "and K >= 16")
    assert sigs[0].matches(triton_37)
    assert sigs[1].matches(lexical.normalise(
        "NameError: Cannot access global variable ZERO from within @jit'ed function"))
    assert not sigs[0].matches(lexical.normalise("Input tensors should be contiguous"))


def test_bm25_weighs_rare_identifiers() -> None:
    bm = lexical.BM25([
        "tl.dot rules: shapes of tl.dot operands",
        "masks on tl.load and tl.store",
        "shapes of blocks and tl.arange",
    ])
    scores = bm.scores(lexical.tokens("incompatible shapes in tl.dot"))
    # 'tl' is in every text; 'tl.dot' and 'dot' only in the first.
    assert int(scores.argmax()) == 0
    assert scores[0] > 2 * max(scores[1], scores[2])
    assert scores[2] > scores[1]  # 'shapes'
    assert lexical.tokens("native_group_norm tl.dot") == [
        "native_group_norm", "native", "group", "norm", "tl.dot", "tl", "dot"]
