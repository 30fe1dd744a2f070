"""What a candidate may use: the allowlist the static check (static.py) holds every name to.

A candidate is a stated subset of Python. Anything not named here is refused, with the rule that
refused it; a rule names what to do instead.

- **Imports** (``ALLOWED_IMPORTS``): torch, torch.nn, torch.nn.functional, triton,
  triton.language (and its math and libdevice), triton.tools.tensor_descriptor, Proton's
  triton.profiler.language (scopes), math, typing, functools, dataclasses, itertools,
  collections (and collections.abc), enum, operator, __future__; torch.utils.cpp_extension only
  where CUDA C++ is enabled. A module is used by name, never as a value.
- **Names by module** (``MODULE_NAMES``): every attribute path reached from an import (through
  aliases) must be listed under its module. From torch: allocation, views and data movement
  (the runtime guard's ALLOWED_ATEN_OPS, guard.py), dtypes and metadata queries, nn.Module
  plumbing, device queries; the library ops the user allowed (``--allow-op conv2d`` permits
  ``F.conv2d``, ``torch.conv2d``, ``x.conv2d`` and calling an ``nn.Conv2d`` attribute).
- **Constructor only** (``CONSTRUCTOR_NAMES``): inside an ``__init__``, a candidate keeps the
  reference's constructor: ``nn.Linear``/``nn.Conv2d``-style layers (parameter holders: read
  ``self.conv.weight``, never call ``self.conv(x)`` unless its op is allowed), ``torch.randn``
  and the other factories that make parameters, ``nn.init``.
- **Names on values** (``TENSOR_NAMES``, ``PYTHON_NAMES``, ``MODULE_STATE_NAMES``): a method or
  attribute of something that is not a module (a tensor, a list, a layer) must allocate, view
  or describe (``x.view``, ``x.stride()``, ``x.data_ptr()``), be a Python container's (``append``)
  or a layer's parameter or setting (``.weight``, ``.padding``), or be the candidate's own (an
  attribute it assigns, a method it defines) and not also a computing tensor method. On ``self``
  the candidate's own names are always its own; on a layer, a torch class or one of Python's
  runtime objects (``RUNTIME_NAMES``: a generator's ``gi_frame``) they never are.
- **Builtins** (``ALLOWED_BUILTINS``) and **dunders** (``ALLOWED_DUNDERS``,
  ``DEFINABLE_DUNDERS``): short lists; no ``eval``, ``exec``, ``compile``, ``__import__``,
  ``globals``, ``locals``, ``vars``, ``setattr``, ``type``, ``open``.
- **Kernel bodies**: ``tl.*`` (triton.language's ``__all__``), other ``@triton.jit`` functions,
  the builtins Triton compiles; values there have Triton's tensor, dtype and pointer API.

Four sets are read from the installed torch and triton rather than written out, because they
are those libraries' own surfaces and change with their versions: torch.Tensor's attribute names
(a candidate's own name that is also one of them is not its own on a value that may be a
tensor), nn.Module's (a module may not redefine them), torch.nn's layer classes, and
triton.language's. ``torch`` and ``triton`` are imported on first use only.
"""

from __future__ import annotations

import builtins
import functools
import math
import re
import types

# Modules a candidate may import (``import X``, ``import X as Y``, ``from X import name``), and the
# root packages among them.
ALLOWED_IMPORTS = frozenset({
    "torch", "torch.nn", "torch.nn.functional", "triton", "triton.language",
    "triton.language.math", "triton.language.extra", "triton.language.extra.libdevice",
    "triton.language.extra.cuda", "triton.language.extra.cuda.libdevice",
    "triton.tools", "triton.tools.tensor_descriptor", "triton.profiler",
    "triton.profiler.language", "math", "typing", "functools",
    "dataclasses", "itertools", "collections", "collections.abc", "enum", "operator",
    "__future__",
})
CPP_IMPORTS = frozenset({"torch.utils", "torch.utils.cpp_extension"})
ALLOWED_MODULES = frozenset(name.split(".")[0] for name in ALLOWED_IMPORTS)

# --- torch ---------------------------------------------------------------------------------------
TORCH_DTYPES = frozenset({
    "float32", "float", "float16", "half", "bfloat16", "float64", "double", "int8", "int16",
    "int32", "int64", "int", "long", "short", "uint8", "uint16", "uint32", "uint64", "bool",
    "complex64", "complex128", "cfloat", "cdouble", "float8_e4m3fn", "float8_e4m3fnuz",
    "float8_e5m2", "float8_e5m2fnuz",
})
# The runtime guard's ALLOWED_ATEN_OPS as torch functions: allocate, view, move data.
TORCH_MEMORY = frozenset({
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full",
    "full_like", "arange", "cat", "concat", "concatenate", "stack", "reshape", "flatten",
    "unflatten", "movedim", "moveaxis", "permute", "transpose", "swapaxes", "swapdims", "t",
    "squeeze", "unsqueeze", "narrow", "select", "split", "chunk", "unbind", "as_strided",
    "broadcast_to", "clone", "detach",
})
TORCH_QUERIES = frozenset({
    "dtype", "finfo", "iinfo", "Size", "Tensor", "device", "layout", "strided", "memory_format",
    "channels_last", "channels_last_3d", "contiguous_format", "preserve_format",
    "get_default_dtype", "is_tensor", "is_floating_point", "is_complex", "numel",
    "promote_types", "result_type", "can_cast", "no_grad", "inference_mode",
})
MODULE_NAMES: dict[str, frozenset[str]] = {
    "torch": TORCH_DTYPES | TORCH_MEMORY | TORCH_QUERIES | {"nn", "cuda", "version", "utils"},
    "torch.nn": frozenset({"Module", "Parameter", "Buffer", "ModuleList", "ModuleDict",
                           "ParameterList", "ParameterDict", "functional", "init"}),
    "torch.nn.functional": frozenset(),  # only the library ops the user allows
    "torch.cuda": frozenset({
        "current_device", "device_count", "get_device_properties", "get_device_capability",
        "get_device_name", "is_available", "mem_get_info", "current_stream", "synchronize"}),
    "torch.version": frozenset({"cuda", "hip"}),
    "torch.utils": frozenset({"cpp_extension"}),  # with CUDA C++ only
    "torch.utils.cpp_extension": frozenset({"load_inline"}),  # with CUDA C++ only
    "triton": frozenset({
        "jit", "autotune", "heuristics", "Config", "cdiv", "next_power_of_2",
        "constexpr_function", "reinterpret", "language", "tools", "profiler",
        "OutOfResources"}),
    # Proton's intra-kernel scopes (tools/proton.py reads them); nothing else of the profiler
    "triton.profiler": frozenset({"language"}),
    "triton.profiler.language": frozenset({"scope", "enter_scope", "exit_scope"}),
    "triton.tools": frozenset({"tensor_descriptor"}),
    "triton.tools.tensor_descriptor": frozenset({"TensorDescriptor"}),
    # triton.language, its math and libdevice: read from triton (triton_language_names)
    "triton.language.extra": frozenset({"libdevice", "cuda"}),
    "triton.language.extra.cuda": frozenset({"libdevice"}),
    "math": frozenset(n for n in dir(math) if not n.startswith("_")),
    "typing": frozenset({
        "Any", "Optional", "Union", "List", "Dict", "Tuple", "Set", "FrozenSet", "Sequence",
        "Mapping", "MutableMapping", "Iterable", "Iterator", "Callable", "NamedTuple",
        "TypedDict", "Literal", "Final", "ClassVar", "TYPE_CHECKING", "cast", "overload",
        "TypeVar", "Generic", "Protocol", "Type", "Annotated", "NoReturn", "Self", "TypeAlias",
        "Sized", "Hashable", "Generator", "Collection", "DefaultDict", "OrderedDict", "Deque",
        "Counter"}),
    "functools": frozenset({"partial", "reduce", "wraps", "lru_cache", "cache",
                            "cached_property", "total_ordering", "cmp_to_key"}),
    "dataclasses": frozenset({"dataclass", "field", "fields", "replace", "asdict", "astuple",
                              "InitVar", "KW_ONLY", "is_dataclass", "FrozenInstanceError"}),
    "itertools": frozenset({
        "accumulate", "chain", "combinations", "combinations_with_replacement", "compress",
        "count", "cycle", "dropwhile", "filterfalse", "groupby", "islice", "pairwise",
        "permutations", "product", "repeat", "starmap", "takewhile", "zip_longest"}),
    "collections": frozenset({"namedtuple", "OrderedDict", "defaultdict", "deque", "Counter",
                              "ChainMap", "abc"}),
    "collections.abc": frozenset({
        "Sequence", "MutableSequence", "Mapping", "MutableMapping", "Iterable", "Iterator",
        "Callable", "Collection", "Container", "Sized", "Hashable", "Generator", "Set",
        "MutableSet"}),
    "enum": frozenset({"Enum", "IntEnum", "Flag", "IntFlag", "StrEnum", "auto", "unique"}),
    # not attrgetter or methodcaller: they reach attributes by computed names
    "operator": frozenset({
        "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "neg", "pos", "abs", "eq",
        "ne", "lt", "le", "gt", "ge", "and_", "or_", "xor", "not_", "invert", "lshift",
        "rshift", "getitem", "itemgetter", "index", "contains", "truth", "is_", "is_not"}),
    "__future__": frozenset({"annotations"}),
}
# Inside an __init__: what the reference's constructor uses to make its parameters. torch.nn's
# layer classes (nn.Linear, nn.Conv2d, ...) join these from torch (torch_layer_names).
CONSTRUCTOR_NAMES: dict[str, frozenset[str]] = {
    "torch": frozenset({"randn", "rand", "randint", "randn_like", "rand_like", "randint_like",
                        "randperm", "normal", "tensor", "as_tensor", "linspace", "eye"}),
    "torch.nn.init": frozenset({
        "uniform_", "normal_", "constant_", "ones_", "zeros_", "eye_", "dirac_",
        "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
        "trunc_normal_", "orthogonal_", "sparse_", "calculate_gain"}),
}
# Attributes of what an allowed function returns (``torch.finfo(t).max`` is not a reduction).
RETURN_NAMES: dict[str, frozenset[str]] = {
    "torch.finfo": frozenset({"bits", "eps", "max", "min", "tiny", "smallest_normal",
                              "resolution", "dtype"}),
    "torch.iinfo": frozenset({"bits", "max", "min", "dtype"}),
    "torch.device": frozenset({"type", "index"}),
    "torch.cuda.get_device_properties": frozenset({
        "name", "major", "minor", "total_memory", "multi_processor_count", "warp_size",
        "max_threads_per_multi_processor", "max_threads_per_block", "regs_per_multiprocessor",
        "L2_cache_size", "shared_memory_per_block", "shared_memory_per_block_optin",
        "shared_memory_per_multiprocessor", "is_integrated", "gcnArchName"}),
    "torch.cuda.current_stream": frozenset({"cuda_stream", "device"}),
}
# Functions whose results' attributes are the candidate's own (an inline extension's functions:
# its C++ was checked).
OPEN_RESULTS = frozenset({"torch.utils.cpp_extension.load_inline"})
# Attributes of allowed classes (``TensorDescriptor.from_tensor``); other attributes of a named
# class or function follow the rules for values.
CLASS_NAMES: dict[str, frozenset[str]] = {
    "triton.tools.tensor_descriptor.TensorDescriptor": frozenset({"from_tensor"}),
}
# torch.Tensor(...) and its legacy constructors build tensors from host data.
NOT_CALLABLE = frozenset({"torch.Tensor"})

# --- names on values -----------------------------------------------------------------------------
# Tensor methods and attributes that allocate, view, move or describe memory (the runtime
# guard's ALLOWED_ATEN_OPS) and the casts it allows (_to_copy).
TENSOR_NAMES = frozenset({
    # metadata
    "shape", "dtype", "device", "ndim", "size", "stride", "dim", "numel", "nelement",
    "element_size", "itemsize", "nbytes", "is_contiguous", "is_cuda", "is_cpu", "is_meta",
    "is_floating_point", "is_complex", "is_signed", "storage_offset", "data_ptr", "layout",
    "requires_grad", "get_device", "type", "values", "index",
    # views
    "view", "view_as", "reshape", "reshape_as", "permute", "transpose", "t", "T", "mT",
    "expand", "expand_as", "unsqueeze", "squeeze", "flatten", "unflatten", "movedim",
    "moveaxis", "swapaxes", "swapdims", "narrow", "select", "split", "chunk", "unbind",
    "as_strided", "contiguous", "detach", "data",
    # allocation and data movement
    "new_empty", "new_empty_strided", "new_zeros", "new_ones", "new_full", "zero_", "fill_",
    "copy_", "clone", "resize_",
    # casts
    "to", "float", "half", "bfloat16", "double", "int", "long", "short", "bool", "byte", "char",
    "type_as", "cuda", "cpu",
})
# Methods of Python's containers, strings and numbers that no tensor has (a test checks; dict's
# ``values`` and list's ``index`` are in TENSOR_NAMES: on a tensor they only describe it).
PYTHON_NAMES = frozenset({
    "append", "extend", "insert", "pop", "remove", "get", "items", "keys", "setdefault",
    "update", "popitem", "count", "copy", "join", "format", "startswith", "endswith", "lower",
    "upper", "strip", "lstrip", "rstrip", "bit_length", "is_integer", "replace", "find",
    "rfind", "splitlines", "partition", "rpartition", "zfill", "ljust", "rjust", "isdigit",
    "clear", "discard", "union", "intersection", "difference", "issubset", "issuperset",
})
# Attributes of Python's own runtime objects (frames, generators, coroutines, tracebacks, code
# objects): a generator's gi_frame leads to the frames that called it, and on to the harness. A
# candidate that assigns such a name on self has not made it its own anywhere else.
RUNTIME_NAMES = frozenset(
    n for t in (types.FrameType, types.GeneratorType, types.CoroutineType,
                types.AsyncGeneratorType, types.TracebackType, types.CodeType,
                types.FunctionType, types.MethodType, types.ModuleType, type)
    for n in dir(t) if not n.startswith("_"))
# A layer's parameters and settings, read where a candidate keeps the reference's constructor
# (``self.conv.weight``, ``self.conv.padding``), and nn.Module's own plumbing.
MODULE_STATE_NAMES = frozenset({
    "weight", "bias", "stride", "padding", "dilation", "groups", "kernel_size",
    "output_padding", "padding_mode", "in_channels", "out_channels", "in_features",
    "out_features", "eps", "momentum", "affine", "running_mean", "running_var",
    "num_batches_tracked", "num_groups", "num_channels", "num_features", "normalized_shape",
    "elementwise_affine", "track_running_stats", "training", "negative_slope", "min_val",
    "max_val", "inplace", "ceil_mode", "count_include_pad", "divisor_override",
    "return_indices", "margin", "p", "swap", "reduction", "approximate", "dim", "beta",
    "threshold", "lambd", "upscale_factor", "alpha", "output_size", "embedding_dim",
    "num_embeddings", "padding_idx", "register_buffer", "register_parameter",
})
# Names a jit body may read on values besides triton.language's classes' own (instance state).
JIT_VALUE_NAMES = frozenset({"dtype", "shape", "type", "numel", "value", "element_ty",
                             "block_shape", "strides", "primitive_bitwidth"})

# --- builtins and dunders ------------------------------------------------------------------------
# Exception classes are only classes (raising SystemExit is the judge's to handle).
_EXCEPTIONS = frozenset(name for name, value in vars(builtins).items()
                        if isinstance(value, type) and issubclass(value, BaseException))
ALLOWED_BUILTINS = _EXCEPTIONS | frozenset({
    "abs", "all", "any", "bool", "callable", "chr", "classmethod", "complex", "dict", "divmod",
    "enumerate", "filter", "float", "format", "frozenset", "getattr", "hasattr", "int",
    "isinstance", "issubclass", "iter", "len", "list", "map", "max", "min", "next", "object",
    "ord", "pow", "print", "property", "range", "repr", "reversed", "round", "set", "slice",
    "sorted", "staticmethod", "str", "sum", "super", "tuple", "zip", "bin", "hex", "oct",
    "NotImplemented", "Ellipsis",
})
# Dunder attributes and names a candidate may read.
ALLOWED_DUNDERS = frozenset({"__init__", "__name__", "__doc__"})
# Dunder methods and class attributes a candidate may define (``__call__`` not on modules).
DEFINABLE_DUNDERS = frozenset({"__init__", "__post_init__", "__call__", "__len__", "__slots__",
                               "__all__"})
# The Python builtins Triton's code generator accepts in a kernel body (its builtin_namespace in
# triton/compiler/code_generator.py; print is device_print, min/max are tl's).
JIT_BUILTINS = frozenset({"range", "len", "list", "float", "int", "isinstance", "getattr",
                          "hasattr", "print", "min", "max"})
# Host-side triton helpers that are ConstexprFunctions (evaluated at compile time in a kernel).
TRITON_CONSTEXPR_FNS = frozenset({"triton.cdiv", "triton.next_power_of_2"})

# nn layer classes whose op name is not their lower-cased name.
_LAYER_OPS = {"Linear": "linear", "Bilinear": "bilinear", "ReLU": "relu", "GELU": "gelu",
              "SiLU": "silu", "ELU": "elu", "SELU": "selu", "PReLU": "prelu",
              "LeakyReLU": "leaky_relu", "Softmax": "softmax", "LogSoftmax": "log_softmax",
              "MultiheadAttention": "scaled_dot_product_attention"}


def layer_op(layer: str) -> str:
    """The library op an nn layer class computes: ``Conv2d`` -> ``conv2d``,
    ``ConvTranspose2d`` -> ``conv_transpose2d``, ``BatchNorm2d`` -> ``batch_norm``."""
    if layer in _LAYER_OPS:
        return _LAYER_OPS[layer]
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", layer).lower()
    return re.sub(r"(batch_norm|instance_norm)\d+d$", r"\1", snake)


# --- read from the installed libraries -----------------------------------------------------------
@functools.cache
def tensor_attribute_names() -> frozenset[str]:
    """Every attribute of torch.Tensor (the computing ones included)."""
    import torch

    return frozenset(dir(torch.Tensor))


@functools.cache
def module_attribute_names() -> frozenset[str]:
    """Every attribute of nn.Module: what the harness may call on a candidate's module."""
    import torch

    return frozenset(dir(torch.nn.Module))


@functools.cache
def torch_layer_names() -> frozenset[str]:
    """torch.nn's layer classes (nn.Linear, nn.Conv2d, nn.GroupNorm, ...)."""
    import torch

    return frozenset(torch.nn.modules.__all__)


def _public(module: types.ModuleType) -> frozenset[str]:
    return frozenset(n for n in dir(module) if not n.startswith("_")
                     and not isinstance(getattr(module, n), types.ModuleType))


@functools.cache
def triton_language_names() -> dict[str, frozenset[str]]:
    """triton.language's public names (its ``__all__``), its math and libdevice functions: the
    kernel language, by module."""
    import triton.language as tl
    import triton.language.extra.cuda.libdevice as cuda_libdevice
    from triton.language.extra import libdevice

    names = {n for n in tl.__all__ if not isinstance(getattr(tl, n), types.ModuleType)}
    return {
        "triton.language": frozenset(names | {"math", "extra"}),
        "triton.language.math": _public(tl.math),
        "triton.language.extra.libdevice": _public(libdevice),
        "triton.language.extra.cuda.libdevice": _public(cuda_libdevice),
    }


@functools.cache
def jit_value_names() -> frozenset[str]:
    """What a jit body may read on a value: the public API of triton.language's tensor, dtype,
    pointer, block and descriptor classes (never ``handle``, the interpreter's buffer)."""
    import triton.language as tl

    classes = [tl.tensor, tl.dtype, tl.pointer_type, tl.block_type, tl.constexpr,
               tl.tensor_descriptor]
    names = {n for cls in classes for n in dir(cls) if not n.startswith("_")}
    return frozenset(names | JIT_VALUE_NAMES) - {"handle"}
