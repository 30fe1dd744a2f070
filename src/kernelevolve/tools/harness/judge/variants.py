"""Input values ``get_inputs()`` never draws (each transform's parameters drawn per evaluation),
non-contiguous layouts, other parameter values, and inputs holding NaN or infinities."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any

import torch

from kernelevolve.errors import ProblemError
from kernelevolve.problem import Problem, call_factory
from kernelevolve.tools.harness import compare
from kernelevolve.tools.harness.candidate import Verdict
from kernelevolve.tools.harness.guard import ALLOWED_ATEN_OPS
from kernelevolve.tools.harness.judge.correctness import Correctness
from kernelevolve.tools.harness.judge.inputs import move_weights, vary_floats


def _strided_copy(t: torch.Tensor) -> torch.Tensor:
    """The same values in non-contiguous memory: the last two dims transposed in storage (a
    vector: every other element of a buffer twice as long)."""
    if t.dim() >= 2 and t.shape[-1] > 1 and t.shape[-2] > 1:
        return t.transpose(-1, -2).contiguous().transpose(-1, -2)
    if t.dim() >= 1 and t.numel() > 1:
        wide = torch.empty((*t.shape[:-1], 2 * t.shape[-1]), dtype=t.dtype, device=t.device)
        view = wide[..., ::2]
        view.copy_(t)
        return view
    return t


def _reversed_layout(t: torch.Tensor) -> torch.Tensor:
    """The same values with every dim's stride other than a contiguous tensor's: the dims laid
    out in reverse order (the first fastest), so a kernel that ignores any stride, an outer
    one included, reads the wrong elements."""
    if t.dim() < 2 or sum(s > 1 for s in t.shape) < 2:
        return _strided_copy(t)
    order = list(range(t.dim()))[::-1]
    return t.permute(order).contiguous().permute(order)


def _draw(gen: torch.Generator, low: float, high: float) -> float:
    return low + (high - low) * float(torch.rand((), generator=gen))


VARIANT_CHUNK = 1 << 26  # elements a variant's transform draws and writes at a time


def _in_chunks(t: torch.Tensor, seed: int,
               fn: Callable[[torch.Tensor, torch.Generator], None]) -> torch.Tensor:
    """A contiguous copy of ``t`` transformed in place by ``fn(chunk, generator)`` a chunk at
    a time, the generator on ``t``'s device: a variant of a 6 GB input costs one copy, not
    the three or four that whole-tensor expressions would hold at once."""
    out = t.detach().clone(memory_format=torch.contiguous_format)
    flat = out.view(-1)
    gen = torch.Generator(device=t.device).manual_seed(seed)
    for start in range(0, flat.numel(), VARIANT_CHUNK):
        fn(flat[start:start + VARIANT_CHUNK], gen)
    return out


def _uniform(chunk: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    return torch.rand(chunk.shape, generator=gen, device=chunk.device, dtype=torch.float32)


def _scaled(gen: torch.Generator, mild: int) -> tuple[str, Callable[[torch.Tensor], torch.Tensor]]:
    s = 10 ** _draw(gen, 1.0, 3.0) / 10 ** mild * (1 if float(torch.rand((), generator=gen)) < 0.5
                                                 else -1)
    return f"inputs x {s:.4g}", lambda t: t * s


def _tiny(gen: torch.Generator, mild: int) -> tuple[str, Callable[[torch.Tensor], torch.Tensor]]:
    """Scaled far down (1e-6 to 1e-4): products a kernel computes in fp16 go subnormal there,
    where TF32's, bf16's and fp32's keep their precision (fp16 products pass as TF32 at
    ordinary magnitudes: the same ten mantissa bits)."""
    s = 10 ** -_draw(gen, 4.0, 6.0) * 10 ** mild * (
        1 if float(torch.rand((), generator=gen)) < 0.5 else -1)
    return f"inputs x {s:.4g}", lambda t: t * s


def _shifted(gen: torch.Generator, mild: int) -> tuple[str, Callable[[torch.Tensor], torch.Tensor]]:
    c = _draw(gen, 2.0, 8.0) / 2 ** mild * (1 if float(torch.rand((), generator=gen)) < 0.5
                                           else -1)
    return f"inputs + {c:.4g}", lambda t: t + c


def _signs(gen: torch.Generator, mild: int) -> tuple[str, Callable[[torch.Tensor], torch.Tensor]]:
    """Each value's sign flipped with probability one half (``torch.rand``'s inputs are all
    non-negative: a ReLU written as a copy passes them)."""
    seed = int(torch.randint(0, 2**31, (), generator=gen))

    def signs(chunk: torch.Tensor, g: torch.Generator) -> None:
        flip = _uniform(chunk, g) < 0.5
        chunk.mul_(1 - 2 * flip.to(chunk.dtype))

    return "inputs with random signs", lambda t: _in_chunks(t, seed, signs)


def _ties(gen: torch.Generator, mild: int) -> tuple[str, Callable[[torch.Tensor], torch.Tensor]]:
    """Values rounded to a grid of a quarter of their spread (many exact ties), one in 1e5 of
    them an outlier of 1e3 (1e3 / 10^mild) times their standard deviation."""
    big = 1e3 / 10 ** mild
    seed = int(torch.randint(0, 2**31, (), generator=gen))

    def transform(t: torch.Tensor) -> torch.Tensor:
        step = (float(t.float().std()) / 4 if t.numel() > 1 else 1.0) or 1.0

        def grid(chunk: torch.Tensor, g: torch.Generator) -> None:
            chunk.div_(step).round_().mul_(step)
            where = torch.randint(chunk.numel(), (max(1, chunk.numel() // 100_000),),
                                  generator=g, device=chunk.device)
            spread = 4 * step  # the inputs' standard deviation
            chunk[where] = torch.where(chunk[where] < 0, -big * spread, big * spread).to(
                chunk.dtype)

        return _in_chunks(t, seed, grid)

    return f"ties on a grid and outliers x {big:g}", transform


def _magnitudes(gen: torch.Generator, mild: int
                ) -> tuple[str, Callable[[torch.Tensor], torch.Tensor]]:
    decades = 3.0 / 2 ** mild
    seed = int(torch.randint(0, 2**31, (), generator=gen))

    def spread(chunk: torch.Tensor, g: torch.Generator) -> None:
        chunk.mul_(torch.pow(10.0, _uniform(chunk, g).mul_(2).sub_(1).mul_(decades))
                   .to(chunk.dtype))

    return (f"inputs spread over {2 * decades:g} decades of magnitude",
            lambda t: _in_chunks(t, seed, spread))


def _near_one(gen: torch.Generator, mild: int
              ) -> tuple[str, Callable[[torch.Tensor], torch.Tensor]]:
    eps = _draw(gen, 0.005, 0.05) / 2 ** mild

    def transform(t: torch.Tensor) -> torch.Tensor:
        mean = float(t.float().mean()) if t.numel() else 0.0
        std = (float(t.float().std()) if t.numel() > 1 else 1.0) or 1.0
        def standardise(chunk: torch.Tensor, g: torch.Generator) -> None:
            chunk.sub_(mean).mul_(eps / std).add_(1)

        return _in_chunks(t, 0, standardise)

    return f"inputs near one (1 + {eps:.3g} x standardised inputs)", transform


def _layout(name: str, fn: Callable[[torch.Tensor], torch.Tensor]
            ) -> Callable[[torch.Generator, int], tuple[str, Callable[[torch.Tensor],
                                                                        torch.Tensor]]]:
    return lambda gen, mild: (name, fn)


# run_variants' families: (generator, mildness 0-3) -> (name, transform of a floating input)
_VARIANTS: list[Callable[[torch.Generator, int],
                         tuple[str, Callable[[torch.Tensor], torch.Tensor]]]] = [
    _scaled, _shifted, _signs, _ties, _magnitudes, _near_one, _tiny,
    _layout("non-contiguous inputs", _strided_copy),
    _layout("every dim's stride changed", _reversed_layout),
]


class Variants(Correctness):
    """The checks on other input values, other parameters and non-finite inputs."""

    def run_variants(self, problem: Problem, sizes: dict[str, int]) -> None:
        """Inputs ``get_inputs()`` never draws, at the base sizes, each transform's parameters
        drawn per evaluation (a kernel cannot detect a fixed variant): scaled by a random
        factor of either sign (a softmax without max-subtraction overflows), scaled far down
        (products computed in fp16 go subnormal), shifted (a series
        valid only near zero), with random signs (a ReLU written as a copy of non-negative
        inputs), rounded to a coarse grid with a
        few large outliers (ties: a last-index argmax), spread over six decades of magnitude,
        and moved near one (a product or a log over many terms); non-contiguous views of the
        same values (the last two dims transposed, and every dim's stride changed: a kernel that
        ignores any stride); and parameters and float constructor arguments away from their
        initial values (a kernel that skips a weight of 1 or hard-codes a divisor). A variant
        whose reference is not finite where the plain inputs' is, is tried again milder (up to
        three times) before it is skipped and named."""
        module, ref, key = self.build(problem, sizes)
        base = self.inputs(module, problem, self.seed + 2200)
        if not any(isinstance(t, torch.Tensor) and t.dtype.is_floating_point for t in base):
            self.check("other input values", True, "skipped: no floating inputs", skipped=True)
            return
        gen = torch.Generator().manual_seed(self.seed + 2250)
        done, skipped = [], []
        for family in _VARIANTS:
            found = self.finite_variant(family, gen, ref, base)
            if isinstance(found, str):
                skipped.append(found)
                continue
            name, inputs, expected = found
            out = self.run_candidate(key, inputs, name)
            self.compare(expected, out, f"{name} at {sizes}",
                         truth=functools.partial(self.reference64, ref, inputs),
                         nudged=functools.partial(self.reference_nudged, ref, inputs),
                         baseline=functools.partial(self.reference_baseline, ref, inputs))
            self.release(inputs)
            del inputs, expected, out
            done.append(name)
        del base
        if any(p.dtype.is_floating_point and p.numel() for p in ref.parameters()) or (
                self.floats_in_constructor(problem, sizes)):
            module, other_ref, other_key = self.build(problem, sizes, perturb=True)
            inputs = self.inputs(module, problem, self.seed + 2300)
            self.check_once(other_key, other_ref, inputs, f"other parameter values at {sizes}")
            self.release(inputs)
            done.append("other parameter values" + (
                f" (constructor floats varied: {', '.join(self.varied_floats)})"
                if self.varied_floats else ""))
        if any(p.dtype.is_floating_point and p.numel() for p in ref.parameters()):
            self.check_new_weights(module, problem, sizes, key, ref)
            done.append("new weights loaded into an instance already run")
        self.check("correct on other input values", True,
                   ", ".join(done) + (f"; skipped: {'; '.join(skipped)}" if skipped else ""))

    def check_new_weights(self, module: Any, problem: Problem, sizes: dict[str, int], key: str,
                          ref: torch.nn.Module) -> None:
        """The instance the earlier checks ran gets new weights in place (as an optimizer step
        gives a model: the same tensors, new values) and must compute with them; then its own
        back. Work on the weights done once and kept (folded into a parameter in place, cached
        on the first call) is wrong here."""
        moved = copy.deepcopy(ref)
        move_weights(moved, torch.Generator().manual_seed(self.seed + 2350))
        self.reload(key, moved)
        inputs = self.inputs(module, problem, self.seed + 2360)
        self.check_once(key, moved, inputs, f"new weights loaded into the instance already run "
                                            f"at {sizes}")
        self.release(inputs)
        del moved
        self.reload(key, ref)

    def reload(self, key: str, ref: torch.nn.Module) -> None:
        """``ref``'s weights into the candidate's instance ``key``, in place (load_state_dict),
        under the op recorder as when it was built."""
        state = {k: v.detach() for k, v in ref.state_dict().items()}
        reply = self.remote.ask("reload", key=key, state=state)
        forbidden = sorted(str(op) for op in reply.get("ops", [])
                           if op not in ALLOWED_ATEN_OPS | self.allowed)
        if forbidden:
            raise Verdict("cheat", f"ModelNew computed with torch while new weights were loaded "
                                   f"into it (load_state_dict, outside the forward): "
                                   f"{', '.join(forbidden)}")

    def finite_variant(self, family: Callable[[torch.Generator, int], tuple[
                           str, Callable[[torch.Tensor], torch.Tensor]]],
                       gen: torch.Generator, ref: torch.nn.Module, base: list[Any]
                       ) -> tuple[str, list[Any], Any] | str:
        """A variant of ``family`` whose reference is finite: (name, inputs, reference's
        output), its milder forms tried where it is not; else why it is skipped."""
        why = ""
        for mild in range(4):
            name, transform = family(gen, mild)
            inputs = [transform(t) if isinstance(t, torch.Tensor) and t.dtype.is_floating_point
                      else t for t in base]
            try:
                expected = self.reference(ref, inputs)
            except ProblemError as exc:
                self.release(inputs)
                return f"{name} (the reference refuses them: {str(exc)[:120]})"
            if all(bool(torch.isfinite(t).all()) for t in compare.tensors_of(expected)
                   if t.dtype.is_floating_point):
                return name, inputs, expected
            why = f"{name} (the reference is not finite there, nor on milder forms)"
            del expected
            self.release(inputs)
        return why

    def floats_in_constructor(self, problem: Problem, sizes: dict[str, int]) -> bool:
        module = problem.module(sizes)
        return bool(vary_floats(call_factory(module, "get_init_inputs", problem.path),
                                torch.Generator().manual_seed(0))[1])

    def run_nonfinite(self, problem: Problem, sizes: dict[str, int]) -> None:
        """Inputs with a few NaN values, then with a few +inf and -inf (``eval.nonfinite``):
        the output must hold the reference's NaN and infinities at the same places and its
        finite values within tolerance. A max that drops NaN (Triton's ``tl.maximum`` by
        default), a ReLU written as ``where(x > 0, x, 0)``, a tanh written as a ratio of
        exponentials (inf / inf), a 3xTF32 split of an infinity (inf - inf in its low part)
        differ from torch only here. Under 'require' a difference refuses the kernel; under
        'report' it is a failed check and a flag on a verdict that stands. (Where torch itself
        makes an infinity into NaN, as its softsign does, the kernel must too; only where the
        fp32 reference's NaN and infinities differ from its own float64 run's do float64's
        decide: ``compare_nonfinite``.)"""
        mode = self.cfg.get("nonfinite", "report")
        if mode == "off":
            return
        module, ref, key = self.build(problem, sizes)
        for seed, what, values in ((self.seed + 2600, "NaN", compare.NAN_VALUES),
                                   (self.seed + 2700, "infinities", compare.INF_VALUES)):
            name = what + compare.NONFINITE_CHECK
            base = self.inputs(module, problem, seed)
            gen = torch.Generator().manual_seed(seed)
            try:
                inputs = [compare.with_nonfinite(t, gen, values) if isinstance(t, torch.Tensor)
                          and t.dtype.is_floating_point and t.numel() else t for t in base]
            except (RuntimeError, TypeError) as exc:  # a dtype without NaN or inf (float8)
                self.check(name, True, f"skipped: {what} cannot be written into these inputs: "
                           f"{str(exc)[:160]}", skipped=True)
                continue
            finally:
                del base
            if not any(compare.has_nonfinite(t) for t in inputs if isinstance(t, torch.Tensor)):
                self.check("NaN and infinities" + compare.NONFINITE_CHECK, True,
                           "skipped: no floating inputs", skipped=True)
                return
            try:
                expected = self.reference(ref, inputs)
            except ProblemError as exc:
                self.check(name, True, f"skipped: the reference refuses them: {str(exc)[:160]}",
                           skipped=True)
                continue
            out = self.run_candidate(key, inputs, f"{what} in the inputs")
            errors = dict(self.errors)  # the reported errors stay those of finite inputs
            try:
                spread = self.compare_nonfinite(ref, inputs, expected, out,
                                                f"inputs with {what} at {sizes}")
            except Verdict as exc:
                if mode == "require":
                    raise
                self.check(name, False, exc.message)
                self.flags.append(f"differs from the reference where inputs hold {what} "
                                  f"(eval.nonfinite 'require' would refuse it): {exc.message}")
            else:
                places = compare.NONFINITE_COPIES * len(values)
                self.check(name, True, f"{places} {what} in every floating input at {sizes}" + (
                    f"; {spread} elements where the fp32 reference's NaN or infinities differ "
                    f"from the float64 reference's (its algorithm spreads them) compared with "
                    f"float64's" if spread else ""))
            finally:
                self.errors = errors
                self.release(inputs)
                del inputs, expected, out

    def compare_nonfinite(self, ref: torch.nn.Module, inputs: list[Any], expected: Any,
                          out: Any, label: str) -> int:
        """``compare`` on inputs holding NaN or infinities; where only the non-finite values
        differ, again against the fp32 reference with float64's values at the elements where
        the two references disagree on NaN and infinities (cuDNN's FFT convolutions spread one
        NaN over a whole tile; ``compare.nonfinite_from_truth``). Returns how many elements
        float64 decided (0: the fp32 reference sufficed); raises Verdict as ``compare``."""
        nudged = functools.partial(self.reference_nudged, ref, inputs)
        baseline = functools.partial(self.reference_baseline, ref, inputs)
        try:
            self.compare(expected, out, label, truth=functools.partial(self.reference64, ref, inputs),
                         nudged=nudged, baseline=baseline)
            return 0
        except Verdict as first:
            exact = self.reference64(ref, inputs) if "NaN/Inf" in first.message else None
            if exact is None:
                raise
            merged, spread = compare.nonfinite_from_truth(expected, exact)
            if not spread:
                raise
        self.compare(merged, out, f"{label} (the fp32 reference's NaN and infinities where "
                     f"float64's agree)", truth=lambda: exact, nudged=nudged, baseline=baseline)
        return spread
