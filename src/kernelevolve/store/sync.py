"""From runs to the store: a run's state (as a Session holds it, or as its run directory's
checkpoints hold it) turned into records and upserted; run directories scanned; a run named by
the user (id, id prefix or directory) found.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kernelevolve.errors import RunError, StoreError
from kernelevolve.store.models import CandidateRecord, EventRecord, RunRecord
from kernelevolve.store.sqlite import RunStore

if TYPE_CHECKING:
    from kernelevolve.graph.rundir import RunSpec
    from kernelevolve.graph.state import RunState


def records_from_state(run_spec: RunSpec, state: RunState, run_dir: str | Path | None = None
                       ) -> tuple[RunRecord, list[CandidateRecord], list[EventRecord]]:
    """The store's records of a run: its spec (run.json) and its graph state."""
    task = state["task"]
    tree = state["tree"]
    usage = state.get("usage")
    best = tree.best
    stop = state.get("stop_reason")
    run = RunRecord(
        run_id=run_spec.run_id, problem=task.problem_name or Path(run_spec.problem_path).stem,
        problem_path=run_spec.problem_path, problem_digest=run_spec.problem_digest,
        operator_class=task.operator_class, target=run_spec.target,
        synthesizer=run_spec.synthesizer, created=run_spec.created, goal=task.goal,
        timed=task.timed, simulated=task.simulated, finished=stop is not None,
        stop_reason=stop, best_node=best.id if best else None,
        best_speedup=best.speedup if best else None,
        best_latency_ms=best.latency_ms if best else None, rounds=state.get("round", 0),
        candidates=len(tree.nodes) - 1, verified=len(tree.verified()),
        llm_calls=usage.llm_calls if usage else 0, tokens=usage.tokens if usage else 0,
        wall_s=usage.wall_s if usage else 0.0,
        run_dir=str(Path(run_dir).resolve()) if run_dir is not None else None,
        reference_source=task.reference_source)
    candidates = [
        CandidateRecord(
            run_id=run_spec.run_id, node_id=n.id, parent=n.parent, repair_of=n.repair_of,
            operator=n.operator, intent=n.intent, origin=n.origin, status=n.status,
            message=n.message, stderr_tail=n.stderr_tail, speedup=n.speedup,
            latency_ms=n.latency_ms, diagnosis=n.diagnosis, code=n.source, params=n.params,
            prompt=n.prompt, reply=n.reply, model=n.model, tokens=n.tokens,
            result_json=n.result_json, round=n.round, epoch=n.epoch, depth=n.depth, at_s=n.at_s,
            system=n.system, prompt_tokens=n.prompt_tokens,
            completion_tokens=n.completion_tokens, reasks=n.reasks,
            tokens_estimated=n.tokens_estimated, direction=n.direction)
        for n in tree.nodes.values() if n.parent is not None]
    events = [EventRecord(kind=str(e.kind.value), round=e.round, node_id=e.node_id, text=e.text,
                          at_s=e.at_s) for e in state.get("events", [])]
    return run, candidates, events


def sync_from_state(store: RunStore, run_spec: RunSpec, state: RunState,
                    run_dir: str | Path | None = None) -> RunRecord:
    """Record a run as it stands (call it after every ``Session.run()``): the run, every
    candidate and the event list, upserted, so calling it again changes nothing."""
    run, candidates, events = records_from_state(run_spec, state, run_dir)
    store.record(run, candidates, events)
    return run


def read_run_dir(run_dir: str | Path) -> tuple[RunSpec, RunState | None]:
    """A run directory's ``run.json`` and its last checkpointed state (None before the first
    step), read without opening a Session (no synthesizer, no workers)."""
    from kernelevolve.graph.rundir import read_run

    stored = read_run(Path(run_dir))
    return stored.spec, stored.values  # type: ignore[return-value]


def sync_run_dir(store: RunStore, run_dir: str | Path) -> RunRecord | None:
    """Record the run in ``run_dir`` from its checkpoints (None: it has no state yet)."""
    spec, values = read_run_dir(run_dir)
    if values is None:
        return None
    return sync_from_state(store, spec, values, run_dir)


@dataclass
class ScanReport:
    """What ``scan_runs`` did: runs recorded anew or refreshed, and directories it skipped."""

    synced: list[str] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)


def scan_runs(store: RunStore, runs_dir: str | Path) -> ScanReport:
    """Record the runs under ``runs_dir`` that the store lacks or holds unfinished (runs made
    before the store existed, or still going); a damaged run directory is skipped, with why."""
    report = ScanReport()
    root = Path(runs_dir)
    if not root.is_dir():
        return report
    done = {r.run_dir for r in store.runs() if r.finished and r.run_dir}
    for spec_path in sorted(root.glob("*/run.json")):
        if str(spec_path.parent.resolve()) in done:
            continue
        try:
            run = sync_run_dir(store, spec_path.parent)
        except RunError as exc:
            report.skipped.append((spec_path.parent, str(exc)))
            continue
        if run is None:
            report.skipped.append((spec_path.parent, "no checkpoint yet"))
        else:
            report.synced.append(run.run_id)
    return report


def locate_run(store: RunStore, ref: str | Path, runs_dir: str | Path | None = None
               ) -> RunRecord:
    """The run a user names: a run directory or a run id (or an id prefix naming one run) under
    ``runs_dir`` is read from its checkpoints and recorded first, so the store is current;
    otherwise the store's record (e.g. of an imported run)."""
    candidates = [Path(ref)]
    if runs_dir is not None:
        candidates.append(Path(runs_dir) / str(ref))
    for path in candidates:
        if (path / "run.json").is_file():
            run = sync_run_dir(store, path)
            if run is not None:
                return run
            spec, _ = read_run_dir(path)
            stored = store.run(spec.run_id)
            if stored is not None:
                return stored
            raise RunError(f"run {spec.run_id} ({path}) has no checkpoint yet: it never ran "
                           "a step")
    stored = store.find_run(str(ref))
    if stored is None and runs_dir is not None:
        scan_runs(store, runs_dir)  # a prefix of a run the store has not seen yet
        stored = store.find_run(str(ref))
    if stored is not None:
        if stored.run_dir and not stored.finished and (Path(stored.run_dir) / "run.json"
                                                        ).is_file():
            return sync_run_dir(store, stored.run_dir) or stored
        return stored
    where = f" nor under {runs_dir}" if runs_dir is not None else ""
    raise StoreError(f"no run '{ref}': not a run directory{where}, nor a run id in the run "
                     f"store {store.path}; list them with `kernelevolve runs`")
