"""The candidate process: the only process that imports and runs a candidate's code.

The judge (``worker.Evaluation``) forks it at the start of an evaluation, before it draws the
evaluation's seeds or builds the reference, so nothing the candidate process holds tells it the
inputs to come or the answers. The two talk over a socket pair, one request and one reply at a
time:

- the judge sends the constructor arguments and its own *copy* of the reference's weights, then
  input values (the candidate process keeps one buffer per input set the judge names, so "new
  values in the same memory" reaches the same pointers), and asks for one forward at a time;
- the candidate process runs the forward under the op recorder, the launch counter and the
  thread and stream watches, and replies with the outputs and what it observed.

The judge holds the reference, its outputs, the tolerances, the allowed ops and the rules, and
decides the verdict; the candidate process has no way to write to the judge's memory or to the
pipe that carries the verdict. What it observes about itself (which aten ops ran, how many
kernels launched, its own timings on a GPU, the simulator's counts) is still reported from
inside it: the judge checks what it can (outputs of timed trials, inputs sent back where they
are small) and the static stage refuses the known ways to hide from the recorder.

Replies are read with ``torch.load(weights_only=True)``: tensors and plain containers, never
code. Worker-side: torch and the standard library only.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import io
import os
import re
import signal
import socket
import struct
import sys
import threading
import time
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.multiprocessing.reductions import StorageWeakRef

from kernelevolve.problem import as_list
from kernelevolve.tools.harness import compare, device_kernels
from kernelevolve.tools.harness.gpu_compile import LaunchLog
from kernelevolve.tools.harness.guard import Integrity, LaunchCounter, OpRecorder
from kernelevolve.tools.harness.interpreter import AUTOTUNE, PROGRAM_ORDER
from kernelevolve.tools.harness.timing import InputVariation, time_interleaved

# Inputs of at most this many bytes come back after every forward, so the judge itself sees
# whether the candidate wrote into them; larger ones (GPU sizes) are compared in the candidate
# process, which reports the result.
RETURN_INPUTS_BYTES = 64 << 20
# What the candidate process may report about itself; ok and mismatch are the judge's to say.
FAILURES = ("compile_error", "runtime_error", "cheat", "crash", "timeout")


MESSAGE_CHARS = 8000  # of a verdict's message: tracebacks fit, a candidate's flood does not


class Verdict(Exception):
    """Ends an evaluation with a status other than ok."""

    def __init__(self, status: str, message: str, fatal: bool = False) -> None:
        if len(message) > MESSAGE_CHARS:  # an exception's text is the candidate's to choose
            message = message[:MESSAGE_CHARS] + f"… ({len(message) - MESSAGE_CHARS} more "
            message += "characters cut)"
        super().__init__(message)
        self.status = status
        self.message = message
        self.fatal = fatal  # the process is unusable afterwards (a CUDA error poisons it)


def tb_tail(exc: BaseException, limit: int = 12) -> str:
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return "".join(lines)[-4000:] if len(lines) < limit else "".join(lines[-limit:])[-4000:]


def is_compile_error(exc: BaseException) -> bool:
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"CompilationError", "CompileTimeAssertionFailure",
                         "UnsupportedLanguageConstruct"}) \
        or "error building extension" in str(exc).lower()


def is_fatal_device_error(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc}".lower()
    return any(s in text for s in ("illegal memory access", "cuda error", "device-side assert",
                                   "acceleratorerror", "misaligned address",
                                   "unspecified launch failure"))


# -- processes -----------------------------------------------------------------------------------
def fork_child(body: Callable[[], None], note_fd: int | None = None) -> int:
    """Fork; the child runs ``body`` and exits (70 after printing the traceback if it raised,
    and writing the exception's one-line summary to ``note_fd`` where given), never returning;
    the parent gets the child's pid."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            body()
        except BaseException as exc:  # the child's boundary: its parent reports the death
            traceback.print_exc()
            code = 70
            if note_fd is not None:  # never blocks: a full pipe (filled by whom?) loses the note
                with contextlib.suppress(OSError):
                    os.set_blocking(note_fd, False)
                    os.write(note_fd, f"{type(exc).__name__}: {exc}"[:NOTE_BYTES].encode())
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    return pid


NOTE_BYTES = 600  # of a dead child's exception summary


def read_note(fd: int) -> str:
    """What a child that has exited wrote to its note pipe, as one line of at most NOTE_BYTES
    characters with control characters blanked (empty if nothing); closes ``fd``. Never blocks:
    a grandchild may still hold the write end open."""
    try:
        os.set_blocking(fd, False)
        raw = os.read(fd, NOTE_BYTES * 4)
    except OSError:  # BlockingIOError: nothing written
        raw = b""
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
    return one_line(raw.decode(errors="replace"), NOTE_BYTES)


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")


def one_line(text: str, limit: int) -> str:
    """``text`` with control characters (newlines, ANSI escapes) blanked, runs of blanks made
    one, cut to ``limit`` characters: what a process may put into a verdict about itself."""
    flat = " ".join(_CONTROL.sub(" ", text).split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def exit_description(status: int) -> str:
    """``os.waitpid``'s status in words."""
    if os.WIFSIGNALED(status):
        return f"killed by signal {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit code {os.WEXITSTATUS(status)}"


# -- framing -------------------------------------------------------------------------------------
# GPU tensors travel as CUDA IPC handles (plain bytes and numbers), not as copies through the
# host: a 6 GB KernelBench input would otherwise cost seconds each way. The receiver opens the
# handle, copies the tensor into its own memory and lets the mapping go; the sender keeps what
# it sent alive until its next message. A reply's fields named in MAPPED stay mapped instead
# (no copy): the judge reads them once, before its next request, and lets them go.
_IPC = "__cuda_ipc__"
# inputs_after: the candidate's inputs after a forward, compared with the judge's own at once
# (a copy was a whole input more in the judge: 6 GB at KernelBench's sizes, on an H100 80GB the
# difference between fitting and not).
MAPPED = frozenset({"inputs_after"})


def send(sock: socket.socket, obj: Any, keep: list[Any] | None = None) -> None:
    """One message; GPU tensors in it are shared by handle (``keep`` holds them meanwhile)."""
    if keep is not None:
        keep.clear()
    buf = io.BytesIO()
    torch.save(_pack(obj, keep if keep is not None else []), buf)
    data = buf.getbuffer()  # no copy of a large message
    sock.sendall(struct.pack("<Q", data.nbytes))
    sock.sendall(data)
    del data


def recv(sock: socket.socket, trusted: bool) -> Any:
    """The next message; ``trusted`` (the judge's own) may hold any object, an untrusted one
    (the candidate process's) only tensors and plain containers. EOFError when the peer is gone."""
    header = _recv_exact(sock, 8)
    (n,) = struct.unpack("<Q", header)
    data = _recv_exact(sock, n)
    obj = torch.load(io.BytesIO(data), weights_only=not trusted, map_location=None)
    if type(obj) is dict:
        return {k: _unpack(v, copy=k not in MAPPED) for k, v in obj.items()}
    return _unpack(obj)


def _pack(obj: Any, keep: list[Any]) -> Any:
    if isinstance(obj, torch.Tensor) and obj.is_cuda:
        t = obj.detach()
        t = t if type(t) is torch.Tensor else t.as_subclass(torch.Tensor)
        (device, handle, size_b, offset_b, ref_handle, ref_offset, event_handle,
         event_sync) = t._typed_storage()._share_cuda_()
        keep.append(t)
        return {_IPC: [list(t.shape), list(t.stride()), int(t.storage_offset()),
                       str(t.dtype).removeprefix("torch."), int(device), bytes(handle),
                       int(size_b), int(offset_b), bytes(ref_handle), int(ref_offset),
                       None if event_handle is None else bytes(event_handle), bool(event_sync)]}
    if type(obj) in (list, tuple):
        return type(obj)(_pack(v, keep) for v in obj)
    if type(obj) is dict:
        return {k: _pack(v, keep) for k, v in obj.items()}
    return obj


def _unpack(obj: Any, copy: bool = True) -> Any:
    if type(obj) is dict and len(obj) == 1 and _IPC in obj:
        return _open_ipc(obj[_IPC], copy)
    if type(obj) in (list, tuple):
        return type(obj)(_unpack(v, copy) for v in obj)
    if type(obj) is dict:
        return {k: _unpack(v, copy) for k, v in obj.items()}
    return obj


def _open_ipc(fields: Any, copy: bool = True) -> torch.Tensor:
    """A private copy of a tensor shared by handle (``copy``), or the sender's memory mapped,
    valid until the sender's next message; every field type-checked first."""
    (shape, stride, offset, dtype_name, device, handle, size_b, offset_b, ref_handle,
     ref_offset, event_handle, event_sync) = fields
    dtype = getattr(torch, str(dtype_name), None)
    ints = [offset, device, size_b, offset_b, ref_offset, *shape, *stride]
    if not (isinstance(dtype, torch.dtype) and all(type(v) is int for v in ints)
            and isinstance(handle, bytes) and isinstance(ref_handle, bytes)
            and (event_handle is None or isinstance(event_handle, bytes))
            and len(shape) == len(stride)):
        raise ValueError("a malformed shared-tensor handle")
    storage = torch.UntypedStorage._new_shared_cuda(
        device, handle, size_b, offset_b, ref_handle, ref_offset, event_handle,
        bool(event_sync))
    view = torch.empty(0, dtype=dtype, device=f"cuda:{device}")
    view.set_(storage, offset, shape, stride)
    return view.clone() if copy else view


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise EOFError("the peer closed the connection")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


# -- the candidate side --------------------------------------------------------------------------
class _ThreadWatch:
    """Counts threads started from the main thread while active. Threads that libraries start
    from their own background threads (torch.compile's worker pools) are not the candidate's."""

    def __init__(self) -> None:
        self.count = 0
        self._original = threading.Thread.start

    def __enter__(self) -> _ThreadWatch:
        original, watch = self._original, self

        def start(thread: threading.Thread) -> None:
            if threading.current_thread() is threading.main_thread():
                watch.count += 1
            original(thread)

        threading.Thread.start = start  # type: ignore[method-assign,assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        threading.Thread.start = self._original  # type: ignore[method-assign,assignment]


def load_candidate(path: Path, integrity: Integrity, tag: str) -> type:
    """Import the candidate file as a fresh module and return its ModelNew."""
    name = f"kernelevolve_candidate_{tag}_{abs(hash(str(path))) % 10**8}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise Verdict("compile_error", f"cannot import candidate file {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise Verdict("compile_error", f"importing the candidate failed: {type(exc).__name__}: "
                                       f"{exc}\n{tb_tail(exc)}") from exc
    tampered = integrity.tampered()
    if tampered:
        raise Verdict("cheat", f"importing the candidate replaced harness functions: {tampered}")
    cls = getattr(module, "ModelNew", None)
    if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
        raise Verdict("compile_error", "the candidate defines no class ModelNew(nn.Module)")
    return cls


@dataclass
class CandidateSide:
    """The candidate process's state: its class, its instances, its input buffers."""

    path: Path
    device: torch.device
    launches: LaunchCounter
    integrity: Integrity
    tag: str
    cls: type | None = None
    models: dict[str, torch.nn.Module] = field(default_factory=dict)
    buffers: dict[int, list[Any]] = field(default_factory=dict)
    last_out: Any = None
    # the outputs handed out before, newest first, held as a caller would hold them
    previous: list[Any] = field(default_factory=list)
    # weak handles on the storages of every output handed out (OutputStorages)
    storages: OutputStorages = field(default_factory=lambda: OutputStorages())

    def do_load(self) -> dict[str, Any]:
        self.cls = load_candidate(self.path, self.integrity, self.tag)
        if os.environ.get("TRITON_INTERPRET") == "1":
            self.launches.log = LaunchLog()  # for do_gpu_compile
        return {}

    def do_gpu_compile(self, arch: int, timeout_s: float) -> dict[str, Any]:
        """Compile for sm_<arch> the kernels launched since the last call (gpu_compile.py):
        the errors, how many distinct kernels were compiled, and the launches that could not
        be described."""
        from kernelevolve.tools.harness.gpu_compile import CompileTimeout, compile_specs

        log = self.launches.log or LaunchLog()
        specs, skipped = log.take_new(), list(log.skipped)
        try:
            errors = compile_specs(self.path, specs, arch, timeout_s) if specs else []
        except CompileTimeout as exc:
            return {"errors": [], "timed_out": str(exc), "kernels": len(specs),
                    "skipped": skipped}
        return {"errors": errors, "kernels": len(specs), "skipped": skipped}

    def do_build(self, key: str, init_inputs: list[Any], state: dict[str, torch.Tensor],
                 seed: int) -> dict[str, Any]:
        assert self.cls is not None
        torch.manual_seed(seed)  # the judge's own draw, unrelated to any input set's seed
        try:
            model = self.cls(*init_inputs)
        except Exception as exc:
            raise Verdict("runtime_error", f"ModelNew(*get_init_inputs()) raised "
                                           f"{type(exc).__name__}: {exc}\n{tb_tail(exc)}") from exc
        # The reference's weights arrive here, outside any forward: whatever the candidate's
        # code runs meanwhile (hooks, overrides the static check missed) is recorded too, so no
        # work on the weights is done by torch unseen (the judge refuses compute ops here).
        recorder = OpRecorder()
        try:
            with torch.no_grad(), recorder:
                model.load_state_dict(state, strict=True)
                self.models[key] = model.to(self.device)
        except RuntimeError as exc:
            raise Verdict("compile_error", "ModelNew's parameters and buffers must have the same "
                                           f"names and shapes as Model's: {exc}") from exc
        return {"ops": sorted(recorder.ops)}

    def do_reload(self, key: str, state: dict[str, torch.Tensor]) -> dict[str, Any]:
        """New weights into the built instance ``key``, in place (the same tensors, as an
        optimizer step leaves them), under the op recorder as in do_build."""
        recorder = OpRecorder()
        try:
            with torch.no_grad(), recorder:
                self.models[key].load_state_dict(state, strict=True)
        except RuntimeError as exc:
            raise Verdict("compile_error", f"new weights could not be loaded into ModelNew: "
                                           f"{exc}") from exc
        return {"ops": sorted(recorder.ops)}

    def _inputs(self, buf: int, values: list[Any]) -> list[Any]:
        """The buffers of input set ``buf``: new ones, or the same memory with new values."""
        old = self.buffers.get(buf)
        fresh = [v.to(self.device) if isinstance(v, torch.Tensor) else v for v in values]
        if old is None or len(old) != len(fresh) or any(
                isinstance(o, torch.Tensor) != isinstance(n, torch.Tensor)
                or (isinstance(o, torch.Tensor) and o.shape != n.shape) for o, n in
                zip(old, fresh, strict=True)):
            self.buffers[buf] = fresh
            return fresh
        for o, n in zip(old, fresh, strict=True):
            if isinstance(o, torch.Tensor):
                o.copy_(n)
        return old

    def do_drop(self, buf: int) -> dict[str, Any]:
        self.buffers.pop(buf, None)
        if torch.cuda.is_initialized():  # this set's outputs, cached: free for other workers
            torch.cuda.empty_cache()
        return {}

    def do_load_inputs(self, buf: int, inputs: list[Any]) -> dict[str, Any]:
        self._inputs(buf, inputs)
        return {}

    def do_forward(self, key: str, buf: int, inputs: list[Any] | None, turn: int = 0,
                   reverse_order: bool = False, profiled: bool = False) -> dict[str, Any]:
        """One forward under the recorder; ``inputs`` None runs on the buffers as they are.
        In Triton's interpreter, autotuned kernels run their config number ``turn`` (modulo
        their count) and each launch's programs run in a random order, or with
        ``reverse_order`` in the reverse of the previous forward's (interpreter.py).
        ``profiled`` (a GPU): under the device profiler too, whose account of the kernels that
        ran and the torch ops that launched them goes back as ``device_kernels``."""
        model = self.models[key]
        args = self.buffers[buf] if inputs is None else self._inputs(buf, inputs)
        # Before this forward: the outputs the caller let go of since must have been freed.
        kept = self.storages.still_alive(self.last_out, self.previous)
        # On a GPU the judge compares the inputs after the forward with its own (inputs_after,
        # sent by handle): a snapshot here would be a whole input more (6 GB at KernelBench's
        # sizes). Elsewhere they go back only when small, so this process compares them.
        before = compare.snapshot(args) if self.device.type != "cuda" else None
        # Free memory holds garbage, not an earlier output a kernel that skips writes would find
        # (this process never held the reference's answers; its own earlier outputs are for
        # other inputs). One output's worth, at most a quarter of what is free.
        out_bytes = sum(t.numel() * t.element_size() for t in compare.tensors_of(self.last_out))
        free = torch.cuda.mem_get_info()[0] if self.device.type == "cuda" else 1 << 30
        compare.poison_allocator(min(max(out_bytes, 1 << 20), free // 4), self.device)
        started = _ThreadWatch()
        stream = torch.cuda.current_stream() if self.device.type == "cuda" else None
        recorder = OpRecorder()
        self.launches.count = 0
        self.launches.names.clear()
        PROGRAM_ORDER.begin_forward(reverse=bool(reverse_order))
        AUTOTUNE.begin_forward(int(turn))

        def forward() -> Any:
            with torch.no_grad(), recorder, started:
                result = model(*args)
            if self.device.type == "cuda":
                torch.cuda.synchronize()
            return result

        kernels = None
        t0 = time.perf_counter()
        try:
            if profiled and self.device.type == "cuda":
                # through the module: its functions are watched (guard.Integrity)
                out, kernels = device_kernels.trace_forward(forward)
            else:
                out = forward()
        except Exception as exc:
            status = "compile_error" if is_compile_error(exc) else "runtime_error"
            raise Verdict(status, f"ModelNew.forward raised {type(exc).__name__}: {exc}\n"
                                  f"{tb_tail(exc)}", fatal=is_fatal_device_error(exc)) from exc
        seconds = time.perf_counter() - t0
        retained = retained_outputs(out, args)
        self.storages.handed_out(out, [*args, *model.parameters(), *model.buffers()])
        self.last_out = out
        small = self.device.type == "cuda" or sum(  # on a GPU they go back by handle
            t.numel() * t.element_size() for t in args
            if isinstance(t, torch.Tensor)) <= RETURN_INPUTS_BYTES
        return {
            "out": _plain(out), "seconds": seconds, "ops": sorted(recorder.ops),
            "launches": self.launches.count,
            "odd_outputs": [type(v).__name__ for v in as_list(out)
                            if isinstance(v, torch.Tensor) and type(v) is not torch.Tensor],
            "inputs_after": _plain(args) if small else None,
            "modified": compare.modified_inputs(before, args) if before is not None else [],
            "threads": started.count,
            "stream_switched": stream is not None and torch.cuda.current_stream() != stream,
            "tampered": self.integrity.tampered(),
            "notes": list(AUTOTUNE.notes),
            "autotune_configs": AUTOTUNE.most,
            "retained": retained,
            "kept_storages": kept,
            "device_kernels": kernels,
            "triton_launched": sorted(self.launches.names),
        }

    def do_memory(self) -> dict[str, Any]:
        """This process's peak allocated device memory (for the judge's report only)."""
        if self.device.type != "cuda":
            return {"peak_bytes": 0}
        return {"peak_bytes": int(torch.cuda.max_memory_allocated(self.device))}

    def do_keep_previous(self, keep: int = 1) -> dict[str, Any]:
        """Hold the last output as a caller would, with at most ``keep`` earlier ones."""
        self.previous = [self.last_out, *self.previous][:max(1, keep)]
        return {}

    def do_resend_previous(self, age: int = 1) -> dict[str, Any]:
        """The output handed out ``age`` forwards before the last one, as it is now: one that
        changed aliases memory the candidate reuses between calls (a ring of buffers)."""
        return {"out": _plain(self.previous[age - 1]) if age <= len(self.previous) else None}

    def do_time(self, key: str, buf: int, cfg: dict[str, Any], sample_rounds: list[int]
                ) -> dict[str, Any]:
        """The candidate's forward timed on the GPU, its inputs varied before every trial
        (timing.InputVariation, as the judge varies its own), outputs of ``sample_rounds`` kept
        for the judge to check."""
        model, args = self.models[key], self.buffers[buf]
        base = compare.snapshot(args)
        variation = InputVariation(base)
        shifts: dict[int, int] = {}
        samples: list[tuple[int, int, Any]] = []

        def before(name: str, round_: int) -> None:
            shifts[round_] = variation.apply(args)

        def after(name: str, round_: int, out: Any) -> None:
            if round_ in sample_rounds:
                samples.append((round_, shifts[round_], _plain(compare.clone_tree(out))))

        with torch.no_grad():
            lat = time_interleaved({"candidate": lambda: model(*args)},
                                   min_trials=int(cfg["min_trials"]),
                                   min_time_s=float(cfg["min_time_s"]),
                                   max_trials=int(cfg["max_trials"]),
                                   warmup_ms=float(cfg["warmup_ms"]), before=before, after=after)
        for a, b in zip(args, base, strict=True):
            if isinstance(a, torch.Tensor):
                a.copy_(b)
        return {"latency": lat["candidate"].to_dict(), "samples": samples,
                "tampered": self.integrity.tampered()}

    def do_calls(self, key: str, problem: str, sizes: dict[str, int], seed: int, n: int,
                 budget_s: float, sample_rounds: list[int]) -> dict[str, Any]:
        """``n`` forwards (fewer where they take over ``budget_s``: "ran" says how many), each
        on new inputs: ``get_inputs()`` at ``sizes`` under ``seed + i`` (the judge's draw, made
        on the CPU and moved, as the judge makes them to check a call), so a call of this run
        looks like any checked one; each under the op recorder. The outputs of
        ``sample_rounds`` go back for the judge to check."""
        from kernelevolve.problem import call_factory, parse_problem

        model = self.models[key]
        module = parse_problem(problem).module(sizes)
        ops: set[str] = set()
        fewest = None
        samples: list[tuple[int, Any]] = []
        t0, ran = time.perf_counter(), 0
        with torch.no_grad():
            for round_ in range(int(n)):
                if round_ and time.perf_counter() - t0 > float(budget_s):
                    break
                ran = round_ + 1
                torch.manual_seed(int(seed) + round_)
                args = [v.to(self.device) if isinstance(v, torch.Tensor) else v
                        for v in call_factory(module, "get_inputs", Path(problem))]
                torch.manual_seed(int.from_bytes(os.urandom(7), "little"))
                recorder = OpRecorder()
                self.launches.count = 0
                PROGRAM_ORDER.begin_forward(reverse=False)
                AUTOTUNE.begin_forward(round_)
                try:
                    with recorder:
                        out = model(*args)
                except Exception as exc:
                    status = "compile_error" if is_compile_error(exc) else "runtime_error"
                    raise Verdict(status, f"ModelNew.forward raised {type(exc).__name__} on call "
                                          f"{round_ + 1} of {n} in a row: {exc}\n{tb_tail(exc)}",
                                  fatal=is_fatal_device_error(exc)) from exc
                ops.update(recorder.ops)  # as do_forward reports them
                fewest = self.launches.count if fewest is None else min(fewest,
                                                                        self.launches.count)
                if round_ in sample_rounds:
                    samples.append((round_, _plain(compare.clone_tree(out))))
                del out, args
        return {"ran": ran, "ops": sorted(ops), "fewest_launches": fewest or 0,
                "samples": samples, "tampered": self.integrity.tampered()}

    def do_repeat(self, key: str, buf: int, n: int) -> dict[str, Any]:
        """``n`` forwards back to back on the held inputs, then a synchronize: the judge times
        this request by its own clock (Evaluation.check_wall_clock)."""
        model, args = self.models[key], self.buffers[buf]
        with torch.no_grad():
            for _ in range(int(n)):
                model(*args)
        if torch.cuda.is_available() and any(isinstance(a, torch.Tensor) and a.is_cuda
                                             for a in args):
            torch.cuda.synchronize()
        return {}

    def do_simulate(self, key: str, problem: str, sizes: dict[str, int], seed: int, gen: str,
                    sample: int = 1 << 16, sample_seed: int | None = None) -> dict[str, Any]:
        """The forward under the MTIA chip model, at the problem's own sizes, on inputs made
        here from ``seed`` (gigabytes at KernelBench's sizes: not sent). Only sampled programs
        run, so the outputs are incomplete: for each output tensor, up to ``sample`` random
        elements that hold what the full forward would have written (mtia/written.py) go back
        with their flat indices, for the judge to check. ``sample_seed`` (the judge's draw, not
        the inputs' seed) picks the simulated programs and the checked elements."""
        from kernelevolve.problem import call_factory, parse_problem
        from kernelevolve.tools.mtia import MtiaIllegalKernel, Written, simulate_forward

        model = self.models[key]
        module = parse_problem(problem).module(sizes)
        torch.manual_seed(seed)
        args = call_factory(module, "get_inputs", Path(problem))
        recorder = OpRecorder()
        written = Written(seed=seed if sample_seed is None else sample_seed)
        result: list[Any] = []
        AUTOTUNE.begin_forward(0)  # autotuned kernels are simulated at their first config

        def forward() -> Any:
            with torch.no_grad(), recorder:
                result.append(model(*args))

        try:
            sim = simulate_forward(forward, gen, written=written, sample_seed=sample_seed)
        except MtiaIllegalKernel as exc:
            return {"illegal": list(exc.reasons), "ops": sorted(recorder.ops)}
        outputs: list[dict[str, Any]] = []
        for leaf in as_list(result[0]):
            if not isinstance(leaf, torch.Tensor):
                outputs.append({"value": leaf})
                continue
            t = leaf.detach().as_subclass(torch.Tensor)
            idx, trusted, wrote = written.pick(t, int(sample))
            index = torch.from_numpy(idx)
            values = (t.reshape(-1)[index] if t.dim() == 0 or not index.numel()
                      else t[torch.unravel_index(index, t.shape)]).clone()
            outputs.append({"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch."),
                            "index": index, "values": values, "trusted": trusted,
                            "written": wrote})
        return {"sim": sim.to_dict(), "time_s": sim.time_s,
                "limiting_resource": sim.limiting_resource, "ops": sorted(recorder.ops),
                "outputs": outputs, "atomics": written.atomics}

    def do_profile(self, key: str, buf: int, problem: str, candidate: str,
                   sizes: dict[str, int], seed: int, forward_ms: float, workdir: str,
                   options: dict[str, Any]) -> dict[str, Any]:
        """The profilers on the verified candidate (advisory: the verdict is already made). The
        FLOP count reads a reference instance built here from the problem file."""
        from kernelevolve.problem import parse_problem
        from kernelevolve.tools.profile_jobs import run_profile
        from kernelevolve.tools.profiling import ProfileContext

        _, reference, _ = parse_problem(problem).instantiate(sizes, seed)
        ctx = ProfileContext(problem=problem, candidate=candidate, sizes=sizes, seed=seed,
                             model=self.models[key], reference=reference.to(self.device),
                             inputs=self.buffers[buf], forward_ms=forward_ms,
                             workdir=Path(workdir))
        return {"reports": run_profile(ctx, options)}


class OutputStorages:
    """Weak handles on the storages of the outputs the forward handed out (no memory held:
    a storage whose last owner lets go is freed even while its handle lives). Once the caller
    (the harness, holding outputs as a caller would) has let an output go, its storage must be
    freed: one still alive is held by the candidate, which may write it again (a ring of
    buffers of any length, outputs made with ``set_`` on kept memory, a cache of outputs).
    Storages of the forward's inputs, parameters and buffers are the input checks' business
    and are not followed."""

    def __init__(self) -> None:
        self.calls = 0
        self.entries: list[tuple[StorageWeakRef, int]] = []  # (storage, the call that made it)
        self.held_calls: dict[int, int] = {}  # id of an output the harness holds -> its call

    def handed_out(self, out: Any, own: list[Any]) -> None:
        """Follow the storages of ``out`` (this forward's outputs), other than ``own``'s."""
        self.calls += 1
        mine = {t.untyped_storage()._cdata for t in own if isinstance(t, torch.Tensor)}
        seen = set()
        for t in compare.tensors_of(out):
            storage = t.untyped_storage()
            if storage._cdata in mine or storage._cdata in seen or not storage.nbytes():
                continue
            seen.add(storage._cdata)
            self.entries.append((StorageWeakRef(storage), self.calls))
        self.held_calls[id(out)] = self.calls

    def still_alive(self, last_out: Any, previous: list[Any]) -> list[int]:
        """How many calls ago each output the harness no longer holds was made, for those
        whose storage is still alive (after a garbage collection: a reference cycle is not
        the candidate keeping memory). Freed ones are forgotten."""
        held = {self.held_calls[id(o)] for o in (last_out, *previous) if id(o) in self.held_calls}
        self.held_calls = {i: c for i, c in self.held_calls.items() if c in held}
        alive = [(w, c) for w, c in self.entries if c in held or not w.expired()]
        if any(c not in held for _, c in alive):
            gc.collect()
            alive = [(w, c) for w, c in alive if c in held or not w.expired()]
        self.entries = alive
        return sorted({self.calls - c + 1 for _, c in alive if c not in held})


def retained_outputs(out: Any, args: list[Any], harness: list[Any] | None = None) -> list[int]:
    """Indices of the output tensors that something besides the harness still references after
    the forward, directly or through the tensor they are a view of (a module attribute, a
    list, a closure): memory the candidate keeps and may write again, so the caller's earlier
    results would change. Outputs that are (views of) inputs are left to the input checks;
    ``harness``: the launch log (LaunchCounter.log), whose entries hold the kernels' arguments.
    Python references only (``gc``): a raw pointer kept as an integer is caught by the judge's
    digests of earlier outputs instead."""
    leaves = [t for t in as_list(out) if isinstance(t, torch.Tensor)]
    ours: set[int] = {id(leaves), id(args)}
    for entry in harness or []:
        ours.update(id(part) for part in (entry, *entry))

    def containers(value: Any) -> None:
        if isinstance(value, list | tuple):
            ours.add(id(value))
            for v in value:
                containers(v)

    def held(obj: torch.Tensor) -> bool:
        return any(id(r) not in ours and not isinstance(r, types.FrameType)
                   for r in gc.get_referrers(obj))

    containers(out)
    inputs = {id(a) for a in args if isinstance(a, torch.Tensor)}
    bad = []
    for i in range(len(leaves)):
        base = leaves[i]._base
        if id(leaves[i]) in inputs or (base is not None and id(base) in inputs):
            continue
        if held(leaves[i]) or (base is not None and held(base)):
            bad.append(i)
    return bad


def _plain(value: Any) -> Any:
    """A forward's result as tensors and plain containers (what the judge may read): tensors
    detached, subclasses as plain tensors, other leaves as they are."""
    if isinstance(value, list | tuple):
        return type(value)(_plain(v) for v in value) if type(value) in (list, tuple) \
            else [_plain(v) for v in value]
    if isinstance(value, torch.Tensor):
        return value.detach().as_subclass(torch.Tensor) if type(value) is not torch.Tensor \
            else value.detach()
    return value


def serve_candidate(sock: socket.socket, side: CandidateSide) -> None:
    """The candidate process's loop: one request, one reply, until the judge closes."""
    keep: list[Any] = []
    while True:
        try:
            request = recv(sock, trusted=True)
        except EOFError:
            return
        try:
            reply = getattr(side, "do_" + request["cmd"])(**request.get("args", {}))
        except Verdict as v:
            reply = {"verdict": [v.status, v.message, v.fatal]}
        except Exception as exc:  # the candidate process's boundary: reported as a crash
            reply = {"verdict": ["runtime_error" if not is_fatal_device_error(exc) else "crash",
                                 f"{type(exc).__name__}: {exc}\n{tb_tail(exc)}",
                                 is_fatal_device_error(exc)]}
        send(sock, reply, keep)


# -- the judge side ------------------------------------------------------------------------------
def unreadable_reply(exc: Exception) -> Verdict:
    """The verdict on a reply the judge could not take in. Running out of memory while copying
    the candidate's tensors is the device's state (a GPU shared with other work, a 6-GB output
    beside the reference's), not the candidate's doing: a runtime error, which the search may
    retry. Anything else is a reply that is not tensors and plain data: a cheat."""
    if isinstance(exc, (torch.OutOfMemoryError, MemoryError)):
        return Verdict("runtime_error", f"the judge ran out of memory taking in the candidate's "
                                        f"output ({type(exc).__name__}: {str(exc)[:300]}); "
                                        f"free the device of other work and evaluate again")
    return Verdict("cheat", f"the candidate's process sent a reply the judge refuses to read "
                            f"({type(exc).__name__}: {exc})")


class CandidateProcess:
    """The judge's handle on its candidate process: fork it, ask it, end it."""

    def __init__(self, path: Path, device: torch.device, launches: LaunchCounter,
                 integrity: Integrity, tag: str, close_fds: tuple[int, ...]) -> None:
        judge_end, cand_end = socket.socketpair()
        note_r, note_w = os.pipe()

        def candidate_process() -> None:
            judge_end.close()
            os.close(note_r)  # its own note's read end is the judge's
            for fd in close_fds:  # the verdict pipe and the worker's pipes stay with the judge
                with contextlib.suppress(OSError):
                    os.close(fd)
            # where the judge records its queueing for the GPU (locks.WaitRecord), which moves
            # the evaluation's deadline: not the candidate's to find
            os.environ.pop("KERNELEVOLVE_GPU_WAIT_FILE", None)
            if device.type == "cuda":
                torch.cuda.init()
            side = CandidateSide(path, device, launches, integrity, tag)
            profile_dir = os.environ.get("KERNELEVOLVE_PROFILE_JUDGE")  # a developer's aid
            if profile_dir:
                import cProfile
                import pstats

                profiler = cProfile.Profile()
                profiler.runcall(serve_candidate, cand_end, side)
                with open(Path(profile_dir, f"candidate-{tag}-{os.getpid()}.txt"), "w") as f:
                    pstats.Stats(profiler, stream=f).sort_stats("tottime").print_stats(30)
            else:
                serve_candidate(cand_end, side)

        pid = fork_child(candidate_process, note_fd=note_w)
        os.close(note_w)
        cand_end.close()
        self.pid = pid
        self._note_fd = note_r
        self.sock = judge_end
        self._keep: list[Any] = []

    def ask(self, cmd: str, **args: Any) -> dict[str, Any]:
        """One request; a reply naming a verdict raises it. The process dying is a crash."""
        try:
            send(self.sock, {"cmd": cmd, "args": args}, self._keep)
            reply = recv(self.sock, trusted=False)
        except (EOFError, OSError) as exc:
            how = self._death()
            why = ("" if ": " in how else "; a segfault, an illegal memory access or running out "
                   "of memory ends it so")
            raise Verdict("crash", f"the candidate's process died during the evaluation "
                                   f"({how}){why}", fatal=True) from exc
        except Exception as exc:
            raise unreadable_reply(exc) from exc
        if not isinstance(reply, dict):
            raise Verdict("cheat", "the candidate's process sent a malformed reply")
        verdict = reply.get("verdict")
        if verdict is not None:
            status, message, fatal = (list(verdict) + ["", "", False])[:3]
            if status not in FAILURES:  # only the judge says ok
                raise Verdict("cheat", f"the candidate's process claimed the verdict {status!r}")
            raise Verdict(str(status), str(message), bool(fatal))
        return reply

    def _death(self) -> str:
        try:
            pid, status = os.waitpid(self.pid, 0)
        except ChildProcessError:
            return "already reaped"
        self.pid = 0
        how = exit_description(status)
        note = read_note(self._note_fd)
        self._note_fd = -1
        return f"{how}: {note}" if note else how

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
        if self.pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
            self.pid = 0
        if self._note_fd >= 0:
            read_note(self._note_fd)
            self._note_fd = -1
