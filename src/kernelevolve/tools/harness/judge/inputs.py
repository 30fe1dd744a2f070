"""Problem instances and input sets: the reference and the candidate's instance built (their
weights perturbed where asked), inputs made from a seed, and the buffers the candidate's process
holds them in."""

from __future__ import annotations

import math
import secrets
import types
from typing import Any

import torch

from kernelevolve.errors import ProblemError
from kernelevolve.problem import Problem, call_factory
from kernelevolve.tools.harness.candidate import Verdict
from kernelevolve.tools.harness.guard import ALLOWED_ATEN_OPS
from kernelevolve.tools.harness.judge.locks import release_cached_memory
from kernelevolve.tools.harness.judge.state import Judge


def vary_floats(values: list[Any], gen: torch.Generator) -> tuple[list[Any], list[str]]:
    """``values`` (constructor arguments) with every non-zero float (at the top level or in a
    list or tuple) times a random factor in [0.6, 1.6], and what changed: a kernel that
    hard-codes a constructor's ``divide_value`` or ``scale`` then differs from the reference."""
    changed: list[str] = []

    def vary(v: Any, where: str) -> Any:
        if isinstance(v, float) and v != 0.0 and math.isfinite(v):
            new = v * (0.6 + float(torch.rand((), generator=gen)))
            changed.append(f"{where} {v:g} -> {new:g}")
            return new
        if isinstance(v, list | tuple) and not isinstance(v, str):
            return type(v)(vary(x, f"{where}[{i}]") for i, x in enumerate(v))
        return v

    return [vary(v, f"argument {i}") for i, v in enumerate(values)], changed


def names_read(cls: type) -> set[str]:
    """The global names the functions defined in ``cls`` (and the classes it derives from in
    the same module) read, nested functions and comprehensions included."""
    names: set[str] = set()

    def walk(code: types.CodeType) -> None:
        names.update(code.co_names)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                walk(const)

    for klass in cls.__mro__:
        if klass.__module__ != cls.__module__:
            continue
        for value in vars(klass).values():
            funcs = ([value.fget, value.fset] if isinstance(value, property)
                     else [getattr(value, "__func__", value)])
            for func in funcs:
                code = getattr(func, "__code__", None)
                if isinstance(code, types.CodeType):
                    walk(code)
    return names


def to_device(values: list[Any], device: torch.device) -> list[Any]:
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]



def move_weights(model: torch.nn.Module, gen: torch.Generator) -> None:
    """Move ``model``'s floating parameters away from their values (by their own spread, at
    least 0.1) and its floating buffers too (non-negative ones, a running variance, scaled and
    kept positive), in place."""
    with torch.no_grad():
        for p in model.parameters():
            if p.dtype.is_floating_point and p.numel():
                spread = max(float(p.float().std()) if p.numel() > 1 else 0.0, 0.1)
                noise = torch.randn(p.shape, generator=gen) * spread
                p.add_(noise.to(p.dtype).to(p.device))
        for b in model.buffers():  # running statistics: a kernel may not assume them
            if b.dtype.is_floating_point and b.numel():
                factor = (0.5 + 1.5 * torch.rand(b.shape, generator=gen)).to(b.dtype).to(b.device)
                if bool((b >= 0).all()):  # a variance stays positive
                    b.mul_(factor).add_(0.1 * factor)
                else:
                    b.add_((torch.randn(b.shape, generator=gen) * max(
                        float(b.float().std()) if b.numel() > 1 else 0.0,
                        0.1)).to(b.dtype).to(b.device))

class Inputs(Judge):
    """Building the problem's instances and input sets (the first stage every other one uses)."""

    def base_sizes(self, problem: Problem) -> dict[str, int]:
        if self.device.type == "cuda":
            return dict(problem.sizes)
        return self.shrunk(problem, int(self.cfg["cpu_max_elements"]))

    def shrunk(self, problem: Problem, budget: int) -> dict[str, int]:
        """``problem.shrink_sizes(budget)``, kept by the worker for later jobs."""
        key = (problem.digest, budget)
        if key not in self.state.shrunk:
            self.state.shrunk[key] = problem.shrink_sizes(budget)
        return dict(self.state.shrunk[key])

    def build(self, problem: Problem, sizes: dict[str, int], perturb: bool = False
              ) -> tuple[Any, torch.nn.Module, str]:
        """The problem module at ``sizes``, the reference model and the key of the candidate's
        instance. When the constructor arguments are those of an earlier plan, the same
        instances are reused, so state a candidate keeps between calls is exercised. The
        candidate gets a copy of the reference's weights: nothing it does reaches these.
        ``perturb``: another pair whose floating parameters moved away from their initial
        values (by their own spread, at least 0.1), its floating buffers too (non-negative ones,
        a running variance, scaled and kept positive), built with its float constructor arguments
        varied (``vary_floats``; as given where the varied ones are refused)."""
        module, ref, init_inputs = problem.instantiate(sizes, self.weight_seed)
        if perturb:
            varied, changed = vary_floats(init_inputs, torch.Generator().manual_seed(
                self.seed + 2450))
            if changed:
                try:
                    torch.manual_seed(self.seed)
                    ref, init_inputs = module.Model(*varied), varied
                    self.varied_floats = changed
                except Exception:  # the problem's own constructor refuses them: as given
                    self.varied_floats = []
        # A Model whose methods read module-level sizes (``layer_norm(x, (size_0,))``) is
        # another model at other sizes even when its constructor's arguments are the same.
        read = sorted(names_read(type(ref)) & sizes.keys())
        key = (repr(init_inputs) + "".join(f" {k}={sizes[k]}" for k in read)
               + (" perturbed" if perturb else ""))
        if key not in self.instances:
            if perturb:
                move_weights(ref, torch.Generator().manual_seed(self.weight_seed + 2400))
            weights = {k: v.detach().clone() for k, v in ref.state_dict().items()}
            # ModelNew's own initial values are replaced by the reference's weights, so it is
            # built under a seed of its own: the evaluation's seed (from which every input set
            # is drawn) never reaches the candidate's process, not even as initial_seed().
            built = self.remote.ask("build", key=key, init_inputs=init_inputs, state=weights,
                                    seed=secrets.randbelow(2**62))
            forbidden = sorted(str(op) for op in built.get("ops", [])
                               if op not in ALLOWED_ATEN_OPS | self.allowed)
            if forbidden:
                raise Verdict("cheat", f"ModelNew computed with torch while the reference's "
                                       f"weights were loaded into it (load_state_dict and "
                                       f".to(device), outside the forward): "
                                       f"{', '.join(forbidden)}; work on the weights belongs "
                                       f"in the forward's own kernels")
            self.instances[key] = ref.to(self.device)
        return module, self.instances[key], key

    def inputs(self, module: Any, problem: Problem, seed: int) -> list[Any]:
        """``get_inputs()`` under ``seed``, made on the evaluation device where the problem's
        code allows it (a 6 GB ``torch.rand`` takes ~10 s on the CPU, milliseconds on a GPU);
        on the CPU otherwise, and the result says so."""
        torch.manual_seed(seed)
        if self.device.type == "cuda" and not self.state.host_inputs.get(problem.digest):
            try:
                with torch.device(self.device):
                    values = call_factory(module, "get_inputs", problem.path)
                torch.manual_seed(secrets.randbelow(2**62))
                return to_device(values, self.device)
            except ProblemError as exc:
                self.state.host_inputs[problem.digest] = True
                self.flags.append(f"inputs made on the CPU: get_inputs() fails on the GPU "
                                  f"({str(exc)[:160]})")
                torch.manual_seed(seed)
        values = to_device(call_factory(module, "get_inputs", problem.path), self.device)
        torch.manual_seed(secrets.randbelow(2**62))  # torch.initial_seed() tells nothing
        return values

    def _buffer(self, inputs: list[Any]) -> int:
        if id(inputs) not in self.buffers:
            self.buffers[id(inputs)] = (self.next_buffer, inputs)
            self.next_buffer += 1
        return self.buffers[id(inputs)][0]

    def release(self, inputs: list[Any]) -> None:
        """This input set is done with: free it here and in the candidate's process (at
        KernelBench sizes one set is gigabytes)."""
        entry = self.buffers.pop(id(inputs), None)
        if entry is not None:
            self.sent.discard(entry[0])
            self.remote.ask("drop", buf=entry[0])
        release_cached_memory()

    def refill(self, module: Any, problem: Problem, inputs: list[Any], seed: int) -> None:
        """New values into the same input storage: catches results keyed by data pointers.
        Where fresh inputs have other shapes (data-dependent sizes), floating inputs get new
        random values of their own shape and the rest stay."""
        fresh = self.inputs(module, problem, seed)
        same = all(not isinstance(o, torch.Tensor) or (isinstance(n, torch.Tensor)
                                                       and n.shape == o.shape)
                   for o, n in zip(inputs, fresh, strict=True))
        for old, new in zip(inputs, fresh, strict=True):
            if not isinstance(old, torch.Tensor):
                continue
            if same:
                old.copy_(new)
            elif old.dtype.is_floating_point:
                old.copy_(torch.randn(old.shape, device=old.device).to(old.dtype))
        self.sent.discard(self._buffer(inputs))
