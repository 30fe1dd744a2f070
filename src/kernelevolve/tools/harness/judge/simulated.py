"""Simulated time on an MTIA generation (the ``mtia-sim`` targets) and the check of the sampled
run's outputs."""

from __future__ import annotations

import secrets
from typing import Any

import torch

from kernelevolve.errors import ProblemError
from kernelevolve.problem import Problem
from kernelevolve.tools.harness.candidate import Verdict
from kernelevolve.tools.harness.guard import ALLOWED_ATEN_OPS
from kernelevolve.tools.harness.judge.precision import Precision
from kernelevolve.tools.harness.timing import Latency


class Simulated(Precision):
    """The timed stage on a simulated MTIA."""

    def time_on_mtia(self, problem: Problem) -> tuple[dict[str, Any], dict]:
        """Simulated time on an MTIA generation at the problem's own (timed) sizes: the candidate
        runs in the interpreter under the chip model, sampling programs of large grids; the eager
        reference is modelled as one unfused kernel per aten op. Outputs of this sampled run are
        incomplete: the elements the simulated programs wrote are compared
        (:meth:`check_sampled_outputs`); correctness elsewhere was checked before, with full
        runs at smaller sizes."""
        from kernelevolve.tools.mtia import simulate_reference

        gen = self.state.target.partition(":")[2] or "2i"
        module, ref, key = self.build(problem, dict(problem.sizes))
        # The candidate's process makes its own inputs at these sizes, and runs first: at
        # KernelBench's sizes two copies (and one in transit) would not fit beside each other.
        # The timed inputs are too large to send (gigabytes): the candidate's process makes them
        # from a seed drawn for them alone, unrelated to the correctness checks' seeds.
        timed_seed = secrets.randbelow(2**31)
        # Which programs of a large grid are simulated (and which elements are checked) is drawn
        # here too, apart from the inputs' seed: no program is safe from being run.
        reply = self.remote.ask("simulate", key=key, problem=str(problem.path),
                                sizes=dict(problem.sizes), seed=timed_seed, gen=gen,
                                sample_seed=secrets.randbelow(2**62))
        forbidden = sorted(op for op in reply.get("ops", [])
                           if op not in ALLOWED_ATEN_OPS | self.allowed)
        if reply.get("illegal"):
            raise Verdict("compile_error", f"MTIA ({self.state.target}, simulated) cannot run this "
                                           f"kernel: {'; '.join(map(str, reply['illegal']))}")
        if forbidden:
            raise Verdict("cheat", f"at the timed sizes the forward ran torch ops that do the "
                                   f"work: {', '.join(forbidden)}")
        inputs = self.inputs(module, problem, timed_seed)
        self.check_sampled_outputs(ref, inputs, reply, dict(problem.sizes))
        with torch.no_grad():
            base = simulate_reference(ref, inputs, gen)
        del inputs
        cand_ms, eager_ms = float(reply["time_s"]) * 1e3, base.time_s * 1e3
        timing = {
            "candidate": Latency.of([cand_ms]).to_dict(), "eager": Latency.of([eager_ms]).to_dict(),
            "compiled": None, "speedup_vs_eager": eager_ms / cand_ms if cand_ms > 0 else None,
            "speedup_vs_compiled": None,
            "compile_error": "no torch.compile reference on a simulated target",
            "sizes": dict(problem.sizes), "simulated": True,
        }
        profile = {"instrument": "mtia-sim", "candidate": reply["sim"],
                   "eager_reference": base.to_dict()}
        self.check("simulated on MTIA", True, f"{gen}: limited by {reply['limiting_resource']}")
        return timing, profile

    def check_sampled_outputs(self, ref: torch.nn.Module, inputs: list[Any],
                              reply: dict[str, Any], sizes: dict[str, int]) -> None:
        """The simulated run's outputs where they hold what the full forward would have written:
        the candidate's process sends, per output, a random sample of those elements with
        their flat indices (mtia/written.py); they are compared with the reference on the
        same inputs by the same rules, the other elements copied from the reference (so the
        output's scale is the reference's own; an output over ``copy_limit`` bytes, whose copy
        might not fit beside it at KernelBench's sizes, is compared on the sample alone). An
        output nothing wrote into (allocated, then returned as it was) is a mismatch; one whose
        written values all depend on skipped programs or atomics is named in the flags."""
        from kernelevolve.problem import as_list

        copy_limit = 1 << 30
        label = f"the timed run at {sizes}, elements the simulated programs wrote"
        try:  # not self.reference(): its copies of inputs and outputs would not fit here
            with torch.no_grad():
                expected = as_list(ref(*inputs))
        except Exception as exc:  # the problem's own code, not the candidate's
            raise ProblemError(f"the reference Model.forward raised {type(exc).__name__}: "
                               f"{exc}") from exc
        sent = reply.get("outputs")
        if not isinstance(sent, list) or len(sent) != len(expected):
            raise Verdict("mismatch", f"{label}: the forward returned "
                                      f"{len(sent) if isinstance(sent, list) else 'no'} outputs, "
                                      f"the reference {len(expected)}")
        actual: list[Any] = []
        done, unknown = [], []
        alone: dict[int, torch.Tensor] = {}  # outputs compared on their sample: its indices
        for i, (e, s) in enumerate(zip(expected, sent, strict=True)):
            if not (isinstance(e, torch.Tensor) and isinstance(s, dict) and "index" in s):
                actual.append(s.get("value") if isinstance(s, dict) else s)
                continue
            dtype, shape = str(e.dtype).removeprefix("torch."), list(e.shape)
            if [s.get("dtype"), s.get("shape")] != [dtype, shape]:
                raise Verdict("mismatch", f"{label}: output {i} is {s.get('dtype')} "
                                          f"{s.get('shape')}, the reference's {dtype} {shape}")
            index, values = s.get("index"), s.get("values")
            if not (isinstance(index, torch.Tensor) and isinstance(values, torch.Tensor)
                    and index.dtype == torch.int64 and index.dim() == 1
                    and values.shape == index.shape and values.dtype == e.dtype
                    and (not index.numel() or 0 <= int(index.min()) <= int(index.max())
                         < e.numel())):
                raise Verdict("cheat", f"the candidate's process sent a malformed sample of "
                                       f"output {i} of the timed run")
            e = expected[i] = e.contiguous()
            if not index.numel():
                if e.numel() and not s.get("written") and not reply.get("atomics"):
                    raise Verdict("mismatch", f"{label}: no simulated program wrote into output "
                                              f"{i} (returned as allocated): its values are "
                                              f"whatever the memory held")
                unknown += [i] if e.numel() else []
                actual.append(e)
                continue
            if e.numel() * e.element_size() <= copy_limit:
                full = e.clone()
                full.view(-1)[index] = values
                actual.append(full)
            else:
                expected[i], alone[i] = e.view(-1)[index], index
                actual.append(values)
            done.append(f"output {i}: {index.numel()} of {s.get('trusted')} elements"
                        + (" (compared as a sample alone)" if i in alone else ""))

        def truth() -> list[Any] | None:
            exact = self.reference64(ref, inputs)
            if exact is None:
                return None
            return [t.reshape(-1)[alone[i]] if i in alone else t
                    for i, t in enumerate(as_list(exact))]

        if alone:
            label += f" (output(s) {sorted(alone)} as a sample alone: positions within it)"
        self.compare(expected, actual, label, truth=truth)
        if unknown:
            self.flags.append(f"at the timed sizes {sizes}, output(s) {unknown} could not be "
                              f"checked: every value the simulated programs wrote there depends "
                              f"on programs the simulator skipped, or on atomics")
        self.check("correct at the timed sizes (simulated programs' writes)", True,
                   "; ".join(done) or "no output element to compare")
