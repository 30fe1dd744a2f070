"""Hooks into Triton's interpreter that record what every simulated program does.

Installed for the duration of one ``simulate_forward`` call and removed after it, each hook wraps
whatever the attribute held before (the evaluation worker may have wrapped some of them too):

- ``GridExecutor`` (module global): a subclass whose programs are wrapped so that only the sampled
  program ids run, each with its own ProgramCounter; the launch itself runs unchanged.
- ``interpreter_builder`` (the one builder instance): the ``create_*`` methods that load, store,
  multiply, compute elementwise or move layout report to the current program after the original
  method computed its result, so results are exactly the interpreter's.
- ``ReduceOps.apply`` / ``ScanOps.apply`` (reductions bypass the builder), and the ``.T`` property
  the interpreter installs on ``tl.tensor`` (it transposes without the builder).
"""

from __future__ import annotations

import inspect
import os
import sys
import time
import types
from collections.abc import Callable
from typing import Any

import triton
import triton.language as tl

from .chip import KernelRecord
from .counters import LaunchRecorder, ProgramCounter
from .generations import Generation

_TRITON_DIR = os.path.dirname(triton.__file__)
_PKG_DIR = os.path.dirname(__file__)

SE_OPS = ["add", "and", "ashr", "ceil", "clampf", "fabs", "fadd", "fcmpOEQ", "fcmpOGE", "fcmpOGT", "fcmpOLE", "fcmpOLT", "fcmpONE", "fcmpUEQ", "fcmpUGE", "fcmpUGT", "fcmpULE", "fcmpULT", "fcmpUNE", "floor", "fma", "fmul", "fp_ext", "fp_to_fp", "fp_to_si", "fp_to_ui", "fp_trunc", "frem", "fsub", "iabs", "icmpEQ", "icmpNE", "icmpSGE", "icmpSGT", "icmpSLE", "icmpSLT", "icmpUGE", "icmpUGT", "icmpULE", "icmpULT", "int_cast", "lshr", "maximumf", "maxnumf", "maxsi", "maxui", "minimumf", "minnumf", "minsi", "minui", "mul", "or", "sdiv", "udiv", "select", "shl", "si_to_fp", "srem", "sub", "ui_to_fp", "umulhi", "urem", "xor", "histogram"]
SFU_OPS = {
    "cos": "cos", "erf": "erf", "exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2",
    "precise_sqrt": "sqrt", "rsqrt": "rsqrt", "sin": "sin", "sqrt": "sqrt", "fdiv": "div",
    "precise_divf": "div",
}
MLU_OPS = ("cat", "gather", "join", "split", "trans")


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

    def __init__(self, gen: Generation, budget: int, allow_scatter: bool, seconds: float | None) -> None:
        self.gen = gen
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
        buffers = []
        for arg in list(args) + list(kwargs.values()):
            base = getattr(arg, "base", arg) if type(arg).__name__ == "TensorWrapper" else arg
            if hasattr(base, "untyped_storage"):
                storage = base.untyped_storage()
                if storage.nbytes():
                    buffers.append((storage.data_ptr(), storage.data_ptr() + storage.nbytes()))
        seconds = None
        if self.seconds is not None:
            # Later launches of the forward share what the earlier ones left of the budget.
            seconds = max(self.seconds - self.spent_s, self.seconds / 8)
        self.launch = LaunchRecorder(name, buffers, self.gen, self.budget, self.allow_scatter, seconds)
        self.in_launch = True

    def end_launch(self, grid: tuple[int, int, int] | None, ok: bool) -> None:
        launch, self.launch, self.in_launch, self.program = self.launch, None, False, None
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

    def _install_executor(self, interp: Any) -> None:
        base = interp.GridExecutor
        session = self

        class SimGridExecutor(base):  # type: ignore[misc, valid-type]
            def __init__(self, fn: Callable, arg_names: list, grid: Any, pre_run_hooks: Any = ()) -> None:
                self._sim_name = fn.__name__
                super().__init__(session.wrap_program(fn), arg_names, grid, list(pre_run_hooks))

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

        def hook(*args: Any, **kwargs: Any) -> Any:
            out = orig(*args, **kwargs)
            prog = session.program
            if prog is not None and not session.suppress:
                prog.on_elementwise(kind, op, args, out)
            return out

        return hook

    def _install_builder(self, builder: Any) -> None:
        session = self
        patches = self._patches
        for op in SE_OPS:
            patches.set(builder, f"create_{op}", self._hook("se", op, getattr(builder, f"create_{op}")))
        for op, name in SFU_OPS.items():
            patches.set(builder, f"create_{op}", self._hook("sfu", name, getattr(builder, f"create_{op}")))
        for op in MLU_OPS:
            patches.set(builder, f"create_{op}", self._hook("mlu", op, getattr(builder, f"create_{op}")))

        def constant_hook(op: str, orig: Callable) -> Callable:
            def hook(*args: Any, **kwargs: Any) -> Any:
                out = orig(*args, **kwargs)
                prog = session.program
                if prog is not None:
                    src = args[-1] if op == "splat" else args[0]
                    if op == "splat" or src.data.size == 1 or prog.is_constant(src):
                        prog.mark_constant(out)
                return out

            return hook

        for op in ("splat", "broadcast", "expand_dims"):
            patches.set(builder, f"create_{op}", constant_hook(op, getattr(builder, f"create_{op}")))

        orig_reshape = builder.create_reshape

        def create_reshape(arg: Any, shape: Any, allow_reorder: Any) -> Any:
            out = orig_reshape(arg, shape, allow_reorder)
            prog = session.program
            same_rows = arg.data.ndim > 0 and out.data.ndim > 0 and arg.data.shape[-1] == out.data.shape[-1]
            if prog is not None and not session.suppress and not same_rows:
                prog.on_elementwise("mlu", "reshape", (arg,), out)
            return out

        orig_load = builder.create_masked_load

        def create_masked_load(ptrs: Any, mask: Any, other: Any, cache_modifier: Any = None,
                               eviction_policy: Any = None, is_volatile: Any = False) -> Any:
            out = orig_load(ptrs, mask, other, cache_modifier, eviction_policy, is_volatile)
            prog = session.program
            if prog is not None and not session.suppress:
                prog.on_access(ptrs, mask, False, _site())
                prog.track(out)
            return out

        orig_store = builder.create_masked_store

        def create_masked_store(ptrs: Any, value: Any, mask: Any, cache_modifier: Any = None,
                                eviction_policy: Any = None) -> Any:
            out = orig_store(ptrs, value, mask, cache_modifier, eviction_policy)
            prog = session.program
            if prog is not None and not session.suppress:
                prog.on_access(ptrs, mask, True)
            return out

        orig_dot = builder.create_dot

        def create_dot(a: Any, b: Any, d: Any, input_precision: Any, max_num_imprecise_acc: Any) -> Any:
            out = orig_dot(a, b, d, input_precision, max_num_imprecise_acc)
            prog = session.program
            if prog is not None and not session.suppress:
                prog.on_dot(a, b, d, out)
            return out

        orig_rmw = builder.create_atomic_rmw

        def create_atomic_rmw(rmw_op: Any, ptr: Any, val: Any, mask: Any, sem: Any, scope: Any) -> Any:
            out = orig_rmw(rmw_op, ptr, val, mask, sem, scope)
            session._on_atomic(ptr, mask, out)
            return out

        orig_cas = builder.create_atomic_cas

        def create_atomic_cas(ptr: Any, cmp: Any, val: Any, sem: Any, scope: Any) -> Any:
            out = orig_cas(ptr, cmp, val, sem, scope)
            session._on_atomic(ptr, None, out)
            return out

        for name, fn in (("create_reshape", create_reshape), ("create_masked_load", create_masked_load),
                         ("create_masked_store", create_masked_store), ("create_dot", create_dot),
                         ("create_atomic_rmw", create_atomic_rmw), ("create_atomic_cas", create_atomic_cas)):
            patches.set(builder, name, fn)

    def _on_atomic(self, ptr: Any, mask: Any, out: Any) -> None:
        prog = self.program
        if prog is None or self.suppress:
            return
        prog.on_access(ptr, mask, False, atomic=True)
        prog.on_access(ptr, mask, True, atomic=True)
        prog.on_elementwise("se", "atomic", (), out)
        if prog.launch is not None:
            prog.launch.warn("atomic", f"{prog.launch.name}: atomics are modelled as gathered "
                             "read-modify-write DMA; their serialisation at the SRAM is not modelled")

    def _install_reductions(self, interp: Any) -> None:
        session = self
        for cls in (interp.ReduceOps, interp.ScanOps):
            orig = cls.apply

            def apply(self_: Any, input: Any, orig: Callable = orig) -> Any:
                if not isinstance(input, tuple):
                    return orig(self_, input)
                prog = session.program
                if prog is not None and not session.suppress:
                    handles = [t.handle.data for t in input]
                    prog.on_reduce(sum(h.size for h in handles), sum(h.nbytes for h in handles))
                session.suppress += 1
                try:
                    return orig(self_, input)
                finally:
                    session.suppress -= 1

            self._patches.set(cls, "apply", apply)

    def _install_transpose(self, interp: Any) -> None:
        session = self
        orig_patch_lang = interp._patch_lang

        def _patch_lang(fn: Any) -> Any:
            scope = orig_patch_lang(fn)
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
