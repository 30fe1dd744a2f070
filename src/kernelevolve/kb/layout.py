"""How a store is laid out: the manifest beside Chroma's files, and documents and skills as rows
of the Chroma collection.

The manifest (``kernelevolve-kb.json``) records the format, the embedding model and the hash of the
bundled corpus the store was built from.

A row is one chunk: id ``<doc_id>#<n>``, the chunk text as the document, and metadata
``doc_id, tier, target, family, title, section, origin, source, chunk, topics``. A skill is one
row whose metadata also carries ``operator_class`` and the whole Skill as ``skill_json``.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kernelevolve.errors import KnowledgeBaseError
from kernelevolve.kb.corpus import ParsedDocument
from kernelevolve.kb.models import DocumentInfo, Skill, Tier, target_family

MANIFEST = "kernelevolve-kb.json"
FORMAT = 1

Row = tuple[str, str, dict[str, Any]]


def damaged(path: Path, detail: str) -> KnowledgeBaseError:
    return KnowledgeBaseError(
        f"the knowledge base at {path} is damaged ({detail}); it was left untouched. Move it away "
        f"(`mv {path} {path}.broken`) and run `kernelevolve kb list` to rebuild the bundled "
        "corpus; documents added with `kb add` and distilled skills must then be added again"
    )


def read_manifest(path: Path) -> dict[str, Any] | None:
    file = path / MANIFEST
    if not file.exists():
        return None
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise damaged(path, f"{MANIFEST} is unreadable: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise damaged(path, f"{MANIFEST} has an unknown format (expected format {FORMAT})")
    return data


def write_manifest(path: Path, data: dict[str, Any]) -> None:
    # Write-then-rename so a crash never leaves half a manifest.
    fd, tmp = tempfile.mkstemp(dir=path, prefix=".manifest-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2)
    os.replace(tmp, path / MANIFEST)


def chunk_rows(doc: ParsedDocument, origin: str) -> list[Row]:
    rows = []
    for chunk in doc.chunks:
        meta: dict[str, Any] = {
            "doc_id": doc.doc_id,
            "tier": doc.tier,
            "target": doc.target,
            "family": target_family(doc.target),
            "title": doc.title,
            "section": chunk.section,
            "origin": origin,
            "source": doc.source,
            "chunk": chunk.index,
        }
        if doc.topics:  # Chroma refuses empty list values
            meta["topics"] = doc.topics
        rows.append((f"{doc.doc_id}#{chunk.index}", chunk.text, meta))
    return rows


def skill_meta(skill: Skill) -> dict[str, Any]:
    topics = ["skill", skill.operator_class] + ([skill.diagnosis] if skill.diagnosis else [])
    return {
        "doc_id": skill.id,
        "tier": "skills",
        "target": skill.target,
        "family": target_family(skill.target),
        "title": f"Skill ({skill.operator_class}, {skill.target}): {skill.change[:80]}",
        "section": "skill",
        "origin": "skill",
        "source": skill.sources[0],
        "chunk": 0,
        "topics": topics,
        "operator_class": skill.operator_class,
        "skill_json": skill.model_dump_json(),
    }


def skill_from_meta(meta: dict[str, Any]) -> Skill:
    try:
        return Skill.model_validate_json(meta["skill_json"])
    except (KeyError, ValidationError) as exc:
        raise KnowledgeBaseError(
            f"skill {meta.get('doc_id')!r} has unreadable metadata ({exc}); remove it with "
            f"`kernelevolve kb rm {meta.get('doc_id')}`"
        ) from exc


def document_info(doc_id: str, meta: dict[str, Any], n_chunks: int) -> DocumentInfo:
    tier: Tier = meta["tier"]
    return DocumentInfo(
        doc_id=doc_id,
        title=meta["title"],
        tier=tier,
        target=meta["target"],
        topics=list(meta.get("topics") or []),
        origin=meta["origin"],
        source=meta["source"],
        n_chunks=n_chunks,
    )
