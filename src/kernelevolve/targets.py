"""Targets: where candidates are evaluated. A small registry other targets can join.

- ``cuda``: a real NVIDIA GPU; candidates are compiled, checked and timed. One worker per visible GPU.
- ``cpu``: Triton's interpreter on the CPU; correctness only, never timed.
- ``mtia-sim:<gen>`` (``2i`` default, ``v1``, ``300``): a simulated MTIA: correctness through the
  interpreter as on ``cpu``, time from the analytical chip model in tools/mtia (labelled
  simulated everywhere).

A target is looked up by name; names may carry a variant after a colon (``mtia-sim:2i``), and
the registry dispatches on the part before it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from kernelevolve.errors import TargetError


@dataclass(frozen=True)
class Target:
    """What the harness needs to know about a target."""

    name: str
    description: str
    timed: bool
    device: str  # torch device type the worker computes on
    interpreter: bool  # Triton runs in its interpreter (TRITON_INTERPRET=1)
    simulated: bool = False
    not_timed_reason: str | None = None
    worker_devices: list[str | None] = field(default_factory=lambda: [None])

    def worker_env(self, index: int) -> dict[str, str]:
        env = {"TRITON_INTERPRET": "1"} if self.interpreter else {}
        visible = self.worker_devices[index % len(self.worker_devices)]
        if visible is not None:
            env["CUDA_VISIBLE_DEVICES"] = visible
        return env


def _visible_gpus() -> list[str]:
    import torch

    if not torch.cuda.is_available():
        return []
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = [v.strip() for v in visible.split(",") if v.strip()] if visible else None
    count = torch.cuda.device_count()
    return (ids or [str(i) for i in range(count)])[:count]


def _cuda(variant: str | None) -> Target:
    gpus = _visible_gpus()
    if not gpus:
        raise TargetError("target 'cuda' needs an NVIDIA GPU with a CUDA build of torch; none is "
                          "visible here. Use --target cpu (correctness only) or run on a GPU host")
    if variant is not None:
        raise TargetError(f"target 'cuda' takes no variant (got 'cuda:{variant}'); pick GPUs with "
                          f"CUDA_VISIBLE_DEVICES")
    import torch

    return Target(name="cuda", description=f"{torch.cuda.get_device_name(0)} x{len(gpus)}",
                  timed=True, device="cuda", interpreter=False,
                  worker_devices=list(gpus))


def _check_interpreter(name: str) -> None:
    """Triton's interpreter before 3.7 breaks on NumPy >= 2.4 (``tensor.__index__`` converts a
    1-element array with ``int()``): say so before any kernel runs."""
    from importlib.metadata import PackageNotFoundError, version

    def parts(text: str) -> tuple[int, ...]:
        return tuple(int(p) for p in text.split("+")[0].split(".")[:2] if p.isdigit())

    # The versions as installed, without importing triton here: an import now would fix
    # triton.language's own helpers as compiled (not interpreted) for this whole process.
    try:
        triton_v, numpy_v = version("triton"), version("numpy")
    except PackageNotFoundError:
        return
    if parts(triton_v) < (3, 7) and parts(numpy_v) >= (2, 4):
        raise TargetError(f"target {name!r} runs Triton's interpreter, which in Triton "
                          f"{triton_v} fails with NumPy {numpy_v}; install "
                          f"triton>=3.7 (pip install 'triton>=3.7'), or numpy<2.4")


def _cpu(variant: str | None) -> Target:
    if variant is not None:
        raise TargetError(f"target 'cpu' takes no variant (got 'cpu:{variant}')")
    _check_interpreter("cpu")
    return Target(name="cpu", description="Triton interpreter on the CPU (correctness only)",
                  timed=False, device="cpu", interpreter=True,
                  not_timed_reason="the cpu target runs Triton's interpreter: correctness only, "
                                   "never timed")


def _mtia_sim(variant: str | None) -> Target:
    from kernelevolve.tools.mtia.generations import DEFAULT_GENERATION, GENERATIONS

    gen = variant or DEFAULT_GENERATION
    if gen not in GENERATIONS:
        raise TargetError(f"unknown MTIA generation {gen!r}; simulated generations: "
                          f"{', '.join('mtia-sim:' + g for g in GENERATIONS)}")
    _check_interpreter(f"mtia-sim:{gen}")
    return Target(name=f"mtia-sim:{gen}",
                  description=f"simulated MTIA {gen} (Triton interpreter + analytical model)",
                  timed=True, device="cpu", interpreter=True, simulated=True)


_REGISTRY: dict[str, Callable[[str | None], Target]] = {
    "cuda": _cuda, "cpu": _cpu, "mtia-sim": _mtia_sim,
}


def register_target(prefix: str, factory: Callable[[str | None], Target]) -> None:
    """Make ``prefix`` (and ``prefix:<variant>``) a target name."""
    _REGISTRY[prefix] = factory


def target_names() -> list[str]:
    """Every target name, variants spelled out."""
    from kernelevolve.tools.mtia.generations import GENERATIONS

    return sorted([n for n in _REGISTRY if n != "mtia-sim"] + [f"mtia-sim:{g}" for g in GENERATIONS])


def get_target(name: str | None = None) -> Target:
    """The target called ``name``, or the best one on this machine when ``name`` is None."""
    if name is None:
        return detect_target()
    prefix, _, variant = name.partition(":")
    factory = _REGISTRY.get(prefix)
    if factory is None:
        raise TargetError(f"unknown target {name!r}; known targets: {', '.join(target_names())}")
    return factory(variant or None)


def detect_target() -> Target:
    """``cuda`` when a GPU is visible, else ``cpu``."""
    return get_target("cuda" if _visible_gpus() else "cpu")


def tune_target() -> Target:
    """The default target of a tuning run: ``cuda`` when a GPU is visible, else the simulated
    MTIA 2i, so a machine without a GPU still has a timing signal to search on (``cpu`` only
    verifies)."""
    return get_target("cuda" if _visible_gpus() else "mtia-sim:2i")
