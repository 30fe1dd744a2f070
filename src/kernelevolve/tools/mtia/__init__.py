"""A CPU simulator of Meta's MTIA accelerators for Triton kernels (results are simulated).

Correctness comes from running the kernel in Triton's interpreter; time comes from an analytical
model of the chip (MODEL.md documents it, generations.py holds every constant with its source).
Imports only the standard library, numpy, torch and triton, so the evaluation worker can use it.

    from kernelevolve.tools.mtia import GENERATIONS, simulate_forward, simulate_reference

``TRITON_INTERPRET=1`` must be set before triton or any ``@triton.jit`` module is imported.
"""

from __future__ import annotations

from .generations import DEFAULT_GENERATION, GENERATIONS, Const, Generation, get_generation
from .report import LaunchReport, MtiaIllegalKernel, SimReport
from .simulate import simulate_forward, simulate_reference
from .written import Written

__all__ = [
    "DEFAULT_GENERATION",
    "GENERATIONS",
    "Const",
    "Generation",
    "LaunchReport",
    "MtiaIllegalKernel",
    "SimReport",
    "Written",
    "get_generation",
    "simulate_forward",
    "simulate_reference",
]
