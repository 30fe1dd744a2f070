"""The notebooks under notebooks/ run top to bottom in a fresh kernel (nbclient), each in its own
empty KERNELEVOLVE_HOME, and are stored with their outputs cleared."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
NAMES = ["01_quickstart", "02_trace_inspection", "03_interactive_session"]


def _read(name: str) -> nbformat.NotebookNode:
    return nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)


def test_every_notebook_is_listed() -> None:
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_stored_without_outputs(name: str) -> None:
    nb = _read(name)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:80]


def _text(nb: nbformat.NotebookNode) -> str:
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text", "") or out.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELEVOLVE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KERNELEVOLVE_CONFIG", raising=False)
    nb = _read(name)
    # Cell errors raise CellExecutionError with the cell and its traceback.
    NotebookClient(nb, timeout=240, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    text = _text(nb)
    runs = list((tmp_path / "home" / "runs").glob("*/run.json"))
    assert len(runs) == 1, runs
    if name == "01_quickstart":
        assert "class ModelNew" in text and "(simulated)" in text
    elif name == "02_trace_inspection":
        assert (runs[0].parent / "report.html").is_file() and "<- best" in text
        images = [o for c in nb.cells for o in c.get("outputs", [])
                  if "image/png" in o.get("data", {})]
        assert images, "matplotlib drew no figure"
    else:
        assert "stopped by the user" in text and "memory-bound: try larger blocks" in text
