"""The prompts of a synthesizer call and the parsing of its reply.

``system_prompt``, ``coder_prompt`` and ``debugger_prompt`` render the templates (prompts/) from
one PromptState, first clipping long text to fit a small model's context (a clipped text says
so). ``parse_reply`` turns the model's answer into a candidate source, or says why it holds none:
fenced blocks (the one defining ``ModelNew`` wins), SEARCH/REPLACE edits against the parent,
``<think>`` sections, replies cut off by the token limit. A syntax error is not a parse problem:
the evaluator reports it as compile_error and the Debugger repairs it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from kernelevolve import prompts
from kernelevolve.graph.compare import unified_diff
from kernelevolve.graph.state import ErrorInfo, Knowledge, PromptState, Step

__all__ = [
    "Limits", "ParsedReply", "clip", "coder_prompt", "debugger_prompt", "parse_reply",
    "system_prompt",
]


# -- prompts ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Limits:
    """Characters each section may take. The defaults keep a Coder prompt within ~3k tokens for
    a typical problem, so a small model with an 8k context has room for a whole-file reply."""

    reference: int = 6000
    source: int = 10000  # the parent (whole, so its code can be edited; longer ones are rare)
    sibling_source: int = 4000
    knowledge_passage: int = 1200
    knowledge_passages: int = 5
    constraint: int = 400
    constraints: int = 12
    trajectory: int = 6
    step_message: int = 200
    error_message: int = 1500
    stderr_tail: int = 1500
    evidence: int = 6
    evidence_item: int = 300
    user_notes: int = 5
    user_note: int = 600
    summary: int = 1500  # a sibling's diff against the parent, or its summary
    tried: int = 6  # siblings already tried, shown without their code
    diff: int = 3000  # combine: the diff from A to B


DEFAULT_LIMITS = Limits()


def clip(text: str, limit: int, *, keep: str = "head") -> str:
    """``text`` within ``limit`` characters, cut at a line break where one is near, with a note
    that says how much was left out. ``keep="tail"`` keeps the end (stderr, tracebacks)."""
    text = text.strip()
    if len(text) <= limit:
        return text
    if keep == "tail":
        part = text[-limit:]
        nl = part.find("\n")
        if 0 <= nl < limit // 3:
            part = part[nl + 1:]
        return f"[... {len(text) - len(part)} earlier characters left out]\n{part}"
    part = text[:limit]
    nl = part.rfind("\n")
    if nl > limit * 2 // 3:
        part = part[:nl]
    return f"{part.rstrip()}\n[... {len(text) - len(part)} more characters left out]"


def _one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _clip_step(step: Step, source_limit: int, lim: Limits) -> Step:
    return step.model_copy(update={
        "intent": _one_line(step.intent, 400),
        "message": _one_line(step.message, lim.step_message),
        "source": clip(step.source, source_limit) if step.source is not None else None,
        "summary": clip(step.summary, lim.summary),
    })


def _clipped(ps: PromptState, lim: Limits) -> PromptState:
    """A copy of ``ps`` whose long texts fit the limits (``ps`` itself is left as it is)."""
    task = ps.task.model_copy(update={"reference_source": clip(ps.task.reference_source,
                                                                lim.reference)})
    knowledge = [
        Knowledge(title=k.title, tier=k.tier, text=clip(k.text, lim.knowledge_passage),
                  reason=k.reason, doc_id=k.doc_id)
        for k in ps.knowledge[: lim.knowledge_passages]
    ]
    diagnosis = ps.diagnosis
    if diagnosis is not None:
        diagnosis = diagnosis.model_copy(update={"evidence": [
            _one_line(e, lim.evidence_item) for e in diagnosis.evidence[: lim.evidence]]})
    last_error = ps.last_error
    if last_error is not None:
        message = clip(last_error.message, lim.error_message)
        stderr = last_error.stderr_tail.strip()
        # Workers often put the traceback's tail in both; show it once.
        if stderr and stderr[-300:] in last_error.message:
            stderr = ""
        last_error = ErrorInfo(
            node_id=last_error.node_id, status=last_error.status, message=message,
            stderr_tail=clip(stderr, lim.stderr_tail, keep="tail"),
            source=last_error.source.strip() if last_error.source is not None else None,
            params=last_error.params,
        )
    sibling_limit = lim.source if ps.operator == "combine" else lim.sibling_source
    siblings = ps.siblings
    if ps.operator == "compare" and ps.parent is not None and ps.parent.source is not None:
        # compare shows what each child changed against the parent, not the child's code
        parent_source, parent_id = ps.parent.source, ps.parent.node_id
        siblings = [s if s.summary or s.source is None else s.model_copy(update={
            "source": None, "summary": unified_diff(parent_source, s.source, parent_id,
                                                    s.node_id, limit=lim.summary)
            or "(the same code as the parent)"}) for s in siblings]
    return ps.model_copy(update={
        "task": task,
        "constraints": [_one_line(c, lim.constraint) for c in ps.constraints[: lim.constraints]],
        "knowledge": knowledge,
        "parent": _clip_step(ps.parent, lim.source, lim) if ps.parent is not None else None,
        "trajectory": [_clip_step(s, lim.source, lim) for s in ps.trajectory[-lim.trajectory:]],
        "siblings": [_clip_step(s, sibling_limit, lim) for s in siblings],
        "last_error": last_error,
        "diagnosis": diagnosis,
        "user_notes": [clip(n, lim.user_note) for n in ps.user_notes[-lim.user_notes:]],
        "intent": ps.intent.strip(),
        "tried": [_clip_step(s, lim.sibling_source, lim) for s in ps.tried[-lim.tried:]],
        "best": _clip_step(ps.best, lim.sibling_source, lim) if ps.best is not None else None,
        "diff": clip(ps.diff, lim.diff),
        "retry": _one_line(ps.retry, lim.step_message * 2),
    })


def system_prompt(ps: PromptState) -> str:
    """The system message: the role, the candidate contract and the reply format."""
    return prompts.render("system.j2", ps=ps).strip() + "\n"


def coder_prompt(ps: PromptState, limits: Limits = DEFAULT_LIMITS) -> str:
    """The Coder's request for the round ``ps`` describes (task, memory operator, diagnosis)."""
    return prompts.render("coder.j2", ps=_clipped(ps, limits)).strip() + "\n"


def debugger_prompt(ps: PromptState, limits: Limits = DEFAULT_LIMITS) -> str:
    """The Debugger's request: the failed source of ``ps.last_error`` and why it failed."""
    if ps.last_error is None or ps.last_error.source is None:
        raise ValueError("a repair prompt needs ps.last_error with the failed source")
    return prompts.render("debugger.j2", ps=_clipped(ps, limits)).strip() + "\n"


# -- replies ----------------------------------------------------------------------------------


class ParsedReply(BaseModel):
    """What a reply holds: a candidate source, or ``problem`` (why there is no usable one)."""

    model_config = ConfigDict(frozen=True)

    source: str | None = None
    problem: str = ""
    truncated: bool = False
    edited: bool = False


_PYTHON_LANGS = {"", "python", "py", "python3", "py3"}
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+.-]*)[^\n`]*$")
_MODELNEW = re.compile(r"^class[ \t]+ModelNew\b", re.MULTILINE)
_SEARCH = re.compile(r"^[ \t]*<{5,}[ \t]*SEARCH[ \t]*$")
_DIVIDER = re.compile(r"^[ \t]*={5,}[ \t]*$")
_REPLACE = re.compile(r"^[ \t]*>{5,}[ \t]*REPLACE[ \t]*$")
_DEFINED = re.compile(r"^(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.MULTILINE)
_MODEL = re.compile(r"^class[ \t]+Model\b", re.MULTILINE)
_IMPORT = re.compile(r"^(?:import[ \t]+\S|from[ \t]+\S+[ \t]+import[ \t])")
_CODE_START = re.compile(r"^(?:import |from \S+ import |@|def |class |#)")


@dataclass
class _Block:
    lang: str
    code: str
    closed: bool

    @property
    def python(self) -> bool:
        return self.lang in _PYTHON_LANGS

    @property
    def defines_model(self) -> bool:
        return bool(_MODELNEW.search(self.code))

    @property
    def has_edits(self) -> bool:
        return any(_SEARCH.match(line) for line in self.code.splitlines())


def _strip_thinking(text: str) -> tuple[str, bool]:
    """The reply without reasoning sections; True when reasoning never ended (cut off)."""
    text = re.sub(r"<think>.*?</think>", "", text, flags=re.DOTALL)
    if "</think>" in text:  # servers that drop the opening tag
        text = text.rsplit("</think>", 1)[1]
    if "<think>" in text:
        head, _ = text.split("<think>", 1)
        return head, True
    return text, False


def _blocks(text: str) -> list[_Block]:
    blocks: list[_Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if match is None:
            i += 1
            continue
        fence, lang = match.group(1), match.group(2).lower()
        close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        body: list[str] = []
        i += 1
        while i < len(lines) and not close.match(lines[i]):
            body.append(lines[i])
            i += 1
        closed = i < len(lines)
        blocks.append(_Block(lang, "\n".join(body).strip("\n") + "\n", closed))
        i += 1
    return blocks


def _defined_names(code: str) -> set[str]:
    """Top-level functions and classes (what a helper block contributes)."""
    return set(_DEFINED.findall(code))


def _join_helpers(chosen: _Block, blocks: list[_Block]) -> str:
    """The chosen block, plus the other blocks that define names it uses but does not define
    (small models often put the kernel and ModelNew in separate blocks); imports go first."""
    own = _defined_names(chosen.code)
    code = "\n".join(line.split("#", 1)[0] for line in chosen.code.splitlines())
    used = set(re.findall(r"\b\w+\b", code)) - own
    parts = [b.code for b in blocks
             if b is not chosen and b.python and b.closed and not b.defines_model
             and not b.has_edits and not _MODEL.search(b.code) and _defined_names(b.code) & used]
    if not parts:
        return chosen.code
    imports: list[str] = []
    body: list[str] = []
    for code in [*parts, chosen.code]:
        for line in code.splitlines():
            if _IMPORT.match(line):
                if line not in imports:
                    imports.append(line)
            else:
                body.append(line)
    return "\n".join(imports) + "\n\n\n" + "\n".join(body).strip("\n") + "\n"


def _edits(text: str) -> tuple[list[tuple[str, str]], bool]:
    """The (search, replace) pairs in ``text``, and whether the last one is unterminated."""
    pairs: list[tuple[str, str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if not _SEARCH.match(lines[i]):
            i += 1
            continue
        search: list[str] = []
        i += 1
        while i < len(lines) and not _DIVIDER.match(lines[i]):
            search.append(lines[i])
            i += 1
        replace: list[str] = []
        i += 1
        while i < len(lines) and not _REPLACE.match(lines[i]):
            replace.append(lines[i])
            i += 1
        if i >= len(lines):
            return pairs, True
        pairs.append(("\n".join(search), "\n".join(replace)))
        i += 1
    return pairs, False


def _apply_edit(source: str, search: str, replace: str) -> str | None:
    """``source`` with the first occurrence of ``search`` replaced; None if it is not there.
    Trailing whitespace and indentation of the whole search text are forgiven."""
    if search and search in source:
        return source.replace(search, replace, 1)
    want = [line.rstrip() for line in search.splitlines()]
    while want and not want[0]:
        want.pop(0)
    while want and not want[-1]:
        want.pop()
    if not want:
        return None
    have = source.splitlines()
    stripped = [line.strip() for line in want]
    for start in range(len(have) - len(want) + 1):
        window = have[start:start + len(want)]
        if [line.strip() for line in window] != stripped:
            continue
        # Re-indent the replacement by the difference between the source and the search text.
        shift = len(window[0]) - len(window[0].lstrip()) - (len(want[0]) - len(want[0].lstrip()))
        new = [(" " * shift + line) if shift > 0 and line.strip() else
               (line[-shift:] if shift < 0 and line[: -shift].isspace() else line)
               for line in replace.splitlines()]
        return "\n".join([*have[:start], *new, *have[start + len(want):]]) + (
            "\n" if source.endswith("\n") else "")
    return None


def _parse_edits(text: str, parent_source: str | None) -> ParsedReply:
    pairs, unterminated = _edits(text)
    if unterminated:
        return ParsedReply(problem="the reply was cut off inside a SEARCH/REPLACE edit block "
                                   "(raise llm.max_tokens, or reply with the whole file)",
                           truncated=True)
    if parent_source is None:
        return ParsedReply(problem="the reply holds SEARCH/REPLACE edits, but there is no parent "
                                   "source to apply them to; reply with the whole file")
    source = parent_source
    for search, replace in pairs:
        if not search.strip():
            return ParsedReply(problem="a SEARCH/REPLACE edit has an empty SEARCH text")
        edited = _apply_edit(source, search, replace)
        if edited is None:
            shown = _one_line(search, 160)
            return ParsedReply(problem=f"the SEARCH text of an edit is not in the parent source: "
                                       f"{shown!r}")
        source = edited
    return _checked(source, edited=True)


def _checked(source: str, *, edited: bool = False) -> ParsedReply:
    if not _MODELNEW.search(source):
        return ParsedReply(problem="the code defines no top-level class ModelNew(nn.Module); the "
                                   "reply must hold the whole file", edited=edited)
    return ParsedReply(source=source, edited=edited)


def parse_reply(text: str, parent_source: str | None) -> ParsedReply:
    """The candidate source in a model's reply, or why it holds none.

    ``parent_source`` is the code SEARCH/REPLACE edits apply to (the parent's for the Coder, the
    failed candidate's for the Debugger).
    """
    body, thinking_cut = _strip_thinking(text or "")
    blocks = _blocks(body)
    python = [b for b in blocks if b.python and not b.has_edits]
    complete = [b for b in python if b.closed and b.defines_model]
    if complete:
        chosen = complete[-1]  # a reply that revises itself ends with its final version
        return _checked(_join_helpers(chosen, blocks))
    if any(_SEARCH.match(line) for line in body.splitlines()):
        return _parse_edits(body, parent_source)
    if any(not b.closed for b in blocks) or thinking_cut:
        where = "while reasoning (<think> never closed)" if thinking_cut and not blocks else \
            "before its code block ended"
        return ParsedReply(problem=f"the reply was cut off {where}; raise llm.max_tokens or ask "
                                   f"for shorter code", truncated=True)
    if python:
        chosen = max(python, key=lambda b: len(b.code))
        return _checked(_join_helpers(chosen, blocks))
    stripped = body.strip()
    if not blocks and _CODE_START.match(stripped) and _MODELNEW.search(stripped):
        return _checked(stripped + "\n")  # bare code without a fence
    if blocks:
        langs = ", ".join(sorted({b.lang or "plain" for b in blocks}))
        return ParsedReply(problem=f"the reply holds no Python code block (only: {langs})")
    return ParsedReply(problem="the reply holds no code block")
