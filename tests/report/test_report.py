"""The HTML report of a real run: what it shows, that it escapes what the run recorded, that it
needs nothing from the network, and the tree layout behind its picture."""

from __future__ import annotations

import base64
import hashlib
import re
from html import unescape
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelevolve.cli import app
from kernelevolve.config import load_settings
from kernelevolve.errors import RunError
from kernelevolve.graph.search import ROOT, Node, SearchTree
from kernelevolve.report import build_report, load_run, report_view, tree_layout, write_report
from kernelevolve.report.run import RunRecord
from tests.report.conftest import INJECTION, PASSAGE_TITLE


@pytest.fixture(scope="module")
def html(report_run: Path) -> str:
    return build_report(report_run)


def _section(html: str, node_id: str) -> str:
    m = re.search(rf'<section [^>]*id="node-{node_id}".*?</section>', html, re.S)
    assert m is not None, node_id
    return m.group(0)


def test_the_run_has_what_the_report_must_show(report_run: Path) -> None:
    record = load_run(report_run)
    tree = record.values["tree"]
    assert tree.nodes["n0001"].status in ("compile_error", "runtime_error")
    assert tree.nodes["n0002"].repair_of == "n0001" and tree.nodes["n0002"].ok
    assert tree.nodes["n0003"].parent == "n0002" and tree.best_id is not None
    assert record.values["knowledge"] and record.finished and not record.paused


def test_header_names_the_run_and_labels_simulated_speedups(report_run: Path, html: str
                                                            ) -> None:
    record = load_run(report_run)
    tree = record.values["tree"]
    best = tree.best
    assert best is not None and best.speedup is not None
    header = html.split("</header>")[0]
    for text in ("03_leaky_relu_scale_clamp", "mtia-sim:2i", "scripted-coder",
                 "finished: budget spent: 2 rounds", f"{best.speedup:.2f}x vs eager",
                 "simulated on mtia-sim:2i", "rounds 2 / 2", "evaluations 3",
                 record.spec.run_id):
        assert text in header, text


def test_tree_svg_has_one_element_per_node_a_repair_link_and_the_best(report_run: Path,
                                                                      html: str) -> None:
    tree = load_run(report_run).values["tree"]
    svg = html.split('<svg id="tree"')[1].split("</svg>")[0]
    ids = re.findall(r'<g class="node [^"]*" id="tree-([^"]+)"', svg)
    assert sorted(ids) == sorted(tree.nodes)
    assert svg.count('class="repair"') == 1  # n0002 repairs n0001
    assert svg.count('class="ring"') == 1
    assert f'id="tree-{tree.best_id}"' in re.search(r'<g class="node[^"]* best"[^>]*>',
                                                     svg).group(0)  # type: ignore[union-attr]
    assert svg.count('<line class="edge') == len(tree.nodes) - 1


def test_chart_plots_each_candidate_and_the_best_so_far(report_run: Path, html: str) -> None:
    tree = load_run(report_run).values["tree"]
    chart = html.split('<svg id="chart"')[1].split("</svg>")[0]
    ok = [n for n in tree.nodes.values() if n.ok]
    assert chart.count('class="point') == len(ok)
    assert chart.count('class="fail-mark"') == 1
    assert 'class="best-line" d="M ' in chart and "(simulated)" in chart


def test_each_node_has_details_with_diff_diagnosis_prompt_and_reply(report_run: Path,
                                                                    html: str) -> None:
    tree = load_run(report_run).values["tree"]
    for nid in tree.nodes:
        assert f'id="node-{nid}"' in html
    child = _section(html, "n0003")
    assert "diff to the parent n0002" in child
    assert '<span class="add">' in child or '<span class="del">' in child
    assert "Diagnosis: " in child and "<summary>prompt</summary>" in child
    assert "<summary>reply</summary>" in child and "Checks" in child
    repair = _section(html, "n0002")
    assert "diff to n0001, the candidate it repairs" in repair
    failed = _section(html, "n0001")
    # Its message (a static finding has no stderr; a runtime failure shows the stderr tail).
    assert tree.nodes["n0001"].status in failed
    assert "stderr (tail)" in failed or "static check" in failed
    best = _section(html, tree.best_id or "")
    assert " hidden" not in best.split(">")[0]  # the best is shown before any script runs
    assert " hidden" in _section(html, ROOT).split(">")[0]


def test_untrusted_text_is_escaped(html: str) -> None:
    assert html.count("<script") == 1  # the report's own script only
    assert "onerror=" not in html.replace("onerror=&#34;", "").replace("onerror=&quot;", "")
    assert "<img" not in html and "<b>loads</b>" not in html
    escaped = INJECTION.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    assert escaped.split('"')[0] in html  # in the reply and in the passage
    assert "Coalesced &lt;b&gt;loads&lt;/b&gt; &amp; stores" in html
    assert PASSAGE_TITLE not in html


def test_report_is_self_contained_and_only_its_own_script_and_style_may_run(html: str) -> None:
    assert not re.search(r'''(src|href)\s*=\s*["']?(https?:|//)''', html, re.I)
    assert "<link" not in html and "@import" not in html
    assert not re.search(r"url\((?!#)", html)  # url(#arrow) is the page's own marker
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert csp is not None
    policy = unescape(csp.group(1))
    assert "default-src 'none'" in policy
    for tag in ("style", "script"):
        body = re.search(rf"<{tag}>(.*?)</{tag}>", html, re.S)
        assert body is not None
        digest = base64.b64encode(hashlib.sha256(body.group(1).encode()).digest()).decode()
        assert f"{tag}-src 'sha256-{digest}'" in policy


def test_write_report_defaults_to_the_run_dir_and_finds_runs_by_id(report_run: Path,
                                                                   tmp_path: Path) -> None:
    path = write_report(report_run)
    assert path == report_run / "report.html" and path.read_text().startswith("<!DOCTYPE html>")
    settings = load_settings(runs={"dir": str(report_run.parent)})
    out = write_report(report_run.name, tmp_path / "sub" / "r.html", settings=settings)
    assert out.is_file() and "n0003" in out.read_text()


def test_cli_report_writes_the_file_and_prints_its_path(report_run: Path, tmp_path: Path
                                                        ) -> None:
    out = tmp_path / "cli.html"
    result = CliRunner().invoke(app, ["report", str(report_run), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert str(out) in result.output.replace("\n", "") and out.stat().st_size > 10_000


def test_a_directory_without_a_run_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(RunError, match="no run"):
        load_run(tmp_path, settings=load_settings(runs={"dir": str(tmp_path)}))
    (tmp_path / "run.json").write_text("{}")
    with pytest.raises(RunError, match="damaged"):
        load_run(tmp_path)


def test_untimed_target_says_so_instead_of_a_chart(report_run: Path) -> None:
    record = load_run(report_run)
    tree = record.values["tree"].model_copy(update={"timed": False})
    untimed = RunRecord(record.run_dir, record.spec, {**record.values, "tree": tree},
                        record.paused)
    view = report_view(untimed)
    assert view.chart is None and "only verifies" in view.chart_note
    assert "is not timed" in dict(view.header)["best"]


def test_layout_centres_parents_over_their_children() -> None:
    tree = SearchTree.new(timed=True)
    for nid, parent in [("a", ROOT), ("b", ROOT), ("c", "a"), ("d", "a"), ("e", "b")]:
        tree.add(Node(id=nid, parent=parent))
    pos = tree_layout(tree)
    assert pos["c"] == (0.0, 2) and pos["d"] == (1.0, 2) and pos["e"] == (2.0, 2)
    assert pos["a"] == (0.5, 1) and pos["b"] == (2.0, 1)
    assert pos[ROOT] == (1.25, 0)


def test_layout_handles_a_chain_deeper_than_the_recursion_limit() -> None:
    tree = SearchTree.new(timed=True)
    parent = ROOT
    for i in range(3000):
        tree.add(Node(id=f"n{i:05d}", parent=parent))
        parent = f"n{i:05d}"
    pos = tree_layout(tree)
    assert pos[parent] == (0.0, 3000) and len(pos) == 3001
