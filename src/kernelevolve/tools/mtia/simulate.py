"""The two entry points: simulate a candidate's forward, simulate the eager reference."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map_only

from kernelevolve.errors import TargetError

from .aten import GEMM_OPS, aten_record, gemm_flops, op_name
from .chip import KernelRecord, evaluate
from .generations import Generation, get_generation
from .hooks import Session
from .report import MtiaIllegalKernel, SimReport, build_report
from .written import Written

_ONE_AT_A_TIME = threading.Lock()


class _AtenRecorder(TorchDispatchMode):
    """Records eager aten ops as simulated kernels (skipping those the interpreter itself runs)."""

    def __init__(self, gen: Generation, records: list[KernelRecord], session: Session | None = None,
                 skip_flops: float | None = None) -> None:
        super().__init__()
        self.gen = gen
        self.records = records
        self.session = session
        self.skip_flops = skip_flops

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Otherwise torch wraps __torch_dispatch__ in dynamo.disable, whose first call imports
        # torch._dynamo (~4 s in a fresh worker); nothing is compiled under this mode.
        return False

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        out = self._uncomputed(func, args, kwargs) if self.skip_flops is not None else None
        if out is None:
            out = func(*args, **kwargs)
        if self.session is None or not self.session.in_launch:
            record = aten_record(func, args, kwargs, out, self.gen)
            if record is not None:
                self.records.append(record)
            if self.session is not None and self.session.written is not None:
                self.session.written.on_aten(func, args, kwargs, out)
        return out

    def _uncomputed(self, func: Any, args: tuple, kwargs: dict) -> Any:
        """For a matmul-like op above ``skip_flops``: an uninitialised output of the right layout.

        Only the op's shapes and addresses matter to the model; a 4096^3 bf16 GEMM would take
        minutes on a CPU core.
        """
        if op_name(func) not in GEMM_OPS:
            return None
        to_meta = lambda t: t.to("meta")
        try:
            meta = func(*tree_map_only(torch.Tensor, to_meta, args), **tree_map_only(torch.Tensor, to_meta, kwargs))
        except (NotImplementedError, RuntimeError):
            return None
        if gemm_flops(func, args, meta) < (self.skip_flops or 0.0):
            return None
        empty = lambda t: torch.empty_strided(t.shape, t.stride(), dtype=t.dtype)
        return tree_map_only(torch.Tensor, empty, meta)


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _finish(records: list[KernelRecord], gen: Generation, warm: bool, notes: list[str]) -> SimReport:
    illegal = _dedupe([reason for rec in records for reason in rec.illegal])
    if illegal:
        raise MtiaIllegalKernel(illegal)
    launches = evaluate(records, gen, warm)
    warnings = _dedupe(notes + [w for rec in records for w in rec.warnings])
    return build_report(launches, gen, warnings)


def _label(gen: Generation, warm: bool) -> str:
    cache = "steady state (warm on-chip cache)" if warm else "cold on-chip cache"
    return f"simulated: {gen.title}, analytical model, {cache}; not a measurement"


def simulate_forward(
    fn: Callable[[], object],
    gen: str | Generation = "2i",
    *,
    max_programs_per_launch: int = 64,
    allow_scatter: bool = False,
    warm: bool = True,
    max_sample_seconds: float | None = 4.0,
    written: Written | None = None,
    sample_seed: int | None = None,
) -> SimReport:
    """Run ``fn()`` once in Triton's interpreter and time it on a simulated MTIA ``gen``.

    Every Triton launch is recorded; a grid larger than ``max_programs_per_launch`` runs only a
    representative sample of its programs (first, last, evenly spaced and edge programs) and the
    rest is extrapolated, so the outputs of such a run are incomplete. When the programs are slow
    to interpret, fewer are sampled (never fewer than the grid's corners) so that the forward's sampled programs take about
    ``max_sample_seconds`` (None: no time limit). Eager torch ops in ``fn`` are
    simulated as one kernel each. ``warm`` reports the steady state of repeated forwards (the
    launches replayed twice through the cache model). Raises :class:`MtiaIllegalKernel` when a
    kernel could not run on MTIA (``allow_scatter`` permits scatter stores). ``written``, when
    given, follows which output elements hold what the full forward would have written
    (written.py), so the sampled run's outputs can be checked there. ``sample_seed``: the
    sampled interior programs drawn at random within their strata (the judge's seed, so a
    kernel cannot know which of its programs run), else evenly spaced.
    """
    import triton

    g = get_generation(gen)
    if not triton.knobs.runtime.interpret:
        raise TargetError(
            "the MTIA simulator runs kernels in Triton's interpreter: set TRITON_INTERPRET=1 before "
            "triton or any @triton.jit module is imported"
        )
    if not _ONE_AT_A_TIME.acquire(blocking=False):
        raise RuntimeError("simulate_forward is already running in this process (it patches the interpreter)")
    try:
        if max_programs_per_launch < 1:
            raise ValueError("max_programs_per_launch must be at least 1")
        session = Session(g, max_programs_per_launch, allow_scatter, max_sample_seconds, written,
                          sample_seed)
        session.install()
        try:
            with _AtenRecorder(g, session.records, session):
                fn()
        finally:
            session.uninstall()
    finally:
        _ONE_AT_A_TIME.release()
    notes = [_label(g, warm)]
    if not any(rec.kind == "triton" for rec in session.records):
        notes.append("no Triton launch was seen: the forward ran only eager torch ops")
    return _finish(session.records, g, warm, notes)


def simulate_reference(
    model: torch.nn.Module,
    inputs: list,
    gen: str | Generation = "2i",
    *,
    warm: bool = True,
    skip_flops: float | None = 1e9,
) -> SimReport:
    """The eager reference on a simulated MTIA ``gen``: one unfused kernel per aten op it runs.

    The model really runs on the CPU, except matmul-like ops above ``skip_flops`` FLOPs, whose
    outputs are left uninitialised (only their shapes matter here); if the forward then fails
    (it used such an output as indices, say), it is run again computing everything.
    """
    g = get_generation(gen)
    records: list[KernelRecord] = []
    try:
        with torch.no_grad(), _AtenRecorder(g, records, skip_flops=skip_flops):
            model(*inputs)
    except (RuntimeError, IndexError, ValueError):
        if skip_flops is None:
            raise
        records = []
        with torch.no_grad(), _AtenRecorder(g, records):
            model(*inputs)
    notes = [_label(g, warm), "eager baseline: one unfused library kernel per aten op"]
    return _finish(records, g, warm, notes)
