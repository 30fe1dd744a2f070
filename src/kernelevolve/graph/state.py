"""The one dynamic prompt state.

Every agent reads and writes sections of one typed state (``RunState``); the prompt of each
synthesizer call is rendered from a ``PromptState`` built from it (``prompt_state``), so every
situation (a fresh start, a repair, a comparison of siblings) goes through one interface.
All values are pydantic models, which the SQLite checkpointer stores and restores.
"""

from __future__ import annotations

import operator
from enum import StrEnum
from typing import Annotated, Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from kernelevolve.graph.compare import summary, unified_diff
from kernelevolve.graph.search import Call, DiagnosisInfo, MemoryOperator, Node, SearchTree


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


class Direction(_Model):
    """A design direction the Planner gives an expansion so that siblings differ
    (agents/directions.py)."""

    name: str
    how: str


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
    direction: str = Field("", description="the design direction it was asked to take")
    summary: str = Field("", description="what it changed against the parent (a diff), or how "
                                         "it is built (a summary): for a sibling shown "
                                         "without its code")
    origin: str = "coder"


class Expansion(_Model):
    """What the Planner decided for this round."""

    parent_id: str
    operator: MemoryOperator
    intent: str
    partner_id: str | None = Field(None, description="combine: the other node")
    restart: bool = False
    direction: Direction | None = Field(None, description="what this sibling tries")


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
    system: str | None = None
    prompt: str | None = None
    reply: str | None = None
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    problem: str = Field("", description="why there is no source (empty when there is one)")
    origin: Literal["coder", "debugger", "seed"] = "coder"
    attempt: int = Field(0, description="re-asks so far for this expansion")
    repair_of: str | None = Field(None, description="debugger: the failed node it repairs")
    noop_of: str | None = Field(None, description="the reply's kernel was this node's, up to "
                                                  "renaming and formatting (not evaluated)")
    tokens_estimated: bool = Field(False, description="the endpoint reported no usage: the "
                                                      "token counts are estimates")
    reasks: list[Call] = Field(default_factory=list, description="earlier calls re-asked")

    def after(self, earlier: Draft | None) -> Draft:
        """This draft of a re-ask, carrying the ``earlier`` calls that held no usable code (or
        only a no-op of the parent)."""
        if earlier is None or earlier.source is not None or earlier.prompt is None:
            return self
        call = Call(system=earlier.system, prompt=earlier.prompt, reply=earlier.reply,
                    problem=earlier.problem, model=earlier.model,
                    prompt_tokens=earlier.prompt_tokens,
                    completion_tokens=earlier.completion_tokens,
                    tokens_estimated=earlier.tokens_estimated)
        return self.model_copy(update={"reasks": [*earlier.reasks, call]})

    def call_fields(self) -> dict[str, Any]:
        """What a node keeps of the synthesizer call(s) behind it."""
        return {"system": self.system, "prompt": self.prompt, "reply": self.reply,
                "model": self.model, "tokens": self.prompt_tokens + self.completion_tokens,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "reasks": list(self.reasks),
                "tokens_estimated": self.tokens_estimated}


class EventKind(StrEnum):
    start = "start"
    resume = "resume"
    plan = "plan"
    retrieve = "retrieve"
    draft = "draft"
    no_code = "no_code"
    noop = "noop"  # a reply that only renamed or reformatted its parent: not evaluated
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
    retry: str = Field("", description="why the previous reply was not used (a re-ask)")
    node_id: str = Field("", description="the search-tree node the reply becomes (it names "
                         "the request: batch mode's custom_id)")
    direction: Direction | None = Field(None, description="what this sibling tries")
    tried: list[Step] = Field(
        default_factory=list, description="siblings already drafted from the same parent (this "
        "round's planned ones as 'pending'), each with its direction, outcome and a summary or "
        "diff instead of its code")
    diff: str = Field("", description="combine: the unified diff from the parent to the partner")
    best: Step | None = Field(None, description="the run's best kernel, where not the parent")


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
        params=node.params, direction=node.direction, origin=node.origin,
    )


# Characters of a sibling's diff against the parent (or of a fresh sibling's summary), and of
# the parent-to-partner diff of a combine, as the prompt state keeps them.
SIBLING_DIFF_CHARS = 1500
COMBINE_DIFF_CHARS = 3000
TRIED_SHOWN = 6


def _changes(node: Node, parent: Node) -> str:
    """What a sibling did, without its whole code: its diff against the parent's code, or, for
    a child of the root, a summary of how it is built."""
    if node.source is None:
        return ""
    if parent.source is None:
        return summary(node.source)
    return unified_diff(parent.source, node.source, parent.id, node.id,
                        limit=SIBLING_DIFF_CHARS) or "(the same code as the parent)"


def tried_siblings(tree: SearchTree, exp: Expansion,
                   pending: list[tuple[str, Expansion]] | None = None,
                   shown: set[str] | frozenset[str] = frozenset()) -> list[Step]:
    """The siblings a new expansion of ``exp.parent_id`` should know about: the parent's
    children of this epoch (a restart is memoryless: none), with their direction, outcome and
    changes, then the ones planned beside it in this batch (``pending``: id and expansion),
    which are drafted at the same time."""
    if exp.restart:
        return []
    parent = tree.nodes[exp.parent_id]
    kids = [n for n in tree.children(parent.id)
            if n.epoch == tree.epoch and n.evaluated and n.id not in shown]
    steps = [step_of(n, with_source=False).model_copy(update={"summary": _changes(n, parent)})
             for n in kids[-TRIED_SHOWN:]]
    for node_id, other in pending or []:
        if other.parent_id == exp.parent_id:
            steps.append(Step(node_id=node_id, operator=other.operator, intent=other.intent,
                              status="pending", direction=other.direction.name
                              if other.direction is not None else ""))
    return steps


def prompt_state(state: RunState, *, repair: bool = False,
                 pending: list[tuple[str, Expansion]] | None = None,
                 node_id: str | None = None) -> PromptState:
    """Build the prompt state of this round from the run state and the memory operator:

    - inherit: the parent and its trajectory (ancestors, without their code);
    - compare: the parent and its already evaluated children (what differed, what it gave);
    - combine: the parent and the partner node, both with code, and the diff between them;
    - fresh: the task and the knowledge only (a memoryless start).
    Every new candidate also gets its design direction and the siblings already tried from
    the same parent (``tried``; with ``pending``, the batch's other picks), so siblings differ;
    and, where the parent is not the best, the run's best. A repair (Debugger) carries the
    failed candidate in ``last_error`` instead. ``node_id``: the node the reply becomes (a
    batch round's slot); default the tree's next one.
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
        node_id=node_id or tree.next_id(),
    )
    if repair:
        ps.last_error = state.get("last_error")
    else:
        ps.direction = exp.direction
        best = tree.best
        if best is not None and best.id != parent.id and tree.timed and not exp.restart:
            ps.best = step_of(best, with_source=False)
    if exp.operator == "fresh" or parent.source is None:
        if not repair:
            ps.tried = tried_siblings(tree, exp, pending)
        return _without_repeated_best(ps)
    ps.parent = step_of(parent)
    if exp.operator == "inherit":
        ps.trajectory = [step_of(n, with_source=False) for n in tree.lineage(parent.id)[:-1]
                         if n.source is not None]
    elif exp.operator == "compare":
        # each evaluated child with what it changed against the parent (a diff), not its code
        ps.siblings = [step_of(n, with_source=False).model_copy(
            update={"summary": _changes(n, parent)})
            for n in tree.children(parent.id) if n.evaluated][-3:]
    elif exp.operator == "combine" and exp.partner_id is not None:
        partner = tree.nodes[exp.partner_id]
        ps.siblings = [step_of(partner)]
        if partner.source is not None and parent.source is not None:
            ps.diff = unified_diff(parent.source, partner.source, parent.id, partner.id,
                                   limit=COMBINE_DIFF_CHARS)
    if not repair:
        ps.tried = tried_siblings(tree, exp, pending, shown={s.node_id for s in ps.siblings})
    return _without_repeated_best(ps)


def _without_repeated_best(ps: PromptState) -> PromptState:
    """The best kernel is shown on its own only where no other section shows it."""
    if ps.best is not None and ps.best.node_id in {s.node_id for s in [*ps.siblings, *ps.tried]}:
        ps.best = None
    return ps
