"""Training data from tuning runs: one record per synthesizer call, in the shapes TRL and verl read.

``collect`` reads runs from the run store (every candidate's prompt, reply, lineage, verdict,
error figures, latencies, speedups, diagnosis; re-asked replies too) and makes one
``TrajectoryRecord`` per call:

- an LLM call (the endpoint or the local model) is exported as it happened: the recorded system
  and user messages, the reply, the token counts;
- a node the offline synthesizer wrote has no prompt and no reply, so it becomes a
  *demonstration* only where it was verified: the prompt an LLM would have been shown for that
  expansion is rendered from the stored records (task, parent, trajectory or siblings, the
  failure a repair fixes) with the current templates, and the reply is the kernel in the reply
  format the system message asks for (``prompt_source`` says "rendered");
- warm-start seeds (kernels of earlier runs, re-verified) are no synthesizer call: not exported.

``write`` puts them in a directory as ``jsonl`` (the full records), ``trl`` (conversational
``prompt``/``completion`` datasets: ``sft.jsonl`` verified only, ``grpo.jsonl`` one row per
distinct prompt with the columns ``KernelReward`` needs, ``kto.jsonl`` unpaired preference with
``label``) or ``verl`` (``rl.parquet`` in verl's RL schema, ``sft.parquet`` with ``messages``),
each with a ``manifest.json``. Every string passes a ``Redactor`` first: secrets never leave.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kernelevolve import __version__
from kernelevolve.errors import ConfigError, KernelEvolveError, StoreError
from kernelevolve.graph.search import DiagnosisInfo
from kernelevolve.graph.state import ErrorInfo, PromptState, Step, Task
from kernelevolve.rl.redact import Redactor
from kernelevolve.rl.reward import DEFAULT_SPEC, NO_CODE, REVERIFIED, RewardSpec, reward
from kernelevolve.store.models import CandidateRecord, RunRecord
from kernelevolve.store.sqlite import RunStore

RECORD_SCHEMA = "kernelevolve-trajectory/1"
Format = Literal["jsonl", "trl", "verl"]
FORMATS: tuple[str, ...] = ("jsonl", "trl", "verl")


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "user", "assistant"]
    content: str


class OutputErrorFigures(BaseModel):
    """The worst error on one output (from the EvalResult)."""

    index: int
    max_abs_error: float
    max_rel_error: float
    atol: float
    rtol: float
    mismatched: int
    total: int


class Latencies(BaseModel):
    """Median latencies in ms (simulated on mtia-sim)."""

    candidate: float
    eager: float
    compiled: float | None = None


class TrajectoryRecord(BaseModel):
    """One synthesizer call and what the harness made of it."""

    model_config = ConfigDict(extra="forbid")

    schema_: str = Field(RECORD_SCHEMA, alias="schema")
    id: str = Field(description="<run id>:<node id>, with #<k> for the k-th re-asked call")
    run_id: str
    node_id: str
    call: int = Field(description="0 for the first call of this node; re-asks count up")
    kind: Literal["llm", "demonstration"]
    role: Literal["coder", "debugger"]
    prompt_source: Literal["recorded", "rendered"]
    messages: list[Message] = Field(description="the prompt: system and user messages")
    completion: str = Field(description="the reply (a demonstration's: the kernel, fenced)")
    # the problem and the run
    problem: str
    problem_digest: str
    operator_class: str | None = None
    target: str
    timed: bool
    simulated: bool
    synthesizer: str
    model: str
    reference: str = Field(description="the reference program's source")
    # the node in its search tree
    parent: str | None
    repair_of: str | None = None
    lineage: list[str] = Field(description="node ids from the root's child down to the parent")
    parent_source: str | None = Field(None, description="what SEARCH/REPLACE edits apply to")
    operator: str
    intent: str
    round: int
    epoch: int
    depth: int
    at_s: float
    # the verdict
    status: str
    verified: bool
    message: str = ""
    stderr_tail: str = ""
    errors: list[OutputErrorFigures] = Field(default_factory=list)
    latency_ms: Latencies | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_compiled: float | None = None
    reverified: bool = False
    flags: list[str] = Field(default_factory=list)
    diagnosis: DiagnosisInfo | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reward: float


class ExportFilter(BaseModel):
    """Which records to export: every field given must match."""

    model_config = ConfigDict(extra="forbid")

    target: str | None = None
    operator_class: str | None = None
    statuses: list[str] | None = Field(None, description="candidate statuses, e.g. ok, cheat")

    def run_matches(self, run: RunRecord) -> bool:
        return ((self.target is None or run.target == self.target)
                and (self.operator_class is None or run.operator_class == self.operator_class))

    def record_matches(self, record: TrajectoryRecord) -> bool:
        return self.statuses is None or record.status in self.statuses


# -- building records ---------------------------------------------------------------------------


def _result(cand: CandidateRecord) -> dict[str, Any]:
    if not cand.result_json:
        return {}
    try:
        data = json.loads(cand.result_json)
    except ValueError as exc:
        raise StoreError(f"candidate {cand.run_id}/{cand.node_id} has a damaged result: "
                         f"{exc}") from exc
    return data if isinstance(data, dict) else {}


def _verdict(cand: CandidateRecord, spec: RewardSpec) -> dict[str, Any]:
    """The verdict's fields of a record, from the candidate and its EvalResult."""
    result = _result(cand)
    timing = result.get("timing") or None
    flags = [str(f) for f in result.get("flags") or []]
    reverified = any(REVERIFIED in f for f in flags)
    latency = None
    if timing:
        compiled = timing.get("compiled") or None
        latency = Latencies(candidate=timing["candidate"]["median_ms"],
                            eager=timing["eager"]["median_ms"],
                            compiled=compiled["median_ms"] if compiled else None)
    return {
        "status": cand.status, "verified": cand.status == "ok", "message": cand.message[:2000],
        "stderr_tail": cand.stderr_tail[-1000:],
        "errors": [OutputErrorFigures.model_validate(e)
                   for e in result.get("errors") or []] if result else [],
        "latency_ms": latency,
        "speedup_vs_eager": timing.get("speedup_vs_eager") if timing else None,
        "speedup_vs_compiled": timing.get("speedup_vs_compiled") if timing else None,
        "reverified": reverified, "flags": flags, "diagnosis": cand.diagnosis,
        "reward": reward(cand.status, cand.speedup, reverified=reverified, spec=spec),
    }


def _lineage(cand: CandidateRecord, by_id: dict[str, CandidateRecord]) -> list[str]:
    out: list[str] = []
    cur = cand.parent
    while cur is not None and cur in by_id:
        out.append(cur)
        cur = by_id[cur].parent
    return out[::-1]


def _step(cand: CandidateRecord, with_source: bool = True) -> Step:
    return Step(node_id=cand.node_id, operator=cand.operator,  # type: ignore[arg-type]
                intent=cand.intent, status=cand.status, speedup=cand.speedup,
                latency_ms=cand.latency_ms, message=cand.message[:600],
                diagnosis=cand.diagnosis, source=cand.code if with_source else None,
                params=cand.params)


def _task_of(run: RunRecord) -> tuple[Task, list[str]]:
    """The run's task and constraints: from its run directory where it is here (exact), else
    rebuilt from the store's record (an imported run)."""
    if run.run_dir and (Path(run.run_dir) / "run.json").is_file():
        from kernelevolve.store.sync import read_run_dir

        try:
            _, state = read_run_dir(run.run_dir)
        except KernelEvolveError:
            state = None
        if state is not None and "task" in state:
            return state["task"], list(state.get("constraints", []))
    from kernelevolve.graph.session import constraints_for
    from kernelevolve.targets import get_target

    description, constraints = run.target, []
    try:
        target = get_target(run.target)
        description, constraints = target.description, constraints_for(target)
    except KernelEvolveError:  # e.g. a cuda run read on a machine without a GPU
        pass
    task = Task(problem_path=run.problem_path, problem_name=run.problem,
                reference_source=run.reference_source, target=run.target,
                target_description=description, goal=run.goal or 1.0, timed=run.timed,
                simulated=run.simulated, operator_class=run.operator_class)
    return task, constraints


def _demonstration_prompt(cand: CandidateRecord, task: Task, constraints: list[str],
                          by_id: dict[str, CandidateRecord]) -> tuple[str, str]:
    """The system and user messages an LLM would have been shown for this expansion."""
    from kernelevolve.synth.llm.reply import coder_prompt, debugger_prompt, system_prompt

    parent = by_id.get(cand.parent or "")
    earlier = [c for c in by_id.values() if c.node_id < cand.node_id]
    ps = PromptState(task=task, constraints=constraints, knowledge=[],
                     operator=cand.operator,  # type: ignore[arg-type]
                     intent=cand.intent, diagnosis=parent.diagnosis if parent else None)
    if cand.origin == "debugger" and cand.repair_of in by_id:
        failed = by_id[cand.repair_of]
        ps.last_error = ErrorInfo(node_id=failed.node_id, status=failed.status,
                                  message=failed.message, stderr_tail=failed.stderr_tail,
                                  source=failed.code, params=failed.params)
    if parent is not None and parent.code is not None and cand.operator != "fresh":
        ps.parent = _step(parent)
        if cand.operator == "inherit":
            ps.trajectory = [_step(by_id[n], with_source=False)
                             for n in _lineage(parent, by_id) if by_id[n].code is not None]
        elif cand.operator == "compare":
            ps.siblings = [_step(c) for c in earlier if c.parent == parent.node_id
                           and c.node_id != cand.node_id][-3:]
    if ps.last_error is not None and ps.last_error.source is not None:
        return system_prompt(ps), debugger_prompt(ps)
    return system_prompt(ps), coder_prompt(ps)


def _demonstration_reply(cand: CandidateRecord) -> str:
    code = (cand.code or "").rstrip("\n")
    lead = cand.intent.strip().rstrip(".") or "A Triton kernel for this program"
    return f"{lead}.\n\n```python\n{code}\n```\n"


def run_records(run: RunRecord, candidates: Sequence[CandidateRecord],
                spec: RewardSpec = DEFAULT_SPEC) -> list[TrajectoryRecord]:
    """The records of one run's candidates (see the module docstring)."""
    by_id = {c.node_id: c for c in candidates}
    task: tuple[Task, list[str]] | None = None
    out: list[TrajectoryRecord] = []
    for cand in sorted(candidates, key=lambda c: c.node_id):
        if cand.origin not in ("coder", "debugger"):
            continue
        parent = by_id.get(cand.parent or "")
        edit_base = by_id.get(cand.repair_of or "") if cand.origin == "debugger" else parent
        common: dict[str, Any] = {
            "run_id": run.run_id, "node_id": cand.node_id, "role": cand.origin,
            "problem": run.problem, "problem_digest": run.problem_digest,
            "operator_class": run.operator_class, "target": run.target, "timed": run.timed,
            "simulated": run.simulated, "synthesizer": run.synthesizer,
            "reference": run.reference_source, "parent": cand.parent,
            "repair_of": cand.repair_of, "lineage": _lineage(cand, by_id),
            "parent_source": edit_base.code if edit_base is not None else None,
            "operator": cand.operator, "intent": cand.intent, "round": cand.round,
            "epoch": cand.epoch, "depth": cand.depth, "at_s": cand.at_s,
        }
        if cand.prompt is not None:
            for k, call in enumerate(cand.reasks):
                out.append(TrajectoryRecord(
                    id=f"{run.run_id}:{cand.node_id}#{k}", call=k, kind="llm",
                    prompt_source="recorded", messages=_messages(call.system, call.prompt or ""),
                    completion=call.reply or "", model=call.model, status=NO_CODE,
                    verified=False, message=call.problem, prompt_tokens=call.prompt_tokens,
                    completion_tokens=call.completion_tokens,
                    reward=reward(NO_CODE, spec=spec), **common))
            out.append(TrajectoryRecord(
                id=f"{run.run_id}:{cand.node_id}", call=len(cand.reasks), kind="llm",
                prompt_source="recorded", messages=_messages(cand.system, cand.prompt),
                completion=cand.reply or "", model=cand.model,
                prompt_tokens=cand.prompt_tokens, completion_tokens=cand.completion_tokens,
                **common, **_verdict(cand, spec)))
        elif cand.status == "ok" and cand.code is not None:
            task = task or _task_of(run)
            system, user = _demonstration_prompt(cand, task[0], task[1], by_id)
            out.append(TrajectoryRecord(
                id=f"{run.run_id}:{cand.node_id}", call=0, kind="demonstration",
                prompt_source="rendered", messages=_messages(system, user),
                completion=_demonstration_reply(cand), model=cand.model or run.synthesizer,
                **common, **_verdict(cand, spec)))
    return out


def _messages(system: str | None, prompt: str) -> list[Message]:
    # Calls recorded before the store kept the system message have only the user's.
    head = [Message(role="system", content=system)] if system else []
    return [*head, Message(role="user", content=prompt)]


def collect(store: RunStore, run_ids: Sequence[str] | None = None,
            where: ExportFilter | None = None, spec: RewardSpec = DEFAULT_SPEC
            ) -> list[TrajectoryRecord]:
    """The records of ``run_ids`` (default: every run in the store) that match ``where``."""
    where = where or ExportFilter()
    if run_ids is None:
        runs = store.runs()
    else:
        runs = []
        for rid in run_ids:
            run = store.run(rid)
            if run is None:
                raise StoreError(f"no run '{rid}' in the run store {store.path}; list them with "
                                 "`kernelevolve runs`")
            runs.append(run)
    out: list[TrajectoryRecord] = []
    for run in sorted(runs, key=lambda r: (r.created, r.run_id)):
        if where.run_matches(run):
            out += [r for r in run_records(run, store.candidates(run.run_id), spec)
                    if where.record_matches(r)]
    return out


# -- writing ----------------------------------------------------------------------------------


def _chat(messages: list[Message]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in messages]


def _grpo_rows(records: Iterable[TrajectoryRecord]) -> list[dict[str, Any]]:
    """One row per distinct prompt, with what the online reward needs."""
    rows: dict[str, dict[str, Any]] = {}
    for r in records:
        key = hashlib.sha256(json.dumps(_chat(r.messages)).encode()).hexdigest()
        rows.setdefault(key, {
            "prompt": _chat(r.messages), "reference": r.reference, "problem": r.problem,
            "problem_digest": r.problem_digest, "target": r.target,
            "parent_source": r.parent_source or "", "id": r.id})
    return list(rows.values())


def _sft_rows(records: Iterable[TrajectoryRecord]) -> list[dict[str, Any]]:
    return [{"prompt": _chat(r.messages),
             "completion": [{"role": "assistant", "content": r.completion}],
             "id": r.id, "kind": r.kind, "reward": r.reward, "problem": r.problem,
             "problem_digest": r.problem_digest}
            for r in records if r.verified]


def _kto_rows(records: Iterable[TrajectoryRecord]) -> list[dict[str, Any]]:
    return [{"prompt": _chat(r.messages),
             "completion": [{"role": "assistant", "content": r.completion}],
             "label": r.verified, "id": r.id, "reward": r.reward,
             "problem_digest": r.problem_digest} for r in records]


def _verl_rl_rows(records: Iterable[TrajectoryRecord]) -> list[dict[str, Any]]:
    return [{"data_source": f"kernelevolve/{row['problem']}", "prompt": row["prompt"],
             "ability": "kernel", "reward_model": {"style": "rule",
                                                    "ground_truth": row["reference"]},
             "extra_info": {"split": "train", "index": i, "id": row["id"],
                            "target": row["target"], "problem": row["problem"],
                            "parent_source": row["parent_source"]}}
            for i, row in enumerate(_grpo_rows(records))]


def _verl_sft_rows(records: Iterable[TrajectoryRecord]) -> list[dict[str, Any]]:
    return [{"messages": _chat(r.messages) + [{"role": "assistant", "content": r.completion}],
             "extra_info": {"id": r.id, "kind": r.kind, "reward": r.reward}}
            for r in records if r.verified]


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def _write_parquet(path: Path, rows: list[dict[str, Any]]) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ConfigError("--format verl writes parquet, which needs pyarrow: pip install "
                          "'kernelevolve[rl]'") from exc
    pq.write_table(pa.Table.from_pylist(rows), path)


def write(records: Sequence[TrajectoryRecord], out_dir: str | Path, fmt: str,
          redactor: Redactor | None = None, filters: ExportFilter | None = None,
          spec: RewardSpec = DEFAULT_SPEC) -> dict[str, int]:
    """Write ``records`` to ``out_dir`` in ``fmt`` (jsonl, trl, verl) with a manifest; return
    the rows per file. Every string passes ``redactor`` (default: this process's secrets)."""
    if fmt not in FORMATS:
        raise ConfigError(f"unknown export format {fmt!r}; one of: json, {', '.join(FORMATS)}")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; --format {fmt} writes a directory: name "
                          "a new or existing directory")
    out.mkdir(parents=True, exist_ok=True)
    redactor = redactor or Redactor.from_environment()
    recs = [TrajectoryRecord.model_validate(redactor.data(r.model_dump(mode="json",
                                                                       by_alias=True)))
            for r in records]
    files: dict[str, list[dict[str, Any]]]
    if fmt == "jsonl":
        files = {"trajectories.jsonl": [r.model_dump(mode="json", by_alias=True)
                                        for r in recs]}
    elif fmt == "trl":
        files = {"sft.jsonl": _sft_rows(recs), "grpo.jsonl": _grpo_rows(recs),
                 "kto.jsonl": _kto_rows(recs)}
    else:
        files = {"sft.parquet": _verl_sft_rows(recs), "rl.parquet": _verl_rl_rows(recs)}
    for name, rows in files.items():
        if name.endswith(".parquet"):
            _write_parquet(out / name, rows)
        else:
            _write_jsonl(out / name, rows)
    counts = {name: len(rows) for name, rows in files.items()}
    manifest = {
        "format": fmt, "record_schema": RECORD_SCHEMA, "kernelevolve": __version__,
        "exported": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "files": counts,
        "records": len(recs), "verified": sum(r.verified for r in recs),
        "demonstrations": sum(r.kind == "demonstration" for r in recs),
        "runs": sorted({r.run_id for r in recs}),
        "filters": (filters or ExportFilter()).model_dump(),
        "reward": spec.model_dump(),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return counts
