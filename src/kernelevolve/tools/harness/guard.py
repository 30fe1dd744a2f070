"""Runtime anti-cheat: what a candidate's forward really ran, and whether it tampered with the
process it runs in.

- :class:`OpRecorder` records every aten op the forward dispatches (also those called from C++
  extensions, which go through the dispatcher) with a TorchDispatchMode.
- :class:`LaunchCounter` counts custom kernel launches: Triton (compiled or interpreted) and
  functions of modules built by ``load_inline``.
- :class:`Integrity` snapshots the functions the harness relies on (timers, comparisons,
  synchronization) and reports any that a candidate replaced.

Worker-side: torch, triton, the standard library and kernelevolve.errors only.
"""

from __future__ import annotations

import functools
import inspect
import threading
import time
from collections import Counter
from typing import Any, ClassVar

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from kernelevolve.errors import WorkerError
from kernelevolve.tools.harness import interpreter
from kernelevolve.tools.harness.gpu_compile import LaunchLog

# Ops that only allocate, describe or re-view memory, or move/cast it without computing:
# what a candidate's forward may use besides its own kernels. cat and stack are data movement:
# like copy_ they copy bytes into a new allocation and compute nothing, so joining kernel outputs
# is not "torch doing the work" (a problem that is only a concatenation still needs a launch).
# promote_types, result_type and can_cast read dtypes, never tensor data.
ALLOWED_ATEN_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros",
    "zeros_like", "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like", "new_full",
    "fill_", "zero_", "view", "_unsafe_view", "reshape", "_reshape_alias", "as_strided", "t",
    "transpose", "permute", "expand", "unsqueeze", "squeeze", "select", "slice", "narrow",
    "split", "split_with_sizes", "unbind", "detach", "alias", "clone", "copy_", "cat", "stack",
    "_to_copy", "contiguous", "view_as", "expand_as", "flatten", "unflatten", "movedim",
    "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "stride", "size",
    "is_contiguous", "resize_", "set_", "arange", "_has_compatible_shallow_copy_type",
    "promote_types", "result_type", "can_cast",
})
# Not allowed on purpose: _local_scalar_dense (.item(), float(t): host-side compute and
# fingerprinting of inputs) and lift_fresh (torch.tensor(data), torch.as_tensor, legacy
# constructors: tensors built from Python data computed on the host).


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
    """Counts the aten ops dispatched while active, and notes what moved tensor data past it:
    ops that reached a tensor subclass with its own ``__torch_dispatch__``, and tensors printed
    as text."""

    _recording: ClassVar[list[OpRecorder]] = []  # the recorders now active (nested ones too)

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()
        self.unseen: set[str] = set()

    def __enter__(self) -> OpRecorder:
        _watch_tensor_printing()
        OpRecorder._recording.append(self)
        return super().__enter__()  # type: ignore[no-any-return]

    def __exit__(self, *exc: Any) -> None:
        OpRecorder._recording.remove(self)
        super().__exit__(*exc)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[override]
        self.ops[op_name(func)] += 1
        # ``types`` names the arguments' tensor subclasses that override __torch_dispatch__:
        # this mode runs first, then their handler, which may run any torch op with no mode
        # active, unrecorded. (Plain tensors and nn.Parameter never appear here.)
        for cls in types:
            self.unseen.add(f"{op_name(func)} on the tensor subclass {cls.__name__}, whose "
                            f"__torch_dispatch__ runs torch ops unrecorded")
        return func(*args, **(kwargs or {}))

    def forbidden(self, allowed_extra: set[str]) -> list[str]:
        ops = sorted(op for op in self.ops if op not in ALLOWED_ATEN_OPS | allowed_extra)
        return ops + sorted(self.unseen)


_PRINTED = ("a tensor printed as text (repr, str, format or print of a tensor): torch formats it "
            "with every dispatch mode off, so its values reach Python on the host unrecorded; "
            "remove the print and compute with a Triton kernel")


def _watch_tensor_printing() -> None:
    """Tensor.__repr__/__str__/__format__ end in torch._tensor_str._str, which turns the
    dispatch modes off (the recorder included) and reads every value: a host round trip of
    tensor data that would otherwise go unseen. While a recorder is active it is noted."""
    import torch._tensor_str as tensor_str

    original = tensor_str._str
    if getattr(original, "_kernelevolve_watched", False):
        return

    @functools.wraps(original)
    def _str(*args: Any, **kwargs: Any) -> Any:
        for recorder in OpRecorder._recording:
            recorder.unseen.add(_PRINTED)
        return original(*args, **kwargs)

    _str._kernelevolve_watched = True  # type: ignore[attr-defined]
    tensor_str._str = _str


class LaunchCounter:
    """Counts custom kernel launches while installed. Install once per worker, before any
    candidate is imported, so every Triton function and inline extension is seen."""

    def __init__(self) -> None:
        self.count = 0
        self.names: set[str] = set()  # the Triton functions launched (device_kernels.py)
        self._installed = False
        # When set: every interpreted launch's specialization is kept here, for gpu_compile to
        # compile them for a GPU afterwards (the candidate process sets it).
        self.log: LaunchLog | None = None

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
                counter.names.add(str(getattr(self, "__name__", "")))
                if counter.log is not None:
                    counter.log.add(self, args, kwargs)
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
    watched.update(interpreter.watched())
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
    here they would crash the worker or, for loads, pass unnoticed.)

    Installing it also refuses launch arguments no compiled kernel takes (see
    :func:`check_launch_arguments`) and makes the interpreter compute what a GPU computes where
    the two differ (interpreter.py: TF32 products, programs in random order, every autotune
    config): the worker installs the interpreter's guards with this one call."""

    def __init__(self) -> None:
        self.lo = np.zeros(0, dtype=np.uint64)
        self.hi = np.zeros(0, dtype=np.uint64)

    def install(self, launches: LaunchCounter | None = None) -> None:
        """``launches``: the worker's launch counter, whose log then also gets every autotune
        config's launch, run or not (for the GPU compile)."""
        import triton.runtime.interpreter as interp

        bounds = self
        original_init = interp.GridExecutor._init_args_hst

        @functools.wraps(original_init)
        def init_args_hst(executor: Any, args_dev: Any, kwargs: Any) -> Any:
            check_launch_arguments(executor, args_dev, kwargs)
            args_hst, kwargs_hst = original_init(executor, args_dev, kwargs)
            bounds.record([*args_hst, *kwargs_hst.values()])
            return args_hst, kwargs_hst

        interp.GridExecutor._init_args_hst = init_args_hst  # type: ignore[method-assign]
        builder = interp.interpreter_builder
        for name, what in (("create_masked_load", "load"), ("create_masked_store", "store")):
            setattr(builder, name, self._checking(getattr(builder, name), what))

        def log_configs(kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            if launches is not None and launches.log is not None:
                launches.log.add(kernel, args, kwargs, ran=False)

        interpreter.install(log_configs)

    def _checking(self, method: Any, what: str) -> Any:
        """``method`` (a builder's masked load or store), checking the addresses before each call.

        The call is forwarded unchanged and ``ptrs`` and ``mask`` are found by name in the real
        signature: Triton versions differ in the other parameters (3.7 passes cache_modifier and
        eviction_policy, 3.9 one cache_policy; tensor descriptors pass them by keyword)."""
        params = list(inspect.signature(method).parameters)
        if "ptrs" not in params or "mask" not in params:
            import triton

            raise WorkerError(f"cannot bounds-check Triton {triton.__version__}'s interpreter: "
                              f"{method.__name__}{inspect.signature(method)} has no ptrs or mask; "
                              "install a Triton within the range pyproject.toml allows")
        i_ptrs, i_mask = params.index("ptrs"), params.index("mask")

        @functools.wraps(method)
        def checked(*args: Any, **kwargs: Any) -> Any:
            ptrs = args[i_ptrs] if i_ptrs < len(args) else kwargs["ptrs"]
            mask = args[i_mask] if i_mask < len(args) else kwargs["mask"]
            self.check(ptrs, mask, what)
            return method(*args, **kwargs)

        return checked

    def record(self, args: list[Any]) -> None:
        spans: list[tuple[int, int]] = []

        def visit(arg: Any) -> None:
            if isinstance(arg, tuple | list):
                for a in arg:
                    visit(a)
            elif isinstance(arg, torch.Tensor):
                storage = arg.untyped_storage()
                spans.append((storage.data_ptr(), storage.data_ptr() + storage.nbytes()))
            elif isinstance(getattr(arg, "base", None), torch.Tensor):
                # triton.reinterpret's TensorWrapper and a TensorDescriptor: the tensor they view.
                visit(arg.base)

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


def _kernel_argument(value: Any, constexpr: bool) -> bool:
    """Whether a compiled Triton kernel could take ``value``: tensors (also reinterpreted or as
    descriptors), exact numbers, None, dtypes, and as ``tl.constexpr`` also strings and Triton
    functions. Exact types: an int subclass's operators would be Python run inside the kernel."""
    import triton.language as tl
    from triton.runtime.interpreter import TensorDescriptor
    from triton.runtime.jit import ConstexprFunction, KernelInterface, TensorWrapper

    if value is None or type(value) in (bool, int, float) or isinstance(
            value, torch.Tensor | TensorWrapper | TensorDescriptor | tl.dtype | torch.dtype):
        return True
    if type(value) in (tuple, list, torch.Size):
        return all(_kernel_argument(v, constexpr) for v in value)
    if isinstance(value, tl.constexpr):
        return _kernel_argument(value.value, True)
    return constexpr and (type(value) is str
                          or isinstance(value, KernelInterface | ConstexprFunction))


def check_launch_arguments(executor: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Refuse a launch in Triton's interpreter that passes a kernel an argument no compiled
    kernel takes. The interpreter hands such values to the kernel body unchanged, where their
    methods and operators run as Python on the interpreter's numpy buffers (a GPU refuses them)."""
    constexprs = set(getattr(executor, "constexprs", ()))
    named = [*zip(executor.arg_names, args, strict=False), *kwargs.items()]
    for name, value in named:
        if not _kernel_argument(value, name in constexprs):
            raise TypeError(
                f"{executor.fn.__name__}: argument {name} is of type {type(value).__name__}, "
                f"which a compiled Triton kernel cannot take (tensors, numbers, None and dtypes; "
                f"strings and @triton.jit functions as tl.constexpr); in the interpreter it would "
                f"run as Python inside the kernel. Pass tensors and numbers, compute with tl.* "
                f"operations")
