"""The knowledge base: bundled and user documents plus distilled skills, retrieved by situation.

Typical use by the agent loop::

    kb = KnowledgeBase.open(settings.kb)
    hits = kb.retrieve(Situation(target="cuda:h100", operator_class="softmax",
                                 diagnosis="memory-bound"))
    kb.distill_improvement(Improvement(...))   # after a child beat its parent
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from kernelevolve.kb.models import (
    DIAGNOSES,
    ERROR_STATUSES,
    TIERS,
    Diagnosis,
    DocumentInfo,
    ErrorStatus,
    Hit,
    Improvement,
    Situation,
    Skill,
    SkillRecord,
    SkillWrite,
    Tier,
    kb_target,
    parse_target,
)
from kernelevolve.kb.skills import skill_from_improvement, summarise_change

if TYPE_CHECKING:
    from kernelevolve.kb.store import KnowledgeBase


def __getattr__(name: str) -> Any:
    # The store pulls in chromadb (~1.5 s): imported only when a knowledge base is opened.
    if name == "KnowledgeBase":
        from kernelevolve.kb.store import KnowledgeBase

        return KnowledgeBase
    raise AttributeError(f"module 'kernelevolve.kb' has no attribute {name!r}")


class KnowledgeSource(Protocol):
    """What the agent loop needs from a knowledge base (fakes implement this in tests)."""

    def retrieve(self, situation: Situation, k: int | None = None) -> list[Hit]: ...

    def distill_improvement(self, improvement: Improvement) -> SkillWrite | None: ...


__all__ = [
    "DIAGNOSES",
    "ERROR_STATUSES",
    "TIERS",
    "Diagnosis",
    "DocumentInfo",
    "ErrorStatus",
    "Hit",
    "Improvement",
    "KnowledgeBase",
    "KnowledgeSource",
    "Situation",
    "Skill",
    "SkillRecord",
    "SkillWrite",
    "Tier",
    "kb_target",
    "parse_target",
    "skill_from_improvement",
    "summarise_change",
]
