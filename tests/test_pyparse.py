"""The package's parse, and every library's ``ast.parse`` once the package is imported: one at a
time across threads."""

from __future__ import annotations

import ast
import gc
import threading

import pytest

from kernelevolve.pyparse import install, parse

# Enough nodes that building the tree runs a garbage collection part-way.
NESTED = ("x = " + "[" * 30 + "1" + ", 1]" * 30 + "\n") * 20


@pytest.mark.parametrize("second_parse", [parse, lambda source: ast.parse(source)],
                         ids=["package", "library"])
def test_a_parse_waits_while_another_thread_builds_its_tree(second_parse):
    """CPython 3.11 keeps the AST builder's recursion depth per interpreter: a parse in one
    thread while another's tree is part-built fails the first with "SystemError: AST
    constructor recursion depth mismatch". Here the first parse is held part-built (in a gc
    callback, which runs inside the builder's allocations) while a second thread parses;
    without the lock the second finishes under it and the first fails. The second parses
    through the package's ``parse`` or, as Triton's jit and langchain-core do, through
    ``ast.parse`` itself (a CI run failed so: the package's parse the victim of a library's)."""
    held, release = threading.Event(), threading.Event()
    errors: list[SystemError] = []

    def hold(phase: str, info: dict) -> None:
        if phase == "start" and threading.current_thread() is first and not held.is_set():
            held.set()
            release.wait(timeout=30)

    def run(how, source: str) -> None:
        try:
            how(source)
        except SystemError as exc:
            errors.append(exc)

    first = threading.Thread(target=run, args=(parse, NESTED))
    second = threading.Thread(target=run, args=(second_parse, "y = [[1], [2]]\n"))
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


def test_ast_parse_keeps_its_signature_and_install_is_idempotent():
    import kernelevolve  # noqa: F401  (importing the package installs the lock)

    locked = ast.parse
    assert locked.__wrapped__ is not None and locked.__name__ == "parse"
    install()
    assert ast.parse is locked  # not wrapped twice
    tree = ast.parse("x = 1  # type: int\n", "f.py", type_comments=True)
    assert tree.body[0].type_comment == "int"
    assert isinstance(ast.parse("1 + 2", mode="eval"), ast.Expression)
