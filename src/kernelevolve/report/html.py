"""The HTML report of a run: one self-contained file (inline CSS, script and SVG; no network).

Everything a run recorded is untrusted text (candidate code, model replies, stderr): the template
is rendered with autoescaping, the script only toggles attributes and classes (it never builds
HTML from text), and a Content-Security-Policy lets only the report's own script and style run
(by hash) and forbids any fetch.
"""

from __future__ import annotations

import base64
import difflib
import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup
from pydantic import ValidationError

from kernelevolve.config import Settings
from kernelevolve.graph.search import ROOT, Call, DiagnosisInfo, Node, SearchTree
from kernelevolve.graph.state import Event, Knowledge, Task, Usage
from kernelevolve.report.layout import Axis, nice_ticks, tree_layout
from kernelevolve.report.run import RunRecord, load_run
from kernelevolve.tools.harness.result import Check, EvalResult

ASSETS = Path(__file__).with_name("assets")

STATUS_COLOURS = {
    "root": "#4c6ef5", "ok": "#2f9e44", "mismatch": "#f08c00", "compile_error": "#e03131",
    "runtime_error": "#c2255c", "timeout": "#7048e8", "crash": "#862e9c", "cheat": "#343a40",
    "no_code": "#adb5bd", "pending": "#ced4da",
}
BEST_COLOUR = "#f59f00"

# Tree drawing, in pixels.
_COL_W, _ROW_H, _MARGIN, _RADIUS = 64, 84, 36, 13
# Chart drawing, in pixels.
_CHART_W, _CHART_H = 760, 300
_PAD_L, _PAD_R, _PAD_T, _PAD_B = 58, 24, 18, 44


@dataclass(frozen=True)
class TreeNode:
    id: str
    x: float
    y: float
    colour: str
    status: str
    best: bool
    on_best_path: bool
    sub: str
    title: str


@dataclass(frozen=True)
class TreeEdge:
    x1: float
    y1: float
    x2: float
    y2: float
    on_best_path: bool


@dataclass(frozen=True)
class TreeView:
    width: float
    height: float
    radius: int
    nodes: list[TreeNode]
    edges: list[TreeEdge]
    repairs: list[str] = field(default_factory=list)  # SVG path data (numbers only)


@dataclass(frozen=True)
class ChartPoint:
    id: str
    x: float
    y: float
    colour: str
    best: bool
    title: str


@dataclass(frozen=True)
class ChartView:
    width: int
    height: int
    left: float
    right: float
    top: float
    bottom: float
    x_ticks: list[tuple[float, str]]
    y_ticks: list[tuple[float, str]]
    points: list[ChartPoint]
    failed: list[ChartPoint]
    best_path: str
    baseline_y: float
    goal_y: float | None
    goal_note: str
    y_label: str


@dataclass(frozen=True)
class DiffLine:
    kind: str  # add, del, hunk, meta, ctx
    text: str


@dataclass(frozen=True)
class CallView:
    """One synthesizer call behind a node, as the report lists it."""

    node_id: str
    index: int
    of: int
    call: Call
    outcome: str  # "used", or why the reply was not


@dataclass(frozen=True)
class NodeDetail:
    node: Node
    colour: str
    best: bool
    diff_base: str | None
    diff_note: str
    diff: list[DiffLine]
    checks: list[Check]
    result_json: str
    children: list[str]
    calls: list[CallView] = field(default_factory=list)


@dataclass(frozen=True)
class ReportView:
    title: str
    header: list[tuple[str, str]]
    best_id: str
    simulated: bool
    timed: bool
    task: Task
    tree: TreeView
    chart: ChartView | None
    chart_note: str
    nodes: list[NodeDetail]
    status_counts: list[tuple[str, str, int]]
    knowledge: list[Knowledge]
    retrievals: list[Event]
    diagnosis: DiagnosisInfo | None
    constraints: list[str]
    user_notes: list[str]
    events: list[Event]
    event_kinds: list[str]
    generated: str
    calls: list[CallView] = field(default_factory=list)
    tokens: str = ""


def _fmt_speedup(node: Node) -> str:
    return f"{node.speedup:.2f}x" if node.speedup is not None else ""


def _short(status: str) -> str:
    return {"compile_error": "compile", "runtime_error": "runtime", "no_code": "no code"}.get(
        status, status)


def _best_path(tree: SearchTree) -> set[str]:
    if tree.best_id is None:
        return set()
    return {ROOT, *(n.id for n in tree.lineage(tree.best_id))}


def _tree_view(tree: SearchTree) -> TreeView:
    pos = tree_layout(tree)
    best_path = _best_path(tree)

    def xy(nid: str) -> tuple[float, float]:
        col, depth = pos[nid]
        return _MARGIN + col * _COL_W, _MARGIN + depth * _ROW_H

    nodes, edges, repairs = [], [], []
    for node in tree.nodes.values():
        x, y = xy(node.id)
        speed = _fmt_speedup(node) if node.ok or node.id == ROOT else _short(node.status)
        title = f"{node.id}: {node.status}" + (f", {_fmt_speedup(node)}" if node.speedup else "")
        if node.intent:
            title += f"\n{node.intent}"
        nodes.append(TreeNode(
            id=node.id, x=x, y=y, colour=STATUS_COLOURS.get(node.status, "#868e96"),
            status=node.status, best=node.id == tree.best_id,
            on_best_path=node.id in best_path, sub=speed, title=title))
        if node.parent is not None and node.parent in pos:
            px, py = xy(node.parent)
            edges.append(TreeEdge(px, py + _RADIUS, x, y - _RADIUS,
                                  node.id in best_path and node.parent in best_path))
        if node.repair_of is not None and node.repair_of in pos:
            fx, fy = xy(node.repair_of)
            lift = _ROW_H * 0.45
            repairs.append(f"M {fx:.1f} {fy - _RADIUS:.1f} C {fx:.1f} {fy - lift:.1f} "
                           f"{x:.1f} {y - lift:.1f} {x:.1f} {y - _RADIUS - 3:.1f}")
    width = max(p[0] for p in pos.values()) * _COL_W + 2 * _MARGIN
    height = max(p[1] for p in pos.values()) * _ROW_H + 2 * _MARGIN + 14
    return TreeView(width=width, height=height, radius=_RADIUS, nodes=nodes, edges=edges,
                    repairs=repairs)


def _chart_view(tree: SearchTree, events: list[Event], usage: Usage, goal: float,
                simulated: bool) -> ChartView | None:
    evaluated = sorted((n for n in tree.nodes.values() if n.evaluated), key=lambda n: n.at_s)
    timed_ok = [n for n in evaluated if n.ok and n.speedup is not None]
    if not timed_ok:
        return None
    t_end = max([usage.wall_s, *(n.at_s for n in evaluated), *(e.at_s for e in events), 1e-3])
    top_speed = max([1.0, *(n.speedup or 0.0 for n in timed_ok)])
    goal_note = ""
    if goal <= top_speed * 1.6:
        top_speed = max(top_speed, goal)
        goal_shown = True
    else:
        goal_shown = False
        goal_note = f"goal {goal:g}x is above the chart"
    y_ticks_v = nice_ticks(top_speed * 1.08)
    x_ticks_v = nice_ticks(t_end)
    xa = Axis(0.0, max(x_ticks_v[-1], t_end), _PAD_L, _CHART_W - _PAD_R)
    ya = Axis(0.0, max(y_ticks_v[-1], top_speed * 1.08), _CHART_H - _PAD_B, _PAD_T)

    points = [ChartPoint(n.id, xa(n.at_s), ya(n.speedup or 0.0), STATUS_COLOURS["ok"],
                         n.id == tree.best_id,
                         f"{n.id}: {n.speedup:.3f}x at {n.at_s:.1f} s")
              for n in timed_ok]
    failed = [ChartPoint(n.id, xa(n.at_s), ya(0.0), STATUS_COLOURS.get(n.status, "#868e96"),
                         False, f"{n.id}: {n.status} at {n.at_s:.1f} s")
              for n in evaluated if not n.ok]
    best = 0.0
    steps: list[str] = []
    for n in timed_ok:
        if (n.speedup or 0.0) > best:
            best = n.speedup or 0.0
            x, y = xa(n.at_s), ya(best)
            steps.append(f"M {x:.1f} {y:.1f}" if not steps else f"H {x:.1f} V {y:.1f}")
    steps.append(f"H {xa(t_end):.1f}")
    label = "speedup vs eager" + (" (simulated)" if simulated else "")
    return ChartView(
        width=_CHART_W, height=_CHART_H, left=_PAD_L, right=_CHART_W - _PAD_R, top=_PAD_T,
        bottom=_CHART_H - _PAD_B,
        x_ticks=[(xa(v), f"{v:g}") for v in x_ticks_v],
        y_ticks=[(ya(v), f"{v:g}x") for v in y_ticks_v],
        points=points, failed=failed, best_path=" ".join(steps), baseline_y=ya(1.0),
        goal_y=ya(goal) if goal_shown else None, goal_note=goal_note, y_label=label)


def _diff(base: Node | None, node: Node) -> list[DiffLine]:
    if base is None or base.source is None or node.source is None:
        return []
    lines = difflib.unified_diff(base.source.splitlines(), node.source.splitlines(),
                                 fromfile=base.id, tofile=node.id, lineterm="", n=3)
    out = []
    for line in lines:
        if line.startswith(("+++", "---")):
            kind = "meta"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "ctx"
        out.append(DiffLine(kind, line))
    return out


def node_calls(node: Node) -> list[CallView]:
    """Every synthesizer call behind ``node``: the replies re-asked (no usable code, or a
    no-op), then the one whose reply it is; none for the offline synthesizer or the root."""
    calls = list(node.reasks)
    if node.prompt is not None or node.reply is not None:
        calls.append(Call(system=node.system, prompt=node.prompt, reply=node.reply,
                          model=node.model, prompt_tokens=node.prompt_tokens,
                          completion_tokens=node.completion_tokens,
                          tokens_estimated=node.tokens_estimated,
                          problem="" if node.source is not None else node.message))
    return [CallView(node.id, i, len(calls), c, c.problem or "used")
            for i, c in enumerate(calls, 1)]


def _tokens(calls: list[CallView], usage: Usage) -> str:
    estimated = sum(v.call.tokens_estimated for v in calls)
    text = (f"{usage.llm_calls} LLM call(s): {usage.prompt_tokens} prompt + "
            f"{usage.completion_tokens} completion = {usage.tokens} tokens")
    return text + (f" ({estimated} call(s) counted by an estimate: the endpoint reported no "
                   f"usage)" if estimated else "")


def _detail(tree: SearchTree, node: Node) -> NodeDetail:
    parent = tree.nodes.get(node.parent) if node.parent else None
    repaired = tree.nodes.get(node.repair_of) if node.repair_of else None
    base: Node | None = None
    note = ""
    if parent is not None and parent.source is not None:
        base, note = parent, f"diff to the parent {parent.id}"
    elif repaired is not None and repaired.source is not None:
        base, note = repaired, f"diff to {repaired.id}, the candidate it repairs"
    diff = _diff(base, node)
    if base is not None and not diff and node.source is not None:
        note += " (identical)"
    checks: list[Check] = []
    pretty = ""
    if node.result_json:
        try:
            checks = EvalResult.model_validate_json(node.result_json).checks
        except ValidationError:
            checks = []
        try:
            pretty = json.dumps(json.loads(node.result_json), indent=1)
        except ValueError:
            pretty = node.result_json
    return NodeDetail(
        node=node, colour=STATUS_COLOURS.get(node.status, "#868e96"),
        best=node.id == tree.best_id, diff_base=base.id if base is not None else None,
        diff_note=note, diff=diff, checks=checks, result_json=pretty,
        children=sorted(c.id for c in tree.children(node.id)), calls=node_calls(node))


def _header(run: RunRecord, tree: SearchTree, task: Task, usage: Usage) -> list[tuple[str, str]]:
    search: dict[str, Any] = run.spec.settings.get("search", {})
    best = tree.best
    if best is None:
        best_txt = "no verified kernel"
    elif not tree.timed or best.speedup is None:
        best_txt = f"{best.id}: verified (the target {task.target} is not timed)"
    else:
        sim = f" (simulated on {task.target}: a model of the hardware, not a measurement)" \
            if task.simulated else " (measured)"
        best_txt = f"{best.id}: {best.speedup:.2f}x vs eager{sim}"
        if best.latency_ms is not None:
            best_txt += f", {best.latency_ms:.4g} ms"
    wall = search.get("wall_s")
    budget = [f"rounds {run.values.get('round', 0)} / {search.get('rounds', '?')}",
              f"wall {usage.wall_s:.1f} s / "
              + (f"{wall:g} s" if isinstance(wall, int | float) else "?"),
              f"evaluations {usage.evaluations}"]
    if usage.llm_calls:
        limit = search.get("tokens") or "no limit"
        budget.append(f"LLM calls {usage.llm_calls}, tokens {usage.tokens} / {limit} "
                      f"({usage.prompt_tokens} prompt, {usage.completion_tokens} completion)")
    models = sorted({n.model for n in tree.nodes.values() if n.model})
    synth = run.spec.synthesizer + (f" ({', '.join(models)})" if models
                                    and models != [run.spec.synthesizer] else "")
    candidates = len(tree.nodes) - 1
    return [
        ("problem", f"{task.problem_name} ({run.spec.problem_path})"),
        ("target", f"{task.target}: {task.target_description}"),
        ("synthesizer", synth),
        ("status", run.status),
        ("best", best_txt),
        ("goal", f"{task.goal:g}x vs eager"),
        ("budget used", "; ".join(budget)),
        ("candidates", f"{candidates}, {len(tree.verified())} verified, "
                       f"{tree.epoch} restart(s)"),
        ("run", f"{run.spec.run_id} (created {run.spec.created}, kernelevolve "
                f"{run.spec.version}{', interactive' if run.spec.interactive else ''})"),
        ("run directory", str(run.run_dir)),
    ]


def report_view(run: RunRecord) -> ReportView:
    """Everything the template shows, computed from a run."""
    values = run.values
    tree: SearchTree = values["tree"]
    task: Task = values["task"]
    usage: Usage = values.get("usage") or Usage()
    events: list[Event] = list(values.get("events") or [])
    chart = _chart_view(tree, events, usage, task.goal, task.simulated) if tree.timed else None
    if not tree.timed:
        chart_note = f"The target {task.target} only verifies (nothing is timed): no speedups."
    elif chart is None:
        chart_note = "No verified, timed candidate yet."
    else:
        chart_note = ""
    counts: dict[str, int] = {}
    for n in tree.nodes.values():
        if n.id != ROOT:
            counts[n.status] = counts.get(n.status, 0) + 1
    details = [_detail(tree, n) for n in tree.nodes.values()]
    calls = [c for d in details for c in d.calls]
    return ReportView(
        title=f"{task.problem_name} on {task.target}",
        header=_header(run, tree, task, usage), best_id=tree.best_id or ROOT,
        simulated=task.simulated, timed=tree.timed, task=task, tree=_tree_view(tree),
        chart=chart, chart_note=chart_note,
        nodes=details, calls=calls, tokens=_tokens(calls, usage) if calls else "",
        status_counts=[(s, STATUS_COLOURS.get(s, "#868e96"), c)
                       for s, c in sorted(counts.items())],
        knowledge=list(values.get("knowledge") or []),
        retrievals=[e for e in events if e.kind.value == "retrieve"],
        diagnosis=values.get("diagnosis"), constraints=list(values.get("constraints") or []),
        user_notes=list(values.get("user_notes") or []), events=events,
        event_kinds=sorted({e.kind.value for e in events}),
        generated=time.strftime("%Y-%m-%d %H:%M:%S %Z"))


def _csp_hash(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(ASSETS), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True,
                              lstrip_blocks=True, keep_trailing_newline=True)


def build_report(run: str | Path | RunRecord, settings: Settings | None = None) -> str:
    """The HTML report of a run (a run directory, a run id, or a loaded ``RunRecord``)."""
    record = run if isinstance(run, RunRecord) else load_run(run, settings)
    style = (ASSETS / "report.css").read_text() + "".join(
        f'.pill[data-status="{s}"] {{ background: {c}; }}\n' for s, c in STATUS_COLOURS.items())
    script = (ASSETS / "report.js").read_text()
    csp = (f"default-src 'none'; style-src '{_csp_hash(style)}'; "
           f"script-src '{_csp_hash(script)}'; img-src data:; base-uri 'none'; "
           "form-action 'none'")
    # The style and script are the package's own files, inserted verbatim (their CSP hashes
    # must match byte for byte); everything from the run goes through autoescaping.
    return _environment().get_template("report.html.j2").render(
        r=report_view(record), csp=csp, style=Markup(style), script=Markup(script))


def write_report(run: str | Path | RunRecord, out: Path | None = None,
                 settings: Settings | None = None) -> Path:
    """Write the report (default ``<run dir>/report.html``) and return its path."""
    record = run if isinstance(run, RunRecord) else load_run(run, settings)
    path = Path(out) if out is not None else record.run_dir / "report.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(build_report(record), encoding="utf-8")
    return path
