"""Rich rendering of an EvalResult for the terminal."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from kernelevolve.tools.harness.result import EvalResult

_STYLE = {"ok": "bold green", "mismatch": "bold yellow", "timeout": "bold yellow"}


def render_result(result: EvalResult, console: Console) -> None:
    style = _STYLE.get(result.status.value, "bold red")
    console.print(f"[{style}]{result.status.value}[/{style}]  {result.message}", highlight=False)
    console.print(f"[dim]target {result.target} · {result.device} · "
                  f"{result.elapsed_s:.1f} s[/dim]")
    if result.stages:
        console.print(f"[dim]stages: {result.stage_summary()}[/dim]", highlight=False)
    if result.checks:
        table = Table("check", "", "detail", title="checks", title_justify="left")
        for c in result.checks:
            mark = ("[yellow]skipped[/yellow]" if c.skipped else
                    "[green]pass[/green]" if c.passed else "[red]fail[/red]")
            table.add_row(c.name, mark, c.detail)
        console.print(table)
    if result.errors:
        table = Table("output", "shape", "dtype", "max abs err", "max rel err", "atol", "rtol",
                      title="error figures", title_justify="left")
        for e in result.errors:
            table.add_row(str(e.index), str(e.shape), e.dtype, f"{e.max_abs_error:.3g}",
                          f"{e.max_rel_error:.3g}", f"{e.atol:g}", f"{e.rtol:g}")
        console.print(table)
    if result.timing:
        t = result.timing
        table = Table("program", "median ms", "IQR ms", "CV", "trials", "speedup",
                      title="timing" + (" (simulated)" if t.simulated else ""),
                      title_justify="left")
        table.add_row("candidate", f"{t.candidate.median_ms:.4f}", f"{t.candidate.iqr_ms:.4f}",
                      f"{t.candidate.cv:.2%}", str(t.candidate.trials), "")
        table.add_row("eager", f"{t.eager.median_ms:.4f}", f"{t.eager.iqr_ms:.4f}",
                      f"{t.eager.cv:.2%}", str(t.eager.trials),
                      f"{t.speedup_vs_eager:.2f}x" if t.speedup_vs_eager else "")
        if t.compiled:
            table.add_row("torch.compile", f"{t.compiled.median_ms:.4f}",
                          f"{t.compiled.iqr_ms:.4f}", f"{t.compiled.cv:.2%}",
                          str(t.compiled.trials),
                          f"{t.speedup_vs_compiled:.2f}x" if t.speedup_vs_compiled else "")
        other = t.other_baseline
        if other is not None and not other.same_ops:
            table.add_row(f"eager, {other.baseline}", f"{other.eager.median_ms:.4f}",
                          f"{other.eager.iqr_ms:.4f}", f"{other.eager.cv:.2%}",
                          str(other.eager.trials),
                          f"{other.speedup_vs_eager:.2f}x" if other.speedup_vs_eager else "")
            if other.compiled:
                table.add_row(f"torch.compile, {other.baseline}",
                              f"{other.compiled.median_ms:.4f}", f"{other.compiled.iqr_ms:.4f}",
                              f"{other.compiled.cv:.2%}", str(other.compiled.trials),
                              f"{other.speedup_vs_compiled:.2f}x"
                              if other.speedup_vs_compiled else "")
        console.print(table)
        if t.baseline and not t.simulated:
            console.print(f"[dim]eager and torch.compile ran at {t.baseline}"
                          + ("; the other flags change no op of this problem"
                             if other is not None and other.same_ops else "") + "[/dim]",
                          highlight=False)
        if t.references_reused:
            console.print("[dim]eager and torch.compile were timed by an earlier evaluation of "
                          "this run at these sizes[/dim]")
        if t.simulated:
            console.print("[dim]simulated time from the chip model (not a measurement); "
                          "eager = one unfused kernel per aten op; no torch.compile reference[/dim]")
        elif t.compile_error:
            console.print(f"[yellow]torch.compile reference failed:[/yellow] {t.compile_error}")
    elif result.not_timed_reason:
        console.print(f"[dim]not timed: {result.not_timed_reason}[/dim]")
    if result.precision is not None:
        console.print(f"[dim]precision contract: {result.precision.summary()}[/dim]",
                      highlight=False)
        for line in result.precision.passed_under_it[:3]:
            console.print(f"[dim]  {line}[/dim]", highlight=False)
    if result.memory is not None and result.memory.judge_multiple is not None:
        m = result.memory
        console.print(f"[dim]device memory: judge peak {m.judge_peak_bytes / 2**30:.2f} GiB "
                      f"({m.judge_multiple:.1f}x the problem's "
                      f"{m.footprint_bytes / 2**30:.2f} GiB), candidate process "
                      f"{m.candidate_peak_bytes / 2**30:.2f} GiB[/dim]", highlight=False)
    for flag in result.flags:
        console.print(f"[yellow]flag:[/yellow] {flag}")
    if result.nondeterministic:
        console.print("[yellow]note:[/yellow] two runs on the same inputs differed bitwise "
                      "(within tolerance): the kernel is not deterministic")
    if not result.ok and result.stderr_tail.strip():
        console.print("[dim]stderr tail:[/dim]")
        console.print(result.stderr_tail[-1500:], markup=False, highlight=False)
