"""Lexical matching beside the embeddings: BM25 over chunk texts, and exact error strings.

MiniLM embeds a query by its general sense, so identifiers and error strings carry little
weight: ``incompatible dimensions in tl.dot`` lands near any shape error, and a GroupNorm
situation near any normalisation or fusion text. Two lexical signals fix that:

- **BM25** over each chunk's text (title, section and body). Tokens keep Triton identifiers whole
  (``tl.dot``, ``num_warps``, ``native_group_norm``) and also index their parts (``dot``,
  ``group``, ``norm``), so both spellings match. Implemented here (about forty lines over numpy)
  rather than with a package: the collection is a few hundred chunks, the index is rebuilt with
  the in-memory mirror, and the scores must be restricted to the rows a probe's filter admits.
- **Error signatures**: the error strings the constraint documents quote (in a heading, or a
  backticked span with an error word in it). A failed candidate's message that contains one of
  them is answered by that document first, before any embedding is consulted. Numbers and
  upper-case placeholders (``X``, ``LINE:COL``, ``M >= 16``) are wildcards, so the message of
  another Triton version (``M >= 1``) still matches.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

# Identifiers, dotted or not; numbers are left out (shapes and sizes in messages are noise).
_TOKEN = re.compile(r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*")
_STOP = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from",
        "has", "have", "if", "in", "into", "is", "it", "its", "kernel", "kernels", "not", "of",
        "on", "or", "so", "that", "the", "their", "then", "this", "to", "use", "used", "was",
        "when", "which", "while", "with", "without", "you", "your",
    }
)
# BM25's usual constants: term-frequency saturation and length normalisation.
_K1 = 1.2
_B = 0.75


def _stem(word: str) -> str:
    plural = word.endswith("s") and not word.endswith(("ss", "us", "is"))
    return word[:-1] if plural and len(word) > 3 else word


def tokens(text: str) -> list[str]:
    """Lower-case tokens: whole dotted/underscored identifiers plus their parts, lightly stemmed,
    without stop words and numbers (``tl.dot`` -> ``tl.dot``, ``dot``)."""
    out: list[str] = []
    for tok in _TOKEN.findall(text.lower()):
        tok = tok.strip("_.")
        if not tok:
            continue
        if tok not in _STOP:
            out.append(_stem(tok))
        if "." in tok or "_" in tok:
            out += [
                _stem(p)
                for p in re.split(r"[._]+", tok)
                if len(p) >= 2 and p not in _STOP and not p.isdigit()
            ]
    return out


class BM25:
    """Okapi BM25 over a fixed list of texts."""

    def __init__(self, texts: list[str]) -> None:
        self._n = len(texts)
        counts = [Counter(tokens(t)) for t in texts]
        lengths = np.array([sum(c.values()) for c in counts], dtype=np.float32)
        avg = float(lengths.mean()) if self._n else 1.0
        self._norm = _K1 * (1 - _B + _B * lengths / max(avg, 1e-9))
        postings: dict[str, tuple[list[int], list[int]]] = {}
        for row, c in enumerate(counts):
            for term, tf in c.items():
                rows, tfs = postings.setdefault(term, ([], []))
                rows.append(row)
                tfs.append(tf)
        self._postings = {
            t: (np.array(r, dtype=np.int64), np.array(f, dtype=np.float32))
            for t, (r, f) in postings.items()
        }

    def scores(self, query: Iterable[str]) -> np.ndarray:
        """BM25 score of every text for the query tokens (repeats count once)."""
        out = np.zeros(self._n, dtype=np.float32)
        for term in dict.fromkeys(query):
            posting = self._postings.get(term)
            if posting is None:
                continue
            rows, tf = posting
            idf = math.log(1 + (self._n - len(rows) + 0.5) / (len(rows) + 0.5))
            out[rows] += idf * tf * (_K1 + 1) / (tf + self._norm[rows])
        return out


# ---------------------------------------------------------------------- error strings

# Any length, so that a short span is consumed rather than its closing backtick opening a "span"
# of the prose after it; short ones are dropped afterwards.
_SPAN = re.compile(r"`([^`\n]*)`")
# A heading or a list item that starts with a quoted string names a message.
_HEADING_SPAN = re.compile(r"^(?:#{1,3}|\s*[-*])\s+`([^`\n]*)`", re.MULTILINE)
_CODE_START = re.compile(r"^(for|if|while|def|return|with|import|from|lambda)\b")
_ERROR_WORDS = re.compile(
    r"error|exception|must|cannot|can't|should|unsupported|invalid|incompatible|expected|"
    r"out of resource|illegal|misaligned|not support|no attribute|unexpected|mismatch|refuse|"
    r"neither|missing|not allowed",
    re.IGNORECASE,
)
# Upper-case placeholders (X, N, LINE:COL) and '...' stand for whatever the real message says.
_PLACEHOLDER = re.compile(r"\.\.\.|…|\b[A-Z]{1,4}\b(?::[A-Z]{1,4}\b)?")
_MIN_PIECE = 8
_MIN_SIGNATURE = 12


def normalise(text: str) -> str:
    """Lower case, quotes dropped, digit runs as '#', whitespace collapsed."""
    text = re.sub(r"[`'\"]", "", text.lower())
    text = re.sub(r"[0-9]+", "#", text)
    return re.sub(r"\s+", " ", text).strip()


@dataclass(frozen=True)
class Signature:
    """An error string a document explains, as the pieces a message must contain."""

    text: str
    pieces: tuple[str, ...]

    @property
    def weight(self) -> int:
        return sum(len(p) for p in self.pieces)

    def matches(self, normalised_message: str) -> bool:
        return all(p in normalised_message for p in self.pieces)


# The exception's class is left out: messages carry it as "X: msg", "X('msg')" or not at all.
_EXCEPTION_PREFIX = re.compile(r"^\s*[\w.]*(?:Error|Exception|Warning)\s*[:(]\s*")


def _signature(span: str) -> Signature | None:
    pieces = tuple(
        p
        for p in (normalise(part) for part in _PLACEHOLDER.split(_EXCEPTION_PREFIX.sub("", span)))
        if len(p) >= _MIN_PIECE and re.search(r"[a-z]{3}", p)
    )
    sig = Signature(span, pieces)
    return sig if pieces and sig.weight >= _MIN_SIGNATURE else None


def _prose(span: str) -> bool:
    """Reads like a message rather than code: at least two plain words, not a statement."""
    if not 8 <= len(span) <= 200 or _CODE_START.match(span.strip()):
        return False
    return sum(bool(re.fullmatch(r"[A-Za-z']{2,}:?", w)) for w in span.split()) >= 2


def signatures(chunk_text: str) -> list[Signature]:
    """The error strings a chunk quotes: backticked headings and list items, and backticked
    spans that read like an error message (an error word in them); code is not a signature."""
    spans = [s for s in dict.fromkeys(_HEADING_SPAN.findall(chunk_text)) if _prose(s)]
    spans += [
        s
        for s in dict.fromkeys(_SPAN.findall(chunk_text))
        if s not in spans and _ERROR_WORDS.search(s) and _prose(s)
    ]
    found = [_signature(s) for s in spans]
    return [s for s in found if s is not None]


def best_match(sigs: list[Signature], normalised_message: str) -> int:
    """Weight of the longest signature the message contains (0: none)."""
    return max((s.weight for s in sigs if s.matches(normalised_message)), default=0)
