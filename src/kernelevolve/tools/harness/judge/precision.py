"""The comparison and the precision contract: the fp32 rule, the float64 truth and one rounding's
reach where the output's own scale refuses a candidate, and the error the timed baseline itself
makes (``eval.precision``)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import torch

from kernelevolve.tools.harness import compare, flags
from kernelevolve.tools.harness.candidate import Verdict
from kernelevolve.tools.harness.judge.running import Running


class Precision(Running):
    """Whether a candidate's output is right: ``compare`` and the references it asks."""

    def reference64(self, ref: torch.nn.Module, inputs: list[Any]) -> Any:
        """The reference in float64 (weights and floating inputs cast), or None where the
        problem does not run so (dtype-specific ops)."""
        try:
            ref64 = copy.deepcopy(ref).double()
            # the casts are copies: nothing the float64 forward does reaches ``inputs``
            args = [v.double() if isinstance(v, torch.Tensor) and v.dtype.is_floating_point
                    else v.clone() if isinstance(v, torch.Tensor) else v for v in inputs]
            with torch.no_grad():
                return ref64(*args)
        except Exception:  # the comparison then stays as it was
            return None

    def reference_nudged(self, ref: torch.nn.Module, inputs: list[Any], draw: int = 0) -> Any:
        """The reference on its floating inputs each moved by a random relative half-epsilon of
        their dtype (what rounding them once does; ``draw`` picks the sample), or None where it
        does not run. How far its output moves from the truth measures the rounding error any
        kernel of that precision can make there: one sample more than the reference's own
        error, and the one that sees an output that cancels (a sum of terms far larger than
        itself)."""
        gen = None
        try:
            nudged = []
            for v in inputs:
                if isinstance(v, torch.Tensor) and v.dtype.is_floating_point and v.numel():
                    if gen is None:
                        gen = torch.Generator(device=v.device).manual_seed(
                            self.seed + 4100 + 1000 * draw)
                    u = torch.rand(v.shape, generator=gen, device=v.device, dtype=v.dtype)
                    # v * (1 + (2u - 1) * eps / 2), in place in u: one temporary, not four
                    v = u.mul_(2).sub_(1).mul_(torch.finfo(v.dtype).eps / 2).add_(1).mul_(v)
                elif isinstance(v, torch.Tensor):
                    v = v.clone()
                nudged.append(v)
            with torch.no_grad():
                return compare.own_copy(ref(*nudged), [*ref.parameters(), *ref.buffers()])
        except Exception:  # the comparison then stays as it was
            return None

    def contract_ops(self) -> list[str]:
        """The problem's aten ops the timed baseline computes below fp32 precision, where the
        precision contract is the baseline's (``eval.precision``) on a GPU; empty elsewhere
        (the fp32 rule alone decides). Known after the reference's first forward."""
        if self.cfg.get("precision", "baseline") != "baseline" or self.device.type != "cuda":
            return []
        ran = self.state.ref_ops.get(self.problem().digest, [])
        return sorted(flags.inexact_ops(self.baseline) & set(ran))

    def contract_why(self) -> str:
        """Why the fp32 rule alone decides, where it does (else "")."""
        if self.cfg.get("precision", "baseline") != "baseline":
            return "eval.precision is 'fp32'"
        if self.device.type != "cuda":
            return (f"on {self.state.target} the baseline computes in full fp32: TF32 exists on "
                    f"NVIDIA GPUs only")
        if not self.contract_ops():
            return f"{flags.label(self.baseline)} computes this problem's ops in full fp32"
        return ""

    def reference_baseline(self, ref: torch.nn.Module, inputs: list[Any]) -> Any:
        """The reference under the timed baseline's flags (eval.baseline): what the user's
        PyTorch computes, TF32 included where those flags allow it. The precision contract
        measures its error against the truth; it is never the truth itself."""
        with flags.applied(self.baseline):
            return self.reference(ref, inputs)

    def reference_tf32_class(self, ref: torch.nn.Module, inputs: list[Any]) -> Any:
        """The reference in fp32 with TF32 off on its floating inputs and parameters rounded
        to TF32's 10-bit mantissa (compare.tf32_round): the error one TF32 product makes at these
        shapes. The precision contract's allowance at a shape where the library picked an exact
        algorithm although it computes in TF32 at the problem's own size (cuDNN does, by shape:
        on an H100 a 3x3 convolution at 16x64x64x64 in TF32, at 13x49x49x49 exactly). None
        where it does not run."""
        saved = [p.detach().clone() for p in ref.parameters()]
        try:
            with torch.no_grad():
                for p in ref.parameters():
                    p.copy_(compare.tf32_round(p))
                rounded = [compare.tf32_round(v) if isinstance(v, torch.Tensor) else v
                           for v in inputs]
                # the process's own flags: TF32 off (serve), as for the truth
                return compare.own_copy(ref(*rounded), [*ref.parameters(), *ref.buffers()])
        except Exception:  # the comparison then stays as it was
            return None
        finally:
            with torch.no_grad():
                for p, v in zip(ref.parameters(), saved, strict=True):
                    p.copy_(v)

    def compare(self, expected: Any, actual: Any, label: str,
                truth: Callable[[], Any] | None = None,
                nudged: Callable[..., Any] | None = None,
                baseline: Callable[[], Any] | None = None,
                tf32_class: Callable[[], Any] | None = None) -> None:
        """Compare, and where only the output's own scale refuses it, ask ``truth`` (the
        reference in float64) how inexact the fp32 reference itself is there, and ``nudged``
        (the reference on inputs moved by one rounding; ``nudged(draw=1)`` a second sample)
        how much fp32 rounding alone moves it. Where the fp32 rule still refuses it and the
        precision contract is the baseline's (``self.contract``), ``baseline`` (the reference
        under the timed baseline's flags) measures the error the user's PyTorch makes on these
        inputs, and the candidate's may be ``eval.precision_factor`` times it
        (compare.within_baseline). At a shape other than the problem's own, where the baseline
        ran below fp32 at its own size but exactly here, ``tf32_class`` gives the allowance
        instead: the error TF32 products make on these inputs (reference_tf32_class)."""
        args = (self.cfg.get("atol"), self.cfg.get("rtol"), bool(self.cfg.get("allow_loose_fp32")))
        errors, problem = compare.compare_outputs(expected, actual, *args)
        exact = None
        if problem and truth is not None and "scaled to the output" in problem:
            exact = truth()
            if exact is not None:
                moved = nudged() if nudged is not None else None
                errors, problem = compare.compare_outputs(expected, actual, *args, truth=exact,
                                                          nudged=moved)
                if problem and moved is not None and nudged is not None:
                    # One sample can land near the truth by chance where the output is
                    # sensitive: attention on inputs x 100 (a sharp softmax) refused its correct
                    # kernel for 2 of 4000 seeds, and a second sample passed both.
                    again = nudged(draw=1)
                    if again is not None:
                        errors, problem = compare.compare_outputs(
                            expected, actual, *args, truth=exact,
                            nudged=compare.farther(exact, moved, again))
                    del again
                del moved
        if problem and baseline is not None and truth is not None and self.contract_ops():
            exact = exact if exact is not None else truth()
            base = baseline() if exact is not None else None
            if base is not None:
                factor = float(self.cfg.get("precision_factor", 3.0))
                passed, detail = compare.within_baseline(expected, actual, exact, base, factor)
                if passed and tf32_class is None:
                    self.contract_at_own = True
                if not passed and tf32_class is not None and self.contract_at_own:
                    del base
                    base = tf32_class()
                    if base is not None:
                        passed, also = compare.within_baseline(expected, actual, exact, base,
                                                               factor)
                        detail = (f"{also} (the baseline computed these shapes exactly and the "
                                  f"problem's own in TF32: the allowance is TF32 products' error "
                                  f"here)" if passed else f"{detail}; {also} with TF32 products")
                if passed:
                    problem = None
                    if len(self.contract_passes) < 8:
                        self.contract_passes.append(f"{label}: {detail}")
                else:
                    problem = f"{problem}; under the baseline's precision contract: {detail}"
            del base
        del exact
        for err in errors:
            worst = self.errors.get(err.index)
            if worst is None or err.max_abs_error > worst["max_abs_error"]:
                self.errors[err.index] = err.to_dict()
        if problem:
            raise Verdict("mismatch", f"{label}: {problem}")
