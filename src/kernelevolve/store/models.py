"""The store's records: a run, its candidates and its events, a known kernel for warm starts,
and the export file that carries runs from one store to another."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

from kernelevolve.graph.search import Call, DiagnosisInfo

EXPORT_FORMAT = "kernelevolve-runs"


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunRecord(_Record):
    """One run: what was asked, where it lives, how far it got and its best kernel."""

    run_id: str
    problem: str = Field(description="the problem's name (its file's stem)")
    problem_path: str = ""
    problem_digest: str
    operator_class: str | None = None
    target: str
    synthesizer: str
    created: str
    goal: float | None = None
    timed: bool = True
    simulated: bool = False
    finished: bool = Field(False, description="the search ended (it has a stop reason)")
    stop_reason: str | None = None
    best_node: str | None = None
    best_speedup: float | None = None
    best_latency_ms: float | None = None
    rounds: int = 0
    candidates: int = 0
    verified: int = 0
    llm_calls: int = 0
    tokens: int = 0
    wall_s: float = 0.0
    run_dir: str | None = Field(None, description="None for a run imported from elsewhere")
    reference_source: str = ""
    updated: str = ""

    @property
    def status(self) -> str:
        """Why the run finished, in a few words (``goal reached``, ``budget spent``, ...), or
        ``unfinished`` (running, paused or killed)."""
        if not self.finished:
            return "unfinished"
        return re.split(r"[:;(]", self.stop_reason or "")[0].strip() or "finished"


class CandidateRecord(_Record):
    """One node of a run's search tree (the root, the reference itself, is not stored)."""

    run_id: str
    node_id: str
    parent: str | None
    repair_of: str | None = None
    operator: str
    intent: str = ""
    origin: str = "coder"
    status: str
    message: str = ""
    stderr_tail: str = ""
    speedup: float | None = None
    latency_ms: float | None = None
    diagnosis: DiagnosisInfo | None = None
    code: str | None = None
    params: dict[str, int] | None = None
    prompt: str | None = None
    reply: str | None = None
    model: str = ""
    tokens: int = 0
    result_json: str | None = Field(None, description="the EvalResult, as JSON")
    system: str | None = Field(None, description="the system message of its synthesizer call")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasks: list[Call] = Field(default_factory=list, description="earlier calls re-asked")
    tokens_estimated: bool = Field(False, description="the endpoint reported no usage: the "
                                                      "token counts are estimates")
    direction: str = Field("", description="the design direction it was asked to take")
    round: int = 0
    epoch: int = 0
    depth: int = 0
    at_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class EventRecord(_Record):
    """One line of a run's trace."""

    kind: str
    round: int
    node_id: str | None = None
    text: str
    at_s: float = 0.0


class KnownCandidate(_Record):
    """A verified kernel of an earlier run: a warm start for a new run of the same operator."""

    run_id: str
    node_id: str
    code: str
    speedup: float | None = Field(description="vs eager on the run's target (None: untimed)")
    latency_ms: float | None = None
    target: str
    problem: str
    problem_digest: str
    operator_class: str | None = None
    params: dict[str, int] | None = None
    simulated: bool = False
    reference_source: str = Field("", description="the reference program it was verified on")


class RunExport(_Record):
    """A run with everything the store holds about it."""

    run: RunRecord
    candidates: list[CandidateRecord] = Field(default_factory=list)
    events: list[EventRecord] = Field(default_factory=list)


class ExportFile(_Record):
    """The file ``export_runs`` writes and ``import_runs`` reads (one JSON document)."""

    format: str = EXPORT_FORMAT
    schema_version: int
    exported: str
    runs: list[RunExport]
