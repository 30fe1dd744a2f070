"""From a search situation to queries with tier/target filters, and from their results to one
ranked list.

A situation becomes a few *probes*, each a query with the tiers and target it may search and the
topics that mark a document as on-point, in priority order:

- a failed candidate (compile/runtime error, mismatch, ...) pulls debugging notes and correctness
  constraints, queried with the error message itself, then the target's hardware notes;
- a diagnosis (memory-bound, ...) pulls the matching optimisation guides and the target's hardware
  documents on the limiting resource (memory hierarchy, compute peaks, occupancy limits, launch);
- the operator class pulls operator-specific guides;
- with neither error nor diagnosis (a first round), the target overview and correctness rules;
- skills for the target are searched with the whole situation and kept only when close.

Results are merged round-robin across probes (best hit of each probe first), one hit per document,
so the top few cover every aspect of the situation instead of being near neighbours of one query.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernelevolve.kb.models import Situation, Tier

_ERROR_QUERIES: dict[str, str] = {
    "compile_error": "Triton compile error CompilationError: fix constexpr, power of 2 arange, "
    "tl.dot shapes and dtypes, unsupported Python in @triton.jit",
    "runtime_error": "Triton runtime error: illegal memory access, out-of-bounds pointer, cpu "
    "tensor argument, misaligned address, out of resources",
    "mismatch": "wrong results mismatch against the reference: missing mask, neutral other value, "
    "wrong strides, fp32 accumulation, NaN in output",
    "timeout": "evaluation timeout: kernel hangs, infinite loop, spin lock, too many autotune "
    "configs, huge grid in the interpreter",
    "cheat": "candidate rejected as cheat by anti-cheat: forward ran the aten operator, torch "
    "fallback, cached output, modified inputs",
    "crash": "worker crash: segfault, out-of-bounds access in the interpreter, killed for memory",
}
# The correctness rules each failure calls for besides the debugging notes.
_ERROR_RULES: dict[str, str] = {
    "compile_error": "Triton language rules: tl.constexpr block shapes, dtypes, control flow",
    "runtime_error": "pointer arithmetic, strides, masks on tl.load and tl.store, int64 offsets",
    "mismatch": "masks on loads and stores, neutral other values, dtypes and fp32 accumulation",
    "timeout": "grid size, loops and autotuning cost",
    "cheat": "the kernelevolve candidate contract: ModelNew, allowed torch ops, anti-cheat rules",
    "crash": "masks on every access, pointer arithmetic, the Triton interpreter",
}
_DIAGNOSIS_GUIDES: dict[str, str] = {
    "memory-bound": "the kernel is memory-bound: move fewer bytes and reach peak bandwidth",
    "compute-bound": "the kernel is compute-bound: tensor cores, lower precision, math throughput",
    "occupancy-bound": "the kernel is occupancy-bound or latency-bound: registers, shared memory, "
    "resident warps, stalls",
    "launch-bound": "the kernel is launch-bound: launch overhead dominates, fewer launches",
}
_DIAGNOSIS_HARDWARE: dict[str, str] = {
    "memory-bound": "memory hierarchy: HBM or DRAM bandwidth, L2 cache, shared or local memory, "
    "on-chip SRAM",
    "compute-bound": "compute peaks: tensor cores or matrix engines, TFLOPS per precision, "
    "number of SMs or PEs",
    "occupancy-bound": "registers, shared memory per SM or PE local memory, resident warps, "
    "number of SMs or PEs",
    "launch-bound": "kernel launch overhead, number of SMs or PEs, programming model",
}
# Topics that mark a hardware document as the one about the limiting resource.
_DIAGNOSIS_HW_TOPICS: dict[str, tuple[str, ...]] = {
    "memory-bound": ("memory-hierarchy",),
    "compute-bound": ("overview", "peak-flops"),
    "occupancy-bound": ("overview", "registers"),
    "launch-bound": ("overview", "launch-overhead"),
}
_HARDWARE_RULES = "rules and restrictions for Triton kernels on this target"
_HARDWARE_OVERVIEW = "overview of the target: programming model, compute units, memory"
_GENERAL_RULES = "Triton correctness rules: masks, pointer arithmetic, dtypes"
_SKILL_HEAD = "skill: a change that made a kernel faster, with its measured gain"
_STOP = {"kernel", "kernels", "op", "ops", "operator", "the", "and", "for", "with"}

# Score = cosine distance - bonuses. Distances of relevant chunks differ by about 0.05-0.2, so a
# matching topic is worth a clear but not overriding nudge; a document written for exactly the
# situation's target (cuda:h100 rather than cuda) is preferred a little more.
TOPIC_BONUS = 0.05
TARGET_BONUS = 0.1

Part = tuple[str, float]


@dataclass(frozen=True)
class Probe:
    """One query: weighted texts whose embeddings are summed, and what it may search."""

    parts: tuple[Part, ...]
    tiers: tuple[Tier, ...]
    reason: str
    keywords: frozenset[str] = field(default_factory=frozenset)
    # Prefer documents written for exactly the situation's target over family-wide ones
    # (the H100 memory document over the generic CUDA one).
    exact_target: bool = False


@dataclass(frozen=True)
class Candidate:
    """A chunk returned by a probe, before texts are fetched."""

    id: str
    distance: float
    meta: dict[str, Any]
    reason: str

    @property
    def doc_id(self) -> str:
        return str(self.meta["doc_id"])


def _norm(word: str) -> str:
    word = word.strip().lower()
    return word[:-1] if word.endswith("s") and len(word) > 3 else word


@functools.lru_cache(maxsize=4096)
def topic_forms(topics: tuple[str, ...]) -> frozenset[str]:
    return frozenset(_norm(t) for t in topics)


def keyword_forms(*phrases: str | None) -> frozenset[str]:
    """Normalised forms of phrases and of their words ('sum reduction' -> sum, reduction, ...)."""
    forms: set[str] = set()
    for phrase in phrases:
        if not phrase:
            continue
        forms.add(_norm(phrase))
        forms.update(_norm(w) for w in re.split(r"[^a-z0-9]+", phrase.lower()) if len(w) >= 3)
    return frozenset(forms - _STOP)


def _parts(*parts: tuple[str | None, float]) -> tuple[Part, ...]:
    return tuple((text.strip(), w) for text, w in parts if text and text.strip())


def plan(situation: Situation) -> list[Probe]:
    """The probes for ``situation``, most important first.

    Query vectors are weighted sums of the embeddings of a fixed aspect text (what kind of
    document is wanted) and of the situation's own words (operator, error message, intent). The
    fixed texts repeat across rounds, so their embeddings are computed once per process.
    """
    s = situation
    op = s.operator_class and f"{s.operator_class} kernel"
    message = (s.error_message or "").strip()[-300:] or None
    op_forms = keyword_forms(s.operator_class)
    probes: list[Probe] = []
    if s.error_status:
        status = keyword_forms(s.error_status)
        probes += [
            Probe(
                _parts((message, 1.0), (_ERROR_QUERIES[s.error_status], 0.7)),
                ("constraints",),
                f"{s.error_status}: debugging notes",
                status | {"debugging"},
            ),
            Probe(
                _parts((message, 1.0), (_ERROR_RULES[s.error_status], 0.7), (op, 0.4)),
                ("constraints",),
                f"{s.error_status}: correctness rules",
                status,
            ),
            Probe(
                _parts((_HARDWARE_RULES, 1.0), (message, 0.8)),
                ("hardware",),
                f"{s.error_status}: notes for {s.target}",
            ),
        ]
    if s.diagnosis:
        probes += [
            Probe(
                _parts((_DIAGNOSIS_GUIDES[s.diagnosis], 1.0), (op, 0.5), (s.intent, 0.8)),
                ("guides",),
                f"{s.diagnosis}: optimisation guide",
                keyword_forms(s.diagnosis),
            ),
            Probe(
                _parts((_DIAGNOSIS_HARDWARE[s.diagnosis], 1.0)),
                ("hardware",),
                f"{s.diagnosis}: {s.target} hardware",
                frozenset(_DIAGNOSIS_HW_TOPICS[s.diagnosis]),
                exact_target=True,
            ),
        ]
    if op or s.intent:
        probes.append(
            Probe(
                _parts((op, 1.0), (s.intent, 0.8)),
                ("guides",),
                f"operator {s.operator_class}" if op else "intent",
                op_forms,
            )
        )
    if not s.error_status and not s.diagnosis:
        probes += [
            Probe(
                _parts((_HARDWARE_OVERVIEW, 1.0)),
                ("hardware",),
                f"{s.target} overview",
                frozenset({"overview"}),
                exact_target=True,
            ),
            Probe(
                _parts((_GENERAL_RULES, 1.0), (op, 0.3)),
                ("constraints",),
                "correctness rules",
            ),
        ]
    return probes


def static_texts() -> list[str]:
    """Every fixed aspect text a probe can use; embedding them up front leaves only the
    situation's own words (operator, message, intent) to embed per retrieval."""
    return [
        *_ERROR_QUERIES.values(),
        *_ERROR_RULES.values(),
        *_DIAGNOSIS_GUIDES.values(),
        *_DIAGNOSIS_HARDWARE.values(),
        _HARDWARE_RULES,
        _HARDWARE_OVERVIEW,
        _GENERAL_RULES,
        _SKILL_HEAD,
    ]


def skill_probe(situation: Situation) -> Probe:
    """Skills are filtered to the target, so the query names the lesson: operator, diagnosis or
    failure, intent. All parts but the intent and message are shared with the other probes and
    already embedded."""
    s = situation
    op = s.operator_class and f"{s.operator_class} kernel"
    return Probe(
        _parts(
            (_SKILL_HEAD, 0.5),
            (op, 1.0),
            (s.diagnosis and _DIAGNOSIS_GUIDES[s.diagnosis], 0.6),
            (s.error_status and _ERROR_QUERIES[s.error_status], 0.4),
            (s.intent, 0.6),
            (s.error_message and s.error_message.strip()[-300:], 0.4),
        ),
        ("skills",),
        "skill distilled from an earlier run",
        keyword_forms(s.operator_class, s.diagnosis),
    )


def relevant_skills(
    candidates: list[Candidate], situation: Situation, max_distance: float
) -> list[Candidate]:
    """Skills worth leading with: close enough, and for the same operator class.

    Skills are performance lessons distilled from speedups, so a failing candidate (an error
    status) gets none: it needs its error fixed first. Lessons from another operator were found
    as close as ones from the same operator (distances 0.4-0.55 either way), so the operator
    class must match.
    """
    if situation.error_status:
        return []
    ops = keyword_forms(situation.operator_class)
    return [
        c
        for c in candidates
        if c.distance <= max_distance
        and (not ops or ops & keyword_forms(str(c.meta.get("operator_class", ""))))
    ]


def embed(probes: list[Probe], encode: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """One unit vector per probe: the normalised weighted sum of its parts' embeddings."""
    texts = list(dict.fromkeys(t for p in probes for t, _ in p.parts))
    index = {t: i for i, t in enumerate(texts)}
    vectors = encode(texts)
    out = np.zeros((len(probes), vectors.shape[1]), dtype=np.float32)
    for row, probe in enumerate(probes):
        for text, weight in probe.parts:
            out[row] += weight * vectors[index[text]]
        out[row] /= max(float(np.linalg.norm(out[row])), 1e-12)
    return out


def score(c: Candidate, keywords: frozenset[str], exact_target: str | None) -> float:
    topics = topic_forms(tuple(c.meta.get("topics") or ()))
    bonus = TOPIC_BONUS * min(2, len(keywords & topics))
    if exact_target is not None and c.meta.get("target") == exact_target:
        bonus += TARGET_BONUS
    return c.distance - bonus


def rerank(
    candidates: list[Candidate], keywords: frozenset[str], exact_target: str | None = None
) -> list[Candidate]:
    """Best chunk per document, ordered by distance minus topic and exact-target bonuses."""
    ranked = sorted(candidates, key=lambda c: score(c, keywords, exact_target))
    best: dict[str, Candidate] = {}
    for c in ranked:
        best.setdefault(c.doc_id, c)
    return list(best.values())


def merge(
    ranked: list[list[Candidate]], k: int, first: list[Candidate] | None = None
) -> list[Candidate]:
    """Round-robin over the probes' ranked lists, one hit per document, ``first`` leading."""
    out: list[Candidate] = []
    seen: set[str] = set()
    for c in first or []:
        if c.doc_id not in seen and len(out) < k:
            out.append(c)
            seen.add(c.doc_id)
    cursors = [0] * len(ranked)
    while len(out) < k:
        progressed = False
        for i, cands in enumerate(ranked):
            while cursors[i] < len(cands) and cands[cursors[i]].doc_id in seen:
                cursors[i] += 1
            if cursors[i] < len(cands) and len(out) < k:
                out.append(cands[cursors[i]])
                seen.add(cands[cursors[i]].doc_id)
                cursors[i] += 1
                progressed = True
        if not progressed:
            break
    return out
