"""The one dynamic prompt state.

Every agent reads and writes sections of one typed state (``RunState``); the prompt of each
synthesizer call is rendered from a ``PromptState`` built from it (``prompt_state``), so every
situation (a fresh start, a repair, a comparison of siblings) goes through one interface.
All values are pydantic models, which the SQLite checkpointer stores and restores.
"""

from __future__ import annotations

import operator
from enum import StrEnum
from typing import Annotated, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from kernelevolve.graph.search import DiagnosisInfo, MemoryOperator, Node, SearchTree


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Task(_Model):
    """What the user asked for."""

    problem_path: str
    problem_name: str
    reference_source: str
    target: str
    target_description: str
    goal: float = Field(description="speedup vs eager that ends the run")
    timed: bool = Field(description="the target measures time (the cpu target only verifies)")
    simulated: bool = False
    operator_class: str | None = Field(None, description="e.g. 'softmax', as far as it is known")
    allowed_ops: list[str] = Field(default_factory=list)


class Knowledge(_Model):
    """One retrieved passage, as the prompt shows it."""

    title: str
    tier: str
    text: str
    reason: str = ""
    doc_id: str = ""


class ErrorInfo(_Model):
    """The last failed candidate and why it failed: the Debugger's input."""

    node_id: str
    status: str
    message: str
    stderr_tail: str = ""
    source: str | None = None
    params: dict[str, int] | None = None


class Step(_Model):
    """One evaluated candidate as a prompt shows it (trajectory, parent, siblings)."""

    node_id: str
    operator: MemoryOperator
    intent: str
    status: str
    speedup: float | None = None
    latency_ms: float | None = None
    message: str = ""
    diagnosis: DiagnosisInfo | None = None
    source: str | None = None
    params: dict[str, int] | None = None


class Expansion(_Model):
    """What the Planner decided for this round."""

    parent_id: str
    operator: MemoryOperator
    intent: str
    partner_id: str | None = Field(None, description="combine: the other node")
    restart: bool = False


class Usage(_Model):
    """What the run has spent (kept across resumes)."""

    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    evaluations: int = 0
    wall_s: float = 0.0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def plus(self, other: Usage) -> Usage:
        """Both spendings together (a batch's branches added to the run's)."""
        return Usage(**{k: getattr(self, k) + getattr(other, k) for k in Usage.model_fields})


class Draft(_Model):
    """A synthesizer's answer: a candidate source, or why there is none."""

    source: str | None = None
    params: dict[str, int] | None = None
    intent: str = ""
    prompt: str | None = None
    reply: str | None = None
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    problem: str = Field("", description="why there is no source (empty when there is one)")
    origin: Literal["coder", "debugger", "seed"] = "coder"
    attempt: int = Field(0, description="re-asks so far for this expansion")
    repair_of: str | None = Field(None, description="debugger: the failed node it repairs")


class EventKind(StrEnum):
    start = "start"
    resume = "resume"
    plan = "plan"
    retrieve = "retrieve"
    draft = "draft"
    no_code = "no_code"
    evaluate = "evaluate"
    improve = "improve"
    repair = "repair"
    distill = "distill"
    restart = "restart"
    guidance = "guidance"
    stop = "stop"


class Event(_Model):
    """One line of the run's trace."""

    kind: EventKind
    round: int
    node_id: str | None = None
    text: str
    at_s: float = Field(0.0, description="run time (wall seconds since the start, across resumes)")


class PromptState(_Model):
    """Everything a prompt may show, rendered by one template set (prompts/)."""

    task: Task
    constraints: list[str]
    knowledge: list[Knowledge]
    operator: MemoryOperator
    intent: str
    parent: Step | None = None
    trajectory: list[Step] = Field(default_factory=list, description="the parent's ancestors")
    siblings: list[Step] = Field(default_factory=list, description="compare/combine: others")
    last_error: ErrorInfo | None = None
    diagnosis: DiagnosisInfo | None = None
    user_notes: list[str] = Field(default_factory=list)
    attempt: int = 0


class Slot(_Model):
    """One candidate of a batch round (``search.batch`` > 1), as its branch receives it through a
    LangGraph ``Send``: everything the branch needs to draft and evaluate it without the state.
    The node id is fixed when the round fans out, so the branches never race for ids."""

    node_id: str
    round: int
    expansion: Expansion
    prompt: PromptState | None = Field(
        None, description="what the synthesizer sees (the branch adds the retrieved knowledge)")
    seed: Draft | None = Field(None, description="a warm-start kernel: evaluated, not drafted")
    error: ErrorInfo | None = Field(None, description="a repair of this failed candidate")
    wall_s: float = Field(0.0, description="run time when the round fanned out")


class Outcome(_Model):
    """What one branch of a batch made: its node (evaluated, or without code), the trace lines it
    printed, what it spent, and the failure a repair would start from."""

    node: Node
    events: list[Event] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage, description="this branch's calls (wall time: 0)")
    error: ErrorInfo | None = None
    speed: str = Field("", description="the verdict's speed words, for a 'new best' line")
    knowledge: list[Knowledge] = Field(default_factory=list, description="what it retrieved")


class RunState(TypedDict, total=False):
    """The graph's state; each key a channel (lists with a reducer append)."""

    task: Task
    constraints: list[str]
    tree: SearchTree
    round: int
    expansion: Expansion | None
    knowledge: list[Knowledge]
    draft: Draft | None
    last_error: ErrorInfo | None
    diagnosis: DiagnosisInfo | None
    user_notes: Annotated[list[str], operator.add]
    usage: Usage
    stop_reason: str | None
    events: Annotated[list[Event], operator.add]
    seeds: list[Draft]  # warm start: best known kernels of earlier runs, evaluated first
    # search.batch > 1: the candidates the next step drafts and evaluates in parallel branches
    # (one Send each), and what the branches made; the gather node folds these into the tree
    # once and resets them (langgraph.types.Overwrite).
    batch: list[Slot]
    outcomes: Annotated[list[Outcome], operator.add]


def step_of(node: Node, with_source: bool = True) -> Step:
    return Step(
        node_id=node.id, operator=node.operator, intent=node.intent, status=node.status,
        speedup=node.speedup, latency_ms=node.latency_ms, message=node.message[:600],
        diagnosis=node.diagnosis, source=node.source if with_source else None,
        params=node.params,
    )


def prompt_state(state: RunState, *, repair: bool = False) -> PromptState:
    """Build the prompt state of this round from the run state and the memory operator:

    - inherit: the parent and its trajectory (ancestors, without their code);
    - compare: the parent and its already evaluated children (what differed, what it gave);
    - combine: the parent and the partner node, both with code;
    - fresh: the task and the knowledge only (a memoryless start).
    A repair (Debugger) always carries the failed candidate in ``last_error``.
    """
    tree = state["tree"]
    exp = state["expansion"]
    if exp is None:
        raise ValueError("prompt_state needs the Planner's expansion")
    parent = tree.nodes[exp.parent_id]
    draft = state.get("draft")
    ps = PromptState(
        task=state["task"], constraints=state.get("constraints", []),
        knowledge=state.get("knowledge", []), operator=exp.operator, intent=exp.intent,
        user_notes=state.get("user_notes", []), diagnosis=state.get("diagnosis"),
        # a repair is a first attempt: the Coder's re-asks are not the Debugger's
        attempt=draft.attempt if draft is not None and not repair else 0,
    )
    if repair:
        ps.last_error = state.get("last_error")
    if exp.operator == "fresh" or parent.source is None:
        return ps
    ps.parent = step_of(parent)
    if exp.operator == "inherit":
        ps.trajectory = [step_of(n, with_source=False) for n in tree.lineage(parent.id)[:-1]
                         if n.source is not None]
    elif exp.operator == "compare":
        ps.siblings = [step_of(n) for n in tree.children(parent.id) if n.evaluated][-3:]
    elif exp.operator == "combine" and exp.partner_id is not None:
        ps.siblings = [step_of(tree.nodes[exp.partner_id])]
    return ps
