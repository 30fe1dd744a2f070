"""The package's parse: one at a time across threads."""

from __future__ import annotations

import gc
import threading

import pytest

from kernelevolve.pyparse import parse

# Enough nodes that building the tree runs a garbage collection part-way.
NESTED = ("x = " + "[" * 30 + "1" + ", 1]" * 30 + "\n") * 20


def test_a_parse_waits_while_another_thread_builds_its_tree():
    """CPython 3.11 keeps the AST builder's recursion depth per interpreter: a parse in one
    thread while another's tree is part-built fails the first with "SystemError: AST
    constructor recursion depth mismatch". Here the first parse is held part-built (in a gc
    callback, which runs inside the builder's allocations) while a second thread parses;
    without the lock the second finishes under it and the first fails."""
    held, release = threading.Event(), threading.Event()
    errors: list[SystemError] = []

    def hold(phase: str, info: dict) -> None:
        if phase == "start" and threading.current_thread() is first and not held.is_set():
            held.set()
            release.wait(timeout=30)

    def run(source: str) -> None:
        try:
            parse(source)
        except SystemError as exc:
            errors.append(exc)

    first = threading.Thread(target=run, args=(NESTED,))
    second = threading.Thread(target=run, args=("y = [[1], [2]]\n",))
    gc.collect()
    gc.callbacks.append(hold)
    try:
        first.start()
        assert held.wait(timeout=30), "no garbage collection ran while the tree was built"
        second.start()
        second.join(timeout=0.5)  # unlocked, it is done by now; locked, it waits for the first
    finally:
        release.set()
        gc.callbacks.remove(hold)
        first.join()
        second.join()
    assert errors == []


def test_a_syntax_error_names_the_file():
    with pytest.raises(SyntaxError) as exc:
        parse("def broken(:\n", "problem.py")
    assert exc.value.filename == "problem.py"
