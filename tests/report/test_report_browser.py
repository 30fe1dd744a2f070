"""The report in a real headless browser (Chromium): its script runs without error under the
page's Content-Security-Policy, the tree has one element per node, a link to a node opens that
node's details, injected markup stays text, and the page paints (a screenshot of the right size,
with the tree's status colours in it)."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from kernelevolve.report import load_run, write_report
from kernelevolve.report.html import BEST_COLOUR, STATUS_COLOURS

INSTALL = ("as root: apt-get update && apt-get install -y chromium   (Debian; or put chromium, "
           "chromium-browser or google-chrome on PATH)")
WIDTH, HEIGHT = 1400, 1800


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail(f"the browser tests need Chromium, which is not installed: {INSTALL}")


def _browse(url: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--no-first-run", "--hide-scrollbars", f"--user-data-dir={tmp_path / 'profile'}",
           "--enable-logging=stderr", "--v=0", f"--window-size={WIDTH},{HEIGHT}", *args, url]
    out = subprocess.run(cmd, capture_output=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr.decode(errors="replace")[-3000:]
    return out


def _console_errors(stderr: bytes) -> list[str]:
    lines = stderr.decode(errors="replace").splitlines()
    return [ln for ln in lines if ":CONSOLE" in ln]


@pytest.fixture(scope="module")
def report_file(report_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_report(report_run, tmp_path_factory.mktemp("browser") / "report.html")


def test_script_runs_and_a_node_link_opens_its_details(report_run: Path, report_file: Path,
                                                       tmp_path: Path) -> None:
    tree = load_run(report_run).values["tree"]
    out = _browse(report_file.as_uri() + "#n0001", tmp_path, "--dump-dom")
    dom = out.stdout.decode()
    body = re.search(r"<body([^>]*)>", dom)
    assert body is not None
    attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', body.group(1)))
    assert "data-errors" not in attrs, attrs["data-errors"]
    assert attrs.get("data-ready") == str(len(tree.nodes))  # the script ran to its end
    assert attrs.get("data-selected") == "n0001"
    assert "data-pwned" not in attrs  # the injected <script> and <img onerror> stayed text
    assert _console_errors(out.stderr) == []  # no CSP violation, no uncaught error
    nodes = re.findall(r'<g class="node[^"]*" id="tree-([^"]+)"', dom)
    assert sorted(nodes) == sorted(tree.nodes)
    panels = re.findall(r'<section class="detail node-detail" id="node-([^"]+)"([^>]*)>', dom)
    assert len(panels) == len(tree.nodes)
    assert [nid for nid, rest in panels if "hidden" not in rest] == ["n0001"]
    assert re.search(r'<g class="node[^"]* selected"[^>]*id="tree-n0001"', dom)


def test_screenshot_shows_the_painted_report(report_run: Path, report_file: Path,
                                             tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    _browse(report_file.as_uri(), tmp_path, f"--screenshot={shot}")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    image = Image.open(io.BytesIO(data)).convert("RGB")
    assert image.size == (WIDTH, HEIGHT)
    colours = image.getcolors(WIDTH * HEIGHT)
    assert colours is not None and len(colours) > 500  # text, code, SVG: not a blank page
    counts = {rgb: n for n, rgb in colours}
    white = counts.get((255, 255, 255), 0)
    assert white < 0.95 * WIDTH * HEIGHT
    tree = load_run(report_run).values["tree"]
    statuses = {n.status for n in tree.nodes.values()}
    for colour in [BEST_COLOUR, *(STATUS_COLOURS[s] for s in statuses)]:
        rgb = tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
        assert counts.get(rgb, 0) > 200, f"{colour} is not on the page"  # node discs, pills
