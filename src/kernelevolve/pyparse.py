"""``ast.parse``, one call at a time across threads.

CPython 3.11 keeps the AST constructor's recursion depth in interpreter-wide state, so a parse
that starts while another thread's tree is part-built (the builder can pause in a garbage
collection, which may switch threads) fails one of them with "SystemError: AST constructor
recursion depth mismatch". A pool checks candidates from several threads while the graph
parses too. The package's own parses went through a lock here, but libraries parse as well
(Triton's ``@triton.jit`` parses each kernel's source, langchain-core a runnable's function),
and a CI run failed the same way with the package's parse the victim of an unlocked one. So
importing the package puts ``ast.parse`` itself under the lock (``install``, once per process):
every caller, the package's or a library's, waits its turn. Each parse takes a few
milliseconds. The lock is re-entrant: a garbage collection inside a parse may run a finalizer
that parses.

Stdlib only: evaluation workers import it.
"""

from __future__ import annotations

import ast
import functools
import threading
from typing import Any, Literal, overload

__all__ = ["install", "parse"]

_PARSING = threading.RLock()
_ORIGINAL = getattr(ast.parse, "__wrapped__", ast.parse)


def _locked_parse(*args: Any, **kwargs: Any) -> Any:
    with _PARSING:
        return _ORIGINAL(*args, **kwargs)


def install() -> None:
    """Put ``ast.parse`` (every caller's in this process) under the parse lock; idempotent."""
    if getattr(ast.parse, "__wrapped__", None) is not _ORIGINAL:
        ast.parse = functools.wraps(_ORIGINAL)(_locked_parse)


@overload
def parse(source: str, filename: str = ..., mode: Literal["exec"] = ...) -> ast.Module: ...


@overload
def parse(source: str, filename: str = ..., *, mode: Literal["eval"]) -> ast.Expression: ...


def parse(source: str, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """``ast.parse(source, filename, mode)`` under the package's parse lock."""
    with _PARSING:
        return _ORIGINAL(source, filename, mode)


install()
