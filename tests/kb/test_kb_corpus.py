from __future__ import annotations

from collections import Counter

import pytest

from kernelevolve.errors import KnowledgeBaseError
from kernelevolve.kb.corpus import BUNDLED_DIR, bundled_documents, chunk_markdown, parse_document


@pytest.fixture(scope="module")
def docs():
    return bundled_documents()


def test_bundled_corpus_is_large_and_tagged(docs) -> None:
    assert len(docs) >= 40
    tiers = Counter(d.tier for d in docs)
    assert tiers["constraints"] >= 10 and tiers["guides"] >= 10 and tiers["hardware"] >= 8
    assert len({d.doc_id for d in docs}) == len(docs)
    for d in docs:
        assert d.topics, d.doc_id
        assert d.title and d.chunks, d.doc_id
        if d.tier == "hardware":
            assert d.target != "any", d.doc_id
        else:
            assert d.target == "any", d.doc_id


def test_hardware_documents_cover_the_targets(docs) -> None:
    targets = {d.target for d in docs if d.tier == "hardware"}
    assert {
        "cuda:h100",
        "cuda:h200",
        "cuda:a100",
        "rocm:mi300x",
        "mtia-sim:2i",
        "mtia-sim:v1",
        "mtia-sim:300",
        "cpu",
    } <= targets


def test_mtia_documents_say_they_are_simulated(docs) -> None:
    for d in docs:
        if d.target.startswith("mtia-sim"):
            assert "simulated" in d.body.lower(), d.doc_id
            assert "ISCA" in d.body, d.doc_id


def test_debugging_notes_quote_real_triton_messages(docs) -> None:
    text = next(d.body for d in docs if d.doc_id == "constraints/debug-compile-errors")
    for message in (
        "arange's range must be a power of 2",
        "Cannot make_shape_compatible",
        "Input shapes should have M >= 16, N >= 16 and K >= 16",
    ):
        assert message in text


def test_chunks_are_self_describing_and_keep_code_fences_whole(docs) -> None:
    for d in docs:
        for c in d.chunks:
            assert c.text.startswith(d.title)
            assert c.text.count("```") % 2 == 0, (d.doc_id, c.index)


def test_front_matter_and_overrides(tmp_path) -> None:
    text = (
        "---\ntitle: 'My notes'\ntier: guides\ntopics: [a, B]\n---\n# Heading\n\nSome text here.\n"
    )
    doc = parse_document(text, doc_id="user/x", source="x.md")
    assert (doc.title, doc.tier, doc.target, doc.topics) == (
        "My notes",
        "guides",
        "any",
        ["a", "b"],
    )
    doc = parse_document(text, doc_id="user/x", source="x.md", tier="hardware", target="cuda:h100")
    assert (doc.tier, doc.target) == ("hardware", "cuda:h100")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("# T\n\nbody\n", "no tier"),
        ("---\ntier: guides\n# T\n", "never ends"),
        ("---\ntier: guides\ncolour: red\n---\nbody\n", "unknown front-matter key 'colour'"),
        ("---\ntier: hardware\n---\nbody\n", "hardware documents describe a target"),
        ("---\ntier: guides\n---\n\n", "no text"),
    ],
)
def test_bad_documents_are_reported(text: str, message: str) -> None:
    with pytest.raises(KnowledgeBaseError, match=message):
        parse_document(text, doc_id="user/x", source="x.md")


def test_long_sections_are_split_at_paragraphs() -> None:
    body = "## Section\n\n" + "\n\n".join(f"Paragraph {i} " + "word " * 60 for i in range(6))
    chunks = chunk_markdown(body, "Title")
    assert len(chunks) >= 3
    assert all(c.section == "Section" for c in chunks)
    assert all(len(c.text.split()) < 260 for c in chunks)


def test_bundled_dir_is_package_data() -> None:
    # pyproject ships kb/docs/**/*.md as package data; everything must be markdown.
    assert all(p.suffix == ".md" for p in BUNDLED_DIR.rglob("*") if p.is_file())
