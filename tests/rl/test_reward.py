"""The reward: its table on verdicts, and online through a real evaluation pool on the cpu
target (completions parsed as replies, evaluated by the harness's judge)."""

from __future__ import annotations

import math

import pytest

from kernelevolve.errors import ConfigError
from kernelevolve.rl import KernelReward, RewardSpec, completion_text, reward
from kernelevolve.tools.harness.pool import WorkerPool
from tests.rl.runs import Runs, crash_reply, reply


def test_the_reward_table() -> None:
    assert reward("cheat") == -1.0
    assert reward("crash") == reward("timeout") == -0.5
    for failed in ("no_code", "compile_error", "runtime_error", "mismatch"):
        assert reward(failed) == 0.0
    assert reward("ok") == 1.0  # not timed
    assert reward("ok", 1.0) == 1.0
    assert reward("ok", 2.0) == pytest.approx(1 + math.log10(2))
    assert reward("ok", 10.0) == pytest.approx(2.0)
    assert reward("ok", 0.01) == 0.5  # a slow verified kernel still beats any failure
    # above the harness's suspicious threshold only a re-verified speedup pays more
    assert reward("ok", 40.0) == pytest.approx(2.0)
    assert reward("ok", 40.0, reverified=True) == pytest.approx(1 + math.log10(40))
    assert reward("ok", 1e6, reverified=True) == pytest.approx(3.0)
    assert reward("ok", float("nan")) == 1.0
    speeds = [0.5, 1, 1.5, 3, 9]
    assert [reward("ok", s) for s in speeds] == sorted(reward("ok", s) for s in speeds)
    spec = RewardSpec(cheat=-5, suspicious_speedup=4)
    assert reward("cheat", spec=spec) == -5 and reward("ok", 8, spec=spec) == pytest.approx(
        1 + math.log10(4))


def test_completion_text_reads_standard_and_conversational_completions() -> None:
    assert completion_text("plain") == "plain"
    assert completion_text([{"role": "assistant", "content": "chat"}]) == "chat"
    assert completion_text([]) == ""
    with pytest.raises(TypeError):
        completion_text(3)


def test_online_reward_sends_completions_to_the_pool(runs: Runs, rl_pool: WorkerPool) -> None:
    reference = runs.problem.read_text()
    fn = KernelReward(rl_pool)
    completions = [[{"role": "assistant", "content": reply("repaired")}],
                   reply("cheat_torch"), crash_reply(), "random tokens, no code at all"]
    rewards = fn(["p"] * 4, completions, reference=[reference] * 4,
                 parent_source=[""] * 4, problem=["leaky"] * 4)
    assert rewards == [1.0, -1.0, -0.5, 0.0]
    statuses = [r.status.value if r is not None else None for r in fn.last]
    assert statuses == ["ok", "cheat", "crash", None]
    assert fn.__name__ == "kernelevolve_reward"
    # a SEARCH/REPLACE reply applies to the parent's source, as the graph's parser does
    good = reply("repaired").split("```python\n", 1)[1].split("\n```", 1)[0] + "\n"
    edit = ("```python\n<<<<<<< SEARCH\n    y = y * scale\n=======\n    y = y * scale * 2.0\n"
            ">>>>>>> REPLACE\n```\n")
    assert "    y = y * scale\n" in good
    assert fn(["p"], [edit], reference=[reference], parent_source=[good]) == [0.0]
    assert fn.last[0] is not None and fn.last[0].status.value == "mismatch"
    with pytest.raises(ConfigError, match="reference"):
        fn(["p"], ["x"])
