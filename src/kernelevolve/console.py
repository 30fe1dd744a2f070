"""Terminal output that never cuts what a user copies (run ids, paths): at 80 columns, in a pipe
(rich then assumes 80 columns) or in a terminal of any width.

A rich table squeezed below its natural width wraps, folds or cuts (``…``) its cells; a run id
folded over eight lines cannot be copied. So a table is printed only where it fits whole, and
otherwise as records, one per row, whose lines the terminal wraps (``soft_wrap``) and a pipe
passes on intact. Key-value summaries are aligned lines, never a table.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Column, Table


def key_values(rows: Sequence[tuple[str, str]], console: Console) -> None:
    """Aligned ``key  value`` lines (values are rich markup: escape what is not)."""
    width = max((len(k) for k, _ in rows), default=0)
    for k, v in rows:
        console.print(f"[bold]{escape(k)}[/bold]{' ' * (width - len(k))}  {v}", highlight=False,
                      soft_wrap=True)


def fits(table: Table, console: Console) -> bool:
    """Whether ``table`` prints at its natural width (nothing wrapped, folded or cut)."""
    # measured without the console's limit (a measurement is clamped to the width it is given)
    wide = console.options.update(width=10_000, max_width=10_000)
    return Measurement.get(console, wide, table).maximum <= console.width


def table_or_records(console: Console, headers: Sequence[str], rows: Sequence[Sequence[str]],
                     *, whole: Collection[int] = (0,), wrap: Mapping[int, int] | None = None,
                     title: str | None = None) -> None:
    """``rows`` (rich markup) as a table where it fits the console, else as records: the
    ``whole`` columns (ids, paths) on the record's first line, then ``header value`` pairs.
    ``wrap``: free-text columns that may wrap within a width (column index -> width); a long
    message then does not push the table into records."""
    if title is not None:
        console.print(title, highlight=False, soft_wrap=True)
    wrap = wrap or {}
    table = Table(*(Column(h, no_wrap=i in whole, max_width=wrap.get(i), overflow="fold")
                    for i, h in enumerate(headers)))
    for row in rows:
        table.add_row(*row)
    if fits(table, console):
        console.print(table)
        return
    for row in rows:
        console.print("  ".join(f"[bold]{row[i]}[/bold]" for i in sorted(whole)),
                      highlight=False, soft_wrap=True)
        rest = [f"[dim]{escape(h)}[/dim] {row[i]}" for i, h in enumerate(headers)
                if i not in whole and row[i]]
        console.print("  " + "  ".join(rest), highlight=False, soft_wrap=True)
