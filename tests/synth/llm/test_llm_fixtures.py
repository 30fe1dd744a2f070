"""The reply fixtures are what they claim: the good ones pass the harness on the cpu target, the
broken ones fail with the status a real evaluation gives them."""

from __future__ import annotations

import pytest

from kernelevolve.config import EvalConfig
from kernelevolve.synth.llm.reply import parse_reply
from kernelevolve.tools.harness.pool import WorkerPool
from tests.synth.conftest import PROBLEM, fenced_code, reply_text

# Passing ones first: the pool restarts its worker after each failure (several seconds here).
EXPECTED = {
    "good_block256": {"ok"},
    "good_block1024": {"ok"},
    "repaired": {"ok"},
    "think_good": {"ok"},
    "edit_block": {"ok"},
    # a misspelt name in the kernel: a CompilationError on a GPU, a NameError in the interpreter
    "compile_error": {"compile_error", "runtime_error"},
    "cheat_torch": {"cheat"},
    # outputs memoized across calls (a global): refused by the static check
    "cheat_cache": {"cheat"},
    "wrong_math": {"mismatch"},
}


@pytest.fixture(scope="module")
def pool():
    with WorkerPool("cpu", EvalConfig(n_input_sets=2), workers=1) as p:
        yield p


@pytest.mark.parametrize("name", list(EXPECTED))
def test_fixture_status(pool, name):
    parent = fenced_code("good_block256") if name == "edit_block" else None
    parsed = parse_reply(reply_text(name), parent)
    assert parsed.source is not None, parsed.problem
    result = pool.evaluate(PROBLEM, parsed.source)
    assert result.status.value in EXPECTED[name], result.message[:500]
    if name == "cheat_torch":
        assert "leaky_relu" in result.message and "clamp" in result.message
