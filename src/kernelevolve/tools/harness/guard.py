"""Runtime anti-cheat: what a candidate's forward really ran, and whether it tampered with the
process it runs in.

- :class:`OpRecorder` records every aten op the forward dispatches (also those called from C++
  extensions, which go through the dispatcher) with a TorchDispatchMode.
- :class:`LaunchCounter` counts custom kernel launches: Triton (compiled or interpreted) and
  functions of modules built by ``load_inline``.
- :class:`Integrity` snapshots the functions the harness relies on (timers, comparisons,
  synchronization) and reports any that a candidate replaced.

Worker-side: torch, triton and the standard library only.
"""

from __future__ import annotations

import functools
import threading
import time
from collections import Counter
from typing import Any

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

# Ops that only allocate, describe or re-view memory, or move/cast it without computing:
# what a candidate's forward may use besides its own kernels.
ALLOWED_ATEN_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros",
    "zeros_like", "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like", "new_full",
    "fill_", "zero_", "view", "_unsafe_view", "reshape", "_reshape_alias", "as_strided", "t",
    "transpose", "permute", "expand", "unsqueeze", "squeeze", "select", "slice", "narrow",
    "split", "split_with_sizes", "unbind", "detach", "alias", "lift_fresh", "clone", "copy_",
    "_to_copy", "contiguous", "view_as", "expand_as", "flatten", "unflatten", "movedim",
    "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "stride", "size",
    "is_contiguous", "resize_", "set_", "arange", "_has_compatible_shallow_copy_type",
})
# Not allowed on purpose: _local_scalar_dense (.item(): host-side compute and fingerprinting of
# inputs) and lift_fresh (tensors built from Python data computed on the host).


# What a user-facing library op name dispatches to: F.conv2d reaches the dispatcher as
# aten.convolution, F.linear as addmm/mm, and so on.
_CONV = {"convolution", "_convolution", "cudnn_convolution", "cudnn_convolution_transpose",
         "convolution_overrideable", "mkldnn_convolution", "miopen_convolution",
         "_convolution_mode", "_nnpack_spatial_convolution", "slow_conv2d_forward",
         "slow_conv3d_forward", "thnn_conv2d", "slow_conv_transpose2d", "slow_conv_transpose3d"}
LIBRARY_OP_ALIASES: dict[str, set[str]] = {
    **{name: _CONV for name in ("conv1d", "conv2d", "conv3d", "conv_transpose1d",
                                "conv_transpose2d", "conv_transpose3d", "convolution")},
    "linear": {"linear", "addmm", "mm", "t"},
    "matmul": {"matmul", "mm", "bmm", "addmm", "_unsafe_view"},
    "mm": {"mm"}, "bmm": {"bmm"}, "addmm": {"addmm"},
    "scaled_dot_product_attention": {
        "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_flash_attention_for_cpu",
        "scaled_dot_product_attention"},
}


def expand_allowed(names: set[str] | list[str]) -> set[str]:
    """The aten ops that allowing the library ops ``names`` permits."""
    out: set[str] = set()
    for name in names:
        out |= LIBRARY_OP_ALIASES.get(name, {name})
    return out


def op_name(func: Any) -> str:
    """The short aten name of an OpOverload: ``aten.add.Tensor`` -> ``add``."""
    packet = getattr(func, "overloadpacket", None)
    name = getattr(packet, "__name__", None) or str(func)
    return name.split(".")[-1]


class OpRecorder(TorchDispatchMode):
    """Counts the aten ops dispatched while active."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[override]
        self.ops[op_name(func)] += 1
        return func(*args, **(kwargs or {}))

    def forbidden(self, allowed_extra: set[str]) -> list[str]:
        return sorted(op for op in self.ops if op not in ALLOWED_ATEN_OPS | allowed_extra)


class LaunchCounter:
    """Counts custom kernel launches while installed. Install once per worker, before any
    candidate is imported, so every Triton function and inline extension is seen."""

    def __init__(self) -> None:
        self.count = 0
        self._installed = False

    def install(self) -> None:
        if self._installed:
            return
        self._installed = True
        import triton.runtime.jit as jit

        classes: list[type] = [jit.JITFunction]
        try:
            from triton.runtime.interpreter import InterpretedFunction

            classes.append(InterpretedFunction)
        except ImportError:  # builds without the interpreter
            pass
        for cls in classes:
            self._wrap_method(cls, "run")

        import torch.utils.cpp_extension as cpp_extension

        original_load_inline = cpp_extension.load_inline
        counter = self

        @functools.wraps(original_load_inline)
        def load_inline(*args: Any, **kwargs: Any) -> Any:
            module = original_load_inline(*args, **kwargs)
            for name in dir(module):
                fn = getattr(module, name)
                if callable(fn) and not name.startswith("_"):
                    setattr(module, name, counter._counting(fn))
            return module

        cpp_extension.load_inline = load_inline

    def _counting(self, fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return fn(*args, **kwargs)

        return wrapper

    def _wrap_method(self, cls: type, name: str) -> None:
        original = getattr(cls, name)
        counter = self

        @functools.wraps(original)
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not kwargs.get("warmup", False):
                counter.count += 1
            return original(self, *args, **kwargs)

        setattr(cls, name, run)


def _watched(modules: tuple[Any, ...]) -> dict[str, Any]:
    """The functions whose identity must not change while candidates run: timers, comparisons,
    RNG, synchronization, and every function and method of the harness's own modules."""
    import torch.nn.functional as F

    watched: dict[str, Any] = {
        "time.perf_counter": time.perf_counter,
        "time.perf_counter_ns": time.perf_counter_ns,
        "time.time": time.time,
        "time.monotonic": time.monotonic,
        "torch.allclose": torch.allclose,
        "torch.equal": torch.equal,
        "torch.isclose": torch.isclose,
        "torch.isfinite": torch.isfinite,
        "torch.where": torch.where,
        "torch.manual_seed": torch.manual_seed,
        "torch.randn": torch.randn,
        "torch.rand": torch.rand,
        "torch.randint": torch.randint,
        "torch.Tensor.clone": torch.Tensor.clone,
        "torch.Tensor.copy_": torch.Tensor.copy_,
        "torch.Tensor.__eq__": torch.Tensor.__eq__,
        "torch.Tensor.__ne__": torch.Tensor.__ne__,
        "torch.Tensor.sub": torch.Tensor.sub,
        "torch.Tensor.__sub__": torch.Tensor.__sub__,
        "torch.Tensor.abs": torch.Tensor.abs,
        "torch.Tensor.double": torch.Tensor.double,
        "torch.Tensor.__torch_function__": vars(torch.Tensor)["__torch_function__"],
        "torch.nn.Module.__call__": torch.nn.Module.__call__,
        "torch.nn.Module.load_state_dict": torch.nn.Module.load_state_dict,
        "torch.nn.functional.linear": F.linear,
        "threading.Thread.start": threading.Thread.start,
        "torch.cuda.synchronize": torch.cuda.synchronize,
        "torch.cuda.Event": torch.cuda.Event,
        "torch.cuda.Event.record": torch.cuda.Event.record,
        "torch.cuda.Event.elapsed_time": torch.cuda.Event.elapsed_time,
        "torch.cuda.current_stream": torch.cuda.current_stream,
    }
    for module in modules:
        for name, obj in vars(module).items():
            if isinstance(obj, type) and obj.__module__ == module.__name__:
                for attr, member in vars(obj).items():
                    if callable(member):
                        watched[f"{module.__name__}.{name}.{attr}"] = member
            elif callable(obj):
                watched[f"{module.__name__}.{name}"] = obj
    return watched


def _global_state() -> dict[str, Any]:
    """Process-wide torch switches a candidate could flip to change the reference too."""
    return {
        "default dtype": torch.get_default_dtype(),
        "default device": str(torch.get_default_device()),
        "grad mode": torch.is_grad_enabled(),
        "deterministic algorithms": torch.are_deterministic_algorithms_enabled(),
        "tf32 matmul": torch.backends.cuda.matmul.allow_tf32,
        "tf32 cudnn": torch.backends.cudnn.allow_tf32,
        "bf16 reduced-precision reduction":
            torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
        "fp16 reduced-precision reduction":
            torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
    }


class Integrity:
    """Remembers the watched functions and global switches; :meth:`tampered` names those a
    candidate changed since. ``modules`` are the harness's own modules, watched whole."""

    def __init__(self, modules: tuple[Any, ...] = ()) -> None:
        self.modules = modules
        self.snapshot = _watched(modules)
        self.state = _global_state()

    def tampered(self) -> list[str]:
        now = _watched(self.modules)
        changed = [name for name, fn in self.snapshot.items() if now.get(name) is not fn]
        state = _global_state()
        changed += [f"{k} ({self.state[k]} -> {v})" for k, v in state.items() if self.state[k] != v]
        return changed


class InterpreterBounds:
    """Out-of-bounds loads and stores in Triton's interpreter raise instead of reading or
    corrupting the worker's heap: every active lane's address must fall inside the storage of one
    of the launch's tensor arguments. (On a GPU such accesses fault or read neighbours silently;
    here they would crash the worker or, for loads, pass unnoticed.)"""

    def __init__(self) -> None:
        self.lo = np.zeros(0, dtype=np.uint64)
        self.hi = np.zeros(0, dtype=np.uint64)

    def install(self) -> None:
        import triton.runtime.interpreter as interp

        bounds = self
        original_init = interp.GridExecutor._init_args_hst

        @functools.wraps(original_init)
        def init_args_hst(executor: Any, args_dev: Any, kwargs: Any) -> Any:
            args_hst, kwargs_hst = original_init(executor, args_dev, kwargs)
            bounds.record([*args_hst, *kwargs_hst.values()])
            return args_hst, kwargs_hst

        interp.GridExecutor._init_args_hst = init_args_hst  # type: ignore[method-assign]
        builder = interp.interpreter_builder
        load, store = builder.create_masked_load, builder.create_masked_store

        def create_masked_load(ptrs: Any, mask: Any, *args: Any) -> Any:
            bounds.check(ptrs, mask, "load")
            return load(ptrs, mask, *args)

        def create_masked_store(ptrs: Any, value: Any, mask: Any, *args: Any) -> Any:
            bounds.check(ptrs, mask, "store")
            return store(ptrs, value, mask, *args)

        builder.create_masked_load = create_masked_load  # type: ignore[method-assign]
        builder.create_masked_store = create_masked_store  # type: ignore[method-assign]

    def record(self, args: list[Any]) -> None:
        spans: list[tuple[int, int]] = []

        def visit(arg: Any) -> None:
            if isinstance(arg, tuple | list):
                for a in arg:
                    visit(a)
            elif isinstance(arg, torch.Tensor):
                storage = arg.untyped_storage()
                spans.append((storage.data_ptr(), storage.data_ptr() + storage.nbytes()))

        for arg in args:
            visit(arg)
        spans.sort()
        self.lo = np.array([s[0] for s in spans], dtype=np.uint64)
        self.hi = np.array([s[1] for s in spans], dtype=np.uint64)

    def check(self, ptrs: Any, mask: Any, what: str) -> None:
        addrs = np.asarray(ptrs.data, dtype=np.uint64)
        active = addrs[np.broadcast_to(np.asarray(mask.data, dtype=bool), addrs.shape)]
        if active.size == 0:
            return
        size = np.uint64(ptrs.get_element_ty().primitive_bitwidth // 8 or 1)
        idx = np.searchsorted(self.lo, active, side="right").astype(np.int64) - 1
        inside = idx >= 0
        ok = inside.copy()
        ok[inside] = active[inside] + size <= self.hi[idx[inside]]
        if ok.all():
            return
        bad = int(active[~ok][0])
        raise IndexError(
            f"out-of-bounds {what}: {int((~ok).sum())} active lanes address memory outside every "
            f"tensor argument (first at {bad:#x}); mask the {what} (offs < size) or fix the "
            f"pointer arithmetic"
        )
