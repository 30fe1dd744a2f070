"""Export and import of runs (one JSON file that round-trips), and stores or files that cannot
be read: each raises StoreError naming the file and the fix, and nothing is reset."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from kernelevolve.errors import StoreError
from kernelevolve.store import SCHEMA_VERSION, RunStore, sync_from_state
from tests.store.real_run import RealRun, real_run


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> RealRun:
    return real_run(tmp_path_factory)


def _dump(store: RunStore) -> list[dict]:
    return [{"run": r.model_dump(exclude={"updated"}),
             "candidates": [c.model_dump() for c in store.candidates(r.run_id)],
             "events": [e.model_dump() for e in store.events(r.run_id)]} for r in store.runs()]


def test_export_import_round_trip(run: RealRun, tmp_path: Path) -> None:
    out = tmp_path / "runs.json"
    with RunStore(tmp_path / "a.sqlite") as a:
        sync_from_state(a, run.spec, run.state, run.run_dir)
        assert a.export_runs(out) == 1
        original = _dump(a)
    doc = json.loads(out.read_text())
    assert doc["format"] == "kernelevolve-runs" and doc["schema_version"] == SCHEMA_VERSION
    assert [c["node_id"] for c in doc["runs"][0]["candidates"]] == ["n0001", "n0002", "n0003"]

    with RunStore(tmp_path / "b.sqlite") as b:
        assert b.import_runs(out) == [run.spec.run_id]
        assert _dump(b) == original
        assert b.import_runs(out) == [run.spec.run_id]  # importing twice changes nothing
        assert _dump(b) == original
        b.export_runs(tmp_path / "again.json")
    again = json.loads((tmp_path / "again.json").read_text())
    for d in (doc, again):
        d.pop("exported")
        for r in d["runs"]:
            r["run"].pop("updated")
    assert again == doc


def test_export_of_chosen_runs_and_an_unknown_one(run: RealRun, tmp_path: Path) -> None:
    with RunStore() as store:
        sync_from_state(store, run.spec, run.state, run.run_dir)
        assert store.export_runs(tmp_path / "one.json", [run.spec.run_id]) == 1
        with pytest.raises(StoreError, match="no run 'nope'"):
            store.export_runs(tmp_path / "none.json", ["nope"])


@pytest.mark.parametrize(("content", "match"), [
    ("{not json", "not JSON"),
    ('{"runs": []}', "no \"format\""),
    ('{"format": "kernelevolve-runs", "schema_version": 99, "exported": "", "runs": []}',
     "newer kernelevolve"),
    ('{"format": "kernelevolve-runs", "schema_version": 1, "exported": "", '
     '"runs": [{"run": {"run_id": 3}}]}', "damaged kernelevolve export"),
])
def test_import_of_a_bad_file_names_it(tmp_path: Path, content: str, match: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with RunStore() as store, pytest.raises(StoreError, match=match) as info:
        store.import_runs(path)
    assert str(path) in str(info.value)


def test_a_damaged_store_is_reported_with_the_fix_not_reset(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    garbage = b"this is not a database at all\n" * 200
    path.write_bytes(garbage)
    with pytest.raises(StoreError) as info:
        RunStore(path)
    assert str(path) in str(info.value) and "mv " in str(info.value)
    assert path.read_bytes() == garbage


def test_a_store_of_a_newer_schema_is_refused(run: RealRun, tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    with RunStore(path) as store:
        sync_from_state(store, run.spec, run.state, run.run_dir)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    conn.close()
    with pytest.raises(StoreError, match="newer kernelevolve") as info:
        RunStore(path)
    assert str(path) in str(info.value) and "KERNELEVOLVE_STORE__PATH" in str(info.value)


def test_another_sqlite_database_is_not_taken_for_a_store(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("CREATE TABLE t (x INTEGER)")
    conn.close()
    with pytest.raises(StoreError, match="not a kernelevolve run store"):
        RunStore(path)
