from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelevolve.config import Settings
from kernelevolve.errors import KnowledgeBaseError
from kernelevolve.kb.cli import app

runner = CliRunner()


def _run(*args: str, obj: object = None):
    return runner.invoke(app, list(args), obj=obj, catch_exceptions=True)


def test_add_search_list_rm(store_copy: Path, tmp_path: Path) -> None:
    note = tmp_path / "zeta.md"
    note.write_text("# Zeta-9 notes\n\nThe Zeta-9 scratchpad holds 96 KB per core for dot tiles.\n")
    result = _run(
        "add",
        str(note),
        "--tier",
        "hardware",
        "--target",
        "cuda:zeta9",
        "--topic",
        "memory-hierarchy",
        "--path",
        str(store_copy),
    )
    assert result.exit_code == 0, result.output
    assert "added" in result.output and "cuda:zeta9" in result.output
    doc_id = result.output.split("added ", 1)[1].split()[0]

    result = _run(
        "search",
        "Zeta-9 scratchpad size",
        "--target",
        "cuda:zeta9",
        "-k",
        "2",
        "--path",
        str(store_copy),
    )
    assert result.exit_code == 0, result.output
    assert doc_id in result.output

    result = _run("list", "--tier", "hardware", "--path", str(store_copy))
    assert (
        result.exit_code == 0
        and doc_id in result.output
        and "hardware/nvidia-h100" in result.output
    )

    result = _run("rm", doc_id, "--path", str(store_copy))
    assert result.exit_code == 0 and "removed" in result.output
    assert doc_id not in _run("list", "--path", str(store_copy)).output


def test_the_main_cli_settings_are_used(store_copy: Path) -> None:
    settings = Settings.model_validate({"kb": {"path": str(store_copy)}})
    result = _run("list", "--tier", "constraints", obj=settings)
    assert result.exit_code == 0, result.output
    assert "constraints/triton-masks" in result.output and "guides/" not in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["add", "{tmp}/missing.md", "--tier", "guides"], "does not exist"),
        (["add", "{note}", "--tier", "recipes"], "unknown tier 'recipes'"),
        (["add", "{note}", "--tier", "hardware", "--target", "gpu9"], "unknown target 'gpu9'"),
        (["add", "{note}", "--tier", "hardware"], "hardware documents describe a target"),
        (["search", "tiles", "--tier", "nope"], "unknown tier 'nope'"),
        (["list", "--target", "mtia-sim:v7"], "unknown target 'mtia-sim:v7'"),
        (["rm", "user/missing"], "no document with id 'user/missing'"),
    ],
)
def test_bad_input_raises_knowledge_base_error(
    store_copy: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    note = tmp_path / "note.md"
    note.write_text("# Note\n\ntext\n")
    argv = [a.format(tmp=tmp_path, note=note) for a in args] + ["--path", str(store_copy)]
    result = _run(*argv)
    assert result.exit_code != 0
    assert isinstance(result.exception, KnowledgeBaseError), result.output
    assert message in str(result.exception)


def test_damaged_store_is_reported(store_copy: Path) -> None:
    (store_copy / "chroma.sqlite3").write_bytes(b"garbage" * 1000)
    result = _run("list", "--path", str(store_copy))
    assert isinstance(result.exception, KnowledgeBaseError)
    assert "damaged" in str(result.exception) and str(store_copy) in str(result.exception)
