"""The run directory's format, readable without a Session (no synthesizer, no workers, no torch):
``run.json`` (``RunSpec``: what was asked), ``checkpoints.sqlite`` (LangGraph's checkpointer,
read with ``read_run``), ``result.json`` (``TuneResult``) and ``final.json`` (the best kernel
re-timed at the end). ``kernelevolve runs``, ``trace``, ``show`` and the report read runs
through this module, so they start without the evaluation stack.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from kernelevolve import __version__
from kernelevolve.batchapi.exchange import RepliesWanted
from kernelevolve.config import Settings, load_settings
from kernelevolve.errors import RunError
from kernelevolve.graph import search, state
from kernelevolve.graph.state import Usage
from kernelevolve.tools.harness.result import EvalResult, reference_advice

if TYPE_CHECKING:
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

# Types the checkpointer may rebuild from the database (nothing else is unpickled).
_STATE_TYPES = (
    state.Task, state.Knowledge, state.ErrorInfo, state.Step, state.Expansion, state.Usage,
    state.Draft, state.Event, state.EventKind, state.PromptState, state.Slot, state.Outcome,
    search.Node, search.SearchTree, search.DiagnosisInfo, search.Call, state.Direction,
)


class RunSpec(BaseModel):
    """``run.json``: what the user asked for, enough to rebuild the run in another process."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    problem_path: str
    problem_digest: str
    target: str
    synthesizer: str
    synthesizer_reason: str = Field("", description="why this synthesizer (the run says so)")
    interactive: bool = False
    kernel_out: str | None = Field(
        None, description="the file kept equal to the run's best kernel (tune's --out, default "
                          "./<problem>_tuned.py, made absolute); resume keeps it current too")
    settings: dict[str, Any]
    created: str
    version: str = __version__


class TuneResult(BaseModel):
    """What a run produced: the best verified kernel with its evidence, and what it cost."""

    run_id: str
    run_dir: str
    problem: str
    target: str
    synthesizer: str
    finished: bool = Field(description="the run ended (False: paused or interrupted)")
    stop_reason: str | None = None
    best_node: str | None = None
    best_speedup: float | None = None
    best_latency_ms: float | None = None
    simulated: bool = False
    kernel_path: str | None = Field(None, description="the best kernel's file (best.py)")
    kernel_out: str | None = Field(
        None, description="the file kept equal to the best kernel (RunSpec.kernel_out), "
                          "written whenever the best changed; nothing is written there "
                          "before the run has a verified kernel")
    best_result: EvalResult | None = None
    rounds: int = 0
    candidates: int = 0
    verified: int = 0
    usage: Usage = Field(default_factory=Usage)
    paused: dict[str, Any] | None = Field(None, description="interactive: the pause's summary")
    awaiting: RepliesWanted | None = Field(
        None, description="batch mode: the run stopped for replies to this requests file")

    @property
    def ok(self) -> bool:
        return self.best_node is not None

    @property
    def advice(self) -> str | None:
        """Which program to use where the best kernel loses to a reference (see
        ``reference_advice``)."""
        timing = self.best_result.timing if self.best_result else None
        if self.best_node is None or timing is None:
            return None
        advice = reference_advice(self.best_node, timing.speedup_vs_eager,
                                  timing.speedup_vs_compiled)
        if advice and self.simulated:
            advice += " on the simulated chip (the chip model's estimate, not a measurement)"
        return advice


FINAL = "final.json"  # the best kernel re-timed beside fresh references at the run's end


def default_kernel_out(problem_name: str) -> Path:
    """Where ``tune`` (and ``resume`` of a run that named no file) keeps the best kernel:
    ``./<problem>_tuned.py``."""
    return Path(f"{problem_name}_tuned.py")


def write_kernel(path: Path, source: str) -> None:
    """Replace ``path`` with ``source`` whole (a kill mid-write leaves the old file, never half
    of each); unchanged content is not rewritten."""
    try:
        if path.read_text() == source:
            return
    except OSError:
        pass
    # a plain file (the user's umask, not mkstemp's 0600) beside it, then one rename
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(3)}.tmp")
    try:
        tmp.write_text(source)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def checkpoint_serde() -> JsonPlusSerializer:
    """The checkpointer's serializer: rebuilds only the run state's own types."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    return JsonPlusSerializer(allowed_msgpack_modules=list(_STATE_TYPES))


class StoredRun(BaseModel):
    """A run directory as it stands on disk, read without a Session (no synthesizer, no
    workers): ``run.json``, the last checkpointed state (None before the first step), and
    whether it is paused at an interactive interrupt."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    run_dir: Path
    spec: RunSpec
    values: dict[str, Any] | None = None
    paused: bool = False


def read_run(run: str | Path, settings: Settings | None = None) -> StoredRun:
    """Read a run (a run directory, or a run id under the configured runs directory)."""
    path = find_run(run, settings)
    try:
        spec = RunSpec.model_validate_json((path / "run.json").read_text())
    except (OSError, ValueError) as exc:
        raise RunError(f"{path / 'run.json'} is missing or damaged: {exc}") from exc
    db = path / "checkpoints.sqlite"
    if not db.is_file():
        return StoredRun(run_dir=path, spec=spec)
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        snap = SqliteSaver(conn, serde=checkpoint_serde()).get_tuple(
            {"configurable": {"thread_id": spec.run_id, "checkpoint_ns": ""}})
    except (sqlite3.DatabaseError, ValueError) as exc:
        raise RunError(f"the checkpoints of run {spec.run_id} ({db}) cannot be read: {exc}; "
                       "the run directory is damaged") from exc
    finally:
        conn.close()
    if snap is None:
        return StoredRun(run_dir=path, spec=spec)
    values = dict(snap.checkpoint.get("channel_values", {}))
    if "tree" not in values or "task" not in values:
        return StoredRun(run_dir=path, spec=spec)
    # LangGraph records a pending interrupt as a write to the "__interrupt__" channel.
    paused = any(w[1] == "__interrupt__" for w in (snap.pending_writes or []))
    return StoredRun(run_dir=path, spec=spec, values=values, paused=paused)


def find_run(run: str | Path, settings: Settings | None = None) -> Path:
    """A run directory from a path or a run id under the configured runs directory."""
    path = Path(run)
    if (path / "run.json").is_file():
        return path
    runs = (settings or load_settings()).runs.resolved_dir()
    if (runs / str(run) / "run.json").is_file():
        return runs / str(run)
    raise RunError(f"no run '{run}': neither a run directory nor a run id under {runs} "
                   "(list them with `kernelevolve runs`, or pass the run directory)")
