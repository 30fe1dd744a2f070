"""Terminal views of recorded runs (from the run store): the list of runs, a run's search tree
and events, and one candidate with its code, prompt, reply, evaluation, diagnosis and diff."""

from __future__ import annotations

import difflib

from rich.console import Console
from rich.markup import escape
from rich.rule import Rule
from rich.syntax import Syntax
from rich.tree import Tree

from kernelevolve.console import key_values, table_or_records
from kernelevolve.graph.search import ROOT, Call
from kernelevolve.graph.state import Event, EventKind
from kernelevolve.store.models import CandidateRecord, EventRecord, RunRecord

_STATUS_STYLE = {"ok": "green", "mismatch": "yellow", "timeout": "yellow", "no_code": "yellow",
                 "pending": "dim", "root": "bold"}


def status_text(status: str) -> str:
    style = _STATUS_STYLE.get(status, "red")
    return f"[{style}]{escape(status)}[/{style}]"


def speedup_text(speedup: float | None, *, timed: bool, simulated: bool) -> str:
    """``1.23x`` (``1.23x sim`` on a simulated target), ``not timed`` or ``-``."""
    if speedup is None:
        return "-" if timed else "not timed"
    return f"{speedup:.2f}x" + (" sim" if simulated else "")


def render_runs(runs: list[RunRecord], console: Console) -> None:
    """The table of ``kernelevolve runs`` (records where it does not fit: a run id is there
    to be copied into `trace` / `show`, never folded or cut)."""
    rows = []
    for r in runs:
        if r.best_node is None:
            best = "[red]none[/red]"
        else:
            best = escape(speedup_text(r.best_speedup, timed=r.timed, simulated=r.simulated))
            best = f"[green]{best}[/green]" if r.best_speedup is not None else best
        rows.append([escape(r.run_id), escape(r.problem), escape(r.target),
                     escape(r.synthesizer), best, str(r.rounds),
                     f"{r.candidates} ({r.verified} ok)", escape(r.status), escape(r.created)])
    table_or_records(console, ("run", "problem", "target", "synthesizer", "best", "rounds",
                               "candidates", "status", "created"), rows,
                     title=f"{len(runs)} run(s)")


def _node_label(run: RunRecord, c: CandidateRecord) -> str:
    parts = [f"[bold]{escape(c.node_id)}[/bold]", status_text(c.status)]
    if c.ok:
        parts.append(speedup_text(c.speedup, timed=run.timed, simulated=run.simulated))
    parts.append(f"[dim]r{c.round}[/dim] {escape(c.operator)}")
    if c.origin == "debugger":
        parts.append(f"[magenta]repair of {escape(c.repair_of or '?')}[/magenta]")
    elif c.origin != "coder":
        parts.append(f"[cyan]{escape(c.origin)}[/cyan]")
    if c.epoch:
        parts.append(f"[dim]epoch {c.epoch}[/dim]")
    intent = " ".join(c.intent.split())
    if intent:
        parts.append(f"[dim]{escape(intent[:70] + ('...' if len(intent) > 70 else ''))}[/dim]")
    if c.node_id == run.best_node:
        parts.append("[bold green]<- best[/bold green]")
    return "  ".join(parts)


def render_tree(run: RunRecord, candidates: list[CandidateRecord], console: Console) -> None:
    """A run's search tree: each node's id, status, speedup, round, operator, origin (repairs
    name what they fixed), a short intent; the best node marked."""
    status = escape(run.stop_reason or run.status)
    console.print(f"[bold]{escape(run.run_id)}[/bold]  {escape(run.problem)} on "
                  f"{escape(run.target)} ({escape(run.synthesizer)})  [dim]{status}[/dim]",
                  highlight=False, soft_wrap=True)
    goal = f", goal {run.goal:g}x" if run.goal is not None and run.timed else ""
    tree = Tree(f"[bold]{ROOT}[/bold]  the reference (eager PyTorch){goal}")
    branches = {ROOT: tree}
    ids = {c.node_id for c in candidates}
    # Parents are made before their children, so node-id order attaches every parent first.
    for c in sorted(candidates, key=lambda c: c.node_id):
        parent = c.parent if c.parent in ids or c.parent == ROOT else ROOT
        branches[c.node_id] = branches.get(parent or ROOT, tree).add(_node_label(run, c))
    console.print(tree, highlight=False)
    if run.best_node is None:
        console.print("[red]no verified kernel[/red]")
    else:
        speed = speedup_text(run.best_speedup, timed=run.timed, simulated=run.simulated)
        console.print(f"best: [green]{escape(run.best_node)}[/green] ({speed}); "
                      f"{run.candidates} candidate(s), {run.verified} verified, "
                      f"{run.rounds} round(s)", highlight=False)


def render_events(events: list[EventRecord], console: Console) -> None:
    """A run's trace, one line per event, as ``kernelevolve tune`` printed it."""
    from kernelevolve.graph.render import EventPrinter

    printer = EventPrinter(console)
    known = {k.value for k in EventKind}
    for e in events:
        if e.kind in known:
            printer(Event(kind=EventKind(e.kind), round=e.round, node_id=e.node_id, text=e.text,
                          at_s=e.at_s))
        else:
            console.print(f"{e.at_s:7.1f}s r{e.round:<3} {e.kind:<9} {e.text}", markup=False,
                          highlight=False)


def diff_base(run: RunRecord, cand: CandidateRecord, candidates: list[CandidateRecord]
              ) -> tuple[str, str]:
    """What a candidate is compared with: the failed code a repair fixed, else its parent's
    code; a child of the root is compared with the reference. Returns (label, source)."""
    by_id = {c.node_id: c for c in candidates}
    for label, ref in (("repair of", cand.repair_of), ("parent", cand.parent)):
        base = by_id.get(ref) if ref else None
        if base is not None and base.code is not None:
            return f"{label} {base.node_id}", base.code
    return "the reference (root)", run.reference_source


def unified_diff(old: str, new: str, old_label: str, new_label: str) -> list[str]:
    return list(difflib.unified_diff(old.splitlines(), new.splitlines(), old_label, new_label,
                                     lineterm=""))


def _section(console: Console, title: str) -> None:
    console.print(Rule(f"[bold]{title}[/bold]", align="left"))


def calls_of(cand: CandidateRecord) -> list[Call]:
    """Every synthesizer call behind a candidate, in order: the replies re-asked (no usable
    code, or a no-op), then the one whose reply it is (none for the offline synthesizer)."""
    calls = list(cand.reasks)
    if cand.prompt is not None or cand.reply is not None:
        calls.append(Call(system=cand.system, prompt=cand.prompt, reply=cand.reply,
                          model=cand.model, prompt_tokens=cand.prompt_tokens,
                          completion_tokens=cand.completion_tokens,
                          tokens_estimated=cand.tokens_estimated,
                          problem="" if cand.code is not None else cand.message))
    return calls


def tokens_text(call: Call, total: int | None = None) -> str:
    """``812 prompt + 345 completion tokens`` (``~`` in front of an estimate); a call recorded
    before the counts were kept apart shows its ``total``."""
    if not call.prompt_tokens and not call.completion_tokens:
        return f"{total} tokens" if total else "no token counts"
    mark = "~" if call.tokens_estimated else ""
    return (f"{mark}{call.prompt_tokens} prompt + {mark}{call.completion_tokens} completion "
            f"tokens" + (" (estimated)" if call.tokens_estimated else ""))


def run_tokens_text(candidates: list[CandidateRecord]) -> str:
    """The run's synthesizer calls and tokens, summed over its candidates."""
    calls = [c for cand in candidates for c in calls_of(cand)]
    prompt = sum(c.prompt_tokens for c in calls)
    completion = sum(c.completion_tokens for c in calls)
    estimated = sum(c.tokens_estimated for c in calls)
    text = f"{len(calls)} call(s), {prompt} prompt + {completion} completion tokens"
    return text + (f" ({estimated} call(s) estimated)" if estimated else "")


def render_candidate(run: RunRecord, cand: CandidateRecord, candidates: list[CandidateRecord],
                     console: Console) -> None:
    """One candidate: summary, code, every synthesizer call behind it (system message, prompt,
    reply, token counts), evaluation, diagnosis and the diff; and the run's token totals."""
    from kernelevolve.tools.harness.render import render_result
    from kernelevolve.tools.harness.result import EvalResult

    console.print(f"[bold]{escape(cand.node_id)}[/bold] of {escape(run.run_id)}  "
                  f"{status_text(cand.status)}  "
                  f"{speedup_text(cand.speedup, timed=run.timed, simulated=run.simulated)}",
                  highlight=False, soft_wrap=True)
    facts = [("parent", cand.parent), ("repair of", cand.repair_of),
             ("operator", cand.operator), ("origin", cand.origin),
             ("round / epoch", f"{cand.round} / {cand.epoch}"), ("intent", cand.intent),
             ("direction", cand.direction or None),
             ("latency", f"{cand.latency_ms:.4f} ms" + (" (simulated)" if run.simulated else "")
              if cand.latency_ms is not None else None),
             ("params", ", ".join(f"{k}={v}" for k, v in (cand.params or {}).items()) or None),
             ("model / tokens", f"{cand.model} / {cand.tokens}" if cand.model else None),
             ("message", cand.message if not cand.ok else None),
             ("run's calls", run_tokens_text(candidates)
              if any(calls_of(c) for c in candidates) else None)]
    key_values([(k, escape(str(v))) for k, v in facts if v], console)

    _section(console, "code")
    if cand.code is None:
        console.print("[dim](no code: the synthesizer gave none)[/dim]")
    else:
        console.print(Syntax(cand.code, "python", line_numbers=True, word_wrap=True))
    calls = calls_of(cand)
    if not calls:
        _section(console, "prompt")
        console.print("(none: the offline synthesizer uses no prompt)", highlight=False)
    for i, call in enumerate(calls, 1):
        of = f" (call {i} of {len(calls)})" if len(calls) > 1 else ""
        why = f"; not used: {call.problem}" if call.problem else ""
        console.print(f"[bold]call {i}[/bold] of {len(calls)}: {escape(call.model or '?')}, "
                      f"{escape(tokens_text(call, cand.tokens if len(calls) == 1 else None))}"
                      f"{escape(why)}", highlight=False)
        if call.system:
            _section(console, f"system message{of}")
            console.print(call.system, markup=False, highlight=False, soft_wrap=True)
        _section(console, f"prompt{of}")
        console.print(call.prompt or "(none)", markup=False, highlight=False, soft_wrap=True)
        _section(console, f"reply{of}")
        console.print(call.reply or "(none)", markup=False, highlight=False, soft_wrap=True)

    _section(console, "evaluation")
    result = EvalResult.model_validate_json(cand.result_json) if cand.result_json else None
    if result is None:
        console.print(f"(not evaluated) {cand.message}", markup=False, highlight=False)
    else:
        render_result(result, console)
    _section(console, "diagnosis")
    if cand.diagnosis is None and not (result is not None and result.profile):
        console.print("(none)", highlight=False)
    if cand.diagnosis is not None:
        d = cand.diagnosis
        frac = f", {d.roofline_fraction:.0%} of the roofline" if d.roofline_fraction else ""
        console.print(f"[bold]{d.kind}[/bold]{frac}  [dim](from {escape(d.source or '?')})[/dim]")
        if d.ceiling:
            floor = f": {d.ceiling_ms:.4g} ms" if d.ceiling_ms is not None else ""
            console.print(f"  ceiling: {d.ceiling}{floor}", markup=False, highlight=False)
        for line in d.evidence:
            console.print(f"  - {line}", markup=False, highlight=False)
    reports = result.profile if result is not None and result.profile else []
    # (the simulator's report holds per-kernel figures only: its diagnosis above says it all)
    if any(not r.available or r.kernels or r.notes or any(m.kernel is None for m in r.metrics)
           for r in reports):
        from kernelevolve.tools.diagnosis import render_profile

        render_profile(reports, console)

    label, base = diff_base(run, cand, candidates)
    _section(console, f"diff against {label}")
    if cand.code is None:
        console.print("(no code to compare)")
        return
    lines = unified_diff(base, cand.code, label, cand.node_id)
    if not lines:
        console.print("(identical)")
    for line in lines:
        style = ("bold" if line.startswith(("---", "+++")) else "green" if line.startswith("+")
                 else "red" if line.startswith("-") else "cyan" if line.startswith("@@") else "")
        console.print(line, style=style or None, markup=False, highlight=False, soft_wrap=True)


def render_reference(run: RunRecord, console: Console) -> None:
    """``show RUN root``: the reference program the run started from."""
    console.print(f"[bold]{ROOT}[/bold] of {escape(run.run_id)}: the reference "
                  f"({escape(run.problem_path or run.problem)})", highlight=False, soft_wrap=True)
    console.print(Syntax(run.reference_source, "python", line_numbers=True, word_wrap=True))
