"""Hooks into Triton's interpreter that record what every simulated program does.

Installed for the duration of one ``simulate_forward`` call and removed after it, each hook wraps
whatever the attribute held before (the evaluation worker may have wrapped some of them too):

- ``set_grid_dim`` / ``set_grid_idx`` (the builder's): the interpreter's own, so programs run in
  id order during the session even where the evaluation worker shuffles them.
- ``GridExecutor`` (module global): a subclass whose programs are wrapped so that only the sampled
  program ids run, each with its own ProgramCounter; the launch itself runs unchanged.
- ``interpreter_builder`` (the one builder instance): the ``create_*`` methods that load, store,
  multiply, compute elementwise or move layout report to the current program after the original
  method computed its result, so results are exactly the interpreter's. Each hook forwards its
  call unchanged and reads the operands it needs by name from the wrapped method's signature:
  Triton versions differ in the other parameters (3.9 replaced ``cache_modifier`` and
  ``eviction_policy`` by ``cache_policy``). An op the installed Triton lacks is not hooked.
- ``ReduceOps.apply`` / ``ScanOps.apply`` (reductions bypass the builder), and the ``.T`` property
  the interpreter installs on ``tl.tensor`` (it transposes without the builder).

Where the session has a :class:`~.written.Written`, launches, programs, loads, stores and atomics
report to it too, so the sampled run's outputs can be checked where they are complete.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import time
import types
from collections.abc import Callable
from typing import Any

import numpy as np
import triton
import triton.language as tl

from kernelevolve.errors import TargetError

from .chip import KernelRecord
from .counters import LaunchRecorder, ProgramCounter
from .generations import Generation
from .written import Written

_TRITON_DIR = os.path.dirname(triton.__file__)
_PKG_DIR = os.path.dirname(__file__)

SE_OPS = ["add", "and", "ashr", "ceil", "clampf", "fabs", "fadd", "fcmpOEQ", "fcmpOGE", "fcmpOGT", "fcmpOLE", "fcmpOLT", "fcmpONE", "fcmpUEQ", "fcmpUGE", "fcmpUGT", "fcmpULE", "fcmpULT", "fcmpUNE", "floor", "fma", "fmul", "fneg", "fp_ext", "fp_to_fp", "fp_to_si", "fp_to_ui", "fp_trunc", "frem", "fsub", "iabs", "icmpEQ", "icmpNE", "icmpSGE", "icmpSGT", "icmpSLE", "icmpSLT", "icmpUGE", "icmpUGT", "icmpULE", "icmpULT", "int_cast", "lshr", "maximumf", "maxnumf", "maxsi", "maxui", "minimumf", "minnumf", "minsi", "minui", "mul", "or", "sdiv", "udiv", "select", "shl", "si_to_fp", "srem", "sub", "ui_to_fp", "umulhi", "urem", "xor", "histogram"]
SFU_OPS = {
    "cos": "cos", "erf": "erf", "exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2",
    "precise_sqrt": "sqrt", "rsqrt": "rsqrt", "sin": "sin", "sqrt": "sqrt", "fdiv": "div",
    "precise_divf": "div", "approx_divf": "div",
}
MLU_OPS = ("cat", "gather", "join", "split", "trans")


def _arg_reader(fn: Callable, *names: str) -> Callable[[tuple, dict], tuple]:
    """Reads the arguments ``names`` of a call to the builder method ``fn`` wherever its real
    signature puts them (``inspect.signature`` sees through ``functools.wraps`` wrappers)."""
    params = list(inspect.signature(fn).parameters)
    missing = [name for name in names if name not in params]
    if missing:
        raise TargetError(
            f"the MTIA simulator cannot hook Triton {triton.__version__}'s interpreter: "
            f"{getattr(fn, '__name__', fn)}{inspect.signature(fn)} has no parameter "
            f"{', '.join(missing)}; install a Triton within the range pyproject.toml allows"
        )
    where = [(params.index(name), name) for name in names]

    def read(args: tuple, kwargs: dict) -> tuple:
        return tuple(args[i] if i < len(args) else kwargs.get(name) for i, name in where)

    return read


def _site() -> object:
    """The kernel source line that issued the current load (identifies loop-carried loads)."""
    f: types.FrameType | None = sys._getframe(2)
    while f is not None:
        name = f.f_code.co_filename
        if not name.startswith(_TRITON_DIR) and not name.startswith(_PKG_DIR):
            return (name, f.f_lineno)
        f = f.f_back
    return None


class _Patches:
    """Attribute patches restored in reverse order; an instance attribute absent before is deleted."""

    _MISSING = object()

    def __init__(self) -> None:
        self._saved: list[tuple[object, str, object]] = []

    def set(self, obj: object, name: str, value: object) -> None:
        own = obj.__dict__ if not isinstance(obj, type) else vars(obj)
        self._saved.append((obj, name, own.get(name, self._MISSING)))
        setattr(obj, name, value)

    def restore(self) -> None:
        while self._saved:
            obj, name, old = self._saved.pop()
            if old is self._MISSING:
                delattr(obj, name)
            else:
                setattr(obj, name, old)


class Session:
    """The recording state of one simulate_forward call."""

    def __init__(self, gen: Generation, budget: int, allow_scatter: bool, seconds: float | None,
                 written: Written | None = None, sample_seed: int | None = None) -> None:
        self.gen = gen
        # random interior programs per launch where given (the judge's draw), else a fixed grid
        self.rng = None if sample_seed is None else np.random.default_rng(sample_seed)
        self.written = written  # which elements hold what the full run would write
        self.budget = budget
        self.seconds = seconds
        self.spent_s = 0.0
        self.allow_scatter = allow_scatter
        self.records: list[KernelRecord] = []
        self.launch: LaunchRecorder | None = None
        self.program: ProgramCounter | None = None
        self.suppress = 0
        self.in_launch = False
        self._patches = _Patches()

    # launches and programs
    def begin_launch(self, name: str, args: tuple, kwargs: dict) -> None:
        buffers: list[tuple[int, int]] = []

        def add(arg: Any) -> None:
            if isinstance(arg, tuple):
                for item in arg:
                    add(item)
                return
            # TensorWrapper (a reinterpreted tensor) and host-side TensorDescriptor: their base.
            if type(arg).__name__ in ("TensorWrapper", "TensorDescriptor"):
                arg = getattr(arg, "base", arg)
            if hasattr(arg, "untyped_storage"):
                storage = arg.untyped_storage()
                if storage.nbytes():
                    buffers.append((storage.data_ptr(), storage.data_ptr() + storage.nbytes()))

        for arg in list(args) + list(kwargs.values()):
            add(arg)
        seconds = None
        if self.seconds is not None:
            # Later launches of the forward share what the earlier ones left of the budget.
            seconds = max(self.seconds - self.spent_s, self.seconds / 8)
        self.launch = LaunchRecorder(name, buffers, self.gen, self.budget, self.allow_scatter, seconds,
                                     self.rng)
        self.in_launch = True
        if self.written is not None:
            self.written.begin_launch(buffers)

    def end_launch(self, grid: tuple[int, int, int] | None, ok: bool) -> None:
        launch, self.launch, self.in_launch, self.program = self.launch, None, False, None
        if self.written is not None and launch is not None:
            self.written.end_launch(complete=launch.plan is None or launch.plan.is_full)
        if ok and launch is not None and grid is not None:
            self.records.append(launch.finish(grid))

    def wrap_program(self, fn: Callable) -> Callable:
        session = self
        builder = self._interp.interpreter_builder
        clock = time.perf_counter  # a closure variable: the body runs with the kernel's globals

        def program(**kwargs: Any) -> None:
            launch = session.launch
            counter = None if launch is None else launch.begin_program(builder.grid_idx, builder.grid_dim)
            if counter is None and launch is not None:
                return None
            session.program = counter
            if session.written is not None:
                session.written.begin_program()
            start = clock()
            try:
                fn(**kwargs)
            finally:
                session.program = None
            elapsed = clock() - start
            session.spent_s += elapsed
            if launch is not None:
                launch.end_program(builder.grid_dim, elapsed)
            return None

        # The interpreter reads the kernel's globals and signature from the function it runs.
        wrapped = types.FunctionType(program.__code__, fn.__globals__, fn.__name__, None, program.__closure__)
        wrapped.__signature__ = inspect.signature(fn)  # type: ignore[attr-defined]
        wrapped.__annotations__ = dict(getattr(fn, "__annotations__", {}))
        wrapped.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        return wrapped

    # installation
    def install(self) -> None:
        import triton.runtime.interpreter as interp

        self._interp = interp
        try:
            self._install_id_order(interp.interpreter_builder)
            self._install_executor(interp)
            self._install_builder(interp.interpreter_builder)
            self._install_reductions(interp)
            self._install_transpose(interp)
        except BaseException:
            self._patches.restore()
            raise

    def uninstall(self) -> None:
        self._patches.restore()
        self.program = None
        self.launch = None

    def _install_id_order(self, builder: Any) -> None:
        """Programs in id order for the session, whatever order the evaluation worker installed
        (harness/interpreter.py shuffles them to expose races): the sample plan is made after
        program (0, 0, 0), and the cache model follows the order programs run in."""
        for name in ("set_grid_dim", "set_grid_idx"):
            if name in vars(builder):
                self._patches.set(builder, name, getattr(type(builder), name).__get__(builder))

    def _install_executor(self, interp: Any) -> None:
        base = interp.GridExecutor
        session = self

        class SimGridExecutor(base):  # type: ignore[misc, valid-type]
            def __init__(self, fn: Callable, *args: Any, **kwargs: Any) -> None:
                self._sim_name = fn.__name__
                super().__init__(session.wrap_program(fn), *args, **kwargs)

            def __call__(self, *args_dev: Any, **kwargs: Any) -> Any:
                session.begin_launch(self._sim_name, args_dev, kwargs)
                ok = False
                try:
                    out = super().__call__(*args_dev, **kwargs)
                    ok = True
                    return out
                finally:
                    # GridExecutor sets the builder's grid before running any program.
                    grid = getattr(interp.interpreter_builder, "grid_dim", None) if ok else None
                    session.end_launch(tuple(grid) if grid is not None else None, ok)

        self._patches.set(interp, "GridExecutor", SimGridExecutor)

    def _hook(self, kind: str, op: str, orig: Callable) -> Callable:
        session = self

        @functools.wraps(orig)
        def hook(*args: Any, **kwargs: Any) -> Any:
            out = orig(*args, **kwargs)
            prog = session.program
            if prog is not None and not session.suppress:
                prog.on_elementwise(kind, op, (*args, *kwargs.values()) if kwargs else args, out)
            return out

        return hook

    def _install_builder(self, builder: Any) -> None:
        session = self
        patches = self._patches

        def hook(name: str, record: Callable[..., None], *operands: str,
                 in_reductions: bool = False) -> None:
            """Wrap ``builder.<name>`` so that after it ran, ``record(program, *operands, out)``
            sees the operands named (``in_reductions``: also inside reductions)."""
            orig = getattr(builder, name, None)
            if orig is None:
                raise TargetError(f"the MTIA simulator cannot hook Triton {triton.__version__}'s "
                                  f"interpreter: its builder has no {name}")
            read = _arg_reader(orig, *operands)

            @functools.wraps(orig)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                out = orig(*args, **kwargs)
                prog = session.program
                if prog is not None and (in_reductions or not session.suppress):
                    record(prog, *read(args, kwargs), out)
                return out

            patches.set(builder, name, wrapper)

        for kind, ops in (("se", {op: op for op in SE_OPS}), ("sfu", SFU_OPS),
                          ("mlu", {op: op for op in MLU_OPS})):
            for op, unit_name in ops.items():
                orig = getattr(builder, f"create_{op}", None)
                if orig is not None:
                    patches.set(builder, f"create_{op}", self._hook(kind, unit_name, orig))

        def splat(prog: ProgramCounter, arg: Any, out: Any) -> None:
            prog.mark_constant(out)

        def propagate_constant(prog: ProgramCounter, arg: Any, out: Any) -> None:
            if arg.data.size == 1 or prog.is_constant(arg):
                prog.mark_constant(out)

        hook("create_splat", splat, "arg", in_reductions=True)
        hook("create_broadcast", propagate_constant, "arg", in_reductions=True)
        hook("create_expand_dims", propagate_constant, "arg", in_reductions=True)

        def reshape(prog: ProgramCounter, arg: Any, out: Any) -> None:
            same_rows = arg.data.ndim > 0 and out.data.ndim > 0 and arg.data.shape[-1] == out.data.shape[-1]
            if not same_rows:
                prog.on_elementwise("mlu", "reshape", (arg,), out)

        def load(prog: ProgramCounter, ptrs: Any, mask: Any, out: Any) -> None:
            prog.on_access(ptrs, mask, False, _site())
            prog.track(out)
            if session.written is not None:
                session.written.on_load(ptrs, mask)

        def store(prog: ProgramCounter, ptrs: Any, mask: Any, out: Any) -> None:
            prog.on_access(ptrs, mask, True)
            if session.written is not None:
                session.written.on_store(ptrs, mask)

        def dot(prog: ProgramCounter, a: Any, b: Any, d: Any, out: Any) -> None:
            prog.on_dot(a, b, d, out)

        def atomic_rmw(prog: ProgramCounter, ptr: Any, mask: Any, out: Any) -> None:
            session._on_atomic(ptr, mask, out)

        def atomic_cas(prog: ProgramCounter, ptr: Any, out: Any) -> None:
            session._on_atomic(ptr, None, out)

        hook("create_reshape", reshape, "arg")
        hook("create_masked_load", load, "ptrs", "mask")
        hook("create_masked_store", store, "ptrs", "mask")
        hook("create_dot", dot, "a", "b", "d")
        hook("create_atomic_rmw", atomic_rmw, "ptr", "mask")
        hook("create_atomic_cas", atomic_cas, "ptr")

    def _on_atomic(self, ptr: Any, mask: Any, out: Any) -> None:
        prog = self.program
        if prog is None or self.suppress:
            return
        prog.on_access(ptr, mask, False, atomic=True)
        prog.on_access(ptr, mask, True, atomic=True)
        if self.written is not None:
            self.written.on_atomic(ptr, mask)
        prog.on_elementwise("se", "atomic", (), out)
        if prog.launch is not None:
            prog.launch.warn("atomic", f"{prog.launch.name}: atomics are modelled as gathered "
                             "read-modify-write DMA; their serialisation at the SRAM is not modelled")

    def _install_reductions(self, interp: Any) -> None:
        session = self
        for cls in (interp.ReduceOps, interp.ScanOps):
            orig = cls.apply

            @functools.wraps(orig)
            def apply(self_: Any, input: Any, *args: Any, _orig: Callable = orig, **kwargs: Any) -> Any:
                if not isinstance(input, tuple):
                    return _orig(self_, input, *args, **kwargs)
                prog = session.program
                if prog is not None and not session.suppress:
                    handles = [t.handle.data for t in input]
                    prog.on_reduce(sum(h.size for h in handles), sum(h.nbytes for h in handles))
                session.suppress += 1
                try:
                    return _orig(self_, input, *args, **kwargs)
                finally:
                    session.suppress -= 1

            self._patches.set(cls, "apply", apply)

    def _install_transpose(self, interp: Any) -> None:
        session = self
        orig_patch_lang = interp._patch_lang

        @functools.wraps(orig_patch_lang)
        def _patch_lang(*args: Any, **kwargs: Any) -> Any:
            scope = orig_patch_lang(*args, **kwargs)
            prop = vars(tl.tensor).get("T")
            if isinstance(prop, property) and prop.fget is not None:
                fget = prop.fget

                def transposed(t: Any) -> Any:
                    out = fget(t)
                    prog = session.program
                    if prog is not None and not session.suppress and t.handle.data.size > 1:
                        prog.on_layout(int(t.handle.data.nbytes))
                    return out

                scope.set_attr(tl.tensor, "T", property(transposed))
            return scope

        self._patches.set(interp, "_patch_lang", _patch_lang)
