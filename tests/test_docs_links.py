"""The documentation's relative links resolve: every link in README.md, CHANGELOG.md and docs/
points at a file or folder of the repository (and, with a #fragment into a Markdown file, at one
of its headings), never outside the repository. The README keeps the two set-up commands."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", ROOT / "CHANGELOG.md", *(ROOT / "docs").rglob("*.md")])

FENCE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$", re.S | re.M)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def _prose(text: str) -> str:
    """The text without fenced code blocks and code spans (their brackets are not links)."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for heading in HEADING.findall(FENCE.sub("", path.read_text())):
        slug = _slug(heading)
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def _links(path: Path) -> list[str]:
    return [m.group(1) for m in LINK.finditer(_prose(path.read_text()))]


def test_the_documents_exist() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in DOCS}
    for name in ("README.md", "CHANGELOG.md", "docs/architecture.md", "docs/harness.md",
                 "docs/tuning.md", "docs/configuration.md", "docs/targets.md", "docs/results.md",
                 "docs/llm.md"):
        assert name in names, name
    assert (ROOT / "LICENSE").is_file()


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(doc: Path) -> None:
    broken = []
    for target in _links(doc):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
            continue
        ref, _, fragment = target.partition("#")
        dest = (doc.parent / ref).resolve() if ref else doc
        if not dest.is_relative_to(ROOT):
            broken.append(f"{target} (outside the repository)")
        elif not dest.exists():
            broken.append(f"{target} (no such file)")
        elif fragment and dest.suffix == ".md" and fragment not in _anchors(dest):
            broken.append(f"{target} (no heading #{fragment})")
    assert not broken, f"{doc.relative_to(ROOT)}: broken links: {broken}"


def test_the_link_check_sees_links() -> None:
    """The parser finds links in prose and ignores them in code."""
    text = "a [x](docs/a.md#b) `[y](z.md)`\n```\n[q](r.md)\n```\n"
    assert [m.group(1) for m in LINK.finditer(_prose(text))] == ["docs/a.md#b"]
    assert _slug("`[llm]`") == "llm"
    assert _slug("What is still taken on trust") == "what-is-still-taken-on-trust"


def test_readme_keeps_the_two_setup_commands() -> None:
    """The main job and the test command, each alone in its own bash block (.ci/run runs the
    second's pytest)."""
    blocks = re.findall(r"^```bash\n(.*?)^```$", (ROOT / "README.md").read_text(), re.S | re.M)
    main = ("pip install torch==2.13.0 triton==3.7.1 -e . && kernelevolve tune "
            "examples/problems/03_leaky_relu_scale_clamp.py --rounds 6\n")
    tests = ("pip install torch==2.13.0 triton==3.7.1 -e '.[test]' && OMP_NUM_THREADS=1 "
             "python -m pytest -q -n 2 --dist loadfile\n")
    assert main in blocks and tests in blocks
    assert "python -m pytest -q -n 2 --dist loadfile" in (ROOT / ".ci" / "run").read_text()
