"""The offline synthesizer as a Synthesizer: a fresh expansion gets the template's default (or,
after a restart, a random) configuration; inherit mutates the parent's parameters as its diagnosis
suggests; compare starts from the fastest sibling; combine crosses parent and partner; a repair
picks a safer configuration.
"""

from __future__ import annotations

import random

from kernelevolve.errors import SynthesisError
from kernelevolve.graph.state import Draft, PromptState
from kernelevolve.problem import Problem
from kernelevolve.synth import offline

# Tries to find parameters not yet evaluated before giving up on novelty.
_NOVELTY_TRIES = 12


class OfflineSynthesizer:
    """Kernel templates traced from the reference, tuned by diagnosis-guided mutation."""

    name = "offline"
    reads_knowledge = False  # templates and parameters; retrieved text would go unread
    reads_guidance = False  # likewise a user's guidance

    def __init__(self, problem: Problem, seed: int = 0, opt_in: bool = False,
                 tf32: bool = False) -> None:
        try:
            # the space it explores: a template's opt-in values only where asked (``opt_in``:
            # search.fp16x3); one TF32 product in convolutions where the precision contract
            # allows it (``tf32``: tf32_allowed)
            plan = offline.analyze(problem)
            # the second fresh draft where the default takes one TF32 product: the same
            # configuration at fp32-level precision, since the baseline's error is measured, not
            # assumed (cuDNN computes some convolutions exactly even with TF32 allowed: KernelBench
            # 76 on an H100), and a round's drafts are written before any is judged
            self._hedge: dict[str, int] | None = None
            if tf32:
                from kernelevolve.synth.offline.families.conv.template import with_tf32

                exact = plan.default_params()
                plan = with_tf32(plan)
                if plan.default_params() != exact:
                    self._hedge = exact
            self.plan = plan.searched(opt_in)
        except offline.Unsupported as exc:
            raise SynthesisError(
                f"the offline synthesizer cannot write a kernel for {problem.path.name}: {exc}. "
                "Configure an LLM (`--llm MODEL` with KERNELEVOLVE_LLM__BASE_URL, or "
                "KERNELEVOLVE_LLM__MODEL) to tune this operator") from exc
        self._rng = random.Random(seed)
        self._tried: set[tuple[tuple[str, int], ...]] = set()

    def _key(self, params: dict[str, int]) -> tuple[tuple[str, int], ...]:
        return tuple(sorted(params.items()))

    def _draft(self, params: dict[str, int], intent: str) -> Draft:
        self._tried.add(self._key(params))
        try:
            source = self.plan.render(params)
        except offline.Unsupported as exc:  # data: the Coder records it and the search moves on
            return Draft(problem=f"the template cannot render {params}: {exc}", params=params,
                         intent=intent, model="offline")
        return Draft(source=source, params=params, intent=intent, model="offline", prompt=None,
                     reply=None)

    def _random(self) -> dict[str, int]:
        return {k: self._rng.choice(v) for k, v in self.plan.space.items()}

    def _novel(self, params: dict[str, int], intent: str, diagnosis: str | None
               ) -> tuple[dict[str, int], str]:
        """Mutate again while the configuration was already tried."""
        tries = 0
        while self._key(params) in self._tried and tries < _NOVELTY_TRIES:
            params, intent = offline.mutate(self.plan, params, diagnosis, self._rng)
            tries += 1
        return params, intent

    def write(self, ps: PromptState) -> Draft:
        diagnosis = ps.diagnosis.kind if ps.diagnosis is not None else None
        parent = ps.parent
        if ps.operator == "fresh" or parent is None or parent.params is None:
            first = not self._tried
            if first:
                params, why = (self.plan.default_params(),
                               f"{self.plan.description}: template defaults")
            elif self._hedge is not None:
                params, why = self._hedge, (
                    f"{self.plan.description}: template defaults with fp32-level products "
                    f"(where the baseline turns out to compute this operator exactly)")
                self._hedge = None
            else:
                params, why = self._random(), f"{self.plan.description}: a fresh configuration"
            params, why = self._novel(params, why, diagnosis)
            return self._draft(params, why)
        base = parent.params
        if ps.operator == "compare":
            better = [s for s in ps.siblings if s.params and s.status == "ok"
                      and (s.speedup or 0) > (parent.speedup or 0)]
            if better:
                base = max(better, key=lambda s: s.speedup or 0).params or base
        if ps.operator == "combine" and ps.siblings and ps.siblings[0].params:
            params = offline.crossover(self.plan, base, ps.siblings[0].params, self._rng)
            intent = f"crossover of {parent.node_id} and {ps.siblings[0].node_id}"
            if self._key(params) in self._tried:
                params, intent = offline.mutate(self.plan, params, diagnosis, self._rng)
        else:
            params, intent = offline.mutate(self.plan, base, diagnosis, self._rng)
        params, intent = self._novel(params, intent, diagnosis)
        return self._draft(params, intent)

    def repair(self, ps: PromptState) -> Draft:
        err = ps.last_error
        if err is None or err.params is None:
            return Draft(problem="the offline synthesizer repairs only its own candidates",
                         model="offline")
        fixed = offline.repair(self.plan, err.params, err.status, err.message)
        if fixed is None:
            return Draft(problem=f"no safer configuration of the template for a {err.status}",
                         model="offline")
        params, why = fixed
        return self._draft(params, why)
