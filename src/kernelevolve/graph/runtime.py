"""What the agents need besides the state: the problem, the evaluator, the synthesizer, the
knowledge base and the run directory. Built once per process (graph/session.py) and bound into
the nodes by graph/build.py; never checkpointed (the state is)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kernelevolve.config import Settings
from kernelevolve.graph.rundir import write_kernel
from kernelevolve.graph.state import Event, EventKind, Usage
from kernelevolve.kb import KnowledgeSource
from kernelevolve.problem import Problem
from kernelevolve.synth.synthesizer import Synthesizer
from kernelevolve.targets import Target
from kernelevolve.tools.harness.pool import EvalPool


@dataclass
class Deps:
    settings: Settings
    problem: Problem
    target: Target
    pool: EvalPool
    synthesizer: Synthesizer
    kb: KnowledgeSource | None
    run_dir: Path
    interactive: bool = False
    on_event: Callable[[Event], None] | None = None
    device_name: str | None = None  # the device the worker reported (picks the kb target)
    kernel_out: Path | None = None  # the user's copy of the best kernel (tune's --out)
    _last_tick: float = field(default_factory=time.monotonic)

    def tick(self, usage: Usage) -> Usage:
        """``usage`` with the wall time since the last tick added (time in an interrupt, waiting
        for the user, is not counted: ``reset_clock`` after it)."""
        now = time.monotonic()
        out = usage.model_copy(update={"wall_s": usage.wall_s + (now - self._last_tick)})
        self._last_tick = now
        return out

    def stamp(self, wall_s: float) -> Usage:
        """For a branch of a batch: the run time now (``wall_s``, the run time at the last tick,
        plus the time since), without moving the clock; the branches run at once and the
        gather after them ticks once for the round."""
        return Usage(wall_s=wall_s + (time.monotonic() - self._last_tick))

    def write_best(self, source: str) -> None:
        """A new best kernel: ``best.py`` in the run directory and the user's copy."""
        write_kernel(self.run_dir / "best.py", source)
        if self.kernel_out is not None:
            write_kernel(self.kernel_out, source)

    def reset_clock(self) -> None:
        self._last_tick = time.monotonic()

    def rng(self, round_: int, salt: str = "") -> random.Random:
        """The search's random choices, reproducible per round (also after a resume)."""
        return random.Random(f"{self.settings.search.seed}:{round_}:{salt}")

    def event(self, kind: EventKind, round_: int, text: str, usage: Usage,
              node_id: str | None = None) -> Event:
        ev = Event(kind=kind, round=round_, node_id=node_id, text=text, at_s=round(usage.wall_s, 3))
        if self.on_event is not None:
            self.on_event(ev)
        return ev
