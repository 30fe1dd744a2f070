"""Typed values that cross the knowledge base's boundary: tiers, target tags, situations, hits,
documents and skills.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kernelevolve.errors import KnowledgeBaseError
from kernelevolve.kb.tiers import TIERS, Tier

Diagnosis = Literal["memory-bound", "compute-bound", "occupancy-bound", "launch-bound"]
DIAGNOSES: tuple[Diagnosis, ...] = get_args(Diagnosis)
ErrorStatus = Literal["compile_error", "runtime_error", "timeout", "mismatch", "cheat", "crash"]
ERROR_STATUSES: tuple[ErrorStatus, ...] = get_args(ErrorStatus)
Origin = Literal["bundled", "user", "skill"]

# The profiler issue names the class "occupancy/latency-bound"; accept its spellings.
_DIAGNOSIS_ALIASES = {
    "latency-bound": "occupancy-bound",
    "occupancy/latency-bound": "occupancy-bound",
    "occupancy-latency-bound": "occupancy-bound",
}

ANY_TARGET = "any"
# Families of target tags, and the sub-names allowed after the colon (None: any slug).
_FAMILIES: dict[str, frozenset[str] | None] = {
    "cuda": None,
    "rocm": None,
    "mtia-sim": frozenset({"2i", "v1", "300"}),
    "cpu": frozenset(),
}
_SLUG = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_TARGET_FORMS = (
    "`cuda`, `cuda:<gpu>` (e.g. cuda:h100), `rocm:<gpu>` (e.g. rocm:mi300x), "
    "`mtia-sim:<gen>` (2i, v1, 300) or `cpu`"
)


def _value(raw: object) -> object:
    """Accept str-valued enums from other modules (diagnosis, eval status) as their value."""
    return getattr(raw, "value", raw)


def parse_target(tag: str, *, allow_any: bool = True) -> str:
    """Validate a target tag and return it normalised (lower case, stripped).

    Valid: ``any`` (platform-agnostic documents, when ``allow_any``), a family (``cuda``,
    ``rocm``, ``mtia-sim``, ``cpu``) or ``family:name``. Raises KnowledgeBaseError otherwise.
    """
    norm = str(_value(tag)).strip().lower()
    if allow_any and norm == ANY_TARGET:
        return norm
    family, sep, name = norm.partition(":")
    if family not in _FAMILIES:
        raise KnowledgeBaseError(f"unknown target {tag!r}; use {_TARGET_FORMS}")
    if not sep:
        return norm
    allowed = _FAMILIES[family]
    if allowed is None:
        if not _SLUG.match(name):
            raise KnowledgeBaseError(
                f"bad target {tag!r}: the name after ':' must be lower-case letters, digits, "
                f"'.', '_' or '-'; use {_TARGET_FORMS}"
            )
    elif name not in allowed:
        known = f"one of {', '.join(sorted(allowed))}" if allowed else "none"
        raise KnowledgeBaseError(
            f"unknown target {tag!r}: the sub-names of {family} are {known}; use {_TARGET_FORMS}"
        )
    return norm


def target_family(tag: str) -> str:
    return tag.partition(":")[0]


# Substrings of torch.cuda.get_device_name() that identify a GPU with its own documents.
_DEVICE_TAGS = (
    ("h200", "cuda:h200"),
    ("h100", "cuda:h100"),
    ("a100", "cuda:a100"),
    ("mi300x", "rocm:mi300x"),
)


def kb_target(target: str, device_name: str | None = None) -> str:
    """The knowledge-base tag for a runtime target and device.

    The harness's ``cuda`` target carries no GPU name; the device does:
    ``kb_target("cuda", "NVIDIA H100 80GB HBM3") == "cuda:h100"``. Unknown GPUs keep the family
    tag (``cuda``), which retrieves every CUDA document.
    """
    tag = parse_target(target, allow_any=False)
    if device_name and ":" not in tag:
        lowered = device_name.lower().replace(" ", "")
        for needle, specific in _DEVICE_TAGS:
            if needle in lowered:
                return specific
    return tag


def parse_tier(tier: str, *, allowed: tuple[Tier, ...] = TIERS) -> Tier:
    norm = str(_value(tier)).strip().lower()
    if norm not in allowed:
        if norm == "skills" and "skills" not in allowed:
            raise KnowledgeBaseError(
                "the skills tier is written by skill distillation, not by hand; add the "
                "document to `guides` (platform-agnostic) or `hardware` (per-target) instead"
            )
        raise KnowledgeBaseError(f"unknown tier {tier!r}; use one of: {', '.join(allowed)}")
    return norm  # type: ignore[return-value]


def _normalise_diagnosis(raw: object) -> object:
    if raw is None:
        return None
    norm = str(_value(raw)).strip().lower().replace("_", "-")
    return _DIAGNOSIS_ALIASES.get(norm, norm)


class Situation(BaseModel):
    """The state of a search round that decides what knowledge to retrieve."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    target: str = Field(description="target tag, e.g. 'cuda:h100', 'mtia-sim:2i', 'cpu'")
    operator_class: str | None = Field(None, description="e.g. 'softmax', 'matmul', 'layernorm'")
    ops: tuple[str, ...] = Field(
        (), description="aten ops the reference runs (its trace), e.g. ('convolution', "
        "'native_group_norm'); they name what the operator class leaves open"
    )
    diagnosis: Diagnosis | None = None
    error_status: ErrorStatus | None = Field(
        None, description="EvalResult status of the last candidate; 'ok' means no error"
    )
    error_message: str | None = Field(None, description="message / stderr tail of the failure")
    intent: str | None = Field(None, description="what the next candidate tries to do")

    @field_validator("target", mode="before")
    @classmethod
    def _target(cls, v: object) -> str:
        return parse_target(str(v), allow_any=False)

    @field_validator("diagnosis", mode="before")
    @classmethod
    def _diagnosis(cls, v: object) -> object:
        return _normalise_diagnosis(v)

    @field_validator("ops", mode="before")
    @classmethod
    def _ops(cls, v: object) -> object:
        if v is None:
            return ()
        if isinstance(v, str) or not isinstance(v, list | tuple | set | frozenset):
            raise ValueError(f"ops is a list of aten op names, e.g. ['mm', '_softmax'], got {v!r}")
        return tuple(dict.fromkeys(str(o).strip().lower() for o in v if str(o).strip()))

    @field_validator("error_status", mode="before")
    @classmethod
    def _status(cls, v: object) -> object:
        v = _value(v)
        return None if v in (None, "ok") else v


class Hit(BaseModel):
    """One retrieved passage: the best-matching chunk of one document."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(description="chunk id, '<doc_id>#<n>'")
    doc_id: str
    tier: Tier
    target: str
    title: str
    section: str
    text: str
    topics: list[str] = Field(default_factory=list)
    distance: float = Field(description="cosine distance of the chunk to the query (0 = same)")
    reason: str = Field("", description="why it was retrieved (which part of the situation)")


class DocumentInfo(BaseModel):
    """A document in the store, as listed."""

    model_config = ConfigDict(frozen=True)

    doc_id: str
    title: str
    tier: Tier
    target: str
    topics: list[str]
    origin: Origin
    source: str
    n_chunks: int


class SkillRecord(BaseModel):
    """A measured improvement to be written as a skill."""

    model_config = ConfigDict(extra="forbid")

    target: str
    operator_class: str = Field(min_length=1)
    diagnosis: Diagnosis | None = None
    conditions: str = Field(min_length=1, description="when the lesson applies")
    change: str = Field(min_length=1, description="what was changed")
    gain: float = Field(description="fractional speedup, parent_latency / child_latency - 1")
    source_candidate: str = Field(min_length=1, description="id of the improved candidate")
    parent_candidate: str | None = None
    run_id: str | None = None
    diff_excerpt: str | None = Field(None, description="a few changed lines, for the reader")

    @field_validator("target", mode="before")
    @classmethod
    def _target(cls, v: object) -> str:
        return parse_target(str(v), allow_any=False)

    @field_validator("diagnosis", mode="before")
    @classmethod
    def _diagnosis(cls, v: object) -> object:
        return _normalise_diagnosis(v)


class Skill(BaseModel):
    """A skill as stored: the first record's lesson plus the evidence of every merge."""

    model_config = ConfigDict(extra="forbid")

    id: str
    target: str
    operator_class: str
    diagnosis: Diagnosis | None
    conditions: str
    change: str
    diff_excerpt: str | None = None
    gains: list[float]
    sources: list[str] = Field(description="candidate ids the skill was distilled from")
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    updated_at: datetime = Field(default_factory=lambda: datetime.now(UTC))

    @property
    def count(self) -> int:
        return len(self.gains)

    @property
    def mean_gain(self) -> float:
        return sum(self.gains) / len(self.gains)

    @property
    def best_gain(self) -> float:
        return max(self.gains)


class SkillWrite(BaseModel):
    """What ``distill_skill`` did."""

    skill: Skill
    action: Literal["added", "merged"]
    merged_distance: float | None = Field(None, description="distance to the skill it merged into")


class Improvement(BaseModel):
    """A recorded parent -> child step of a search, the raw material of a skill."""

    model_config = ConfigDict(extra="forbid")

    target: str
    operator_class: str = Field(min_length=1)
    diagnosis: Diagnosis | None = None
    parent_id: str = Field(min_length=1)
    child_id: str = Field(min_length=1)
    parent_source: str
    child_source: str
    parent_latency_ms: float = Field(gt=0)
    child_latency_ms: float = Field(gt=0)
    intent: str = Field("", description="the stated intent of the change, one line")
    run_id: str | None = None

    @field_validator("target", mode="before")
    @classmethod
    def _target(cls, v: object) -> str:
        return parse_target(str(v), allow_any=False)

    @field_validator("diagnosis", mode="before")
    @classmethod
    def _diagnosis(cls, v: object) -> object:
        return _normalise_diagnosis(v)

    @property
    def gain(self) -> float:
        return self.parent_latency_ms / self.child_latency_ms - 1.0
