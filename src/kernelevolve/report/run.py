"""A run read back from its directory, without starting anything: ``run.json`` and the last
checkpoint of ``checkpoints.sqlite`` (no worker pool, no synthesizer, no LLM credentials)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kernelevolve.config import Settings
from kernelevolve.errors import RunError
from kernelevolve.graph.rundir import RunSpec, read_run
from kernelevolve.graph.state import RunState


@dataclass(frozen=True)
class RunRecord:
    """What a run directory holds: the request (``spec``) and the state after the last step."""

    run_dir: Path
    spec: RunSpec
    values: RunState
    paused: bool

    @property
    def finished(self) -> bool:
        return self.values.get("stop_reason") is not None

    @property
    def status(self) -> str:
        if self.finished:
            return f"finished: {self.values.get('stop_reason')}"
        if self.paused:
            return "paused for guidance (interactive run)"
        return (f"not finished: running, or interrupted (`kernelevolve resume "
                f"{self.spec.run_id}` continues it)")


def load_run(run: str | Path, settings: Settings | None = None) -> RunRecord:
    """Read a run (a run directory, or a run id under the configured runs directory)."""
    stored = read_run(run, settings)
    if stored.values is None:
        raise RunError(f"run {stored.spec.run_id} has no checkpoint with a search tree yet")
    return RunRecord(run_dir=stored.run_dir, spec=stored.spec,
                     values=stored.values, paused=stored.paused)  # type: ignore[arg-type]
