"""Markdown documents with a small front-matter header, cut into heading-sized chunks.

A document looks like::

    ---
    title: Masks on tl.load and tl.store
    tier: constraints
    target: any
    topics: [masks, tl.load, boundary]
    ---
    # Masks on tl.load and tl.store
    ...

The header is optional for ``kb add`` (tier and target can come from the command line). Chunks
follow ``#``/``##``/``###`` headings; a long section is split at paragraph boundaries so that each
chunk stays within what the embedding model reads (256 tokens), and code fences are never cut.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from kernelevolve.errors import KnowledgeBaseError
from kernelevolve.kb.models import Tier, parse_target, parse_tier

BUNDLED_DIR = Path(__file__).resolve().parent / "docs"
# Bump when chunking or metadata change, so stores re-index the bundled corpus.
CHUNKER_VERSION = "1"
# About 180 words of prose is ~240 word-piece tokens; code tokenises denser, hence the
# character bound as well.
_MAX_WORDS = 180
_MAX_CHARS = 1100
_MIN_WORDS = 25
_HEADING = re.compile(r"^(#{1,3})\s+(.+?)\s*#*\s*$")
_KNOWN_KEYS = {"title", "tier", "target", "topics"}


@dataclass(frozen=True)
class Chunk:
    index: int
    section: str
    text: str


@dataclass(frozen=True)
class ParsedDocument:
    """A document ready to index."""

    doc_id: str
    title: str
    tier: Tier
    target: str
    topics: list[str]
    source: str
    body: str
    chunks: list[Chunk] = field(default_factory=list)


def parse_front_matter(text: str, source: str) -> tuple[dict[str, str | list[str]], str]:
    """Split ``text`` into its front-matter fields and the body after the header."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, text
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise KnowledgeBaseError(
            f"{source}: front matter starts with '---' but never ends; close it with a '---' line"
        ) from None
    meta: dict[str, str | list[str]] = {}
    for n, line in enumerate(lines[1:end], start=2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition(":")
        key, value = key.strip().lower(), value.strip()
        if not sep or not key:
            raise KnowledgeBaseError(
                f"{source}:{n}: front-matter lines are 'key: value', got {line!r}"
            )
        if key not in _KNOWN_KEYS:
            raise KnowledgeBaseError(
                f"{source}:{n}: unknown front-matter key {key!r}; use {', '.join(sorted(_KNOWN_KEYS))}"
            )
        if value.startswith("[") and value.endswith("]"):
            meta[key] = [_unquote(v) for v in value[1:-1].split(",") if v.strip()]
        else:
            meta[key] = _unquote(value)
    return meta, "\n".join(lines[end + 1 :]).lstrip("\n")


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _title_from_body(body: str) -> str | None:
    for line in body.splitlines():
        m = _HEADING.match(line)
        if m and len(m.group(1)) == 1:
            return m.group(2).strip()
    return None


def _sections(body: str, title: str) -> list[tuple[str, list[str]]]:
    """(heading, lines) pairs; the document's own '# title' line opens the first section."""
    sections: list[tuple[str, list[str]]] = [("", [])]
    in_code = False
    for line in body.splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
        m = None if in_code else _HEADING.match(line)
        if m:
            heading = m.group(2).strip()
            if len(m.group(1)) == 1 and heading == title:
                continue
            sections.append((heading, []))
        else:
            sections[-1][1].append(line)
    return [(h, ls) for h, ls in sections if "\n".join(ls).strip()]


def _paragraphs(lines: list[str]) -> list[str]:
    """Blank-line separated blocks; a code fence is always one block."""
    blocks: list[str] = []
    current: list[str] = []
    in_code = False
    for line in lines:
        if line.lstrip().startswith("```"):
            in_code = not in_code
        if not line.strip() and not in_code:
            if current:
                blocks.append("\n".join(current))
                current = []
            continue
        current.append(line)
    if current:
        blocks.append("\n".join(current))
    return blocks


def _size_ok(text: str) -> bool:
    return len(text.split()) <= _MAX_WORDS and len(text) <= _MAX_CHARS


def chunk_markdown(body: str, title: str) -> list[Chunk]:
    """Cut a markdown body into chunks by heading, splitting long sections by paragraph.

    Each chunk's text starts with ``title — section`` so it is self-describing when read alone
    and when embedded.
    """
    pieces: list[tuple[str, str]] = []
    for heading, lines in _sections(body, title):
        current: list[str] = []
        for block in _paragraphs(lines):
            candidate = "\n\n".join([*current, block])
            if current and not _size_ok(candidate):
                pieces.append((heading, "\n\n".join(current)))
                current = [block]
            else:
                current.append(block)
        if current:
            pieces.append((heading, "\n\n".join(current)))
    # Fold a short piece into its predecessor of the same section (a one-line remainder is no
    # use alone).
    merged: list[tuple[str, str]] = []
    for heading, text in pieces:
        if (
            merged
            and merged[-1][0] == heading
            and len(text.split()) < _MIN_WORDS
            and _size_ok(merged[-1][1] + "\n\n" + text)
        ):
            merged[-1] = (heading, merged[-1][1] + "\n\n" + text)
        else:
            merged.append((heading, text))
    chunks = []
    for i, (heading, text) in enumerate(merged):
        header = f"{title} — {heading}" if heading else title
        chunks.append(Chunk(index=i, section=heading or title, text=f"{header}\n\n{text.strip()}"))
    return chunks


def parse_document(
    text: str,
    *,
    doc_id: str,
    source: str,
    tier: str | None = None,
    target: str | None = None,
    topics: list[str] | None = None,
    title: str | None = None,
) -> ParsedDocument:
    """Parse and chunk one document. Explicit arguments override the front matter."""
    meta, body = parse_front_matter(text, source)
    if not body.strip():
        raise KnowledgeBaseError(f"{source}: the document has no text after its header")
    raw_tier = tier or meta.get("tier")
    if not raw_tier or not isinstance(raw_tier, str):
        raise KnowledgeBaseError(
            f"{source}: no tier; pass --tier (constraints, guides, hardware) or add "
            "'tier: ...' to the front matter"
        )
    parsed_tier = parse_tier(raw_tier)
    raw_target = target or meta.get("target") or "any"
    if not isinstance(raw_target, str):
        raise KnowledgeBaseError(f"{source}: 'target' must be a single tag, got {raw_target!r}")
    parsed_target = parse_target(raw_target)
    if parsed_tier == "hardware" and parsed_target == "any":
        raise KnowledgeBaseError(
            f"{source}: hardware documents describe a target; pass --target (e.g. cuda:h100, "
            "mtia-sim:2i) or set 'target:' in the front matter"
        )
    raw_topics = topics if topics is not None else meta.get("topics", [])
    if isinstance(raw_topics, str):
        raw_topics = [raw_topics]
    clean_topics = sorted({t.strip().lower() for t in raw_topics if t.strip()})
    raw_title = title or meta.get("title") or _title_from_body(body) or Path(source).stem
    doc_title = str(raw_title).strip()
    chunks = chunk_markdown(body, doc_title)
    return ParsedDocument(
        doc_id=doc_id,
        title=doc_title,
        tier=parsed_tier,
        target=parsed_target,
        topics=clean_topics,
        source=source,
        body=body,
        chunks=chunks,
    )


def bundled_documents(root: Path = BUNDLED_DIR) -> list[ParsedDocument]:
    """Every document of the bundled corpus; ids are ``<tier folder>/<file stem>``."""
    docs = []
    for path in sorted(root.rglob("*.md")):
        rel = path.relative_to(root).with_suffix("").as_posix()
        doc = parse_document(
            path.read_text(encoding="utf-8"), doc_id=rel, source=f"kb/docs/{rel}.md"
        )
        folder = rel.split("/", 1)[0]
        if folder != doc.tier:
            raise KnowledgeBaseError(
                f"bundled document {rel}.md says tier {doc.tier!r} but lives in {folder}/"
            )
        docs.append(doc)
    return docs


def corpus_hash(root: Path = BUNDLED_DIR) -> str:
    """Content hash of the bundled corpus and of the way it is chunked."""
    h = hashlib.sha256(f"chunker={CHUNKER_VERSION}\n".encode())
    for path in sorted(root.rglob("*.md")):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()
