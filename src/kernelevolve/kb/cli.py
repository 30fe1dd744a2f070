"""``kernelevolve kb``: add, search, list and remove knowledge-base documents.

The main CLI mounts ``app``. Errors are raised as KnowledgeBaseError (the main CLI prints
``ErrorName: message`` and exits 1). The store location comes from ``--path``, else from the
Settings object the main CLI puts in ``ctx.obj``, else from ``load_settings()`` (config file and
``KERNELEVOLVE_*`` environment).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from kernelevolve.console import table_or_records
from kernelevolve.kb.tiers import ADDABLE_TIERS, TIERS

if TYPE_CHECKING:
    from kernelevolve.config import KBConfig
    from kernelevolve.kb.store import KnowledgeBase

app = typer.Typer(
    name="kb",
    help="The knowledge base: documents for the agents and skills distilled from runs.",
    no_args_is_help=True,
)
# Consoles are made when a command runs, not at import: a Console reads the terminal's width
# (COLUMNS) when it is made.

PathOption = Annotated[
    Path | None, typer.Option("--path", help="knowledge-base directory (default: kb.path setting)")
]


def _config(ctx: typer.Context, path: Path | None) -> KBConfig:
    from kernelevolve.config import Settings, load_settings

    settings = ctx.obj if isinstance(ctx.obj, Settings) else load_settings()
    return settings.kb.model_copy(update={"path": path}) if path else settings.kb


def _open(ctx: typer.Context, path: Path | None) -> KnowledgeBase:
    from kernelevolve.kb.store import KnowledgeBase

    config = _config(ctx, path)
    with Progress(
        TextColumn("indexing the bundled corpus (first use)"),
        BarColumn(),
        MofNCompleteColumn(),
        console=Console(),
        transient=True,
    ) as progress:
        task = None

        def report(done: int, total: int) -> None:
            nonlocal task
            if task is None:
                task = progress.add_task("index", total=total)
            progress.update(task, completed=done)

        return KnowledgeBase.open(config, on_progress=report)


@app.command()
def add(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="markdown document to add")],
    tier: Annotated[
        str | None, typer.Option(help=f"one of {', '.join(ADDABLE_TIERS)} (else front matter)")
    ] = None,
    target: Annotated[
        str | None,
        typer.Option(
            help="any, cuda, cuda:<gpu>, rocm:<gpu>, mtia-sim:<gen> or cpu (else front matter)"
        ),
    ] = None,
    topic: Annotated[list[str] | None, typer.Option(help="topic tag; repeat for several")] = None,
    title: Annotated[
        str | None, typer.Option(help="title (else front matter or first heading)")
    ] = None,
    path: PathOption = None,
) -> None:
    """Add a document (or replace it, if this file was added before)."""
    from kernelevolve.kb.models import parse_target, parse_tier

    # Validate the cheap arguments before opening (and possibly indexing) the store.
    if tier is not None:
        parse_tier(tier, allowed=ADDABLE_TIERS)
    if target is not None:
        parse_target(target)
    kb = _open(ctx, path)
    info = kb.add_document(file, tier=tier, target=target, topics=topic or None, title=title)
    Console().print(
        f"added [bold]{info.doc_id}[/bold] ({info.tier}, target {info.target}, "
        f"{info.n_chunks} chunks) to {kb.path}", highlight=False, soft_wrap=True
    )


@app.command()
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="what to look for")],
    tier: Annotated[str | None, typer.Option(help=f"restrict to one of {', '.join(TIERS)}")] = None,
    target: Annotated[
        str | None, typer.Option(help="restrict to documents for this target")
    ] = None,
    k: Annotated[int, typer.Option("-k", min=1, max=50, help="number of results")] = 5,
    full: Annotated[bool, typer.Option(help="print the whole passage")] = False,
    path: PathOption = None,
) -> None:
    """Search the knowledge base."""
    from kernelevolve.kb.models import parse_target, parse_tier

    if tier is not None:
        parse_tier(tier)
    if target is not None:
        parse_target(target)
    hits = _open(ctx, path).search(query, tier=tier, target=target, k=k)
    console = Console()
    if not hits:
        console.print("no results")
        return
    rows = []
    for h in hits:
        body = h.text if full else " ".join(h.text.split()[:40]) + " ..."
        rows.append([escape(h.doc_id), escape(h.section), f"{h.distance:.3f}", h.tier,
                     escape(h.target), escape(" ".join(body.split()))])
    # Ids are copied into `kb rm`: records where the table would fold or cut them.
    table_or_records(console, ("document", "section", "distance", "tier", "target", "passage"),
                     rows, wrap={5: 60})


@app.command("list")
def list_documents(
    ctx: typer.Context,
    tier: Annotated[str | None, typer.Option(help=f"only this tier ({', '.join(TIERS)})")] = None,
    target: Annotated[str | None, typer.Option(help="only documents for this target")] = None,
    path: PathOption = None,
) -> None:
    """List documents (building the store on first use)."""
    from kernelevolve.kb.models import parse_target, parse_tier

    if tier is not None:
        parse_tier(tier)
    if target is not None:
        parse_target(target)
    kb = _open(ctx, path)
    infos = kb.list(tier=tier, target=target)
    rows = [[escape(i.doc_id), i.tier, escape(i.target), i.origin, str(i.n_chunks),
             escape(i.title)] for i in infos]
    console = Console()
    # Ids are copied into `kb rm`: records where the table would fold or cut them.
    table_or_records(console, ("id", "tier", "target", "origin", "chunks", "title"), rows,
                     wrap={5: 50}, title=escape(str(kb.path)))
    console.print(f"{len(infos)} documents")


@app.command("rm")
def remove(
    ctx: typer.Context,
    doc_id: Annotated[str, typer.Argument(metavar="ID", help="document id from `kb list`")],
    path: PathOption = None,
) -> None:
    """Remove a document you added, or a skill."""
    info = _open(ctx, path).remove(doc_id)
    Console().print(f"removed [bold]{info.doc_id}[/bold] ({info.n_chunks} chunks)",
                    highlight=False, soft_wrap=True)
