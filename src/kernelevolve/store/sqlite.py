"""The run store on SQLite (stdlib ``sqlite3``): runs, candidates and events, upserted, queried
for listings, inspection and warm starts, exported to and imported from one JSON file.

The schema carries its version in ``schema_version``; a store written by a newer kernelevolve,
or a file that is not a run store, raises ``StoreError`` with the fix instead of being reset.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kernelevolve.config import StoreConfig
from kernelevolve.errors import StoreError
from kernelevolve.store.models import (
    EXPORT_FORMAT,
    CandidateRecord,
    EventRecord,
    ExportFile,
    KnownCandidate,
    RunExport,
    RunRecord,
)

SCHEMA_VERSION = 3
MEMORY = ":memory:"

# Version 2 keeps every synthesizer call whole (the training-data export, rl/): the system
# message, the token counts apart, and the replies that were asked again. Version 3 adds whether
# the counts are estimates and the design direction a node was asked to take. An older store
# gains the columns it lacks when it is opened.
_ADDED_COLUMNS = ("system TEXT", "prompt_tokens INTEGER NOT NULL DEFAULT 0",
                  "completion_tokens INTEGER NOT NULL DEFAULT 0", "reasks TEXT",
                  "tokens_estimated INTEGER NOT NULL DEFAULT 0",
                  "direction TEXT NOT NULL DEFAULT ''")

_SCHEMA = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    problem TEXT NOT NULL,
    problem_path TEXT NOT NULL,
    problem_digest TEXT NOT NULL,
    operator_class TEXT,
    target TEXT NOT NULL,
    synthesizer TEXT NOT NULL,
    created TEXT NOT NULL,
    goal REAL,
    timed INTEGER NOT NULL,
    simulated INTEGER NOT NULL,
    finished INTEGER NOT NULL,
    stop_reason TEXT,
    best_node TEXT,
    best_speedup REAL,
    best_latency_ms REAL,
    rounds INTEGER NOT NULL,
    candidates INTEGER NOT NULL,
    verified INTEGER NOT NULL,
    llm_calls INTEGER NOT NULL,
    tokens INTEGER NOT NULL,
    wall_s REAL NOT NULL,
    run_dir TEXT,
    reference_source TEXT NOT NULL,
    updated TEXT NOT NULL
);
CREATE INDEX runs_known ON runs (problem_digest, operator_class, target);
CREATE TABLE candidates (
    run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    node_id TEXT NOT NULL,
    parent TEXT,
    repair_of TEXT,
    operator TEXT NOT NULL,
    intent TEXT NOT NULL,
    origin TEXT NOT NULL,
    status TEXT NOT NULL,
    message TEXT NOT NULL,
    stderr_tail TEXT NOT NULL,
    speedup REAL,
    latency_ms REAL,
    diagnosis TEXT,
    code TEXT,
    params TEXT,
    prompt TEXT,
    reply TEXT,
    model TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    result_json TEXT,
    system TEXT,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    reasks TEXT,
    tokens_estimated INTEGER NOT NULL DEFAULT 0,
    direction TEXT NOT NULL DEFAULT '',
    round INTEGER NOT NULL,
    epoch INTEGER NOT NULL,
    depth INTEGER NOT NULL,
    at_s REAL NOT NULL,
    PRIMARY KEY (run_id, node_id)
);
CREATE INDEX candidates_verified ON candidates (status, speedup);
CREATE TABLE events (
    run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    round INTEGER NOT NULL,
    node_id TEXT,
    text TEXT NOT NULL,
    at_s REAL NOT NULL,
    PRIMARY KEY (run_id, seq)
);
"""

_RUN_COLUMNS = tuple(RunRecord.model_fields)
_CANDIDATE_COLUMNS = tuple(CandidateRecord.model_fields)
_JSON_COLUMNS = {"diagnosis", "params", "reasks"}


def _upsert_sql(table: str, columns: Sequence[str], key: Sequence[str]) -> str:
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in key)
    return (f"INSERT INTO {table} ({', '.join(columns)}) "
            f"VALUES ({', '.join('?' for _ in columns)}) "
            f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {updates}")


def _now() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S %Z")


class RunStore:
    """Every run and candidate kernelevolve made, in one SQLite file (or ``:memory:``)."""

    def __init__(self, path: str | Path = MEMORY) -> None:
        self.path = str(path)
        if self.path != MEMORY:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = sqlite3.connect(self.path, timeout=30.0)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the run store {self.path}: {exc}; check the path "
                             "(store.path / KERNELEVOLVE_STORE__PATH) and its permissions"
                             ) from exc
        self._conn.row_factory = sqlite3.Row
        try:
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._prepare()
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise self._damaged(exc) from exc
        except StoreError:
            self._conn.close()
            raise

    def _damaged(self, exc: Exception) -> StoreError:
        return StoreError(
            f"the run store {self.path} is damaged or not a run store ({exc}). Move it aside "
            f"(mv {self.path} {self.path}.broken): a new one is made on the next use, and "
            "`kernelevolve runs` fills it again from the run directories")

    def _prepare(self) -> None:
        tables = {r[0] for r in self._conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            with self._conn:
                self._conn.executescript(_SCHEMA)
                self._conn.execute("INSERT INTO schema_version (version) VALUES (?)",
                                   (SCHEMA_VERSION,))
            return
        if "schema_version" not in tables:
            raise StoreError(f"{self.path} is an SQLite file but not a kernelevolve run store "
                             "(no schema_version table); point store.path "
                             "(KERNELEVOLVE_STORE__PATH) at another file")
        row = self._conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
        version = row[0] if row else None
        if version is None or version < 1:
            raise self._damaged(ValueError("the schema_version table is empty"))
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"the run store {self.path} has schema version {version}, written by a newer "
                f"kernelevolve (this one reads up to {SCHEMA_VERSION}); upgrade kernelevolve, "
                "or point store.path (KERNELEVOLVE_STORE__PATH) at another file")
        if version < SCHEMA_VERSION:
            with self._conn:
                have = {r[1] for r in self._conn.execute("PRAGMA table_info(candidates)")}
                for column in _ADDED_COLUMNS:
                    if column.split()[0] not in have:
                        self._conn.execute(f"ALTER TABLE candidates ADD COLUMN {column}")
                self._conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))

    # -- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[sqlite3.Row]:
        try:
            return self._conn.execute(sql, args).fetchall()
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from exc

    # -- writing -------------------------------------------------------------------------------

    def record(self, run: RunRecord, candidates: Iterable[CandidateRecord] = (),
               events: Sequence[EventRecord] | None = None) -> None:
        """Upsert a run and its candidates in one transaction (calling it again with the same
        records changes nothing). ``events``, when given, replace the run's stored events."""
        run = run.model_copy(update={"updated": _now()})
        cand_rows = [self._candidate_row(c) for c in candidates]
        try:
            with self._conn:
                self._conn.execute(_upsert_sql("runs", _RUN_COLUMNS, ["run_id"]),
                                   [getattr(run, c) for c in _RUN_COLUMNS])
                self._conn.executemany(
                    _upsert_sql("candidates", _CANDIDATE_COLUMNS, ["run_id", "node_id"]),
                    cand_rows)
                if events is not None:
                    self._conn.execute("DELETE FROM events WHERE run_id = ?", (run.run_id,))
                    self._conn.executemany(
                        "INSERT INTO events (run_id, seq, kind, round, node_id, text, at_s) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [(run.run_id, i, e.kind, e.round, e.node_id, e.text, e.at_s)
                         for i, e in enumerate(events)])
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from exc

    @staticmethod
    def _candidate_row(c: CandidateRecord) -> list[Any]:
        row: list[Any] = []
        for col in _CANDIDATE_COLUMNS:
            value = getattr(c, col)
            if col == "diagnosis":
                value = value.model_dump_json() if value is not None else None
            elif col == "params":
                value = json.dumps(value) if value is not None else None
            elif col == "reasks":
                value = json.dumps([r.model_dump() for r in value]) if value else None
            row.append(value)
        return row

    def delete_run(self, run_id: str) -> bool:
        """Forget a run (its candidates and events too); True if it was there."""
        try:
            with self._conn:
                cur = self._conn.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from exc
        return cur.rowcount > 0

    # -- reading -------------------------------------------------------------------------------

    def runs(self, *, problem_digest: str | None = None, target: str | None = None
             ) -> list[RunRecord]:
        """Every recorded run, newest first (optionally of one problem and/or target)."""
        where, args = _filters(problem_digest=problem_digest, target=target)
        rows = self._read(f"SELECT * FROM runs {where} ORDER BY created DESC, run_id DESC", args)
        return [_run(r) for r in rows]

    def run(self, run_id: str) -> RunRecord | None:
        rows = self._read("SELECT * FROM runs WHERE run_id = ?", (run_id,))
        return _run(rows[0]) if rows else None

    def find_run(self, ref: str) -> RunRecord | None:
        """A run by its id or by a prefix that names exactly one run."""
        run = self.run(ref)
        if run is not None:
            return run
        rows = self._read("SELECT * FROM runs WHERE substr(run_id, 1, ?) = ? LIMIT 2",
                          (len(ref), ref))
        return _run(rows[0]) if len(rows) == 1 else None

    def candidates(self, run_id: str) -> list[CandidateRecord]:
        """A run's candidates in the order they were made."""
        rows = self._read("SELECT * FROM candidates WHERE run_id = ? ORDER BY node_id", (run_id,))
        return [_candidate(r) for r in rows]

    def candidate(self, run_id: str, node_id: str) -> CandidateRecord | None:
        rows = self._read("SELECT * FROM candidates WHERE run_id = ? AND node_id = ?",
                          (run_id, node_id))
        return _candidate(rows[0]) if rows else None

    def events(self, run_id: str) -> list[EventRecord]:
        rows = self._read("SELECT kind, round, node_id, text, at_s FROM events WHERE run_id = ? "
                          "ORDER BY seq", (run_id,))
        return [EventRecord(**dict(r)) for r in rows]

    def best_known(self, *, problem_digest: str | None = None, operator_class: str | None = None,
                   target: str | None = None, limit: int = 3) -> list[KnownCandidate]:
        """The fastest verified candidates of earlier runs matching every filter given, fastest
        first (untimed ones last), one per distinct source: warm starts for a new run."""
        where, args = _filters(prefix="r.", problem_digest=problem_digest,
                               operator_class=operator_class, target=target)
        where = f"{where} AND" if where else "WHERE"
        rows = self._read(
            "SELECT c.run_id, c.node_id, c.code, c.speedup, c.latency_ms, c.params, r.target, "
            "r.problem, r.problem_digest, r.operator_class, r.simulated, r.reference_source "
            "FROM candidates c "
            f"JOIN runs r ON r.run_id = c.run_id {where} c.status = 'ok' AND c.code IS NOT NULL "
            "ORDER BY c.speedup IS NULL, c.speedup DESC, c.latency_ms IS NULL, c.latency_ms, "
            "r.created DESC, c.run_id, c.node_id", args)
        out: list[KnownCandidate] = []
        seen: set[str] = set()
        for r in rows:
            if r["code"] in seen:
                continue
            seen.add(r["code"])
            data = dict(r)
            data["params"] = json.loads(data["params"]) if data["params"] else None
            data["simulated"] = bool(data["simulated"])
            out.append(KnownCandidate(**data))
            if len(out) >= limit:
                break
        return out

    # -- exchange ------------------------------------------------------------------------------

    def export_runs(self, path: str | Path, run_ids: Sequence[str] | None = None) -> int:
        """Write runs (all of them, or ``run_ids``) with their candidates and events to one JSON
        file; return how many. ``import_runs`` reads it back into any store."""
        if run_ids is None:
            runs = self.runs()
        else:
            runs = []
            for rid in run_ids:
                run = self.run(rid)
                if run is None:
                    raise StoreError(f"no run '{rid}' in the run store {self.path}; list them "
                                     "with `kernelevolve runs`")
                runs.append(run)
        doc = ExportFile(schema_version=SCHEMA_VERSION, exported=_now(), runs=[
            RunExport(run=r, candidates=self.candidates(r.run_id), events=self.events(r.run_id))
            for r in runs])
        Path(path).write_text(doc.model_dump_json(indent=1))
        return len(runs)

    def import_runs(self, path: str | Path) -> list[str]:
        """Read a file written by ``export_runs`` and upsert its runs; return their ids."""
        p = Path(path)
        try:
            raw = json.loads(p.read_text())
        except OSError as exc:
            raise StoreError(f"cannot read the export file {p}: {exc}") from exc
        except ValueError as exc:
            raise StoreError(f"{p} is not a kernelevolve export (not JSON: {exc}); export it "
                             "again with `kernelevolve export`") from exc
        if not isinstance(raw, dict) or raw.get("format") != EXPORT_FORMAT:
            raise StoreError(f"{p} is not a kernelevolve export (no \"format\": "
                             f"\"{EXPORT_FORMAT}\"); export it with `kernelevolve export`")
        version = raw.get("schema_version")
        if isinstance(version, int) and version > SCHEMA_VERSION:
            raise StoreError(f"{p} was exported by a newer kernelevolve (schema {version}, this "
                             f"one reads up to {SCHEMA_VERSION}); upgrade kernelevolve")
        try:
            doc = ExportFile.model_validate(raw)
        except ValidationError as exc:
            raise StoreError(f"{p} is a damaged kernelevolve export: {exc}; export it again "
                             "with `kernelevolve export`") from exc
        for item in doc.runs:
            self.record(item.run, item.candidates, item.events)
        return [item.run.run_id for item in doc.runs]


def _filters(prefix: str = "", **values: str | None) -> tuple[str, list[Any]]:
    given = {k: v for k, v in values.items() if v is not None}
    if not given:
        return "", []
    return "WHERE " + " AND ".join(f"{prefix}{k} = ?" for k in given), list(given.values())


def _run(row: sqlite3.Row) -> RunRecord:
    data = dict(row)
    for flag in ("timed", "simulated", "finished"):
        data[flag] = bool(data[flag])
    return RunRecord(**data)


def _candidate(row: sqlite3.Row) -> CandidateRecord:
    data = dict(row)
    for col in _JSON_COLUMNS:
        data[col] = json.loads(data[col]) if data[col] is not None else None
    data["reasks"] = data["reasks"] or []
    return CandidateRecord.model_validate(data)


def open_store(config: StoreConfig | None = None) -> RunStore:
    """The configured run store (``store.path``; default ``<data dir>/store.sqlite``)."""
    return RunStore((config or StoreConfig()).resolved_path())
