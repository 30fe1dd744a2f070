"""``kernelevolve aten``: generate the ATen operator suite from PyTorch's OpInfo database, and
list the curated operators and the skipped ones. The main CLI mounts ``app``; errors raise from
the KernelEvolveError hierarchy (the main CLI prints ``ErrorName: message`` and exits 1)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

app = typer.Typer(name="aten", no_args_is_help=True,
                  help="An ATen operator suite from PyTorch's OpInfo database.")
# Consoles are made when a command runs, not at import: a Console reads the terminal's width
# (COLUMNS) when it is made.


@app.command()
def generate(
    out: Annotated[Path, typer.Option("--out", help="directory for the problem files")],
    ops: Annotated[list[str] | None, typer.Option(
        "--ops", help="OpInfo names, repeated or comma-separated (default: the curated "
                      "list), e.g. add,nn.functional.conv2d,max.binary")] = None,
    dtype: Annotated[str, typer.Option("--dtype", help="the samples' dtype")] = "float32",
    samples: Annotated[int, typer.Option(
        "--samples", help="problems per operator: the largest sample, then its "
                          "non-contiguous form, then samples with new structure "
                          "(broadcasting, 0-dim tensors, scalars)")] = 1,
    max_elements: Annotated[int | None, typer.Option(
        "--max-elements", help="cap on a problem's largest tensor (default: a few million "
                               "elements, 1024x1024 operands for matmuls)")] = None,
) -> None:
    """Write one KernelBench-format problem per (operator, sample) and suite.json."""
    from kernelevolve.aten.generate import generate_suite

    names = [n.strip() for value in ops or [] for n in value.split(",") if n.strip()] or None
    console = Console()

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  console=console, transient=True) as progress:
        task = progress.add_task("loading the OpInfo database", total=None)

        def on_op(i: int, n: int, key: str) -> None:
            progress.update(task, description=key, completed=i, total=n)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # OpInfo samples of deprecated and beta ops
            suite = generate_suite(out, ops=names, dtype=dtype, samples=samples,
                                   max_elements=max_elements, on_op=on_op)
    console.print(f"{len(suite.problems)} problems in {out}", highlight=False, soft_wrap=True)
    table = Table("class", "problems")
    for cls, n in suite.classes().items():
        if n:
            table.add_row(cls, str(n))
    console.print(table)
    console.print(f"{len(suite.skipped)} operators left out (reasons in {out / 'suite.json'})",
                  highlight=False, soft_wrap=True)


@app.command("list")
def list_ops(
    skipped: Annotated[bool, typer.Option("--skipped", help="the skipped operators and why")]
    = False,
) -> None:
    """The curated operators by class (or, with --skipped, those left out and why)."""
    from kernelevolve.aten.ops import CLASSES, CURATED, SKIPPED

    if skipped:
        table = Table("operator", "reason")
        for key, reason in sorted(SKIPPED.items()):
            table.add_row(key, reason)
    else:
        table = Table("class", "operators", title=f"{len(CURATED)} curated operators",
                      title_justify="left")
        for cls in CLASSES:
            table.add_row(cls, " ".join(s.key for s in CURATED if s.op_class == cls))
    Console().print(table)
