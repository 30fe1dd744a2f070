"""The knowledge base: bundled and user documents plus distilled skills, retrieved by situation.

Typical use by the agent loop::

    kb = KnowledgeBase.open(settings.kb)
    hits = kb.retrieve(Situation(target="cuda:h100", operator_class="softmax",
                                 diagnosis="memory-bound"))
    kb.distill_improvement(Improvement(...))   # after a child beat its parent

The models import pydantic and the store chromadb: every name loads on first use, so the CLI
(which mounts ``kb.cli``) starts without them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Protocol

_MODELS = ("DIAGNOSES", "ERROR_STATUSES", "TIERS", "Diagnosis", "DocumentInfo", "ErrorStatus",
           "Hit", "Improvement", "Situation", "Skill", "SkillRecord", "SkillWrite", "Tier",
           "kb_target", "parse_target")
_EXPORTS = {
    **dict.fromkeys(_MODELS, "kernelevolve.kb.models"),
    "skill_from_improvement": "kernelevolve.kb.skills",
    "summarise_change": "kernelevolve.kb.skills",
    "KnowledgeBase": "kernelevolve.kb.store",  # chromadb (~1.5 s): only when a store is opened
}

if TYPE_CHECKING:
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
    from kernelevolve.kb.store import KnowledgeBase


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kernelevolve.kb' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


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
