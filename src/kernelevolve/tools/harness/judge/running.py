"""One forward on each side: the reference here, the candidate in its process, whose report is
judged by the runtime rules (torch ops that do the work, no kernel launched, inputs modified,
threads, outputs kept)."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

import torch

from kernelevolve.errors import ProblemError
from kernelevolve.tools.harness import compare, device_kernels
from kernelevolve.tools.harness.candidate import Verdict
from kernelevolve.tools.harness.guard import ALLOWED_ATEN_OPS, OpRecorder
from kernelevolve.tools.harness.judge.inputs import Inputs
from kernelevolve.tools.harness.judge.observed import Observed


class Running(Inputs):
    """The reference's forward and the candidate's, each under its own rules."""

    def reference(self, ref: torch.nn.Module, inputs: list[Any]) -> Any:
        """The reference's outputs on ``inputs``, which it must not change. Its first forward
        of a problem runs on copies and records its aten ops and whether it writes into its
        inputs; later ones copy the inputs only for a reference that does (at KernelBench's
        sizes a copy is gigabytes), and the outputs only where they share memory with an
        input or a parameter."""
        digest = self.problem().digest
        first = digest not in self.state.ref_writes_inputs
        args = compare.snapshot(inputs) if first or self.state.ref_writes_inputs[digest] else inputs
        versions_before = [t._version for t in args if isinstance(t, torch.Tensor)]
        rec = OpRecorder() if first else None
        try:
            with torch.no_grad(), rec if rec is not None else contextlib.nullcontext():
                out = ref(*args)
        except torch.OutOfMemoryError as exc:  # the device's state, not the problem's code
            free, total = (torch.cuda.mem_get_info(self.device) if self.device.type == "cuda"
                           else (0, 0))
            raise Verdict("runtime_error", f"the judge ran out of device memory running the "
                                           f"reference ({free / 2**30:.1f} of "
                                           f"{total / 2**30:.1f} GiB free): other work shares "
                                           f"this GPU, or the problem needs more than it has; "
                                           f"evaluate again with the GPU to itself "
                                           f"({str(exc)[:160]})") from exc
        except Exception as exc:  # the problem's own code, not the candidate's
            raise ProblemError(f"the reference Model.forward raised {type(exc).__name__}: "
                               f"{exc}") from exc
        if first:
            self.state.ref_ops[digest] = sorted(rec.ops) if rec is not None else []
            self.state.ref_writes_inputs[digest] = versions_before != [
                t._version for t in args if isinstance(t, torch.Tensor)]
        return compare.own_copy(out, [*inputs, *args, *ref.parameters(), *ref.buffers()])

    def run_candidate(self, key: str, inputs: list[Any], label: str, turn: int | None = None,
                      reverse_order: bool = False, profiled: bool = False) -> Any:
        """One forward in the candidate's process, judged by the rules held here. In Triton's
        interpreter, autotuned kernels run their config number ``turn`` (by default the next
        in turn: each forward another); ``reverse_order`` runs each launch's programs in the
        reverse of the previous forward's order (interpreter.py). ``self.last_turn`` and
        ``self.last_observed`` say what this forward ran."""
        buf = self._buffer(inputs)
        fresh = buf not in self.sent
        if turn is None:
            turn = self.next_turn
        self.next_turn = max(self.next_turn, turn + 1)
        # Sent as they are (strides too): serialising copies them.
        t0 = time.perf_counter()
        reply = self.remote.ask("forward", key=key, buf=buf, inputs=inputs if fresh else None,
                                turn=turn, reverse_order=reverse_order, profiled=profiled)
        self.last_forward_s = time.perf_counter() - t0
        self.sent.add(buf)
        out, obs = reply.get("out"), Observed.of(reply)
        self.last_turn, self.last_observed = turn, obs
        if not self.first_call_s:
            self.first_call_s = obs.seconds
        self.flags.extend(n for n in obs.notes if n not in self.flags)  # e.g. autotune untimed
        self.ops_seen |= set(obs.ops)
        self.max_launches = max(self.max_launches, obs.launches)
        forbidden = sorted(op for op in obs.ops if op not in ALLOWED_ATEN_OPS | self.allowed)
        if forbidden:
            raise Verdict("cheat", f"the forward ran torch ops that do the work ({label}): "
                                   f"{', '.join(forbidden)}. Only allocation/view ops are allowed "
                                   f"unless the user allows named library ops (eval.allowed_ops)")
        if obs.launches == 0:
            raise Verdict("cheat", f"the forward launched no custom kernel ({label}): a candidate "
                                   f"must compute with its own Triton or CUDA kernels")
        if profiled:
            self.check_device_kernels(reply.get("device_kernels"), reply.get("triton_launched"),
                                      label)
        if obs.odd_outputs:
            raise Verdict("cheat", f"the forward returned tensor subclasses "
                                   f"({', '.join(obs.odd_outputs)}): outputs must be plain "
                                   f"torch.Tensor ({label})")
        after = reply.pop("inputs_after", None)  # mapped on a GPU: read now, let go (MAPPED)
        changed = (compare.modified_inputs(inputs, after) if isinstance(after, list)
                   and len(after) == len(inputs) else obs.modified)
        del after
        if changed:
            raise Verdict("cheat", f"the forward modified its inputs {changed} ({label})")
        if obs.threads:
            raise Verdict("cheat", f"the forward started {obs.threads} threads ({label}): "
                                   f"work on other threads escapes the op recorder and timer")
        if obs.stream_switched:
            raise Verdict("cheat", f"the forward switched the current CUDA stream ({label})")
        if obs.tampered:
            raise Verdict("cheat", f"the forward replaced harness functions: {obs.tampered}")
        if obs.retained:
            raise Verdict("mismatch", f"the forward keeps a reference to the memory of its "
                                      f"output(s) {obs.retained} ({label}): a buffer reused "
                                      f"across calls changes the results a caller holds; "
                                      f"allocate each call's outputs anew")
        if obs.kept_storages:
            ages = ", ".join(map(str, obs.kept_storages))
            raise Verdict("mismatch", f"the memory of the output(s) returned {ages} call(s) "
                                      f"before this one ({label}) is still held by the candidate after the "
                                      f"caller let them go: outputs handed out of kept buffers "
                                      f"(a ring, set_ on a cached tensor) change the results a "
                                      f"caller holds when later calls write them again; "
                                      f"allocate each call's outputs anew")
        return out

    def check_device_kernels(self, kernels: Any, launched: Any, label: str) -> None:
        """The device profiler's account of a forward (device_kernels.py): every kernel launched
        by an allowed torch op or the candidate's own function, and one of them at least. The
        own functions are read from the candidate's source here, with the Triton functions the
        launch counter saw (defined at run time)."""
        name = "kernels seen by the device profiler"
        if kernels is None:
            self.check(name, True, f"skipped: the profiler saw no kernel ({label}); CUPTI may "
                                   f"be unavailable", skipped=True)
            self.flags.append("the device profiler saw no kernel of the profiled forward "
                              "(CUPTI unavailable?): which code launched each kernel went "
                              "unchecked")
            return
        try:
            pairs = [(str(k), None if op is None else str(op)) for k, op in kernels]
            names = {str(n) for n in launched or []}
        except (TypeError, ValueError) as exc:
            raise Verdict("cheat", f"the candidate's process sent a malformed kernel list "
                                   f"({type(exc).__name__}: {exc})") from exc
        own = device_kernels.own_kernel_names(Path(self.job["candidate"]).read_text()) | names
        why = device_kernels.refusal(pairs, own, ALLOWED_ATEN_OPS | self.allowed)
        if why:
            raise Verdict("cheat", f"{why} ({label})")
        mine = sum(op is None for _, op in pairs)
        self.check(name, True, f"{len(pairs)} kernels ({mine} the candidate's own, "
                               f"{len(pairs) - mine} launched by allowed torch ops) ({label})")
