"""The one reward for post-training a kernel-writing model, derived from the harness's verdict.

``reward`` maps a verdict to a number, the same way offline (an exported record: its status,
speedup and whether the harness re-verified it) and online (``KernelReward``: a TRL GRPO
``reward_func`` that sends each completion to a real evaluation pool):

=====================================================  =========================================
verdict                                                reward (``RewardSpec`` defaults)
=====================================================  =========================================
``cheat`` (the judge caught a trick)                   -1.0
``crash``, ``timeout`` (killed a worker, hung)         -0.5
any other failure: no usable code in the reply,        0.0
``compile_error``, ``runtime_error``, ``mismatch``
verified, not timed (the ``cpu`` target)               1.0
verified and timed, speedup ``s`` vs eager             1.0 + log10(s), at least 0.5; ``s`` is
                                                       capped at ``eval.suspicious_speedup``
                                                       (10x) unless the harness re-verified it
                                                       on fresh inputs and shapes (then at 100x)
=====================================================  =========================================

So every verified kernel scores above every failure, a failure that costs the pool (a crash, a
hang) below a plain one and a cheat lowest; speed counts in decades (2x: 1.30, 10x: 2.0), and a
figure the harness has not confirmed cannot pay more than 10x. The reward is only as safe to
optimise as the judge is hard to fool: the judge (two processes, fresh inputs, anti-cheat checks)
is what stands between a policy and a reward hack, so train only on verdicts of this harness.
"""

from __future__ import annotations

import hashlib
import math
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kernelevolve.errors import ConfigError
from kernelevolve.problem import Problem, load_problem
from kernelevolve.synth.llm.reply import parse_reply
from kernelevolve.tools.harness.pool import EvalPool
from kernelevolve.tools.harness.result import EvalResult

REVERIFIED = "re-verified on fresh inputs and shapes"  # the harness's flag (Evaluation.reverify)
NO_CODE = "no_code"


class RewardSpec(BaseModel):
    """The reward's constants (the table in this module's docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cheat: float = -1.0
    crash: float = Field(-0.5, description="crash and timeout")
    failure: float = Field(0.0, description="no code, compile_error, runtime_error, mismatch")
    verified: float = Field(1.0, description="a verified kernel at eager's speed, or untimed")
    per_decade: float = Field(1.0, description="added per 10x of speedup vs eager")
    floor: float = Field(0.5, description="the least a verified kernel scores")
    suspicious_speedup: float = Field(10.0, gt=1, description="cap unless re-verified")
    max_speedup: float = Field(100.0, gt=1, description="cap of a re-verified speedup")


DEFAULT_SPEC = RewardSpec()


def reward(status: str, speedup: float | None = None, *, reverified: bool = False,
           spec: RewardSpec = DEFAULT_SPEC) -> float:
    """The reward of one verdict: ``status`` (an ``EvalStatus`` value or ``no_code``),
    ``speedup`` vs eager (None: not timed), ``reverified``: the harness re-verified a speedup
    above its suspicious threshold."""
    if status == "cheat":
        return spec.cheat
    if status in ("crash", "timeout"):
        return spec.crash
    if status != "ok":
        return spec.failure
    if speedup is None or not math.isfinite(speedup) or speedup <= 0:
        return spec.verified
    cap = spec.max_speedup if reverified else spec.suspicious_speedup
    graded = spec.verified + spec.per_decade * math.log10(min(speedup, cap))
    return max(spec.floor, graded)


def result_reward(result: EvalResult, spec: RewardSpec = DEFAULT_SPEC) -> float:
    """The reward of an ``EvalResult``."""
    return reward(result.status.value, result.speedup,
                  reverified=any(REVERIFIED in f for f in result.flags), spec=spec)


def completion_text(completion: Any) -> str:
    """The text of a completion as TRL passes it: a string (standard datasets) or a list of
    messages (conversational ones; the assistant's last message)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence):
        for message in reversed(completion):
            if isinstance(message, dict) and message.get("role", "assistant") == "assistant":
                return str(message.get("content") or "")
        return ""
    raise TypeError(f"a completion is a string or a list of messages, not "
                    f"{type(completion).__name__}")


class KernelReward:
    """A TRL ``reward_func``: each completion is parsed like a synthesizer reply and sent to the
    evaluation ``pool``; its reward is ``result_reward`` of the verdict (``spec.failure`` when
    the reply holds no usable code).

    The dataset needs a ``reference`` column (the problem's source: the judge's reference
    program) and may have ``parent_source`` (what SEARCH/REPLACE edits apply to) and
    ``problem`` (a name for the problem file); ``kernelevolve export --format trl`` writes
    them. TRL passes dataset columns to the reward function by name.

        with make_pool("cuda", EvalConfig()) as pool:
            GRPOTrainer(model, reward_funcs=KernelReward(pool), train_dataset=ds, ...)

    ``last`` holds the verdicts of the latest call (None where there was no code), for logs.
    """

    __name__ = "kernelevolve_reward"  # TRL names the reward in its logs by __name__

    def __init__(self, pool: EvalPool, spec: RewardSpec = DEFAULT_SPEC,
                 problems_dir: str | Path | None = None) -> None:
        self.pool = pool
        self.spec = spec
        self._dir = Path(problems_dir) if problems_dir is not None else Path(
            tempfile.mkdtemp(prefix="kernelevolve-reward-"))
        self._problems: dict[str, Problem] = {}
        self._lock = threading.Lock()
        self.last: list[EvalResult | None] = []

    def problem(self, reference: str, name: str = "problem") -> Problem:
        """The problem whose source is ``reference`` (written once to a file: Triton and the
        harness import problems from files)."""
        digest = hashlib.sha256(reference.encode()).hexdigest()[:16]
        with self._lock:
            if digest not in self._problems:
                stem = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "problem"
                path = self._dir / f"{stem}_{digest}.py"
                self._dir.mkdir(parents=True, exist_ok=True)
                path.write_text(reference)
                self._problems[digest] = load_problem(path)
            return self._problems[digest]

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], *,
                 reference: Sequence[str] | None = None,
                 parent_source: Sequence[str | None] | None = None,
                 problem: Sequence[str] | None = None, **_: Any) -> list[float]:
        if reference is None:
            raise ConfigError("KernelReward needs a 'reference' column in the dataset (the "
                              "problem's source); export it with `kernelevolve export --format "
                              "trl` (grpo.jsonl has it)")
        if len(reference) != len(completions):
            raise ValueError(f"{len(completions)} completions but {len(reference)} references")
        sources: list[str | None] = []
        for i, completion in enumerate(completions):
            parent = parent_source[i] if parent_source is not None else None
            sources.append(parse_reply(completion_text(completion), parent or None).source)
        results: list[EvalResult | None] = [None] * len(completions)
        by_problem: dict[str, list[int]] = {}
        for i, source in enumerate(sources):
            if source is not None:
                by_problem.setdefault(reference[i], []).append(i)
        for ref, indices in by_problem.items():
            name = problem[indices[0]] if problem is not None else "problem"
            verdicts = self.pool.evaluate_many(self.problem(ref, name),
                                               [sources[i] or "" for i in indices])
            for i, verdict in zip(indices, verdicts, strict=True):
                results[i] = verdict
        self.last = results
        return [self.spec.failure if r is None else result_reward(r, self.spec)
                for r in results]
