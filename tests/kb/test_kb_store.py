from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import kernelevolve.kb.store as store_module
from kernelevolve.config import KBConfig
from kernelevolve.errors import KnowledgeBaseError
from kernelevolve.kb import KnowledgeBase, Situation
from kernelevolve.kb.corpus import bundled_documents, corpus_hash

NOTE = """---
title: Zeta-9 accelerator memory notes
tier: hardware
target: cuda:zeta9
topics: [memory-hierarchy, zeta9]
---
# Zeta-9 accelerator memory notes

## Scratchpad

Each Zeta-9 core has a 96 KB scratchpad that Triton uses for dot operand tiles; keep
num_stages * (BLOCK_M + BLOCK_N) * BLOCK_K * 2 bytes under 96 KB.

## Bandwidth

HBM peaks at 7.7 TB/s; a memory-bound kernel should reach 6 TB/s.
"""


def test_open_builds_the_store_once(indexed_store: Path) -> None:
    manifest = json.loads((indexed_store / store_module.MANIFEST).read_text())
    assert manifest["corpus_hash"] == corpus_hash()
    assert manifest["bundled_documents"] == len(bundled_documents()) >= 40
    assert (indexed_store / "chroma.sqlite3").is_file()


def test_list_counts_documents_per_tier(shared_kb: KnowledgeBase) -> None:
    docs = shared_kb.list()
    assert len(docs) == len(bundled_documents())
    assert {d.origin for d in docs} == {"bundled"}
    hardware = shared_kb.list(tier="hardware", target="mtia-sim:2i")
    assert {d.doc_id for d in hardware} == {"hardware/mtia-2i", "hardware/mtia-triton-programming"}


def test_add_search_replace_and_remove(kb: KnowledgeBase, tmp_path: Path) -> None:
    note = tmp_path / "zeta9.md"
    note.write_text(NOTE)
    info = kb.add_document(note)
    assert (info.tier, info.target, info.origin, info.n_chunks) == (
        "hardware",
        "cuda:zeta9",
        "user",
        2,
    )
    hits = kb.retrieve(
        Situation(target="cuda:zeta9", operator_class="matmul", diagnosis="memory-bound")
    )
    assert info.doc_id in [h.doc_id for h in hits[:3]]
    assert (
        kb.search("scratchpad size for dot operands", target="cuda:zeta9", k=1)[0].doc_id
        == info.doc_id
    )
    # Not visible to other targets.
    assert info.doc_id not in [h.doc_id for h in kb.search("scratchpad", target="cuda:h100", k=10)]

    # Adding the same file again replaces it (same id, new content).
    note.write_text(NOTE.replace("96 KB", "128 KB"))
    again = kb.add_document(note, topics=["zeta9"])
    assert again.doc_id == info.doc_id and again.topics == ["zeta9"]
    assert "128 KB" in kb.get_document(info.doc_id) and "96 KB" not in kb.get_document(info.doc_id)
    assert len([d for d in kb.list() if d.origin == "user"]) == 1

    # Another process (a fresh open) sees it; removal is persistent.
    assert info.doc_id in {d.doc_id for d in KnowledgeBase.open(KBConfig(path=kb.path)).list()}
    kb.remove(info.doc_id)
    assert info.doc_id not in {d.doc_id for d in KnowledgeBase.open(KBConfig(path=kb.path)).list()}


def test_writes_by_another_process_are_seen(store_copy: Path, tmp_path: Path) -> None:
    reader = KnowledgeBase.open(KBConfig(path=store_copy))
    writer = KnowledgeBase.open(KBConfig(path=store_copy))
    note = tmp_path / "zeta9.md"
    note.write_text(NOTE)
    info = writer.add_document(note)
    assert reader.search("Zeta-9 scratchpad", target="cuda:zeta9", k=1)[0].doc_id == info.doc_id
    writer.remove(info.doc_id)
    assert info.doc_id not in {d.doc_id for d in reader.list()}


def test_bad_input_is_reported(kb: KnowledgeBase, tmp_path: Path) -> None:
    with pytest.raises(KnowledgeBaseError, match="does not exist"):
        kb.add_document(tmp_path / "missing.md", tier="guides")
    note = tmp_path / "n.md"
    note.write_text("# Note\n\nSome text.\n")
    with pytest.raises(KnowledgeBaseError, match="unknown tier 'tricks'"):
        kb.add_document(note, tier="tricks")
    with pytest.raises(KnowledgeBaseError, match="skills tier is written by skill distillation"):
        kb.add_document(note, tier="skills")
    with pytest.raises(KnowledgeBaseError, match="unknown target 'tpu:v5'"):
        kb.add_document(note, tier="hardware", target="tpu:v5")
    with pytest.raises(KnowledgeBaseError, match="hardware documents describe a target"):
        kb.add_document(note, tier="hardware")
    with pytest.raises(KnowledgeBaseError, match="no tier"):
        kb.add_document(note)
    binary = tmp_path / "b.md"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(KnowledgeBaseError, match="not UTF-8"):
        kb.add_document(binary, tier="guides")
    with pytest.raises(KnowledgeBaseError, match="no document with id 'user/nope'"):
        kb.remove("user/nope")
    with pytest.raises(KnowledgeBaseError, match="bundled corpus"):
        kb.remove("guides/online-softmax")
    with pytest.raises(KnowledgeBaseError, match="query is empty"):
        kb.search("  ")


def test_a_corrupted_database_is_reported_not_reset(store_copy: Path) -> None:
    db = store_copy / "chroma.sqlite3"
    garbage = b"this is not a database" * 500
    db.write_bytes(garbage)
    with pytest.raises(KnowledgeBaseError) as err:
        KnowledgeBase.open(KBConfig(path=store_copy))
    message = str(err.value)
    assert str(store_copy) in message and "damaged" in message and "kernelevolve kb list" in message
    assert db.read_bytes() == garbage


def test_a_missing_database_is_reported(store_copy: Path) -> None:
    (store_copy / "chroma.sqlite3").unlink()
    for segment in store_copy.iterdir():
        if segment.is_dir():
            shutil.rmtree(segment)
    with pytest.raises(KnowledgeBaseError, match="collection is missing"):
        KnowledgeBase.open(KBConfig(path=store_copy))


def test_a_damaged_manifest_is_reported(store_copy: Path) -> None:
    (store_copy / store_module.MANIFEST).write_text("{not json")
    with pytest.raises(KnowledgeBaseError, match="damaged.*unreadable"):
        KnowledgeBase.open(KBConfig(path=store_copy))


def test_a_file_is_not_a_store(tmp_path: Path) -> None:
    path = tmp_path / "kb"
    path.write_text("x")
    with pytest.raises(KnowledgeBaseError, match="is a file"):
        KnowledgeBase.open(KBConfig(path=path))


def test_changed_corpus_is_reindexed_keeping_user_documents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A two-document corpus keeps this fast; the mechanism is the same for the real one.
    corpus = tmp_path / "docs"
    (corpus / "guides").mkdir(parents=True)
    (corpus / "guides" / "a.md").write_text(
        "---\ntier: guides\ntopics: [a]\n---\n# A\n\nAlpha text.\n"
    )
    monkeypatch.setattr(store_module, "bundled_documents", lambda: bundled_documents(corpus))
    monkeypatch.setattr(store_module, "corpus_hash", lambda: corpus_hash(corpus))
    config = KBConfig(path=tmp_path / "kb")

    kb = KnowledgeBase.open(config)
    assert [d.doc_id for d in kb.list()] == ["guides/a"]
    note = tmp_path / "mine.md"
    note.write_text("# Mine\n\nMy own note about tiles.\n")
    mine = kb.add_document(note, tier="guides")

    (corpus / "guides" / "b.md").write_text(
        "---\ntier: guides\ntopics: [b]\n---\n# B\n\nBeta text.\n"
    )
    (corpus / "guides" / "a.md").unlink()
    kb = KnowledgeBase.open(config)
    assert sorted(d.doc_id for d in kb.list()) == sorted(["guides/b", mine.doc_id])
    manifest = json.loads((config.path / store_module.MANIFEST).read_text())
    assert manifest["corpus_hash"] == corpus_hash(corpus) and manifest["bundled_chunks"] == 1


def test_default_path_is_under_the_data_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("KERNELEVOLVE_HOME", str(tmp_path))
    assert KBConfig().resolved_path() == tmp_path / "kb"
