"""Timing on CUDA: device events around each forward, warm-up first, the L2 cache flushed before
every trial, candidate and references interleaved trial by trial so clock and thermal drift
fall on all of them alike; median and spread over enough trials.

What is timed is the device time of one forward: a GPU spin before each start event lets the host
enqueue the whole forward first, so host-side launch overhead is not in these figures (the
profilers report it).

Worker-side: torch and the standard library only.
"""

from __future__ import annotations

import secrets
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import torch

# Larger than the L2 of any current GPU (H100/H200: 50/60 MB, MI300X: 256 MB Infinity Cache is
# not flushed by this; it is an L3). Writing it evicts the previous trial's working set.
FLUSH_BYTES = 256 * 1024 * 1024
# GPU cycles spun after the flush, before the start event: the host enqueues the whole forward
# meanwhile, so the events time the device's work, not the Python launch path racing the GPU
# (measured on an H200: without it a 40 us softmax read 38-80 us from run to run). At ~2 GHz
# this is ~0.5 ms, enough for eager references of a few dozen aten ops.
SPIN_CYCLES = 1_000_000


@dataclass
class Latency:
    median_ms: float
    mean_ms: float
    stdev_ms: float
    iqr_ms: float
    min_ms: float
    max_ms: float
    cv: float
    trials: int

    @classmethod
    def of(cls, samples: list[float]) -> Latency:
        qs = statistics.quantiles(samples, n=4) if len(samples) >= 2 else [samples[0]] * 3
        mean = statistics.fmean(samples)
        stdev = statistics.stdev(samples) if len(samples) >= 2 else 0.0
        return cls(
            median_ms=statistics.median(samples), mean_ms=mean, stdev_ms=stdev,
            iqr_ms=qs[2] - qs[0], min_ms=min(samples), max_ms=max(samples),
            cv=stdev / mean if mean > 0 else 0.0, trials=len(samples),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def of_dict(cls, data: dict[str, Any]) -> Latency:
        """From ``to_dict``'s shape, every field type-checked (it may come from the candidate's
        process)."""
        return cls(median_ms=float(data["median_ms"]), mean_ms=float(data["mean_ms"]),
                   stdev_ms=float(data["stdev_ms"]), iqr_ms=float(data["iqr_ms"]),
                   min_ms=float(data["min_ms"]), max_ms=float(data["max_ms"]),
                   cv=float(data["cv"]), trials=int(data["trials"]))


def time_interleaved(
    fns: dict[str, Callable[[], Any]],
    *,
    min_trials: int = 100,
    min_time_s: float = 1.0,
    max_trials: int = 2000,
    warmup_ms: float = 50.0,
    before: Callable[[str, int], None] | None = None,
    after: Callable[[str, int, Any], None] | None = None,
) -> dict[str, Latency]:
    """Time each callable on the current CUDA device; trials rotate through the callables.

    Trials continue until ``min_trials`` rounds are done or ``min_time_s`` has passed with at
    least 10 rounds (whichever first), never beyond ``max_trials``. ``before(name, round)`` runs
    before each trial's events (the worker writes new input values there) and ``after(name,
    round, output)`` after them (it keeps a sample of outputs to check): neither is timed.
    """
    names = list(fns)
    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    for name in names:
        fns[name]()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        n = 0
        while n < 3 or (time.perf_counter() - t0) * 1e3 < warmup_ms:
            fns[name]()
            n += 1
            if n % 8 == 0:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
    events: dict[str, list[tuple[torch.cuda.Event, torch.cuda.Event]]] = {n: [] for n in names}
    start_wall = time.perf_counter()
    rounds = 0
    while rounds < max_trials:
        order = names[rounds % len(names):] + names[:rounds % len(names)]
        for name in order:
            flush.zero_()
            if before is not None:
                before(name, rounds)
            torch.cuda._sleep(SPIN_CYCLES)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            out = fns[name]()
            end.record()
            events[name].append((start, end))
            if after is not None:
                after(name, rounds, out)
            del out
        rounds += 1
        if rounds % 16 == 0:
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - start_wall
        if rounds >= min_trials or (elapsed >= min_time_s and rounds >= 10):
            break
    torch.cuda.synchronize()
    del flush
    return {n: Latency.of([s.elapsed_time(e) for s, e in events[n]]) for n in names}


_COPY_BW: dict[int, float] = {}


def copy_bandwidth(device: torch.device) -> float:
    """Bytes per millisecond a device-to-device copy moves on ``device`` (read plus write), the
    best of several 1 GiB copies; measured once per process."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _COPY_BW:
        n = 1 << 28  # 1 GiB of int32, far beyond any L2
        src = torch.empty(n, dtype=torch.int32, device=device)
        dst = torch.empty_like(src)
        dst.copy_(src)
        best = float("inf")
        for _ in range(5):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            dst.copy_(src)
            end.record()
            end.synchronize()
            best = min(best, start.elapsed_time(end))
        _COPY_BW[index] = 2 * src.nbytes / best
        del src, dst
    return _COPY_BW[index]


def tensor_bytes(values: Any) -> int:
    """Bytes a kernel must touch to read or write these tensors: each tensor's elements, or its
    storage where that is smaller (a broadcast view)."""
    from kernelevolve.tools.harness.compare import tensors_of

    total = 0
    for t in tensors_of(values):
        total += min(t.numel() * t.element_size(), t.untyped_storage().nbytes())
    return total


class InputVariation:
    """New values for a set of inputs before every timed trial, so a result memoized by pointer,
    version counter or fingerprint is wrong: each floating input gets its base values rotated by
    a random offset (the same values, so the same distribution, in a new arrangement); a sorted
    one (bucket boundaries) is scaled instead, keeping its order. ``apply(inputs, shift)`` with
    a recorded shift rebuilds a trial's exact inputs."""

    def __init__(self, base: list[Any]) -> None:
        self.base = base
        self.varied = [i for i, t in enumerate(base) if isinstance(t, torch.Tensor)
                       and t.dtype.is_floating_point and t.numel() > 1]
        self.ordered = {i for i in self.varied if base[i].numel() <= 1 << 20
                        and bool((base[i].reshape(-1).diff() >= 0).all())}

    def apply(self, inputs: list[Any], shift: int | None = None) -> int:
        shift = 1 + secrets.randbelow(2**40) if shift is None else shift
        for i in self.varied:
            if i in self.ordered:
                torch.mul(self.base[i], 1.0 + (shift % 997) / 997.0, out=inputs[i])
            else:
                _rotate_into(inputs[i], self.base[i], shift)
        return shift


def _rotate_into(dst: torch.Tensor, src: torch.Tensor, shift: int) -> None:
    """``dst`` (same shape as ``src``) gets ``src``'s values rotated by ``shift`` positions in
    row-major order: two copies, no temporary."""
    n = src.numel()
    k = shift % n
    flat_src = src.reshape(-1)
    if not dst.is_contiguous():  # a strided input: rotate into a temporary, copy it over
        dst.copy_(flat_src.roll(-k).view_as(src))
        return
    flat_dst = dst.view(-1)
    flat_dst[:n - k].copy_(flat_src[k:])
    flat_dst[n - k:].copy_(flat_src[:k])
