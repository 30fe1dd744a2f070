"""``ast.parse``, one call at a time across threads.

CPython 3.11 keeps the AST constructor's recursion depth in interpreter-wide state, so a parse
that starts while another thread's tree is part-built (the builder can pause in a garbage
collection, which may switch threads) fails one of them with "SystemError: AST constructor
recursion depth mismatch". A pool checks candidates from several threads while the graph
parses too, so the package's parses go through here; each takes a few milliseconds.

Stdlib only: evaluation workers import it.
"""

from __future__ import annotations

import ast
import threading
from typing import Literal, overload

__all__ = ["parse"]

_PARSING = threading.Lock()


@overload
def parse(source: str, filename: str = ..., mode: Literal["exec"] = ...) -> ast.Module: ...


@overload
def parse(source: str, filename: str = ..., *, mode: Literal["eval"]) -> ast.Expression: ...


def parse(source: str, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """``ast.parse(source, filename, mode)`` under the package's parse lock."""
    with _PARSING:
        return ast.parse(source, filename, mode)
