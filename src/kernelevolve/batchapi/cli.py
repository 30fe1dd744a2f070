"""``kernelevolve batch``: tools for batch mode's files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

app = typer.Typer(no_args_is_help=True, help="Batch mode's files (llm.mode = batch).")


@app.command("answer")
def answer_cmd(
    requests: Annotated[Path, typer.Argument(help="a requests file a batch-mode run wrote")],
    out: Annotated[Path, typer.Option("--out", help="the replies file to write (the Batch "
                                                    "API's output format)")],
    model: Annotated[str | None, typer.Option(
        help="answer with this model (default: the one each request names)")] = None,
    base_url: Annotated[str | None, typer.Option(
        "--base-url", help="the OpenAI-compatible endpoint (default: llm.base_url, else "
                           "OpenAI's)")] = None,
    parallel: Annotated[int, typer.Option(help="requests in flight at once")] = 4,
    config: Annotated[Path | None, typer.Option(
        "--config", help="TOML config file (else KERNELEVOLVE_CONFIG)")] = None,
) -> None:
    """Send a requests file to a live endpoint and write its replies as the Batch API would;
    then `kernelevolve resume RUN --replies OUT`. Exits 1 where a request failed (its line
    says why; resume asks it again)."""
    from kernelevolve.batchapi.answer import answer
    from kernelevolve.batchapi.lines import BatchReply, BatchRequest, read_lines, write_lines
    from kernelevolve.config import load_settings

    settings = load_settings(config)
    cfg = settings.llm
    if base_url:
        cfg = cfg.model_copy(update={"base_url": base_url})
    lines = read_lines(requests, BatchRequest, "a Batch API request")
    console = Console(stderr=True)
    done = [0]

    def on_reply(reply: BatchReply) -> None:
        done[0] += 1
        mark = "ok" if reply.failure is None else reply.failure
        console.print(f"[{done[0]}/{len(lines)}] {reply.custom_id}: {mark}", highlight=False,
                      soft_wrap=True, markup=False)

    replies = answer(lines, cfg, model=model, parallel=parallel, on_reply=on_reply)
    write_lines(out, replies)
    failed = [r for r in replies if r.failure is not None]
    console.print(f"wrote {len(replies)} replies to {out}"
                  + (f" ({len(failed)} failed)" if failed else ""), highlight=False,
                  soft_wrap=True, markup=False)
    raise typer.Exit(1 if failed else 0)
