"""The knowledge base: a persistent Chroma collection of chunked documents in four tiers.

One collection holds every chunk (row layout and the manifest beside it: ``layout.py``). Opening
a store whose manifest is older than the installed corpus re-indexes the bundled documents (user
documents and skills are kept); a manifest without its collection, or a store Chroma cannot read,
is reported as damaged and never reset. Searches run over an in-memory mirror of the collection
(``index.py``); the situation -> query logic is in ``retrieval.py``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import chromadb
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.api.types import Embeddable, EmbeddingFunction
from chromadb.config import Settings
from chromadb.errors import ChromaError, NotFoundError

from kernelevolve.config import KBConfig
from kernelevolve.errors import KnowledgeBaseError
from kernelevolve.kb import lexical, retrieval
from kernelevolve.kb import skills as skill_lib
from kernelevolve.kb.corpus import bundled_documents, corpus_hash, parse_document
from kernelevolve.kb.embedding import BundledMiniLM, get_encoder, get_query_encoder
from kernelevolve.kb.index import Mirror, applies
from kernelevolve.kb.layout import (
    FORMAT,
    MANIFEST,
    Row,
    chunk_rows,
    damaged,
    document_info,
    read_manifest,
    skill_from_meta,
    skill_meta,
    write_manifest,
)
from kernelevolve.kb.models import (
    DocumentInfo,
    Hit,
    Improvement,
    Situation,
    Skill,
    SkillRecord,
    SkillWrite,
    parse_target,
    parse_tier,
)
from kernelevolve.kb.tiers import ADDABLE_TIERS

COLLECTION = "kernelevolve-kb"
_BATCH = 64
# Each probe takes this many chunks per hit it may contribute, so that reranking and
# one-hit-per-document still leave enough candidates.
_OVERFETCH = 4
_TIER_ORDER = {"constraints": 0, "guides": 1, "hardware": 2, "skills": 3}
# Documents quoting the failure's error string that lead a retrieval, at most.
_EXACT_LEAD = 2

ProgressFn = Callable[[int, int], None]


class KnowledgeBase:
    """Retrieval, documents and skills over one persistent store. Create with ``open``."""

    def __init__(self, path: Path, collection: Collection, config: KBConfig) -> None:
        self._path = path
        self._col = collection
        self._config = config
        self._mirror = Mirror(path)
        self._warm = False

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(
        cls, config: KBConfig | None = None, *, on_progress: ProgressFn | None = None
    ) -> KnowledgeBase:
        """Open (creating if needed) the store at ``config.resolved_path()``.

        The bundled corpus is indexed on first use and whenever it changed; ``on_progress(done,
        total)`` reports indexing progress in chunks. Raises KnowledgeBaseError for a path that
        cannot hold a store or a damaged store.
        """
        config = config or KBConfig()
        path = config.resolved_path().expanduser()
        if path.exists() and not path.is_dir():
            raise KnowledgeBaseError(
                f"{path} is a file, not a knowledge-base directory; set kb.path "
                "(KERNELEVOLVE_KB__PATH) to a directory"
            )
        manifest = read_manifest(path)
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise KnowledgeBaseError(
                f"cannot create the knowledge-base directory {path}: {exc}; set kb.path "
                "(KERNELEVOLVE_KB__PATH) to a writable directory"
            ) from exc
        client = _client(path)
        try:
            if manifest is not None:
                collection = client.get_collection(
                    COLLECTION, embedding_function=_embedding_function()
                )
            else:
                collection = client.get_or_create_collection(
                    COLLECTION,
                    embedding_function=_embedding_function(),
                    configuration={"hnsw": {"space": "cosine"}},
                )
        except NotFoundError as exc:
            raise damaged(path, f"{MANIFEST} exists but the Chroma collection is missing") from exc
        except (ChromaError, ValueError) as exc:
            raise damaged(path, f"Chroma cannot open the collection: {exc}") from exc
        if manifest is not None and manifest.get("embedding") != BundledMiniLM.name():
            raise KnowledgeBaseError(
                f"the knowledge base at {path} was built with embedding model "
                f"{manifest.get('embedding')!r}, not {BundledMiniLM.name()!r}, so its vectors "
                f"cannot be compared; move it away (`mv {path} {path}.old`) and run "
                "`kernelevolve kb list` to rebuild"
            )
        kb = cls(path, collection, config)
        kb._load()
        current = corpus_hash()
        if manifest is None or manifest.get("corpus_hash") != current:
            kb._index_bundled(current, on_progress)
        else:
            bundled = sum(m.get("origin") == "bundled" for m in kb._mirror.meta.values())
            if bundled != manifest.get("bundled_chunks"):
                raise damaged(
                    path,
                    f"{MANIFEST} records {manifest.get('bundled_chunks')} bundled chunks but the "
                    f"store holds {bundled}",
                )
        return kb

    @property
    def path(self) -> Path:
        return self._path

    def _load(self) -> None:
        def read() -> tuple[list[str], list[Any], list[str], Any]:
            res = self._guard(
                lambda: self._col.get(include=["embeddings", "metadatas", "documents"])
            )
            embeddings = res["embeddings"] if res["embeddings"] is not None else []
            return res["ids"], res["metadatas"], res["documents"], embeddings

        self._mirror.load(read)

    def _sync(self) -> None:
        if self._mirror.stale():
            self._load()

    def _index_bundled(self, digest: str, on_progress: ProgressFn | None) -> None:
        docs = bundled_documents()
        rows = [row for doc in docs for row in chunk_rows(doc, origin="bundled")]
        old = [cid for cid, m in self._mirror.meta.items() if m.get("origin") == "bundled"]
        if old:
            self._guard(lambda: self._col.delete(ids=old))
            self._mirror.drop(old)
        if on_progress:
            on_progress(0, len(rows))
        for start in range(0, len(rows), _BATCH):
            self._upsert(rows[start : start + _BATCH])
            if on_progress:
                on_progress(min(start + _BATCH, len(rows)), len(rows))
        self._mirror.wrote()
        write_manifest(
            self._path,
            {
                "format": FORMAT,
                "embedding": BundledMiniLM.name(),
                "corpus_hash": digest,
                "bundled_documents": len(docs),
                "bundled_chunks": len(rows),
                "indexed_at": datetime.now(UTC).isoformat(),
            },
        )

    def _guard(self, op: Callable[[], Any]) -> Any:
        try:
            return op()
        except ChromaError as exc:
            raise KnowledgeBaseError(
                f"the knowledge base at {self._path} failed: {exc}; if this repeats, the store "
                f"may be damaged: move it away (`mv {self._path} {self._path}.broken`) and run "
                "`kernelevolve kb list` to rebuild"
            ) from exc

    def _upsert(self, rows: list[Row]) -> None:
        if not rows:
            return
        ids, texts, metas = (list(x) for x in zip(*rows, strict=True))
        vectors = get_encoder().encode(texts)
        self._guard(
            lambda: self._col.upsert(ids=ids, documents=texts, metadatas=metas, embeddings=vectors)
        )
        self._mirror.put(ids, metas, texts, vectors)

    # ------------------------------------------------------------------ retrieval

    def retrieve(self, situation: Situation, k: int | None = None) -> list[Hit]:
        """The ``k`` (default ``top_k``) passages most useful for ``situation``, one per document.

        Tiers and target filters follow from the situation (see ``retrieval.plan``). A failed
        candidate's message that contains an error string a document quotes puts up to two such
        documents first; otherwise up to two skills for the target and operator that are close
        to the situation lead the list.
        """
        self._sync()
        if not self._warm:
            get_query_encoder().encode(retrieval.static_texts())
            self._warm = True
        k = k or self._config.top_k
        probes = retrieval.plan(situation)
        skill_probe = retrieval.skill_probe(situation)
        everything = [*probes, skill_probe]
        vectors = retrieval.embed(everything, get_query_encoder().encode)
        found = self._mirror.search(
            vectors,
            [applies(p.tiers, situation.target) for p in everything],
            k * _OVERFETCH,
            [p.reason for p in everything],
            [p.terms for p in everything],
            retrieval.LEXICAL_WEIGHT,
        )
        ranked = [
            retrieval.rerank(
                cands, p.keywords, situation.target if p.exact_target else None, p.apis
            )
            for p, cands in zip(probes, found[:-1], strict=True)
        ]
        lead = retrieval.rerank(
            retrieval.relevant_skills(found[-1], situation, self._config.skill_max_distance),
            skill_probe.keywords,
        )[:2]
        if situation.error_status and situation.error_message:
            exact = self._mirror.error_matches(
                situation.error_message,
                applies(("constraints", "hardware"), situation.target),
                f"{situation.error_status}: the document quotes this error",
                vectors[0],
            )
            lead = _first_per_document(exact)[:_EXACT_LEAD]
        return [self._hit(c) for c in retrieval.merge(ranked, k, first=lead)]

    def search(
        self,
        query: str,
        *,
        tier: str | None = None,
        target: str | None = None,
        k: int | None = None,
    ) -> list[Hit]:
        """Free-text search, optionally restricted to a tier and to documents for a target.

        Ranked by cosine similarity plus BM25 (hybrid); documents quoting an error string the
        query contains come first."""
        if not query.strip():
            raise KnowledgeBaseError("the search query is empty; pass some words to search for")
        self._sync()
        k = k or self._config.top_k
        tiers = (parse_tier(tier),) if tier else None
        tgt = parse_target(target) if target else None
        keep = applies(tiers, tgt)
        vec = get_query_encoder().encode([query])
        reason = f"search: {query}"
        found = self._mirror.search(
            vec, [keep], k * _OVERFETCH, [reason], [tuple(lexical.tokens(query))],
            retrieval.LEXICAL_WEIGHT,
        )[0]
        exact = _first_per_document(self._mirror.error_matches(query, keep, reason, vec[0]))
        ranked = retrieval.rerank(found, frozenset(), apis=retrieval.api_names(query))
        return [self._hit(c) for c in retrieval.merge([ranked], k, first=exact[:_EXACT_LEAD])]

    def _hit(self, c: retrieval.Candidate) -> Hit:
        meta = c.meta
        text = self._mirror.docs[c.id]
        if meta.get("origin") == "skill":
            text = skill_lib.render(skill_from_meta(meta))
        return Hit(
            id=c.id,
            doc_id=meta["doc_id"],
            tier=meta["tier"],
            target=meta["target"],
            title=meta["title"],
            section=meta["section"],
            text=text,
            topics=list(meta.get("topics") or []),
            distance=c.distance,
            reason=c.reason,
        )

    # ------------------------------------------------------------------ documents

    def add_document(
        self,
        path: str | Path,
        *,
        tier: str | None = None,
        target: str | None = None,
        topics: list[str] | None = None,
        title: str | None = None,
    ) -> DocumentInfo:
        """Add (or replace) a markdown/text document; arguments override its front matter.

        The id is derived from the file's resolved path, so adding the same file again replaces
        it. Raises KnowledgeBaseError for a missing or unreadable file, an unknown tier or target,
        or a hardware document without a target.
        """
        p = Path(path).expanduser()
        if not p.is_file():
            raise KnowledgeBaseError(
                f"{p} does not exist or is not a file; pass the path of a markdown document"
            )
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise KnowledgeBaseError(
                f"{p} is not UTF-8 text; the knowledge base takes markdown"
            ) from exc
        except OSError as exc:
            raise KnowledgeBaseError(f"cannot read {p}: {exc}") from exc
        if tier is not None:
            parse_tier(tier, allowed=ADDABLE_TIERS)
        resolved = str(p.resolve())
        slug = "".join(c if c.isalnum() or c in "-_." else "-" for c in p.stem.lower())
        doc_id = f"user/{slug}-{hashlib.sha1(resolved.encode()).hexdigest()[:8]}"
        doc = parse_document(
            text,
            doc_id=doc_id,
            source=resolved,
            tier=tier,
            target=target,
            topics=topics,
            title=title,
        )
        parse_tier(doc.tier, allowed=ADDABLE_TIERS)
        self._sync()
        old = [cid for cid, m in self._mirror.meta.items() if m.get("doc_id") == doc_id]
        if old:
            self._guard(lambda: self._col.delete(ids=old))
            self._mirror.drop(old)
        rows = chunk_rows(doc, origin="user")
        self._upsert(rows)
        self._mirror.wrote()
        return document_info(doc_id, rows[0][2], len(rows))

    def get_document(self, doc_id: str) -> str:
        """The full text of a document (its chunks in order)."""
        self._sync()
        chunks = self._chunks_of(doc_id)
        meta = self._mirror.meta[chunks[0]]
        if meta.get("origin") == "skill":
            return skill_lib.render(skill_from_meta(meta))
        return "\n\n".join(self._mirror.docs[c] for c in chunks)

    def remove(self, doc_id: str) -> DocumentInfo:
        """Remove a user document or a skill by id. Bundled documents cannot be removed."""
        self._sync()
        chunks = self._chunks_of(doc_id)
        meta = self._mirror.meta[chunks[0]]
        if meta["origin"] == "bundled":
            raise KnowledgeBaseError(
                f"{doc_id!r} is part of the bundled corpus and is re-indexed from the package; "
                "it cannot be removed (add a corrected document of your own instead)"
            )
        self._guard(lambda: self._col.delete(ids=chunks))
        self._mirror.drop(chunks)
        self._mirror.wrote()
        return document_info(doc_id, meta, len(chunks))

    def _chunks_of(self, doc_id: str) -> list[str]:
        chunks = sorted(
            (m["chunk"], cid) for cid, m in self._mirror.meta.items() if m.get("doc_id") == doc_id
        )
        if not chunks:
            raise KnowledgeBaseError(
                f"no document with id {doc_id!r}; run `kernelevolve kb list` to see the ids"
            )
        return [cid for _, cid in chunks]

    # ------------------------------------------------------------------ skills

    def distill_skill(self, record: SkillRecord) -> SkillWrite:
        """Write ``record`` into the skills tier, or merge it into a near-duplicate.

        A near-duplicate is a skill for the same target and operator class whose change embeds
        within ``skill_merge_distance`` of this one; merging appends the gain and the source
        candidate (the first wording of the lesson is kept).
        Recording the same source candidate twice does not count it twice.
        """
        if record.gain < self._config.skill_min_gain:
            raise KnowledgeBaseError(
                f"a gain of {record.gain:.1%} is below kb.skill_min_gain "
                f"({self._config.skill_min_gain:.1%}); only improvements at least that large "
                "become skills (skill_from_improvement returns None for these)"
            )
        self._sync()
        text = skill_lib.embedding_text(record)
        vec = get_encoder().encode([text])
        same_kind = applies(
            ("skills",), None, {"target": record.target, "operator_class": record.operator_class}
        )
        siblings = [
            (cid, skill_from_meta(m)) for cid, m in self._mirror.meta.items() if same_kind(m)
        ]
        if siblings:
            encode = get_query_encoder().encode
            own = encode([skill_lib.change_text(record)])[0]
            others = encode([skill_lib.change_text(sk) for _, sk in siblings])
            distances = 1.0 - others @ own
            best = int(distances.argmin())
            if distances[best] < self._config.skill_merge_distance:
                cid, existing = siblings[best]
                if record.source_candidate not in existing.sources:
                    existing.gains.append(record.gain)
                    existing.sources.append(record.source_candidate)
                    existing.updated_at = datetime.now(UTC)
                    meta = skill_meta(existing)
                    self._guard(lambda: self._col.update(ids=[cid], metadatas=[meta]))
                    self._mirror.set_meta(cid, meta)
                    self._mirror.wrote()
                return SkillWrite(
                    skill=existing, action="merged", merged_distance=float(distances[best])
                )
        skill = Skill(
            id=skill_lib.skill_id(record),
            target=record.target,
            operator_class=record.operator_class,
            diagnosis=record.diagnosis,
            conditions=record.conditions,
            change=record.change,
            diff_excerpt=record.diff_excerpt,
            gains=[record.gain],
            sources=[record.source_candidate],
        )
        cid, meta = f"{skill.id}#0", skill_meta(skill)
        self._guard(
            lambda: self._col.upsert(ids=[cid], documents=[text], metadatas=[meta], embeddings=vec)
        )
        self._mirror.put([cid], [meta], [text], vec)
        self._mirror.wrote()
        return SkillWrite(skill=skill, action="added")

    def distill_improvement(self, improvement: Improvement) -> SkillWrite | None:
        """Distil a skill from a measured parent -> child step; None below the gain margin."""
        record = skill_lib.skill_from_improvement(improvement, self._config.skill_min_gain)
        return None if record is None else self.distill_skill(record)

    def skills(
        self, *, target: str | None = None, operator_class: str | None = None
    ) -> list[Skill]:
        """Stored skills, optionally for one target tag (exact) and operator class."""
        self._sync()
        keep = applies(("skills",), None)
        tgt = parse_target(target, allow_any=False) if target else None
        found = [
            skill_from_meta(m)
            for m in self._mirror.meta.values()
            if keep(m)
            and (tgt is None or m["target"] == tgt)
            and (operator_class is None or m.get("operator_class") == operator_class)
        ]
        return sorted(found, key=lambda s: s.id)

    def list(self, *, tier: str | None = None, target: str | None = None) -> list[DocumentInfo]:
        """Documents in the store (one entry per document), filtered by tier and target."""
        self._sync()
        keep = applies(
            (parse_tier(tier),) if tier else None, parse_target(target) if target else None
        )
        counts: dict[str, int] = {}
        first: dict[str, dict[str, Any]] = {}
        for meta in self._mirror.meta.values():
            if keep(meta):
                counts[meta["doc_id"]] = counts.get(meta["doc_id"], 0) + 1
                first.setdefault(meta["doc_id"], meta)
        infos = [document_info(d, first[d], counts[d]) for d in first]
        return sorted(infos, key=lambda i: (_TIER_ORDER[i.tier], i.doc_id))


# ---------------------------------------------------------------------- helpers


def _first_per_document(candidates: list[retrieval.Candidate]) -> list[retrieval.Candidate]:
    seen: set[str] = set()
    out = []
    for c in candidates:
        if c.doc_id not in seen:
            seen.add(c.doc_id)
            out.append(c)
    return out


def _embedding_function() -> EmbeddingFunction[Embeddable]:
    # Chroma types the parameter over documents and images; ours embeds documents only.
    return cast("EmbeddingFunction[Embeddable]", BundledMiniLM())


def _client(path: Path) -> ClientAPI:
    try:
        return chromadb.PersistentClient(
            path=str(path), settings=Settings(anonymized_telemetry=False, allow_reset=False)
        )
    except (ChromaError, ValueError, OSError) as exc:
        raise damaged(path, f"Chroma cannot open its database: {exc}") from exc
