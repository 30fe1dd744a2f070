"""Terminal output of runs: live event lines while a run goes, a summary when it ends."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape

from kernelevolve.console import key_values
from kernelevolve.graph.rundir import TuneResult
from kernelevolve.graph.state import Event, EventKind

_STYLE = {
    EventKind.improve: "bold green", EventKind.evaluate: "", EventKind.stop: "bold",
    EventKind.restart: "yellow", EventKind.no_code: "yellow", EventKind.repair: "magenta",
    EventKind.guidance: "cyan", EventKind.plan: "dim", EventKind.retrieve: "dim",
    EventKind.draft: "dim", EventKind.distill: "blue",
}


class EventPrinter:
    """An ``on_event`` callback printing one line per event (quiet hides plan/retrieve/draft)."""

    def __init__(self, console: Console, quiet: bool = False) -> None:
        self.console, self.quiet = console, quiet

    def __call__(self, ev: Event) -> None:
        if self.quiet and ev.kind in (EventKind.plan, EventKind.retrieve, EventKind.draft):
            return
        style = _STYLE.get(ev.kind, "")
        self.console.print(f"[dim]{ev.at_s:7.1f}s r{ev.round:<3}[/dim] "
                           f"[{style}]{ev.kind.value:<9}[/{style}] {ev.text}"
                           if style else
                           f"[dim]{ev.at_s:7.1f}s r{ev.round:<3}[/dim] {ev.kind.value:<9} "
                           f"{ev.text}", highlight=False, soft_wrap=True)


SIMULATED = ("simulated: the times come from an analytical model of the chip (its published "
             "figures; docs/targets.md), not from a measurement on hardware")


def render_tune_result(result: TuneResult, console: Console) -> None:
    """A run's summary; a simulated result says what simulated means, and where the best
    kernel was written (or why nothing was)."""
    rows: list[tuple[str, str]] = [
        ("run", escape(result.run_id)), ("run directory", escape(result.run_dir)),
        ("target", escape(result.target)), ("synthesizer", escape(result.synthesizer)),
        ("status", escape("finished: " + (result.stop_reason or "") if result.finished
                          else "paused" if result.paused else "interrupted (resume it)")),
        ("rounds / candidates / verified",
         f"{result.rounds} / {result.candidates} / {result.verified}"),
        ("wall time", f"{result.usage.wall_s:.1f} s"),
    ]
    if result.usage.llm_calls:
        rows.append(("LLM calls / tokens", f"{result.usage.llm_calls} / {result.usage.tokens}"))
    if result.best_node is None:
        rows.append(("best", "[red]no verified kernel[/red]"))
        if result.kernel_out and Path(result.kernel_out).exists():
            rows.append(("kernel written to", f"nothing: {escape(result.kernel_out)} is not "
                                              "from this run"))
    else:
        sim = " (simulated)" if result.simulated else ""
        speed = (f"{result.best_speedup:.2f}x vs eager{sim}" if result.best_speedup is not None
                 else "verified (this target is not timed)")
        rows.append(("best", f"[green]{result.best_node}: {speed}[/green]"))
        if result.best_latency_ms is not None:
            rows.append(("best latency", f"{result.best_latency_ms:.4f} ms{sim}"))
        timing = result.best_result.timing if result.best_result else None
        if timing is not None and timing.speedup_vs_compiled is not None:
            rows.append(("vs torch.compile", f"{timing.speedup_vs_compiled:.2f}x"))
        if timing is not None and timing.baseline and not timing.simulated:
            rows.append(("speedups", escape(timing.speedup_line())))
        rows.append(("kernel", escape(str(result.kernel_path))))
        if result.kernel_out:
            rows.append(("kernel written to", f"[bold]{escape(result.kernel_out)}[/bold]"))
    key_values(rows, console)
    if result.simulated:
        console.print(f"[dim]{SIMULATED}[/dim]", highlight=False, soft_wrap=True)
