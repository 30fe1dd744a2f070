"""The run store on real SQLite with a real run: recording a run's state, idempotent syncs,
reading a run directory's checkpoints, and the best known kernels for warm starts."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from kernelevolve.config import StoreConfig, load_settings
from kernelevolve.store import (
    CandidateRecord,
    RunRecord,
    RunStore,
    open_store,
    read_run_dir,
    records_from_state,
    scan_runs,
    sync_from_state,
    sync_run_dir,
)
from tests.store.real_run import RealRun, real_run


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> RealRun:
    return real_run(tmp_path_factory)


def _rows(store: RunStore, run_id: str) -> tuple[RunRecord | None, list[CandidateRecord]]:
    rec = store.run(run_id)
    return (rec.model_copy(update={"updated": ""}) if rec else None), store.candidates(run_id)


def test_tables_hold_every_field_of_the_records() -> None:
    with RunStore() as store:
        conn = store._conn
        for table, model in (("runs", RunRecord), ("candidates", CandidateRecord)):
            cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            assert cols == list(model.model_fields), table


def test_sync_records_the_run_its_candidates_and_events(run: RealRun) -> None:
    with RunStore(":memory:") as store:
        rec = sync_from_state(store, run.spec, run.state, run.run_dir)
        got = store.run(run.spec.run_id)
        assert got is not None and got.model_copy(update={"updated": ""}) == \
            rec.model_copy(update={"updated": ""})
        assert got.problem == "03_leaky_relu_scale_clamp" and got.target == "mtia-sim:2i"
        assert got.problem_digest == run.spec.problem_digest
        assert got.synthesizer == run.spec.synthesizer and got.simulated and got.finished
        assert got.best_node == run.result.best_node == "n0003"
        assert got.best_speedup == run.result.best_speedup
        assert (got.rounds, got.candidates, got.verified) == (2, 3, 2)
        assert got.status == "budget spent" and got.run_dir == str(run.run_dir.resolve())
        assert "class Model" in got.reference_source

        cands = {c.node_id: c for c in store.candidates(run.spec.run_id)}
        tree = run.state["tree"]
        assert set(cands) == {"n0001", "n0002", "n0003"}  # the root is the reference, not stored
        for node_id, c in cands.items():
            node = tree.nodes[node_id]
            assert (c.parent, c.repair_of, c.status, c.code, c.speedup, c.prompt, c.reply,
                    c.result_json, c.diagnosis, c.round) == (
                node.parent, node.repair_of, node.status, node.source, node.speedup,
                node.prompt, node.reply, node.result_json, node.diagnosis, node.round)
        assert cands["n0003"].repair_of == "n0002" and cands["n0003"].origin == "debugger"
        assert cands["n0002"].status == "compile_error" and cands["n0002"].message
        assert cands["n0001"].diagnosis is not None
        assert cands["n0001"].diagnosis.kind == "memory-bound"

        events = store.events(run.spec.run_id)
        assert [e.text for e in events] == [e.text for e in run.state["events"]]
        assert events[-1].kind == "stop"


def test_sync_is_idempotent(run: RealRun, tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    with RunStore(path) as store:
        sync_from_state(store, run.spec, run.state, run.run_dir)
        first = _rows(store, run.spec.run_id)
        first_events = store.events(run.spec.run_id)
        sync_from_state(store, run.spec, run.state, run.run_dir)
        sync_from_state(store, run.spec, run.state, run.run_dir)
        assert _rows(store, run.spec.run_id) == first
        assert store.events(run.spec.run_id) == first_events
        assert len(store.runs()) == 1
    with RunStore(path) as again:  # it persisted
        assert _rows(again, run.spec.run_id) == first


def test_a_run_directory_reads_back_the_same_records(run: RealRun) -> None:
    spec, values = read_run_dir(run.run_dir)
    assert spec == run.spec and values is not None
    assert records_from_state(spec, values, run.run_dir) == \
        records_from_state(run.spec, run.state, run.run_dir)
    with RunStore() as store:
        assert sync_run_dir(store, run.run_dir) is not None
        report = scan_runs(store, run.home / "runs")
        assert report.synced == [] and report.skipped == []  # recorded and finished already
    with RunStore() as store:
        assert scan_runs(store, run.home / "runs").synced == [run.spec.run_id]


def test_store_path_comes_from_the_configuration(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELEVOLVE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KERNELEVOLVE_STORE__PATH", raising=False)
    assert load_settings().store.resolved_path() == tmp_path / "home" / "store.sqlite"
    with open_store(StoreConfig(path=Path(":memory:"))) as store:
        assert store.path == ":memory:" and store.runs() == []
    with open_store(load_settings().store) as store:
        assert Path(store.path).is_file()


def _variant(run: RealRun, run_id: str, *, speedups: dict[str, float | None],
             target: str | None = None, digest: str | None = None, tweak: str = ""
             ) -> tuple[RunRecord, list[CandidateRecord]]:
    """Another run's records: the real run's, with another id, target and speedups (and code
    changed by ``tweak`` so it counts as a different kernel)."""
    rec, cands, _ = records_from_state(run.spec, run.state, run.run_dir)
    rec = rec.model_copy(update={"run_id": run_id, "target": target or rec.target,
                                 "problem_digest": digest or rec.problem_digest})
    out = []
    for c in cands:
        code = c.code + tweak if c.code is not None else None
        out.append(c.model_copy(update={"run_id": run_id, "code": code,
                                        "speedup": speedups.get(c.node_id, c.speedup)}))
    return rec, out


def test_best_known_gives_the_fastest_verified_kernels_first(run: RealRun) -> None:
    with RunStore() as store:
        sync_from_state(store, run.spec, run.state, run.run_dir)
        digest = run.spec.problem_digest
        # speedups above the real run's own best (a simulated figure: the chip model may move)
        r = run.result.best_speedup
        assert r is not None
        # the same code as the real run's, faster: one entry per distinct kernel, the fastest
        store.record(*_variant(run, "r-same-code", speedups={"n0001": r + 1.0}))
        store.record(*_variant(run, "r-fast", speedups={"n0001": r + 2.0, "n0003": r + 0.5},
                               tweak="\n# fast\n"))
        store.record(*_variant(run, "r-untimed", speedups={"n0001": None, "n0003": None},
                               tweak="\n# untimed\n"))
        store.record(*_variant(run, "r-other-target", target="cuda",
                               speedups={"n0001": r + 8.0}, tweak="\n# cuda\n"))
        store.record(*_variant(run, "r-other-problem", digest="0" * 16,
                               speedups={"n0001": r + 7.0}, tweak="\n# other\n"))

        best = store.best_known(problem_digest=digest, target="mtia-sim:2i", limit=10)
        assert [(b.run_id, b.node_id) for b in best] == [
            ("r-fast", "n0001"), ("r-same-code", "n0001"), ("r-fast", "n0003"),
            (run.spec.run_id, "n0003"), ("r-untimed", "n0003"), ("r-untimed", "n0001")]
        assert [b.speedup for b in best[:4]] == [r + 2.0, r + 1.0, r + 0.5, r]
        assert all(b.code and "class ModelNew" in b.code for b in best)
        assert all(b.simulated and b.target == "mtia-sim:2i" for b in best)
        assert "n0002" not in {b.node_id for b in best}  # failed candidates never come back

        top = store.best_known(problem_digest=digest, target="mtia-sim:2i")
        assert [b.speedup for b in top] == [r + 2.0, r + 1.0, r + 0.5]  # limit 3
        op_class = run.state["task"].operator_class
        assert op_class
        by_class = store.best_known(operator_class=op_class, limit=1)
        assert by_class[0].speedup == r + 8.0  # any target, any problem of the class
        assert store.best_known(problem_digest=digest, target="cuda", limit=5)[0].run_id == \
            "r-other-target"
        assert store.best_known(target="no-such-target") == []


def test_a_run_can_be_forgotten(run: RealRun) -> None:
    with RunStore() as store:
        sync_from_state(store, run.spec, run.state, run.run_dir)
        assert store.delete_run(run.spec.run_id)
        assert store.run(run.spec.run_id) is None and store.candidates(run.spec.run_id) == []
        assert store.events(run.spec.run_id) == []
        assert not store.delete_run(run.spec.run_id)


def test_a_store_is_sqlite_a_user_can_query(run: RealRun, tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    with RunStore(path) as store:
        sync_from_state(store, run.spec, run.state, run.run_dir)
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT node_id, status FROM candidates ORDER BY node_id").fetchall()
    conn.close()
    assert rows == [("n0001", "ok"), ("n0002", "compile_error"), ("n0003", "ok")]
