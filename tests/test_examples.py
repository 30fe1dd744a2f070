"""Every example solution is verified by the harness on the cpu target (Triton's interpreter)."""

from __future__ import annotations

from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SOLUTIONS = sorted((EXAMPLES / "solutions").glob("[0-9]*.py"))


def test_enough_examples():
    problems = sorted((EXAMPLES / "problems").glob("[0-9]*.py"))
    assert len(problems) >= 12 and len(SOLUTIONS) >= 6
    assert {s.name for s in SOLUTIONS} <= {p.name for p in problems}


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: p.stem)
def test_solution_is_verified(cpu_pool, solution):
    result = cpu_pool.evaluate(EXAMPLES / "problems" / solution.name, solution)
    assert result.status == "ok", f"{result.status}: {result.message}\n{result.stderr_tail}"
    assert result.kernel_launches >= 1
    assert any(c.name == "correct on other shapes" for c in result.checks)
