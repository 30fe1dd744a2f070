"""The ``kernelevolve`` command: a thin typer + rich layer over the library API."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from kernelevolve.errors import KernelEvolveError

app = typer.Typer(
    name="kernelevolve", no_args_is_help=True, add_completion=False,
    help="Writes and tunes compute kernels: verified correct, honestly measured.",
)
console = Console()
err_console = Console(stderr=True)
_state = {"debug": False}

ConfigOption = Annotated[
    Path | None, typer.Option("--config", help="TOML config file (else KERNELEVOLVE_CONFIG)")
]


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
    from kernelevolve.tools.harness.pool import WorkerPool
    from kernelevolve.tools.harness.render import render_result

    overrides = {"eval": {"allowed_ops": allow_op}} if allow_op else {}
    settings = load_settings(config, **overrides)
    with WorkerPool(target, settings.eval, workers=1) as pool:
        if not json_out:
            err_console.print(f"[dim]evaluating {candidate} on {pool.target.name} "
                              f"({pool.target.description})[/dim]")
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
    from kernelevolve.tools.harness.pool import WorkerPool
    from kernelevolve.tools.harness.render import render_result

    chosen = [t.strip() for t in tools.split(",") if t.strip()]
    raw = {"raw_dir": str(raw_dir.resolve())} if raw_dir else {}
    settings = load_settings(config, eval={"profile": {"enabled": True, "tools": chosen, **raw}})
    with WorkerPool("cuda", settings.eval, workers=1) as pool:
        if not json_out:
            err_console.print(f"[dim]profiling {candidate} on {pool.target.description}[/dim]")
        result = pool.evaluate(problem, candidate)
    if json_out:
        print(result.model_dump_json(indent=2))
    else:
        render_result(result, console)
        if result.profile:
            render_profile(result.profile, console)
    raise typer.Exit(0 if result.ok else 1)


def _mount_subcommands() -> None:
    from kernelevolve.kb.cli import app as kb_app

    app.add_typer(kb_app, name="kb")


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
    console.print(table)


def main() -> None:
    """Console entry point: ``ErrorName: message`` and exit 1 on a kernelevolve error."""
    try:
        # Without standalone mode click returns a command's exit code instead of exiting.
        code = app(standalone_mode=False)
        sys.exit(code if isinstance(code, int) else 0)
    except KernelEvolveError as exc:
        if _state["debug"]:
            raise
        err_console.print(f"[bold red]{type(exc).__name__}[/bold red]: {exc}", highlight=False)
        sys.exit(1)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err_console.print("Aborted.")
        sys.exit(130)
    except Exception as exc:  # click usage errors arrive here with standalone_mode=False
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        raise


if __name__ == "__main__":
    main()
