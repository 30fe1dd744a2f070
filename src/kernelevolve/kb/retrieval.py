"""From a search situation to queries with tier/target filters, and from their results to one
ranked list.

A situation becomes a few *probes*, each a query with the tiers and target it may search, the
topics that mark a document as on-point and the words it matches lexically, in priority order:

- a failed candidate (compile/runtime error, mismatch, ...) pulls debugging notes and correctness
  constraints, queried with the error lines of its message (not the traceback around them),
  then, for wrong results, the operator's guide, then the target's hardware notes. Before any
  embedding, a document that quotes the error string itself leads (``lexical.signatures``);
- a diagnosis (memory-bound, ...) pulls the matching optimisation guides and the target's hardware
  documents on the limiting resource (memory hierarchy, compute peaks, occupancy limits, launch);
- the operator pulls operator-specific guides: its *aspects* come from the operator class and
  from the aten ops of the reference's trace (``native_group_norm`` -> group/batch/instance
  norm; ``convolution`` + ``relu`` -> convolution and fusion), one probe per aspect;
- with neither error nor diagnosis (a first round), the target overview and correctness rules;
- skills for the target are searched with the whole situation and kept only when close.

Each probe ranks chunks by cosine similarity plus a BM25 score over the same filtered chunks
(hybrid: identifiers such as ``tl.dot`` or ``group_norm`` count), then by topic and
exact-target bonuses. Results are merged round-robin across probes (best hit of each probe
first), one hit per document, so the top few cover every aspect of the situation instead of
being near neighbours of one query.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernelevolve.kb import lexical
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
# Which stage of the correctness check a mismatch came from says what to look at first.
_MISMATCH_STAGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "non-contiguous inputs": (
        "strides of non-contiguous inputs and outputs: pass the real strides, or .contiguous() "
        "and outputs allocated contiguous; pointer arithmetic",
        ("strides", "contiguous"),
    ),
    "other shapes": (
        "masks on tl.load and tl.store for sizes that are not multiples of the block, "
        "hard-wired sizes, the grid computed from the real size",
        ("masks", "boundary"),
    ),
    "new values in the same input memory": (
        "the candidate contract: no caching of outputs, no results keyed on data pointers",
        ("contract", "caching"),
    ),
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
# A probe's BM25 scores are divided by their best over the filtered chunks and weighted so: the
# chunk with every query word ranks about as if it were this much closer in cosine distance.
LEXICAL_WEIGHT = 0.15
# Weight of the Planner's intent beside an operator aspect's query: a first round's intent is
# always the same sentence ("a first correct kernel that fuses the whole forward"), which would
# otherwise pull the fusion guide for every operator.
INTENT_WEIGHT = 0.8
INTENT_WEIGHT_FRESH = 0.2
# A document whose title names a Triton API the query or error names (``tl.dot rules`` for
# "incompatible dimensions in tl.dot") is the reference for it; the embedding sees only "a
# compile error" and prefers the general debugging notes by about 0.1-0.15.
API_TITLE_BONUS = 0.15
# Operator aspects probed at most (a level-2 problem names several).
MAX_ASPECTS = 3

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
    # Words matched by BM25 beside the embedding (empty: embedding only).
    terms: tuple[str, ...] = ()
    # Triton APIs the situation names (documents titled with one are preferred).
    apis: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class Candidate:
    """A chunk returned by a probe, before texts are fetched."""

    id: str
    distance: float
    meta: dict[str, Any]
    reason: str
    # The weighted, normalised BM25 score that ranked it beside the distance (0: none).
    lexical: float = 0.0

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


@dataclass(frozen=True)
class Aspect:
    """A kind of operator a guide is written for: the query that finds its guide, and topics."""

    name: str
    query: str
    topics: tuple[str, ...]


ASPECTS: dict[str, Aspect] = {
    a.name: a
    for a in (
        Aspect("attention", "attention kernel: FlashAttention, online softmax over Q K^T tiles, "
               "tl.dot", ("attention", "flash-attention")),
        Aspect("channel-norm", "batch norm, instance norm and group norm: per-channel or "
               "per-group mean and variance, Welford, split reduction",
               ("groupnorm", "batchnorm", "instancenorm", "welford")),
        Aspect("layernorm", "layer norm and RMS norm over the last dimension: mean, variance, "
               "Welford", ("layernorm", "rmsnorm", "welford")),
        Aspect("softmax", "row softmax and log-softmax, online softmax",
               ("softmax", "online-softmax", "log-softmax")),
        Aspect("pooling", "max pooling and average pooling windows: kernel size, stride, "
               "padding, dilation", ("pooling", "max-pool", "avg-pool")),
        Aspect("scan", "prefix sum scan: cumsum, cumprod, associative_scan",
               ("scan", "cumsum", "prefix-sum")),
        Aspect("loss", "loss function reduced to a scalar: MSE, Huber, KL divergence, "
               "cross-entropy", ("loss", "losses")),
        Aspect("argreduce", "argmax and argmin: index of the maximum along an axis",
               ("argmax", "reductions")),
        Aspect("convolution", "convolution as implicit GEMM: im2col tiles, tl.dot, layout",
               ("convolution", "implicit-gemm", "conv2d")),
        Aspect("matmul", "matrix multiplication C = A @ B: BLOCK_M x BLOCK_N x BLOCK_K tiles, "
               "tl.dot, program order and L2 reuse", ("matmul", "tiling", "tl.dot")),
        Aspect("gemv", "matrix-vector product and skinny matmul: split-K, reduction over K",
               ("split-k", "gemv", "reductions")),
        Aspect("reduction", "reduction along an axis: sum, mean, max, norms",
               ("reductions", "sum", "mean")),
        Aspect("elementwise", "elementwise activation math: relu, gelu, sigmoid, tanh",
               ("elementwise", "activation")),
        Aspect("fusion", "fuse the whole forward into one kernel: epilogue fusion, no "
               "intermediate tensors", ("fusion", "epilogue")),
    )
}
# Most specific first: a level-2 'conv -> group norm -> mean' is first of all a group norm.
_ORDER = tuple(ASPECTS)
# Operator classes of the offline analysis (llm.offline) and common spellings.
_CLASS_ASPECT = {
    "matmul": "matmul", "convolution": "convolution", "normalization": "channel-norm",
    "groupnorm": "channel-norm", "batchnorm": "channel-norm", "instancenorm": "channel-norm",
    "layernorm": "layernorm", "rmsnorm": "layernorm", "softmax": "softmax",
    "log_softmax": "softmax", "pooling": "pooling", "scan": "scan", "cumsum": "scan",
    "argreduce": "argreduce", "reduction": "reduction", "full_reduction": "reduction",
    "l2norm": "reduction", "rowwise": "reduction", "loss": "loss", "elementwise": "elementwise",
    "attention": "attention", "library_epilogue": "fusion",
}
# aten ops (from the trace) and torch calls (from a source that did not trace), by op_key.
_OP_ASPECT = {
    **dict.fromkeys(("mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "einsum"), "matmul"),
    **dict.fromkeys(("mv", "addmv"), "gemv"),
    **dict.fromkeys(("convolution", "conv", "conv_transpose"), "convolution"),
    **dict.fromkeys(("group_norm", "batch_norm", "instance_norm"), "channel-norm"),
    **dict.fromkeys(("layer_norm", "rms_norm"), "layernorm"),
    **dict.fromkeys(("softmax", "log_softmax"), "softmax"),
    **dict.fromkeys(("safe_softmax", "scaled_dot_product_attention", "multi_head_attention",
                     "flash_attention", "efficient_attention"), "attention"),
    **dict.fromkeys(("max_pool", "avg_pool", "adaptive_avg_pool", "adaptive_max_pool",
                     "lp_pool"), "pooling"),
    **dict.fromkeys(("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"), "scan"),
    **dict.fromkeys(("argmax", "argmin"), "argreduce"),
    **dict.fromkeys(("sum", "mean", "amax", "amin", "prod", "logsumexp", "linalg_vector_norm",
                     "norm", "var", "std", "var_mean"), "reduction"),
    **dict.fromkeys(("nll_loss", "cross_entropy", "mse_loss", "l1_loss", "smooth_l1_loss",
                     "huber_loss", "kl_div", "xlogy", "triplet_margin_loss", "margin_ranking_loss",
                     "hinge_embedding_loss", "binary_cross_entropy", "cosine_embedding_loss"),
                    "loss"),
    **dict.fromkeys(("relu", "gelu", "sigmoid", "tanh", "silu", "mish", "hardswish", "hardtanh",
                     "leaky_relu", "elu", "selu", "celu", "softplus", "softsign", "hardsigmoid",
                     "exp", "log", "clamp", "clamp_min", "clamp_max", "erf", "rsqrt"),
                    "elementwise"),
}
_OP_SUFFIX = re.compile(r"(_with_indices|_legit.*|_forward|_backward|_default|[123]d|_)+$")


def op_key(op: str) -> str:
    """``native_group_norm`` -> ``group_norm``, ``max_pool2d_with_indices`` -> ``max_pool``,
    ``GroupNorm`` (a source call, snake-cased by the Librarian) -> ``group_norm``."""
    key = op.strip().lower().lstrip("_")
    if key.startswith("native_"):
        key = key.removeprefix("native_")
    return _OP_SUFFIX.sub("", key) or key


def aspects(situation: Situation) -> list[Aspect]:
    """The operator aspects of a situation, most specific first: from the operator class and
    the reference's ops; 'fusion' when the ops combine a heavy operator with anything else."""
    s = situation
    names: set[str] = set()
    if s.operator_class:
        cls = s.operator_class.strip().lower()
        if a := _CLASS_ASPECT.get(cls) or _OP_ASPECT.get(op_key(cls.replace(" ", "_"))):
            names.add(a)
    from_ops = {a for op in s.ops if (a := _OP_ASPECT.get(op_key(op)))}
    if "matmul" in from_ops and "attention" in from_ops:
        from_ops.discard("matmul")
    names |= from_ops
    if len(from_ops) > 1 and from_ops - {"elementwise"}:
        names.discard("elementwise")
        names.add("fusion")
    found = [ASPECTS[n] for n in _ORDER if n in names]
    if not found and s.operator_class:
        # A class the table does not know (a user's own words): its name is the query.
        found = [Aspect(s.operator_class, f"{s.operator_class} kernel",
                        tuple(keyword_forms(s.operator_class)))]
    return found


_FRAME = re.compile(r"^(File \"|Traceback \(|The above exception|During handling|[~^]+$)")
_ERROR_LINE = re.compile(r"^[\w.]*(Error|Exception|Warning)\b|^[\w.]+: ")
_MAX_ERROR_TEXT = 600


def error_text(message: str | None) -> str | None:
    """The lines of a failure message that say what went wrong: its first line and the
    ``SomeError: ...`` lines, without traceback frames and source excerpts."""
    if not message or not message.strip():
        return None
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    keep = [lines[0]] + [
        line for line in lines[1:] if not _FRAME.match(line) and _ERROR_LINE.match(line)
    ]
    return "\n".join(dict.fromkeys(keep))[:_MAX_ERROR_TEXT]


def _terms(*texts: str | None) -> tuple[str, ...]:
    return tuple(dict.fromkeys(t for text in texts if text for t in lexical.tokens(text)))


def _rules(status: str, message: str | None) -> tuple[str, frozenset[str]]:
    """The rules text a failure calls for, and topics that mark the rule documents."""
    if status == "mismatch" and message:
        for stage, (rules, topics) in _MISMATCH_STAGES.items():
            if stage in message:
                return rules, keyword_forms(*topics)
    return _ERROR_RULES[status], keyword_forms(status)


def plan(situation: Situation) -> list[Probe]:
    """The probes for ``situation``, most important first.

    Query vectors are weighted sums of the embeddings of a fixed aspect text (what kind of
    document is wanted) and of the situation's own words (operator, error lines, intent). The
    fixed texts repeat across rounds, so their embeddings are computed once per process.
    """
    s = situation
    message = error_text(s.error_message)
    kinds = aspects(s)
    first = kinds[0] if kinds else None
    op = first.query if first else None
    fresh = not s.error_status and not s.diagnosis

    def aspect_probe(a: Aspect, tiers: tuple[Tier, ...] = ("guides",)) -> Probe:
        return Probe(
            _parts((a.query, 1.0), (s.intent, INTENT_WEIGHT_FRESH if fresh else INTENT_WEIGHT)),
            tiers,
            f"operator: {a.name}",
            keyword_forms(*a.topics),
            terms=_terms(a.query),
        )

    probes: list[Probe] = []
    if s.error_status:
        status = keyword_forms(s.error_status)
        rules, rule_topics = _rules(s.error_status, message)
        probes += [
            Probe(
                _parts((message, 1.0), (_ERROR_QUERIES[s.error_status], 0.7)),
                ("constraints",),
                f"{s.error_status}: debugging notes",
                status | {"debugging"},
                terms=_terms(message),
                apis=api_names(message),
            ),
            Probe(
                _parts((message, 1.0), (rules, 0.7), (op, 0.4)),
                ("constraints",),
                f"{s.error_status}: correctness rules",
                rule_topics,
                terms=_terms(message, rules),
                apis=api_names(message),
            ),
        ]
        if s.error_status == "mismatch" and first is not None:
            # Wrong results are often the operator's own semantics (a biased variance, the
            # padding value of a max pool): its guide says them.
            probes.append(aspect_probe(first, ("guides", "constraints")))
        probes.append(
            Probe(
                _parts((_HARDWARE_RULES, 1.0), (message, 0.8)),
                ("hardware",),
                f"{s.error_status}: notes for {s.target}",
            )
        )
    if s.diagnosis:
        probes += [
            Probe(
                _parts((_DIAGNOSIS_GUIDES[s.diagnosis], 1.0), (op, 0.5), (s.intent, 0.5)),
                ("guides",),
                f"{s.diagnosis}: optimisation guide",
                keyword_forms(s.diagnosis),
                terms=_terms(f"playbook {s.diagnosis}"),
            ),
            Probe(
                _parts((_DIAGNOSIS_HARDWARE[s.diagnosis], 1.0)),
                ("hardware",),
                f"{s.diagnosis}: {s.target} hardware",
                frozenset(_DIAGNOSIS_HW_TOPICS[s.diagnosis]),
                exact_target=True,
            ),
        ]
    if s.diagnosis and s.intent:
        # What the next candidate tries ("split K across programs", "bf16 tensor cores") names
        # a technique of its own.
        probes.append(
            Probe(
                _parts((s.intent, 1.0), (op, 0.3)),
                ("guides",),
                "intent",
                terms=_terms(s.intent),
            )
        )
    if not s.error_status:
        probes += [aspect_probe(a) for a in kinds[:MAX_ASPECTS]]
        if not kinds and s.intent and not s.diagnosis:
            probes.append(Probe(_parts((s.intent, 1.0)), ("guides",), "intent"))
    if fresh:
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
        *(rules for rules, _ in _MISMATCH_STAGES.values()),
        *_DIAGNOSIS_GUIDES.values(),
        *_DIAGNOSIS_HARDWARE.values(),
        _HARDWARE_RULES,
        _HARDWARE_OVERVIEW,
        _GENERAL_RULES,
        _SKILL_HEAD,
        *(a.query for a in ASPECTS.values()),
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
            (error_text(s.error_message), 0.4),
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


_API = re.compile(r"\b(?:tl|triton\.language|triton)\.[a-z_][a-z0-9_]*")


def api_names(*texts: str | None) -> frozenset[str]:
    """Triton API names a text mentions (``tl.dot``, ``tl.load``, ``triton.cdiv``)."""
    return frozenset(m.group(0) for t in texts if t for m in _API.finditer(t.lower()))


def score(
    c: Candidate,
    keywords: frozenset[str],
    exact_target: str | None,
    apis: frozenset[str] = frozenset(),
) -> float:
    topics = topic_forms(tuple(c.meta.get("topics") or ()))
    bonus = TOPIC_BONUS * min(2, len(keywords & topics)) + c.lexical
    if exact_target is not None and c.meta.get("target") == exact_target:
        bonus += TARGET_BONUS
    if apis and apis & api_names(str(c.meta.get("title", ""))):
        bonus += API_TITLE_BONUS
    return c.distance - bonus


def rerank(
    candidates: list[Candidate],
    keywords: frozenset[str],
    exact_target: str | None = None,
    apis: frozenset[str] = frozenset(),
) -> list[Candidate]:
    """Best chunk per document, ordered by distance minus lexical, topic, exact-target and
    API-title bonuses."""
    ranked = sorted(candidates, key=lambda c: score(c, keywords, exact_target, apis))
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
