"""Correctness: the input sets at the base sizes (determinism, autotune turns, outputs a caller
holds, new values in the same memory), other and larger shapes, a size at its real value on the
interpreter targets, a run of many calls, and the re-verification of a suspicious speedup."""

from __future__ import annotations

import functools
import json
import math
import secrets
import sys
from dataclasses import dataclass
from typing import Any

import torch

from kernelevolve.problem import Problem, call_factory
from kernelevolve.tools.harness import compare
from kernelevolve.tools.harness.candidate import Verdict
from kernelevolve.tools.harness.guard import ALLOWED_ATEN_OPS
from kernelevolve.tools.harness.judge.inputs import to_device
from kernelevolve.tools.harness.judge.memory import previous_kept
from kernelevolve.tools.harness.judge.precision import Precision
from kernelevolve.tools.harness.timing import tensor_bytes

# plans: on the interpreter targets the size furthest below its real value once at that value
# (or as near as fits), the others shrunk until inputs and parameters hold at most this many
# times eval.cpu_max_elements. The interpreter's cost grows with the programs too: 8x made a
# row softmax's correctness checks 4x slower, a layer norm's 10x.
REAL_SIZE_BUDGET = 2
REAL_SIZE_PLANS = 1
REAL_SIZE_MAX_S = 30.0
# check_many_calls: after the other checks, a run of forwards at the base sizes whose length
# the candidate cannot predict, then a checked one (a kernel right only for its first N calls,
# a "time bomb", is caught wherever N is below the run). The length is MANY_CALLS_SCALE / u for
# u uniform in (0, 1] (P(length >= n) = SCALE / n: no length is safe to wait for), capped by a
# time budget: MANY_CALLS_SHARE of the evaluation so far, at most MANY_CALLS_MAX_S,
# divided by one forward's time at the base sizes. MANY_CALLS_SAMPLES of the run's outputs are
# checked too (a kernel wrong only for a while).
MANY_CALLS_SCALE = 16
MANY_CALLS_SHARE = 0.1
MANY_CALLS_MAX_S = 2.0
MANY_CALLS_SAMPLES = 2
MANY_CALLS_MAX = 4096


@dataclass
class Plan:
    """One family of shapes to check at: the sizes, the seeds, and what to check there."""

    label: str
    sizes: dict[str, int]
    seeds: list[int]
    determinism: bool = False
    pointer_reuse: bool = False


class Correctness(Precision):
    """The correctness plans and the checks each input set gets."""

    def check_once(self, key: str, ref: torch.nn.Module, inputs: list[Any],
                   label: str, profiled: bool = False) -> tuple[Any, Any]:
        """Reference, candidate, compare: one input set. Returns the candidate's output and
        the reference's. (The reference's outputs never leave this process, so nothing of them
        can be found in the candidate's memory.)"""
        # Written before the run, so a crash's stderr tail says where the worker died.
        print(f"[kernelevolve] checking {label}", file=sys.stderr, flush=True)
        expected = self.reference(ref, inputs)
        self.footprint = max(self.footprint, tensor_bytes(inputs) + tensor_bytes(expected)
                             + sum(t.nbytes for t in (*ref.parameters(), *ref.buffers())))
        out = self.run_candidate(key, inputs, label, profiled=profiled)
        shapes = [tuple(v.shape) for v in inputs if isinstance(v, torch.Tensor)]
        if self.own_shapes is None:  # the first set checked is at the problem's own size
            self.own_shapes = shapes
        self.compare(expected, out, label, truth=functools.partial(self.reference64, ref, inputs),
                     nudged=functools.partial(self.reference_nudged, ref, inputs),
                     baseline=functools.partial(self.reference_baseline, ref, inputs),
                     tf32_class=None if shapes == self.own_shapes else functools.partial(
                         self.reference_tf32_class, ref, inputs))
        return out, expected

    def plans(self, problem: Problem, base: dict[str, int]) -> list[Plan]:
        n = int(self.cfg["n_input_sets"])
        seed = self.seed
        plans = [Plan("input sets", base, [seed + 1000 + i for i in range(n)],
                      determinism=True, pointer_reuse=True)]
        if not self.cfg.get("extra_shapes", True):
            self.check("other shapes", True, "skipped: eval.extra_shapes is off", skipped=True)
            return plans
        overrides = self.cfg.get("shape_overrides") or {}
        sizes: dict[str, int] | None
        if overrides:
            sizes, why = {**base, **overrides}, ""
        else:
            sizes, why = self.other_sizes(problem, base)
        if sizes is None:
            self.check("other shapes", True, f"skipped: {why}", skipped=True)
            self.flags.append(f"checked at one shape only: {why}")
        else:
            plans.append(Plan("other shapes", sizes, [seed + 2000, seed + 2001]))
        larger = self.larger_sizes(problem, base)
        if larger is not None:
            plans.append(Plan("larger shapes", larger, [seed + 2500]))
        return plans

    def real_size_plans(self, problem: Problem, checked: list[Plan]) -> list[Plan]:
        """On the interpreter targets, a size at its real value once (the others shrunk),
        where that fits REAL_SIZE_BUDGET: a BLOCK capped below the real row length, with no
        loop, fails there. Left out, and said, where the judge's own clock says one forward
        there would take over REAL_SIZE_MAX_S (the interpreter's cost grows with the size)."""
        base = checked[0].sizes
        if self.device.type == "cuda" or base == problem.sizes:
            return []
        budget = REAL_SIZE_BUDGET * int(self.cfg["cpu_max_elements"])
        plans = []
        for i, (name, sizes) in enumerate(problem.real_size_plans(
                [p.sizes for p in checked], budget, REAL_SIZE_PLANS)):
            ratio = problem.input_elements(sizes) / max(1, problem.input_elements(base))
            estimate = self.base_forward_s * ratio
            if estimate > REAL_SIZE_MAX_S:
                self.flags.append(f"not checked with {name} at its real size {sizes}: one "
                                  f"forward there would take about {estimate:.0f} s in the "
                                  f"interpreter")
                continue
            plans.append(Plan(f"{name} at its real size", sizes, [self.seed + 2550 + i]))
        return plans

    def larger_sizes(self, problem: Problem, base: dict[str, int]) -> dict[str, int] | None:
        """Where the interpreter checks shrunk sizes, sizes nearer the problem's own (4x the
        elements, up to its own): a kernel right only up to one block, or for the shrunk
        shapes, fails there. On a GPU the problem's own sizes are the base: none larger."""
        if self.device.type == "cuda" or base == problem.sizes:
            return None
        larger = self.shrunk(problem, 4 * int(self.cfg["cpu_max_elements"]))
        return larger if larger != base else None

    def other_sizes(self, problem: Problem, base: dict[str, int]
                    ) -> tuple[dict[str, int] | None, str]:
        key = (problem.digest, json.dumps(base, sort_keys=True))
        if key not in self.state.other_sizes:
            self.state.other_sizes[key] = problem.other_sizes(base)
        return self.state.other_sizes[key]

    def run_plan(self, problem: Problem, plan: Plan) -> tuple[Any, torch.nn.Module, str]:
        module, ref, key = self.build(problem, plan.sizes)
        inputs: list[Any] = []
        # Digests of the previous set's output and reference output (compare.fingerprint),
        # under a key the candidate never sees: whole copies would hold two more outputs
        # through the next set's checks.
        earlier: tuple[Any, Any] | None = None
        held: list[Any] = []  # digests of the outputs the candidate's process holds, newest first
        fp_key = secrets.randbits(62)
        for k, seed in enumerate(plan.seeds):
            inputs = self.inputs(module, problem, seed)
            label = f"{plan.label} {k + 1}/{len(plan.seeds)} at {plan.sizes}"
            out, expected = self.check_once(key, ref, inputs, label)
            if plan.pointer_reuse:  # the base sizes: what one forward costs here (the least)
                self.base_forward_s = min(self.base_forward_s or math.inf, self.last_forward_s)
                if self.last_observed is not None:
                    self.base_call_s = min(self.base_call_s or math.inf,
                                           self.last_observed.seconds)
            out_digest = compare.fingerprint(out, fp_key)
            turn = self.last_turn
            configs = self.last_observed.autotune_configs if self.last_observed else 1
            if plan.determinism and k == 0:
                del out  # the second run's output replaces it: one output held at a time
                # The same autotune configs; in the interpreter each launch's programs run in
                # the reverse of the first run's order, so a program that reads what another
                # wrote (a race on a GPU) finds it missing in one of the two runs.
                again_label = label + (", second run, each launch's programs in the reverse "
                                       "order" if self.interpreted else ", second run")
                again = self.run_candidate(key, inputs, again_label, turn=turn,
                                           reverse_order=self.interpreted)
                again_digest = compare.fingerprint(again, fp_key)
                if again_digest != out_digest:
                    self.nondeterministic = True
                    self.compare(expected, again, again_label,
                                 truth=functools.partial(self.reference64, ref, inputs),
                                 baseline=functools.partial(self.reference_baseline, ref, inputs))
                # The caller now holds the second run's output, not the first's: the check below
                # that held outputs do not change compares against it (a nondeterministic
                # kernel, cuDNN's transposed convolution among them, differs between the two).
                out, out_digest = again, again_digest
                del again
            if k == 0 and configs > 1:
                del out
                out = self.check_autotune_turns(key, ref, inputs, expected, label, turn, configs)
                out_digest = compare.fingerprint(out, fp_key)
                self.check(f"every autotune config on {plan.label}", True,
                           f"{configs} turns on set 1 at {plan.sizes}: each autotuned kernel ran "
                           f"every config left after pruning")
            # An output handed out earlier must not change when the forward runs again: outputs
            # that alias a buffer kept between calls would corrupt the caller's results.
            for age, digest in enumerate(held, start=1):
                now = self.remote.ask("resend_previous", age=age).get("out")
                if compare.fingerprint(now, fp_key) != digest:
                    raise Verdict("mismatch", f"{label}: an output returned {age} call(s) before "
                                              f"changed when the forward ran again (outputs "
                                              f"alias memory the candidate keeps between calls)")
                del now
            # Within tolerance is not enough where the answer barely moves (a loss over 1e9
            # terms): an output that stays bitwise the same while the reference's changes does
            # not depend on the input.
            expected_digest = compare.fingerprint(expected, fp_key)
            if (earlier is not None and out_digest == earlier[0]
                    and expected_digest != earlier[1]):
                raise Verdict("mismatch", f"{label}: the output is bitwise the same as for the "
                                          f"previous input set while the reference's changed: "
                                          f"it does not depend on the input")
            earlier = (out_digest, expected_digest)
            keep = previous_kept(self.device, tensor_bytes(expected))
            held = [out_digest, *held][:keep]
            del out, expected
            self.remote.ask("keep_previous", keep=keep)
            if not (plan.pointer_reuse and k == len(plan.seeds) - 1):
                self.release(inputs)
        self.check(f"correct on {plan.label}", True,
                   f"{len(plan.seeds)} sets at {plan.sizes}, seeds {plan.seeds}")
        if plan.pointer_reuse:
            self.refill(module, problem, inputs, self.seed + 3000)
            self.check_once(key, ref, inputs, "new values in the same input memory")
            self.check("no results reused across calls", True, "same pointers, new values")
            self.release(inputs)
        return module, ref, key

    def check_autotune_turns(self, key: str, ref: torch.nn.Module, inputs: list[Any],
                             expected: Any, label: str, turn: int, configs: int) -> Any:
        """In Triton's interpreter, where ``@triton.autotune`` cannot benchmark: the forward
        again at turns ``turn + 1`` .. ``turn + configs - 1``, so every autotuned kernel runs
        each of its configs on these inputs (a GPU's autotuner may pick any of them), each
        output compared with the reference. Returns the last output (the caller's current one)."""
        out: Any = None
        for i in range(1, configs):
            out = None  # one output held at a time
            what = f"{label}, autotune turn {i + 1} of {configs}"
            out = self.run_candidate(key, inputs, what, turn=turn + i)
            self.compare(expected, out, what + " (each autotuned kernel's configs in the order "
                                               "@triton.autotune lists them after pruning)",
                         truth=functools.partial(self.reference64, ref, inputs),
                         nudged=functools.partial(self.reference_nudged, ref, inputs),
                         baseline=functools.partial(self.reference_baseline, ref, inputs))
        return out

    def check_many_calls(self, problem: Problem, sizes: dict[str, int], spent_s: float
                         ) -> None:
        """Forwards at the base sizes, on the instance the input sets ran on, as many as drawn
        for this evaluation (MANY_CALLS_SCALE / u, capped by the time budget), each on new
        inputs drawn from ``get_inputs()`` as the checked sets are (the seeds are the judge's:
        a call of the run cannot be told from a checked one); a random sample of their outputs
        is checked, then one more forward on new inputs. A kernel that turns wrong (or to torch)
        after some number of calls cannot know where the judge's calls end. On a timed GPU
        evaluation the timing loop and the check after it do this."""
        if self.device.type == "cuda" and self.job.get("timed"):
            return
        budget = min(MANY_CALLS_MAX_S, MANY_CALLS_SHARE * spent_s)
        drawn = min(MANY_CALLS_MAX, int(MANY_CALLS_SCALE * 2**32 / (1 + secrets.randbelow(2**32))))
        # the forward alone, as the candidate's process timed it: what one call of the run costs
        per_call = max(self.base_call_s or self.base_forward_s or 0.0, 1e-5)
        expect = max(1, min(drawn, int(budget / per_call)))
        module, ref, key = self.build(problem, sizes)
        seed = secrets.randbelow(2**62)
        rounds = sorted(secrets.SystemRandom().sample(range(expect),
                                                      min(expect, MANY_CALLS_SAMPLES)))
        reply = self.remote.ask("calls", key=key, problem=str(problem.path), sizes=dict(sizes),
                                seed=seed, n=drawn, budget_s=budget, sample_rounds=rounds)
        n = int(reply.get("ran", 0))
        label = f"{n} calls in a row at {sizes}"
        forbidden = sorted(str(op) for op in reply.get("ops", [])
                           if op not in ALLOWED_ATEN_OPS | self.allowed)
        if forbidden:
            raise Verdict("cheat", f"the forward ran torch ops that do the work ({label}): "
                                   f"{', '.join(forbidden)}")
        if int(reply.get("fewest_launches", 0)) == 0:
            raise Verdict("cheat", f"a forward launched no custom kernel ({label})")
        if reply.get("tampered"):
            raise Verdict("cheat", f"the forward replaced harness functions: {reply['tampered']}")
        samples = list(reply.get("samples") or [])
        asked = [r for r in rounds if r < n]
        if sorted(int(r) for r, _ in samples) != asked:
            raise Verdict("cheat", f"the candidate's process returned outputs of calls "
                                   f"{[int(r) + 1 for r, _ in samples]} of {label}, the judge "
                                   f"asked for {[r + 1 for r in asked]}")
        for round_, out in samples:
            torch.manual_seed(seed + int(round_))  # the inputs as the candidate's process made them
            inputs = to_device(call_factory(module, "get_inputs", problem.path), self.device)
            torch.manual_seed(secrets.randbelow(2**62))
            self.compare(self.reference(ref, inputs), out, f"call {int(round_) + 1} of {label}",
                         truth=functools.partial(self.reference64, ref, inputs),
                         nudged=functools.partial(self.reference_nudged, ref, inputs),
                         baseline=functools.partial(self.reference_baseline, ref, inputs))
            del inputs, out
        del samples, reply
        inputs = self.inputs(module, problem, secrets.randbelow(2**62))
        self.check_once(key, ref, inputs, f"new inputs after {label}")
        self.check("correct after many calls", True,
                   f"{n} calls (a length drawn for this evaluation, {drawn}, within "
                   f"{budget:.1f} s), each on new inputs; calls {[r + 1 for r in asked]} and one "
                   f"after checked")
        self.release(inputs)

    def check_kernels_on_device(self, problem: Problem, base: dict[str, int]) -> None:
        """On a GPU, after the timing (CUPTI never runs beside a timed call): one forward on a
        fresh input set at the base sizes under the device profiler, checked like any other,
        whose kernels must each come from the candidate's own functions or an allowed torch op
        (device_kernels.py): torch or a library doing the work unseen by the Python-level
        recorder shows up there."""
        module, ref, key = self.build(problem, base)
        inputs = self.inputs(module, problem, self.seed + 8000)
        self.check_once(key, ref, inputs, f"a fresh input set under the device profiler at "
                                          f"{base}", profiled=True)
        self.release(inputs)

    def reverify(self, problem: Problem, base: dict[str, int], speedup: float) -> None:
        seed = self.seed + 7000
        plans = [Plan("fresh input sets", base, [seed, seed + 1, seed + 2])]
        # The last family the problem accepts: the furthest from the other-shapes check's.
        other = next((s for s in reversed(problem.size_candidates(base))
                      if problem.rejects(s) is None), None)
        if other is not None:
            plans.append(Plan("fresh other shapes", other, [seed + 3]))
        for plan in plans:
            self.run_plan(problem, plan)
        self.flags.append(f"speedup {speedup:.1f}x is above the suspicious threshold: "
                          f"re-verified on fresh inputs and shapes")
