"""Moving through a plan's parameter space: diagnosis-guided mutation, crossover, and repair
after a failed evaluation. Every function returns parameters inside ``plan.space``."""

from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping

from .plan import KernelPlan

DIAGNOSES = ("memory-bound", "compute-bound", "occupancy-bound", "launch-bound")
_ALIASES = {"latency-bound": "occupancy-bound", "occupancy/latency-bound": "occupancy-bound"}
# Products' precision, least to most precise: ``TF32X3`` 3 (b split once, a's high part its
# bits cut in the kernel: 2^-21 of a left out, against 2^-22 split once), 2 (split once: the
# tensor cores' accumulation chained over up to CHAIN_K of K), 1 (tf32x3, the split each k
# step), 0 (ieee FMA). A result that missed the tolerance moves one step up before anything
# else changes.
_PRECISION = {"TF32X3": (4, 3, 2, 1, 0)}
_RESOURCE_WORDS = ("out of resources", "outofresources", "shared memory", "smem",
                   "too many resources", "register", "spill", "local memory", "tile footprint")

# (parameter, direction, why) per diagnosis; "tile" stands for every BLOCK_* parameter.
_MOVES: dict[str, list[tuple[str, int, str]]] = {
    "memory-bound": [("tile", +1, "move more bytes per program")],
    "compute-bound": [("num_warps", +1, "put more threads on the arithmetic")],
    "occupancy-bound": [("num_warps", -1, "fit more programs on each core"),
                        ("tile", -1, "give more, lighter programs"),
                        ("num_stages", -1, "free shared memory for more resident programs")],
    "launch-bound": [("tile", +1, "do more work per program, with fewer programs")],
}
_MATMUL_MOVES: dict[str, list[tuple[str, int, str]]] = {
    "memory-bound": [("BLOCK_M", +1, "reuse each loaded tile across more output rows"),
                     ("BLOCK_N", +1, "reuse each loaded tile across more output columns"),
                     ("GROUP_M", +1, "share more operand tiles in L2")],
    "compute-bound": [("BLOCK_M", +1, "raise the arithmetic intensity of a tile"),
                      ("BLOCK_N", +1, "raise the arithmetic intensity of a tile"),
                      ("num_stages", +1, "hide more load latency behind the dot")],
    "occupancy-bound": [("num_warps", -1, "fit more programs on each core"),
                        ("BLOCK_M", -1, "use fewer registers per program"),
                        ("BLOCK_N", -1, "use fewer registers per program"),
                        ("num_stages", -1, "free shared memory for more resident programs")],
    "launch-bound": [("BLOCK_M", +1, "do more work per program, with fewer programs"),
                     ("BLOCK_N", +1, "do more work per program, with fewer programs")],
}


def _keys(plan: KernelPlan, role: str) -> list[str]:
    if role == "tile":
        return [k for k in plan.space if k.startswith("BLOCK_")]
    return [role] if role in plan.space else []


def _step(plan: KernelPlan, params: Mapping[str, int], key: str, direction: int
          ) -> dict[str, int] | None:
    values = plan.space[key]
    i = values.index(params[key]) + direction
    if not 0 <= i < len(values):
        return None
    return {**params, key: values[i]}


def _pick(plan: KernelPlan, options: list[tuple[dict[str, int], str]], rng: random.Random
          ) -> tuple[dict[str, int], str] | None:
    if not options:
        return None
    feasible = [o for o in options if plan.feasible(o[0]) is None]
    return rng.choice(feasible or options)


def _describe(old: Mapping[str, int], new: Mapping[str, int]) -> str:
    return ", ".join(f"{k} {old[k]} -> {new[k]}" for k in new if new[k] != old[k])


def mutate(plan: KernelPlan, params: Mapping[str, int], diagnosis: str | None,
           rng: random.Random) -> tuple[dict[str, int], str]:
    """One step in ``plan``'s space and a one-line intent. With a diagnosis the step follows it
    (memory-bound: larger tiles; occupancy-bound: fewer warps, smaller tiles, fewer stages;
    compute-bound matmul: bigger tiles, more stages; launch-bound: more work per program);
    without one, or when the diagnosis has no legal move left, a random neighbour."""
    current = plan.validate(params)
    diag = _ALIASES.get(str(diagnosis), str(diagnosis)) if diagnosis is not None else None
    if diag is not None and diag not in DIAGNOSES:
        raise ValueError(f"unknown diagnosis {diagnosis!r}; expected one of "
                         f"{', '.join(DIAGNOSES)} or None")
    if diag is not None:
        table = _MATMUL_MOVES if plan.operator_class == "matmul" else _MOVES
        options = []
        for role, direction, why in table[diag]:
            for key in _keys(plan, role):
                new = _step(plan, current, key, direction)
                if new is not None:
                    options.append((new, f"{diag}: {_describe(current, new)} to {why}"))
        chosen = _pick(plan, options, rng)
        if chosen is not None:
            return chosen
    options = [(new, _describe(current, new)) for key in plan.space for d in (-1, +1)
               if (new := _step(plan, current, key, d)) is not None]
    chosen = _pick(plan, options, rng)
    if chosen is None:
        return current, "no move: the parameter space has a single point"
    new, change = chosen
    if diag is None:
        return new, f"explore: {change} (a random neighbour)"
    return new, f"{diag}: no parameter left to move that way; exploring {change} instead"


def crossover(plan: KernelPlan, a: Mapping[str, int], b: Mapping[str, int],
              rng: random.Random) -> dict[str, int]:
    """Each parameter from ``a`` or ``b`` at random, preferring a feasible child."""
    a, b = plan.validate(a), plan.validate(b)
    child: dict[str, int] = {}
    for _ in range(8):
        child = {k: (a[k] if rng.random() < 0.5 else b[k]) for k in plan.space}
        if plan.feasible(child) is None:
            return child
    return child


def _shrink(plan: KernelPlan, params: dict[str, int], stages_first: bool
            ) -> tuple[dict[str, int], str] | None:
    """Fewer stages, then the largest tile one step smaller."""
    if stages_first and "num_stages" in plan.space:
        new = _step(plan, params, "num_stages", -1)
        if new is not None:
            return new, "fewer pipeline stages hold fewer tiles in shared memory"
    tiles = [k for k in _keys(plan, "tile") if _step(plan, params, k, -1) is not None]
    if tiles:
        key = max(tiles, key=lambda k: (params[k], k))
        new = _step(plan, params, key, -1)
        assert new is not None
        return new, "a smaller tile needs fewer registers and less on-chip memory"
    if "num_stages" in plan.space:
        new = _step(plan, params, "num_stages", -1)
        if new is not None:
            return new, "fewer pipeline stages hold fewer tiles in shared memory"
    return None


_FOOTPRINT = re.compile(r"footprint (\d+(?:\.\d+)?) ?kb exceeds the (\d+(?:\.\d+)?) ?kb")


def _halvings_needed(text: str) -> int:
    """How many halvings of the largest tile a reported footprint needs (the MTIA simulator says
    "tile footprint 1024 KB exceeds the 384 KB local memory"); one when no figure is given."""
    found = _FOOTPRINT.search(text)
    if found is None:
        return 1
    ratio = float(found.group(1)) / max(float(found.group(2)), 1e-9)
    return max(1, min(8, math.ceil(math.log2(ratio)))) if ratio > 1 else 1


def repair(plan: KernelPlan, params: Mapping[str, int], status: str, message: str
           ) -> tuple[dict[str, int], str] | None:
    """A safer configuration after an evaluation failed with ``status`` and ``message``, and
    why: smaller tiles or fewer stages when on-chip resources ran out; more precise products
    after a wrong result (``_PRECISION``), even at the default configuration; else the
    defaults. None when changing parameters cannot help (a cheat, a misaligned access, or a
    failure already at the default configuration with nothing more precise to try)."""
    current = plan.validate(params)
    status = str(status)
    text = message.lower()
    if status in {"ok", "cheat"} or "misaligned" in text:
        return None
    if any(word in text for word in _RESOURCE_WORDS):
        stages_first = "shared memory" in text or "smem" in text or "local memory" in text
        new, why = current, ""
        for _ in range(_halvings_needed(text)):
            shrunk = _shrink(plan, new, stages_first)
            if shrunk is None:
                break
            new, why = shrunk
        if new == current:
            return None
        return new, f"{status} (out of on-chip resources): {_describe(current, new)}: {why}"
    defaults = plan.default_params()
    if status == "mismatch":
        for key, ladder in _PRECISION.items():
            if key not in plan.space or current.get(key) not in ladder:
                continue
            above = [v for v in ladder[ladder.index(current[key]) + 1:] if v in plan.space[key]]
            if above:
                new = {**current, key: above[0]}
                if plan.feasible(new) is None:
                    return new, (f"mismatch: the results missed the tolerance; "
                                 f"{_describe(current, new)}: more precise products")
            # never back to a less precise default after a wrong result
            defaults = {**defaults, key: max(defaults[key], current[key],
                                             key=ladder.index)}
    if current != defaults:
        reason = {"timeout": "the evaluation timed out",
                  "mismatch": "the results were wrong at these parameters"}.get(
            status, f"the candidate failed ({status})")
        return defaults, (f"{status}: {reason}; back to the default configuration "
                          f"({_describe(current, defaults)})")
    return None
