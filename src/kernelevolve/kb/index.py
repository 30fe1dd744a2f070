"""An in-memory mirror of the Chroma collection, searched by brute force.

Chroma is the store of record. Its per-query cost on this project's machines was 5-20 ms for a
metadata-filtered query over a few hundred chunks (metadata is read row by row from SQLite), and a
retrieval issues five or six filtered queries, which alone broke the 50 ms budget. The collection
is small (hundreds to a few thousand chunks of 384 floats), so an exact dot product over all of it
takes well under a millisecond; the mirror is loaded once per process and reloaded when another
process writes (a generation file beside the store changes). The lexical side (a BM25 index and
the error strings each chunk quotes, ``lexical.py``) is rebuilt with the matrix.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kernelevolve.kb import lexical
from kernelevolve.kb.embedding import DIMENSION
from kernelevolve.kb.models import Tier, target_family
from kernelevolve.kb.retrieval import Candidate

GENERATION = "kernelevolve-kb.generation"


@dataclass(frozen=True)
class Filter:
    """Which chunks a search may return: the tier/target semantics of retrieval.

    A specific target (``cuda:h100``) admits its own documents, its family's (``cuda``) and
    platform-agnostic ones (``any``); a family (``cuda``) admits every member's documents.
    ``equals`` pins further metadata fields (e.g. ``operator_class`` for skill merging).
    """

    tiers: tuple[Tier, ...] | None = None
    target: str | None = None
    equals: tuple[tuple[str, str], ...] = ()

    def __call__(self, meta: dict[str, Any]) -> bool:
        if self.tiers is not None and meta.get("tier") not in self.tiers:
            return False
        if self.target is not None and self.target != "any":
            family = target_family(self.target)
            if family != self.target:
                if meta.get("target") not in ("any", family, self.target):
                    return False
            elif meta.get("target") != "any" and meta.get("family") != family:
                return False
        return all(meta.get(k) == v for k, v in self.equals)


def applies(
    tiers: tuple[Tier, ...] | None, target: str | None, fields: dict[str, str] | None = None
) -> Filter:
    return Filter(tiers, target, tuple(sorted((fields or {}).items())))


class Mirror:
    """Ids, metadata, documents and unit vectors of every chunk, kept in step with Chroma."""

    def __init__(self, store_dir: Path) -> None:
        self._stamp_file = store_dir / GENERATION
        self._stamp: tuple[int, int, int] | None = None
        self.meta: dict[str, dict[str, Any]] = {}
        self.docs: dict[str, str] = {}
        self._vecs: dict[str, np.ndarray] = {}
        self._ids: list[str] = []
        self._matrix = np.zeros((0, DIMENSION), dtype=np.float32)
        self._bm25 = lexical.BM25([])
        self._signatures: list[list[lexical.Signature]] = []
        self._dirty = False
        # Row numbers admitted by each filter, valid until the next change (filters repeat).
        self._rows_for: dict[Filter, list[int]] = {}

    # -- keeping in step

    def load(self, read: Callable[[], tuple[list[str], list[Any], list[str], Any]]) -> None:
        """Replace the contents with what ``read()`` returns (ids, metadatas, documents,
        vectors). The generation is read first, so a write landing during the read makes the
        mirror stale rather than silently missing it."""
        stamp = self._read_stamp()
        ids, metas, docs, vecs = read()
        self.meta, self.docs, self._vecs = {}, {}, {}
        self.put(ids, metas, docs, vecs)
        self._stamp = stamp

    def stale(self) -> bool:
        """Whether another process wrote to the store since this mirror was loaded."""
        return self._read_stamp() != self._stamp

    def put(self, ids: Iterable[str], metas: Iterable[Any], docs: Iterable[str], vecs: Any) -> None:
        for cid, meta, doc, vec in zip(ids, metas, docs, vecs, strict=True):
            self.meta[cid] = dict(meta)
            self.docs[cid] = doc
            self._vecs[cid] = np.asarray(vec, dtype=np.float32)
        self._dirty = True

    def set_meta(self, cid: str, meta: dict[str, Any]) -> None:
        self.meta[cid] = dict(meta)
        self._dirty = True

    def drop(self, ids: Iterable[str]) -> None:
        for cid in ids:
            self.meta.pop(cid, None)
            self.docs.pop(cid, None)
            self._vecs.pop(cid, None)
        self._dirty = True

    def wrote(self) -> None:
        """Record a write by this process: bump the generation so other processes reload."""
        tmp = self._stamp_file.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(uuid.uuid4().hex)
        os.replace(tmp, self._stamp_file)
        self._stamp = self._read_stamp()

    def _read_stamp(self) -> tuple[int, int, int] | None:
        try:
            st = self._stamp_file.stat()
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    # -- searching

    def _rebuild(self) -> None:
        if not self._dirty:
            return
        self._ids = list(self._vecs)
        self._matrix = (
            np.stack([self._vecs[i] for i in self._ids])
            if self._ids
            else np.zeros((0, DIMENSION), dtype=np.float32)
        )
        texts = [self.docs[i] for i in self._ids]
        self._bm25 = lexical.BM25(texts)
        self._signatures = [lexical.signatures(t) for t in texts]
        self._dirty = False
        self._rows_for.clear()

    def _rows(self, keep: Filter) -> list[int]:
        rows = self._rows_for.get(keep)
        if rows is None:
            rows = [r for r, cid in enumerate(self._ids) if keep(self.meta[cid])]
            self._rows_for[keep] = rows
        return rows

    def search(
        self,
        vectors: np.ndarray,
        filters: list[Filter],
        n: int,
        reasons: list[str],
        terms: list[tuple[str, ...]] | None = None,
        lexical_weight: float = 0.0,
    ) -> list[list[Candidate]]:
        """Top ``n`` chunks for each (vector, filter) pair: by cosine similarity, plus
        ``lexical_weight`` times the BM25 score of the pair's ``terms`` normalised to the best
        score among the chunks the filter admits (hybrid ranking; no terms: cosine only)."""
        self._rebuild()
        sims = self._matrix @ np.asarray(vectors, dtype=np.float32).T
        out: list[list[Candidate]] = []
        for col, (keep, reason) in enumerate(zip(filters, reasons, strict=True)):
            rows = self._rows(keep)
            if not rows:
                out.append([])
                continue
            col_sims = sims[rows, col]
            lex = np.zeros(len(rows), dtype=np.float32)
            if terms is not None and terms[col] and lexical_weight > 0:
                raw = self._bm25.scores(terms[col])[rows]
                best = float(raw.max())
                if best > 0:
                    lex = (lexical_weight / best * raw).astype(np.float32)
            top = np.argsort(-(col_sims + lex), kind="stable")[:n]
            out.append(
                [
                    Candidate(
                        id=self._ids[rows[t]],
                        distance=float(1.0 - col_sims[t]),
                        meta=self.meta[self._ids[rows[t]]],
                        reason=reason,
                        lexical=float(lex[t]),
                    )
                    for t in top
                ]
            )
        return out

    def error_matches(
        self, message: str, keep: Filter, reason: str, vector: np.ndarray
    ) -> list[Candidate]:
        """Chunks that quote an error string ``message`` contains, longest match first (their
        distance is to ``vector``, for the record)."""
        self._rebuild()
        text = lexical.normalise(message)
        scored = []
        for r in self._rows(keep):
            weight = lexical.best_match(self._signatures[r], text)
            if weight:
                # On equal matches the debugging notes, written for failures, come first.
                notes = "debugging" in (self.meta[self._ids[r]].get("topics") or ())
                scored.append((-weight, not notes, r))
        scored.sort()
        vec = np.asarray(vector, dtype=np.float32)
        return [
            Candidate(
                id=self._ids[r],
                distance=float(1.0 - self._matrix[r] @ vec),
                meta=self.meta[self._ids[r]],
                reason=reason,
            )
            for _, _, r in scored
        ]
