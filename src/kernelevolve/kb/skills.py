"""Skills: reusable lessons distilled from measured improvements.

``skill_from_improvement`` turns a recorded parent -> child step into a ``SkillRecord`` when the
child is faster by at least the configured margin; the change is summarised from a diff of the
two sources (changed meta-parameters, Triton calls added or dropped, kernel count) plus the
stated intent. How skills are stored and merged is in ``store.py``.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections import Counter

from kernelevolve.kb.models import Improvement, Skill, SkillRecord

# Meta-parameters whose values the summary tracks: UPPER_CASE constexprs and launch options.
_PARAM = re.compile(r"\b([A-Z][A-Z0-9_]*|num_warps|num_stages|waves_per_eu)\s*[:=]\s*(\d+)\b")
_TL_CALL = re.compile(r"\btl\.([a-z_][a-z0-9_]*)\s*\(")
_JIT = re.compile(r"@triton\.jit")
_EXCERPT_LINES = 24
_EXCERPT_CHARS = 1500


def _params(source: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for name, value in _PARAM.findall(source):
        found.setdefault(name, set()).add(value)
    return found


def _fmt(values: set[str]) -> str:
    return "/".join(sorted(values, key=lambda v: (len(v), v)))


def summarise_change(parent_source: str, child_source: str) -> tuple[list[str], str]:
    """Facts about what changed between two candidate sources, and a short diff excerpt."""
    facts: list[str] = []
    before, after = _params(parent_source), _params(child_source)
    for name in sorted(set(before) | set(after)):
        if before.get(name) != after.get(name):
            old = _fmt(before[name]) if name in before else "unset"
            new = _fmt(after[name]) if name in after else "removed"
            facts.append(f"{name} {old} -> {new}")
    calls_before = Counter(_TL_CALL.findall(parent_source))
    calls_after = Counter(_TL_CALL.findall(child_source))
    added = sorted(set(calls_after) - set(calls_before))
    dropped = sorted(set(calls_before) - set(calls_after))
    if added:
        facts.append("uses " + ", ".join(f"tl.{c}" for c in added))
    if dropped:
        facts.append("no longer uses " + ", ".join(f"tl.{c}" for c in dropped))
    kernels_before = len(_JIT.findall(parent_source))
    kernels_after = len(_JIT.findall(child_source))
    if kernels_before != kernels_after:
        facts.append(f"kernels {kernels_before} -> {kernels_after}")
    diff = [
        line
        for line in difflib.unified_diff(
            parent_source.splitlines(), child_source.splitlines(), lineterm="", n=0
        )
        if line[:1] in "+-" and not line.startswith(("+++", "---")) and line[1:].strip()
    ]
    n_add = sum(line.startswith("+") for line in diff)
    header = [f"(+{n_add}/-{len(diff) - n_add} lines)"] if diff else []
    excerpt = "\n".join(header + diff[:_EXCERPT_LINES])
    if len(diff) > _EXCERPT_LINES:
        excerpt += f"\n... ({len(diff) - _EXCERPT_LINES} more changed lines)"
    return facts, excerpt[:_EXCERPT_CHARS]


def skill_from_improvement(improvement: Improvement, min_gain: float) -> SkillRecord | None:
    """A SkillRecord for ``improvement``, or None if the child is not faster by ``min_gain``.

    ``min_gain`` is fractional: 0.05 means the child must run at least 5% faster
    (parent_latency / child_latency - 1 >= 0.05).
    """
    gain = improvement.gain
    if gain < min_gain:
        return None
    facts, excerpt = summarise_change(improvement.parent_source, improvement.child_source)
    intent = improvement.intent.strip().rstrip(".")
    change = "; ".join(([intent] if intent else []) + facts) or "code changes (see the diff)"
    conditions = f"a {improvement.operator_class} kernel on {improvement.target}"
    if improvement.diagnosis:
        conditions += f" diagnosed {improvement.diagnosis}"
    return SkillRecord(
        target=improvement.target,
        operator_class=improvement.operator_class,
        diagnosis=improvement.diagnosis,
        conditions=conditions,
        change=change,
        gain=gain,
        source_candidate=improvement.child_id,
        parent_candidate=improvement.parent_id,
        run_id=improvement.run_id,
        diff_excerpt=excerpt or None,
    )


def skill_id(record: SkillRecord) -> str:
    """Stable id from the skill's target, operator and source candidate."""
    digest = hashlib.sha1(
        f"{record.target}|{record.operator_class}|{record.source_candidate}".encode()
    ).hexdigest()[:12]
    return f"skill/{record.target}/{record.operator_class}/{digest}"


def embedding_text(skill: Skill | SkillRecord) -> str:
    """What is embedded (and compared for near-duplicates): the lesson, without numbers."""
    head = f"Skill for {skill.operator_class} kernels on {skill.target}"
    if skill.diagnosis:
        head += f" when {skill.diagnosis}"
    return f"{head}.\nWhen: {skill.conditions}.\nChange: {skill.change}"


def change_text(skill: Skill | SkillRecord) -> str:
    """What near-duplicate detection compares. Target and operator class are matched exactly
    before, so only the change itself decides: with the shared preamble included, unrelated
    changes to the same operator came out as close as paraphrases of one change."""
    return skill.change


def render(skill: Skill) -> str:
    """The text a reader (the Coder) sees for a retrieved skill: lesson plus evidence."""
    runs = "run" if skill.count == 1 else "runs"
    text = (
        embedding_text(skill)
        + f"\nMeasured gain: +{skill.mean_gain:.0%} mean over {skill.count} {runs} "
        f"(best +{skill.best_gain:.0%}); from candidates {', '.join(skill.sources[-5:])}"
    )
    if skill.diff_excerpt:
        text += f"\nDiff excerpt:\n{skill.diff_excerpt}"
    return text
