"""The ``kernelevolve`` command: a thin typer + rich layer over the library API."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kernelevolve.errors import KernelEvolveError

app = typer.Typer(
    name="kernelevolve", no_args_is_help=True, add_completion=False,
    help="Writes and tunes compute kernels: verified correct, honestly measured.",
)
# Consoles are made when a command runs, not at import: a Console reads the terminal's width
# (COLUMNS) when it is made.
_state = {"debug": False}

ConfigOption = Annotated[
    Path | None, typer.Option("--config", help="TOML config file (else KERNELEVOLVE_CONFIG)")
]
AllowOpOption = Annotated[list[str] | None, typer.Option(
    "--allow-op", help="library aten op a kernel may call, e.g. conv2d: the offline synthesizer "
    "then keeps it and fuses what follows (repeatable)")]


@app.callback()
def _root(debug: Annotated[bool, typer.Option("--debug", help="show tracebacks")] = False) -> None:
    _state["debug"] = debug


@app.command()
def check(
    problem: Annotated[Path, typer.Argument(help="KernelBench-format problem file")],
    candidate: Annotated[Path, typer.Argument(help="candidate file defining ModelNew")],
    target: Annotated[str | None, typer.Option(help="cpu, cuda, ... (default: detected)")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="print the EvalResult as JSON")] = False,
    allow_op: Annotated[list[str] | None, typer.Option(
        "--allow-op", help="aten op the candidate may call, e.g. conv2d (repeatable)")] = None,
    config: ConfigOption = None,
) -> None:
    """Verify (and on a GPU, time) one candidate against its reference. Exits 0 only if ok."""
    from kernelevolve.config import load_settings
    from kernelevolve.tools.harness.pool import make_pool
    from kernelevolve.tools.harness.render import render_result

    console, err_console = Console(), Console(stderr=True)
    overrides: dict[str, Any] = {"eval": {"allowed_ops": allow_op}} if allow_op else {}
    settings = load_settings(config, **overrides)
    with make_pool(target, settings.eval, workers=1) as pool:
        if not json_out:
            err_console.print(f"[dim]evaluating {candidate} on {pool.target.name} "
                              f"({pool.target.description})[/dim]", soft_wrap=True)
        result = pool.evaluate(problem, candidate)
    if json_out:
        print(result.model_dump_json(indent=2))
    else:
        render_result(result, console)
    raise typer.Exit(0 if result.ok else 1)


@app.command()
def profile(
    problem: Annotated[Path, typer.Argument(help="KernelBench-format problem file")],
    candidate: Annotated[Path, typer.Argument(help="candidate file defining ModelNew")],
    tools: Annotated[str, typer.Option(help="comma-separated instruments: torch,proton,ncu")]
    = "torch,proton,ncu",
    json_out: Annotated[bool, typer.Option("--json", help="print the EvalResult as JSON")] = False,
    raw_dir: Annotated[Path | None, typer.Option(
        "--raw-dir", help="keep the instruments' raw outputs (traces, CSV) here")] = None,
    config: ConfigOption = None,
) -> None:
    """Verify, time and profile one candidate on the GPU: each instrument's metrics and a
    diagnosis (memory-, compute-, occupancy- or launch-bound). Exits 0 only if ok."""
    from kernelevolve.config import load_settings
    from kernelevolve.tools.diagnosis import render_profile
    from kernelevolve.tools.harness.pool import make_pool
    from kernelevolve.tools.harness.render import render_result

    console, err_console = Console(), Console(stderr=True)
    chosen = [t.strip() for t in tools.split(",") if t.strip()]
    raw = {"raw_dir": str(raw_dir.resolve())} if raw_dir else {}
    settings = load_settings(config, eval={"profile": {"enabled": True, "tools": chosen, **raw}})
    with make_pool("cuda", settings.eval, workers=1) as pool:
        if not json_out:
            err_console.print(f"[dim]profiling {candidate} on {pool.target.description}[/dim]",
                              soft_wrap=True)
        result = pool.evaluate(problem, candidate)
    if json_out:
        print(result.model_dump_json(indent=2))
    else:
        render_result(result, console)
        if result.profile:
            render_profile(result.profile, console)
    raise typer.Exit(0 if result.ok else 1)


# The flags that set a search.* setting, so a bad value is reported as the user typed it.
SEARCH_FLAGS = {"search.goal": "--goal", "search.rounds": "--rounds", "search.wall_s": "--wall",
                "search.tokens": "--tokens", "search.strategy": "--strategy",
                "search.batch": "--batch"}


def _tune_settings(config: Path | None, **search: object) -> object:
    from kernelevolve.config import load_settings

    over = {k: v for k, v in search.items() if v is not None}
    return load_settings(config, flags=SEARCH_FLAGS, search=over) if over \
        else load_settings(config)


def _apply_run_flags(settings: Any, *, llm: str | None, no_kb: bool,
                     allow_op: list[str] | None, llm_mode: str | None = None) -> None:
    if llm:
        settings.llm.model = llm
    if llm_mode:
        from pydantic import ValidationError

        from kernelevolve.errors import ConfigError

        try:
            settings.llm.mode = llm_mode
        except ValidationError:
            raise ConfigError(f"--llm-mode {llm_mode!r}: one of 'online', 'batch'") from None
    if no_kb:
        settings.search.retrieve = settings.search.distill = False
    if allow_op:
        settings.eval.allowed_ops = sorted({*settings.eval.allowed_ops, *allow_op})


@contextmanager
def _interruptible(session: Any, err_console: Console) -> Iterator[None]:
    """Ctrl-C in a run: the Session closes on the way out (a local model server stops with it)
    and the user is told that the run is kept and how to continue it (or, before its first
    checkpoint, that there was nothing to keep: its directory goes)."""
    try:
        yield
    except (KeyboardInterrupt, typer.Abort):
        if session.has_checkpoint():
            err_console.print(f"\n[bold]interrupted[/bold]; the run is kept. Continue it with: "
                              f"kernelevolve resume {session.run_dir}", highlight=False,
                              soft_wrap=True)
        else:
            err_console.print("\n[bold]interrupted[/bold] before the run's first checkpoint: "
                              "nothing to resume, its directory is removed", highlight=False)
        raise typer.Exit(130) from None


def _say_run(session: Any, err_console: Console, verb: str = "run") -> None:
    """The run directory first (never cut: it is there to be copied), then the synthesizer."""
    err_console.print(f"[bold]{verb}[/bold] {session.run_dir}  ({session.target.name}, "
                      f"{session.deps.synthesizer.name})", highlight=False, soft_wrap=True)
    err_console.print(f"[dim]synthesizer {session.spec.synthesizer}: "
                      f"{session.spec.synthesizer_reason}[/dim]", highlight=False,
                      soft_wrap=True)


BATCH_HELP = ("candidates per round, drafted and evaluated at once (1-16; default 1: one at "
              "a time)")
LLM_MODE_HELP = ("online (ask the endpoint as the run goes) or batch (write the requests as an "
                 "OpenAI Batch API file and exit; `resume RUN --replies FILE` continues)")
LLM_HELP = ("a model at the configured endpoint, or 'offline', 'local', 'local:0.5b' to force "
            "that synthesizer (default: the endpoint if configured, else the installed local "
            "model, else offline)")


@app.command()
def tune(
    problem: Annotated[Path, typer.Argument(help="KernelBench-format problem file")],
    target: Annotated[str | None, typer.Option(
        help="cuda, mtia-sim:2i, cpu, ... (default: cuda on a GPU host, else mtia-sim:2i)")] = None,
    goal: Annotated[float | None, typer.Option(help="stop at this speedup vs eager")] = None,
    rounds: Annotated[int | None, typer.Option(help="budget: rounds")] = None,
    wall: Annotated[float | None, typer.Option("--wall", help="budget: wall seconds")] = None,
    tokens: Annotated[int | None, typer.Option(help="budget: LLM tokens")] = None,
    strategy: Annotated[str | None, typer.Option(help="mcts or evolutionary")] = None,
    batch: Annotated[int | None, typer.Option(help=BATCH_HELP)] = None,
    llm: Annotated[str | None, typer.Option(help=LLM_HELP)] = None,
    llm_mode: Annotated[str | None, typer.Option("--llm-mode", help=LLM_MODE_HELP)] = None,
    out: Annotated[Path | None, typer.Option(
        help="write the best kernel here (default: ./<problem>_tuned.py)")] = None,
    run_dir: Annotated[Path | None, typer.Option("--run-dir", help="the run's directory")] = None,
    no_kb: Annotated[bool, typer.Option("--no-kb", help="no knowledge retrieval/skills")] = False,
    quiet: Annotated[bool, typer.Option(help="only results, restarts and stops")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="print the TuneResult as JSON")] = False,
    allow_op: AllowOpOption = None,
    config: ConfigOption = None,
) -> None:
    """Search for a fast verified kernel for PROBLEM. Exits 0 when a verified kernel was found."""
    from kernelevolve.config import Settings
    from kernelevolve.graph.render import EventPrinter
    from kernelevolve.graph.rundir import default_kernel_out
    from kernelevolve.graph.session import Session

    settings = _tune_settings(config, goal=goal, rounds=rounds, wall_s=wall, tokens=tokens,
                              strategy=strategy, batch=batch)
    assert isinstance(settings, Settings)
    _apply_run_flags(settings, llm=llm, no_kb=no_kb, allow_op=allow_op, llm_mode=llm_mode)
    err_console = Console(stderr=True)
    printer = None if json_out else EventPrinter(err_console, quiet=quiet)
    kernel_out = out if out is not None else default_kernel_out(Path(problem).stem)
    with Session.create(problem, target=target, settings=settings, run_dir=run_dir,
                        kernel_out=kernel_out, on_event=printer) as session:
        _say_run(session, err_console)
        with _interruptible(session, err_console):
            result = session.run()
    _finish(result, json_out)


CHAT_HELP = ("Type guidance in plain words (it lands in every later prompt), or: "
             "'show best', 'show tree', 'continue' (or Enter), 'stop'.")


@app.command()
def chat(
    problem: Annotated[Path, typer.Argument(help="KernelBench-format problem file")],
    target: Annotated[str | None, typer.Option(
        help="cuda, mtia-sim:2i, cpu, ... (default: cuda on a GPU host, else mtia-sim:2i)")] = None,
    goal: Annotated[float | None, typer.Option(help="stop at this speedup vs eager")] = None,
    rounds: Annotated[int | None, typer.Option(help="budget: rounds")] = None,
    batch: Annotated[int | None, typer.Option(help=BATCH_HELP)] = None,
    llm: Annotated[str | None, typer.Option(help=LLM_HELP)] = None,
    run_dir: Annotated[Path | None, typer.Option("--run-dir", help="the run's directory")] = None,
    no_kb: Annotated[bool, typer.Option("--no-kb", help="no knowledge retrieval/skills")] = False,
    allow_op: AllowOpOption = None,
    config: ConfigOption = None,
) -> None:
    """An interactive tuning session: the run pauses after every round, shows what happened and
    takes your guidance ("try a persistent kernel", "show best", "stop")."""
    from kernelevolve.agents.planner import parse_guidance
    from kernelevolve.config import Settings
    from kernelevolve.graph.render import EventPrinter, render_tune_result
    from kernelevolve.graph.session import Session
    from kernelevolve.store import records_from_state

    settings = _tune_settings(config, goal=goal, rounds=rounds, batch=batch)
    assert isinstance(settings, Settings)
    _apply_run_flags(settings, llm=llm, no_kb=no_kb, allow_op=allow_op)
    console, err_console = Console(), Console(stderr=True)
    with Session.create(problem, target=target, settings=settings, run_dir=run_dir,
                        interactive=True, on_event=EventPrinter(err_console, quiet=True)
                        ) as session:
        _say_run(session, err_console)
        err_console.print(CHAT_HELP, highlight=False)
        told = False
        with _interruptible(session, err_console):
            result = session.run()
            while not result.finished:
                paused = result.paused or {}
                best = paused.get("best")
                console.print(f"[bold]round {result.rounds}[/bold]: "
                              f"{result.candidates} candidates, "
                              + (f"best {best['node']} {best['speedup']:.2f}x" if best
                                 and best.get("speedup") is not None else
                                 f"best {best['node']}" if best else "nothing verified yet"),
                              highlight=False)
                unread = paused.get("guidance_unread")
                if unread and not told:
                    console.print(f"[yellow]note[/yellow]: {unread}", highlight=False,
                                  soft_wrap=True)
                    told = True
                answer = typer.prompt("guidance", default="continue", show_default=False).strip()
                if answer.lower() in ("show best", "best"):
                    if result.kernel_path:
                        console.print(Path(result.kernel_path).read_text(), markup=False,
                                      highlight=False)
                    else:
                        console.print("no verified kernel yet")
                    continue
                if answer.lower() in ("show tree", "tree"):
                    from kernelevolve.graph.inspect import render_tree

                    run_rec, cands, _ = records_from_state(session.spec, session.values(),
                                                           session.run_dir)
                    render_tree(run_rec, cands, console)
                    continue
                if answer.lower() in ("help", "?"):
                    console.print(CHAT_HELP)
                    continue
                if unread and parse_guidance(answer)[1]:
                    console.print(f"[yellow]not read[/yellow]: {unread}; kept in the run's "
                                  "trace only", highlight=False, soft_wrap=True)
                result = session.run(answer)
    render_tune_result(result, console)
    _warn(result, console)
    raise typer.Exit(0 if result.best_node is not None else 1)


@app.command()
def resume(
    run: Annotated[str, typer.Argument(help="run id or run directory")],
    out: Annotated[Path | None, typer.Option(
        help="write the best kernel here (default: where the run's `tune` kept it, else "
             "./<problem>_tuned.py)")] = None,
    replies: Annotated[list[Path] | None, typer.Option(
        "--replies", help="batch mode: the Batch API's output file for the run's requests "
                          "(repeatable; an error file too)")] = None,
    quiet: Annotated[bool, typer.Option(help="only results, restarts and stops")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="print the TuneResult as JSON")] = False,
) -> None:
    """Continue a run that was killed or interrupted, from its last checkpoint; the best
    kernel is written as `tune` writes it (a finished run: written again). A batch-mode run
    that stopped for replies continues with them (--replies)."""
    from kernelevolve.graph.render import EventPrinter
    from kernelevolve.graph.rundir import default_kernel_out
    from kernelevolve.graph.session import Session

    err_console = Console(stderr=True)
    printer = None if json_out else EventPrinter(err_console, quiet=quiet)
    with Session.open(run, kernel_out=out, replies=replies or (), on_event=printer) as session:
        if session.spec.kernel_out is None:  # a chat run, or one from the library
            session.keep_best_at(default_kernel_out(session.problem.name))
        _say_run(session, err_console, "resuming")
        for intake in session.intakes:
            _say_intake(intake, err_console)
        with _interruptible(session, err_console):
            result = session.run()
    _finish(result, json_out)


def _warn(result: Any, console: Console) -> None:
    """A verified kernel that loses to eager or torch.compile: say so, plainly."""
    if result.advice:
        console.print(f"[bold yellow]warning[/bold yellow]: {escape(result.advice)}",
                      highlight=False, soft_wrap=True)


# `tune` and `resume` exit with this code where a batch-mode run stopped for replies.
EXIT_AWAITING_REPLIES = 3


def _say_intake(intake: Any, console: Console) -> None:
    """What a replies file brought: new replies, error lines (asked again), known ones."""
    parts = [f"{len(intake.new)} new"]
    if intake.known:
        parts.append(f"{len(intake.known)} answered before")
    if intake.errors:
        parts.append(f"{len(intake.errors)} error line(s), asked again")
    console.print(f"replies: {intake.file}: {', '.join(parts)}", highlight=False,
                  soft_wrap=True, markup=False)
    for cid, why in intake.errors.items():
        console.print(f"  {cid}: {why}", highlight=False, soft_wrap=True, markup=False)


def say_awaiting(run_dir: str, wanted: Any, console: Console) -> None:
    """A batch-mode stop: the requests file, why each was asked, and the commands to go on."""
    n = len(wanted.custom_ids)
    verb = "wrote" if wanted.new_file else "still waiting for the replies of"
    console.print(f"[bold]waiting for replies[/bold]: {verb} {n} request{'s' * (n != 1)} "
                  f"{'to' if wanted.new_file else 'in'} {escape(wanted.requests_file)}",
                  highlight=False, soft_wrap=True)
    if wanted.asked_before:
        console.print(f"  {len(wanted.asked_before)} of them were asked before and have no "
                      f"reply yet: {escape(', '.join(wanted.asked_before))}", highlight=False,
                      soft_wrap=True)
    for cid, why in wanted.errors.items():
        console.print(f"  asked again, its reply was an error: {escape(cid)}: {escape(why)}",
                      highlight=False, soft_wrap=True)
    console.print("Send the file to any OpenAI-compatible Batch API (purpose \"batch\", endpoint "
                  "/v1/chat/completions) and download its output file, or answer it against an "
                  "endpoint you can reach:", highlight=False, soft_wrap=True)
    console.print(f"  kernelevolve batch answer {escape(wanted.requests_file)} --out "
                  f"replies.jsonl", highlight=False, soft_wrap=True)
    console.print("then continue the run:", highlight=False)
    console.print(f"  kernelevolve resume {escape(run_dir)} --replies replies.jsonl",
                  highlight=False, soft_wrap=True)


def _finish(result: object, json_out: bool) -> None:
    from kernelevolve.graph.render import render_tune_result
    from kernelevolve.graph.rundir import TuneResult

    assert isinstance(result, TuneResult)
    if result.awaiting is not None:
        if json_out:
            print(result.model_dump_json(indent=2))
        say_awaiting(result.run_dir, result.awaiting, Console(stderr=True))
        raise typer.Exit(EXIT_AWAITING_REPLIES)
    if json_out:
        print(result.model_dump_json(indent=2))
        _warn(result, Console(stderr=True))
    else:
        console = Console()
        render_tune_result(result, console)
        _warn(result, console)
    raise typer.Exit(0 if result.best_node is not None else 1)


def _mount_subcommands() -> None:
    from kernelevolve.aten.cli import app as aten_app
    from kernelevolve.batchapi.cli import app as batch_app
    from kernelevolve.kb.cli import app as kb_app
    from kernelevolve.synth.llm.local.cli import app as llm_app

    app.add_typer(kb_app, name="kb")
    app.add_typer(llm_app, name="llm")
    app.add_typer(aten_app, name="aten")
    app.add_typer(batch_app, name="batch")


_mount_subcommands()


@app.command()
def targets() -> None:
    """List the targets this machine can evaluate on."""
    from kernelevolve.targets import get_target, target_names

    table = Table("target", "available", "timed", "description")
    for name in target_names():
        try:
            t = get_target(name)
            table.add_row(name, "yes", "yes" if t.timed else "no", t.description)
        except KernelEvolveError as exc:
            table.add_row(name, "no", "", str(exc))
    Console().print(table)


# -- runs: the store (listing, inspection, exchange) and benchmarks ------------------------------


if TYPE_CHECKING:
    from kernelevolve.config import Settings
    from kernelevolve.store import RunStore


def _open_store(config: Path | None) -> tuple[Settings, RunStore]:
    from kernelevolve.config import load_settings
    from kernelevolve.store import open_store

    settings = load_settings(config)
    return settings, open_store(settings.store)


@app.command()
def runs(
    json_out: Annotated[bool, typer.Option("--json", help="print the runs as JSON")] = False,
    config: ConfigOption = None,
) -> None:
    """List the runs (the run store, filled in from the runs directory)."""
    import json

    from kernelevolve.graph.inspect import render_runs
    from kernelevolve.store import scan_runs

    settings, store = _open_store(config)
    with store:
        scan = scan_runs(store, settings.runs.resolved_dir())
        records = store.runs()
    err_console = Console(stderr=True)
    for path, why in scan.skipped:
        err_console.print(f"[dim]skipped {escape(str(path))}: {escape(why)}[/dim]",
                          highlight=False, soft_wrap=True)
    if json_out:
        print(json.dumps([r.model_dump(mode="json", exclude={"reference_source"})
                          for r in records], indent=1))
    else:
        render_runs(records, Console())


RunArgument = Annotated[str, typer.Argument(help="run id (or a unique prefix) or run directory")]


def _run_records(run: str, config: Path | None, *, events: bool = False
                 ) -> tuple[Any, list[Any], list[Any]]:
    """A run's record, candidates and (with ``events``) events from the store."""
    from kernelevolve.store import locate_run

    settings, store = _open_store(config)
    with store:
        record = locate_run(store, run, settings.runs.resolved_dir())
        return (record, store.candidates(record.run_id),
                store.events(record.run_id) if events else [])


@app.command()
def trace(
    run: RunArgument,
    events: Annotated[bool, typer.Option("--events", help="also list the run's events")] = False,
    config: ConfigOption = None,
) -> None:
    """Show a run's search tree: each node's status, speedup, operator and lineage."""
    from rich.rule import Rule

    from kernelevolve.graph.inspect import render_events, render_tree

    record, candidates, trace_events = _run_records(run, config, events=events)
    console = Console()
    render_tree(record, candidates, console)
    if events:
        console.print(Rule("[bold]events[/bold]", align="left"))
        render_events(trace_events, console)


@app.command()
def show(
    run: RunArgument,
    node: Annotated[str, typer.Argument(help="node id, e.g. n0003 (or 3); 'root': the reference")],
    config: ConfigOption = None,
) -> None:
    """Show one candidate: code, prompt, reply, evaluation, diagnosis and diff to its parent."""
    from kernelevolve.errors import StoreError
    from kernelevolve.graph.inspect import render_candidate, render_reference

    record, candidates, _ = _run_records(run, config)
    console = Console()
    if node == "root":
        render_reference(record, console)
        return
    node_id = f"n{int(node):04d}" if node.isdigit() else node
    cand = next((c for c in candidates if c.node_id == node_id), None)
    if cand is None:
        raise StoreError(f"run {record.run_id} has no node '{node}'; its nodes: root, "
                         + ", ".join(c.node_id for c in candidates))
    render_candidate(record, cand, candidates, console)


@app.command()
def export(
    runs: Annotated[list[str] | None, typer.Argument(
        help="run ids or run directories (none: every run)")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="json: the file to write (default kernelevolve-runs.json); trl, verl, "
                      "jsonl: the directory (default kernelevolve-<format>)")] = None,
    fmt: Annotated[str, typer.Option(
        "--format", help="json (runs, for `kernelevolve import`), or training data: trl, "
                         "verl, jsonl (one record per synthesizer call)")] = "json",
    target: Annotated[str | None, typer.Option(help="only runs on this target")] = None,
    operator_class: Annotated[str | None, typer.Option(
        "--operator-class", help="only runs of this operator class, e.g. softmax")] = None,
    status: Annotated[list[str] | None, typer.Option(
        "--status", help="training data: only calls whose candidate got this status, e.g. "
                         "ok (repeatable)")] = None,
    config: ConfigOption = None,
) -> None:
    """Write runs with their candidates and events to one JSON file (`kernelevolve import`),
    or, with --format trl|verl|jsonl, their synthesizer calls as training data."""
    from kernelevolve.errors import ConfigError
    from kernelevolve.store import locate_run, scan_runs

    formats = ("json", "trl", "verl", "jsonl")
    if fmt not in formats:
        raise ConfigError(f"unknown --format {fmt!r}; one of: {', '.join(formats)}")
    if status and fmt == "json":
        raise ConfigError("--status filters training data (--format trl, verl or jsonl); "
                          "a json export holds whole runs")
    console = Console()
    settings, store = _open_store(config)
    with store:
        if runs:
            records = [locate_run(store, r, settings.runs.resolved_dir()) for r in runs]
        else:
            scan_runs(store, settings.runs.resolved_dir())
            records = store.runs()
        ids = [r.run_id for r in records
               if (target is None or r.target == target)
               and (operator_class is None or r.operator_class == operator_class)]
        if fmt == "json":
            path = out or Path("kernelevolve-runs.json")
            n = store.export_runs(path, ids if runs or target or operator_class else None)
            console.print(f"exported {n} run(s) to {path}", highlight=False, soft_wrap=True)
            return
        from kernelevolve.rl.export import ExportFilter, collect, write
        from kernelevolve.rl.redact import Redactor

        where = ExportFilter(target=target, operator_class=operator_class, statuses=status)
        trajectories = collect(store, ids, where)
    key = settings.llm.api_key.get_secret_value() if settings.llm.api_key else None
    directory = out or Path(f"kernelevolve-{fmt}")
    counts = write(trajectories, directory, fmt, Redactor.from_environment([key]), where)
    files = ", ".join(f"{name} {n}" for name, n in counts.items())
    console.print(f"exported {len(trajectories)} record(s) of {len(ids)} run(s) to "
                  f"{directory} ({files})", highlight=False, soft_wrap=True)


@app.command("import")
def import_(
    file: Annotated[Path, typer.Argument(help="a file written by `kernelevolve export`")],
    config: ConfigOption = None,
) -> None:
    """Add the runs of an export file to the run store (runs already there are updated)."""
    _, store = _open_store(config)
    with store:
        ids = store.import_runs(file)
        path = store.path
    console = Console()
    console.print(f"imported {len(ids)} run(s) into {path}", highlight=False, soft_wrap=True)
    for rid in ids:
        console.print(f"  {rid}", highlight=False, soft_wrap=True)


@app.command()
def bench(
    problems_dir: Annotated[Path, typer.Argument(help="directory of KernelBench-format problems")],
    target: Annotated[str | None, typer.Option(
        help="cuda, mtia-sim:2i, cpu, ... (default: as `tune`)")] = None,
    rounds: Annotated[int | None, typer.Option(help="budget per problem: expansions")] = None,
    out: Annotated[Path | None, typer.Option(
        help="directory for bench.json and bench.md (default: ./bench-<time>)")] = None,
    no_kb: Annotated[bool, typer.Option("--no-kb", help="no knowledge retrieval/skills")] = False,
    allow_op: AllowOpOption = None,
    llm: Annotated[str | None, typer.Option(help=LLM_HELP)] = None,
    llm_mode: Annotated[str | None, typer.Option("--llm-mode", help=LLM_MODE_HELP)] = None,
    replies: Annotated[list[Path] | None, typer.Option(
        "--replies", help="batch mode: the Batch API's output for the bench's requests file; "
                          "continues the bench in --out (repeatable)")] = None,
    config: ConfigOption = None,
) -> None:
    """Tune every problem in PROBLEMS_DIR; report correctness, fast_p and geomean speedups.
    In batch mode (--llm-mode batch) the runs' requests are gathered into one file per stop;
    `bench PROBLEMS_DIR --out DIR --replies FILE` continues."""
    import time

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from kernelevolve.bench import ProblemOutcome, render_report, run_bench
    from kernelevolve.config import load_settings
    from kernelevolve.graph.state import Event

    settings = load_settings(config)
    _apply_run_flags(settings, llm=llm, no_kb=no_kb, allow_op=allow_op, llm_mode=llm_mode)
    out_dir = out if out is not None else Path(f"bench-{time.strftime('%Y%m%d-%H%M%S')}")
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("bench", total=None)
        name = [""]

        def on_problem(i: int, n: int, path: Path) -> None:
            name[0] = path.stem
            progress.update(task, total=n, completed=i, description=path.stem)

        def on_event(ev: Event) -> None:
            progress.update(task, description=f"{name[0]} r{ev.round} {ev.kind.value}")

        def on_outcome(o: ProblemOutcome) -> None:
            progress.advance(task)
            mark = "[green]correct[/green]" if o.correct else f"[red]not correct[/red] {o.reason}"
            progress.console.print(f"{o.problem}: {mark}", highlight=False)

        report = run_bench(problems_dir, target=target, rounds=rounds, settings=settings,
                           out_dir=out_dir, on_problem=on_problem, on_outcome=on_outcome,
                           on_event=on_event, replies=replies)
    console = Console()
    render_report(report, console)
    console.print(f"written {out_dir / 'bench.json'} and {out_dir / 'bench.md'}",
                  highlight=False, soft_wrap=True)
    if report.requests_file:
        waiting = [o for o in report.problems if o.awaiting]
        err = Console(stderr=True)
        err.print(f"[bold]waiting for replies[/bold]: {len(waiting)} run(s); their requests "
                  f"are gathered in {escape(report.requests_file)}. Send it to any "
                  f"OpenAI-compatible Batch API (or `kernelevolve batch answer`), then:",
                  highlight=False, soft_wrap=True)
        err.print(f"  kernelevolve bench {escape(str(problems_dir))} --out {escape(str(out_dir))}"
                  f" --replies replies.jsonl", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_AWAITING_REPLIES)


@app.command()
def report(
    run: Annotated[str, typer.Argument(help="run id or run directory")],
    out: Annotated[Path | None, typer.Option(
        help="write the report here (default: <run dir>/report.html)")] = None,
    open_: Annotated[bool, typer.Option("--open", help="open it in the web browser")] = False,
    config: ConfigOption = None,
) -> None:
    """Write a run's self-contained HTML report: search tree, speedups over time, every
    candidate's code, diff, diagnosis, prompt and reply, and the event trace."""
    from kernelevolve.config import load_settings
    from kernelevolve.report import write_report

    path = write_report(run, out, settings=load_settings(config))
    Console().print(str(path), highlight=False, soft_wrap=True)
    if open_:
        import webbrowser

        webbrowser.open(path.resolve().as_uri())


def main() -> None:
    """Console entry point: ``ErrorName: message`` and exit 1 on a kernelevolve error."""
    try:
        # Without standalone mode click returns a command's exit code instead of exiting.
        code = app(standalone_mode=False)
        sys.exit(code if isinstance(code, int) else 0)
    except KernelEvolveError as exc:
        if _state["debug"]:
            raise
        # escaped: a message naming `pip install 'kernelevolve[aten]'` must keep its brackets
        Console(stderr=True).print(
            f"[bold red]{type(exc).__name__}[/bold red]: {escape(str(exc))}", highlight=False,
            soft_wrap=True)  # a path or a name in the message is there to be copied whole
        sys.exit(1)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        Console(stderr=True).print("Aborted.")
        sys.exit(130)
    except Exception as exc:  # click usage errors arrive here with standalone_mode=False
        # typer >= 0.25 vendors click as typer._click, so match the class by name: a usage
        # error from either click prints its usage line and message and exits 2.
        if any(cls.__name__ == "ClickException" for cls in type(exc).__mro__):
            exc.show()  # type: ignore[attr-defined]
            sys.exit(exc.exit_code)  # type: ignore[attr-defined]
        raise


if __name__ == "__main__":
    main()
