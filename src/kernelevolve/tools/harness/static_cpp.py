"""The allowlist for CUDA C++ a candidate builds with ``torch.utils.cpp_extension.load_inline``
(only where CUDA C++ is enabled: the cuda target).

An extension's host code runs in the candidate process with the same reach as Python, so it is
held to the same contract: allocate, describe and launch; compute in ``__global__`` kernels.

- ``#include`` only of the CUDA, torch-extension and C++ headers in ``INCLUDES`` (no
  ``Python.h``, ``pybind11``, ``<thread>``, ``<dlfcn.h>``).
- Qualified names only from ``QUALIFIED``: ``torch::``/``at::`` allocation (``empty``,
  ``empty_like``, ``zeros``...), types, dtype constants and the current stream; ``std::``
  utilities; cooperative groups and WMMA; the candidate's own namespaces and types. No ATen op
  that computes, no ``c10::impl`` dispatcher guards, no ``py::``/``pybind11::`` but ``py::arg``.
- Methods a tensor has (``.sum()``, ``.matmul()``) only where they describe or view memory
  (``.data_ptr()``, ``.size()``, ``.options()``), or are library ops the user allowed.
- CUDA runtime calls only from ``CUDA_RUNTIME`` (errors, attributes, occupancy, async memset and
  device-to-device copies); no streams, events, graphs or host copies. cuBLAS/cuDNN only where
  their library op is allowed.
- No Python C API (``Py*``), no op registration (``TORCH_LIBRARY``), no token pasting (``##``),
  universal character names or digraphs, which would spell any name past this scan; a macro
  expands only to names this list allows.
- Unqualified calls only of functions the extension defines (with a body), CUDA's intrinsics and
  math, atomics, ``printf``/``assert``/``memcpy``/``memset``, upper-case macros
  (``TORCH_CHECK``), cooperative groups and WMMA: a declared-only ``extern`` function is not the
  candidate's own. The C library's ways out of the kernel (``C_ESCAPES``: processes, threads,
  files, dynamic loading) are refused wherever their names appear (a macro, an address).

Native code can still reach memory by pointer arithmetic, and a function the extension defines
with an ATen op's name can reach ``at::`` through argument-dependent lookup: those ATen calls go
through the dispatcher, where the runtime op recorder sees them, and the judge runs in a process
the candidate's cannot reach.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

INCLUDES = re.compile(
    r"torch/(extension|types)\.h|ATen/(ATen|cuda/CUDAContext)\.h|c10/cuda/CUDA(Guard|Stream)\.h"
    r"|cuda(_runtime|_runtime_api|_fp16|_bf16|_fp8|_pipeline)?\.h|mma\.h|cuda/(barrier|pipeline)"
    r"|cooperative_groups(/\w+)?(\.h)?|c?(std(int|def|io)|math|float|limits|assert)(\.h)?"
    r"|algorithm|vector|array|limits|type_traits|utility|tuple|cmath|climits|cfloat|cassert"
    r"|cstdint|cstddef|stdexcept|string|initializer_list")
_LIB_NAMESPACES = {"at", "torch", "c10", "std", "cuda", "cub", "pybind11", "py",
                   "cooperative_groups", "nvcuda", "thrust", "cutlass", "cute", "__gnu_cxx"}
_TENSOR_TYPES = (r"Tensor|TensorOptions|Device|IntArrayRef|Half|BFloat16|"
                 r"(ScalarType|MemoryFormat|DeviceType|Layout)(::\w+)?|TensorAccessor|"
                 r"PackedTensorAccessor(32|64)?|RestrictPtrTraits|DefaultPtrTraits|k[A-Z]\w*|"
                 r"empty|empty_like|empty_strided|zeros|zeros_like|ones|ones_like|full|"
                 r"elementSize|toString|cuda::(getCurrentCUDAStream|CUDAGuard|"
                 r"OptionalCUDAGuard|CUDAStream|getCurrentDeviceProperties)")
QUALIFIED = re.compile(
    rf"(at|torch)::({_TENSOR_TYPES})"
    rf"|c10::({_TENSOR_TYPES}|ArrayRef|optional|nullopt|irange|Float8_e4m3fn|Float8_e5m2)"
    r"|(cuda::)?std::(min|max|abs|fabs|sqrt|exp|log|pow|ceil|floor|size_t|u?int(8|16|32|64)_t|"
    r"vector|array|pair|tuple|make_pair|make_tuple|get|tie|numeric_limits|swap|move|forward|"
    r"is_same(_v)?|enable_if(_t)?|conditional(_t)?|decay_t|remove_cv_t|integral_constant|"
    r"true_type|false_type|string|to_string|runtime_error|invalid_argument|initializer_list|"
    r"optional|nullopt|clamp|min_element|max_element|fill)"
    r"|(cooperative_groups|nvcuda)(::\w+)+"
    r"|cub::(Block|Warp)\w*|cub::(Sum|Max|Min)"
    r"|py::arg")
CUDA_RUNTIME = frozenset({
    "cudaGetLastError", "cudaPeekAtLastError", "cudaGetErrorString", "cudaError_t",
    "cudaSuccess", "cudaStream_t", "cudaFuncSetAttribute", "cudaFuncGetAttributes",
    "cudaFuncAttributes", "cudaFuncAttributeMaxDynamicSharedMemorySize",
    "cudaFuncAttributePreferredSharedMemoryCarveout",
    "cudaOccupancyMaxActiveBlocksPerMultiprocessor", "cudaOccupancyMaxPotentialBlockSize",
    "cudaDeviceGetAttribute", "cudaGetDevice", "cudaGetDeviceProperties", "cudaDeviceProp",
    "cudaMemsetAsync", "cudaMemcpyAsync", "cudaMemcpyDeviceToDevice",
})
# What a tensor method may do from C++ (besides allowed library ops).
TENSOR_METHODS = frozenset({
    "data_ptr", "mutable_data_ptr", "const_data_ptr", "size", "sizes", "stride", "strides",
    "numel", "dim", "options", "dtype", "scalar_type", "device", "is_cuda", "is_contiguous",
    "contiguous", "view", "reshape", "element_size", "itemsize", "nbytes", "get_device",
    "storage_offset", "packed_accessor32", "packed_accessor64", "accessor", "defined", "data",
    "is_floating_point", "layout", "zero_", "fill_", "copy_", "to", "type",
})
# The one list by name: unqualified C library calls that leave the kernel (processes, threads,
# files, dynamic loading, the environment).
C_ESCAPES = frozenset({
    "system", "popen", "pclose", "fork", "vfork", "execl", "execlp", "execle", "execv",
    "execvp", "execvpe", "execve", "posix_spawn", "posix_spawnp", "clone", "syscall", "dlopen",
    "dlsym", "dlmopen", "dlvsym", "pthread_create", "fopen", "freopen", "open", "openat",
    "creat", "mmap", "mprotect", "ptrace", "kill", "getenv", "setenv", "putenv", "unsetenv",
    "socket", "connect",
})
_LIBRARIES = re.compile(r"\b(cublas|cublasLt|cudnn|cufft|cusparse|cusolver|curand|nccl|cutensor)"
                        r"\w*")
_OWN = re.compile(r"\b(?:namespace|struct|class|union|enum(?:\s+class)?|typename)\s+(\w+)")
_STRING = re.compile(r'R"(?P<d>[^(\s]*)\((?:.|\n)*?\)(?P=d)"|"(?:\\.|[^"\\\n])*"'
                     r"|'(?:\\.|[^'\\\n])*'")
_COMMENT = re.compile(r"//[^\n]*|/\*(?:.|\n)*?\*/")

Refuse = Callable[[str, str], None]  # (rule, message)


def _code(source: str) -> str:
    """``source`` as the compiler reads it, less comments and the text of literals: continued
    lines joined, comments and string/char contents blanked."""
    joined = source.replace("\\\r\n", "").replace("\\\n", "")
    out, pos = [], 0
    pattern = re.compile(_COMMENT.pattern + "|" + _STRING.pattern)
    for match in pattern.finditer(joined):
        out.append(joined[pos:match.start()])
        out.append(" " if match.group(0).startswith("/") else '""')
        pos = match.end()
    out.append(joined[pos:])
    return "".join(out)


def check_cpp(sources: list[str], allowed_ops: set[str], tensor_names: frozenset[str],
              refuse: Refuse) -> None:
    """Refuse what the C++/CUDA ``sources`` of one extension use beyond the allowlist.
    ``tensor_names``: torch.Tensor's attribute names."""
    codes = [_code(source) for source in sources]
    defined = {m.group(1) for code in codes for m in _DEFINED.finditer(code)} - _KEYWORDS
    seen: set[str] = set()

    def once(rule: str, name: str, message: str) -> None:
        if name not in seen:
            seen.add(name)
            refuse(rule, message)

    for source, code in zip(sources, codes, strict=True):
        _check_directives(code, defined, once)
        for asm in re.findall(r"\b(?:asm|__asm__|__asm)\b[^;]*", _COMMENT.sub(" ", source)):
            if re.search(r"syscall|sysenter|int\s*\$?0x80", asm):
                once("cpp-api", "asm", "CUDA C++ makes a system call in inline assembly; a "
                                       "kernel extension only allocates and launches")
        if re.search(r"\\[uU][0-9a-fA-F]", code):
            once("cpp-api", "\\u", "universal character names (\\u...) spell identifiers this "
                                   "check cannot read; write the names in ASCII")
        for ns in re.findall(r"\busing\s+namespace\s+([\w:]+)", code):
            if ns not in {"nvcuda", "nvcuda::wmma", "cooperative_groups"}:
                once("cpp-api", "using " + ns, f"'using namespace {ns}' makes its functions "
                                               f"callable unqualified, past this check; "
                                               f"qualify the names you use")
        _check_names(code, defined, allowed_ops, tensor_names, once)


def _check_directives(code: str, defined: set[str], once: Callable[[str, str, str], None]
                      ) -> None:
    for line in code.splitlines():
        directive = line.strip()
        if directive.startswith(("%:", "??=")):
            once("cpp-api", "%:", "digraphs and trigraphs spell directives this check cannot "
                                  "read; write '#'")
        if not directive.startswith("#"):
            continue
        include = re.match(r"#\s*(?:include|import|include_next)\b\s*(.*)", directive)
        if include:
            header = re.fullmatch(r"[<\"]([^>\"]*)[>\"]", include.group(1).strip())
            if header is None or not INCLUDES.fullmatch(header.group(1)):
                name = header.group(1) if header else include.group(1).strip()
                once("cpp-api", "#include " + name,
                     f"#include <{name}> is not among the headers a kernel extension may use "
                     f"(torch/extension.h, the CUDA headers, the C++ standard containers and "
                     f"math)")
        elif "##" in directive:
            once("cpp-api", "##", "token pasting (##) builds names this check cannot read; "
                                  "write the names out")
        else:
            macro = re.match(r"#\s*define\s+(\w+)(\(([^)]*)\))?(.*)", directive)
            if macro:
                params = {p.strip() for p in (macro.group(3) or "").split(",")}
                for name in re.findall(r"(?<![\w.:>])([A-Za-z_]\w*)\b(?!\s*::)",
                                       macro.group(4)):
                    if name not in params and not _call_allowed(name, defined):
                        once("cpp-api", name, f"the macro {macro.group(1)} expands to {name}, "
                                              f"which is neither defined in the source nor a "
                                              f"CUDA intrinsic, math function or allowed API")


def _check_names(code: str, defined: set[str], allowed_ops: set[str],
                 tensor_names: frozenset[str], once: Callable[[str, str, str], None]) -> None:
    own = set(_OWN.findall(code)) | defined
    aliases = dict(re.findall(r"\bnamespace\s+(\w+)\s*=\s*([\w:]+)\s*;", code))
    for match in re.finditer(r"(?<![\w:])(::)?(\w+(?:\s*::\s*\w+)+)", code):
        name = re.sub(r"\s+", "", match.group(2))
        head, _, rest = name.partition("::")
        head = aliases.get(head, head)
        full = f"{head}::{rest}"
        if head not in _LIB_NAMESPACES and head in own:
            continue
        last = full.rsplit("::", 1)[-1]
        if full.startswith(("at::", "torch::")) and last in allowed_ops:
            continue
        if not QUALIFIED.fullmatch(full):
            why = ("ATen/torch compute called from C++ does the work; compute in a __global__ "
                   "kernel (or allow the library op)" if head in {"at", "torch", "c10"}
                   else "it is not among the C++ names a kernel extension may use")
            once("cpp-api", full, f"CUDA C++ uses {full}: {why}")
    for match in re.finditer(r"(?:\.|->)\s*(\w+)\s*(?:<[^<>;()]*>)?\s*\(", code):
        method = match.group(1)
        if method in tensor_names and method not in TENSOR_METHODS | allowed_ops:
            once("cpp-api", "." + method,
                 f"CUDA C++ calls the tensor method .{method}(), which computes: ATen compute "
                 f"called from C++ does the work; compute in a __global__ kernel")
    for match in re.finditer(r"(?<![\w.:>~])([A-Za-z_]\w*)\s*\(", code):
        name = match.group(1)
        library = _LIBRARIES.fullmatch(name)
        if library and _library_allowed(library.group(1), allowed_ops):
            continue
        if not _call_allowed(name, own):
            once("cpp-api", name, f"CUDA C++ calls {name}(), which is neither a function the "
                                  f"source defines, a CUDA intrinsic or math function, nor an "
                                  f"allowed API: a kernel extension allocates, describes and "
                                  f"launches (no processes, threads, files, dynamic loading or "
                                  f"library compute)")
    for match in re.finditer(r"\b\w+\b", code):
        _check_identifier(match.group(0), allowed_ops, once)


# Functions a candidate's C++ may call unqualified besides its own: CUDA's device intrinsics
# and math, atomics, vector constructors, printf/assert/memcpy/memset, upper-case macros
# (TORCH_CHECK, C10_CUDA_KERNEL_LAUNCH_CHECK), cooperative groups and WMMA.
_MATH = (r"abs|exp|exp2|exp10|expm1|log|log2|log10|log1p|sqrt|rsqrt|cbrt|rcbrt|pow|sin|cos|tan|"
         r"sincos|sinpi|cospi|tanh|sinh|cosh|asin|acos|atan|atan2|asinh|acosh|atanh|erf|erfc|"
         r"erfinv|erfcinv|floor|ceil|round|rint|lrint|llrint|lround|llround|nearbyint|trunc|"
         r"fmod|remainder|fma|fmax|fmin|fdim|max|min|copysign|isnan|isinf|isfinite|signbit|"
         r"lgamma|tgamma|frexp|ldexp|scalbn|hypot|norm3d|rhypot|modf|nextafter|normcdf")
_CALLABLE = re.compile(
    rf"(?:{_MATH})f?|__(?:{_MATH})f"
    r"|__(?:syncthreads\w*|syncwarp|shfl\w*|ldg|ldcg|ldca|ldcs|ldlu|ldcv|stcg|stcs|stwb|stwt|"
    r"ballot_sync|any_sync|all_sync|uni_sync|activemask|match_\w+|reduce_\w+|popc\w*|clz\w*|"
    r"ffs\w*|brev\w*|byte_perm|funnelshift\w*|float\w*|half\w*|bfloat\w*|nv_bfloat\w*|int\w*|"
    r"uint\w*|ll\w*|ull\w*|double\w*|h[a-z]+\w*|f(?:add|sub|mul|div|ma|rcp|sqrt|rsqrt)_r[nzdu]|"
    r"fdividef|frcp_r[nzdu]|fsqrt_r[nzdu]|saturatef|threadfence\w*|nanosleep|dp4a|dp2a\w*|"
    r"umul\w*|mul\w*|sad|usad|isGlobal|isShared|cvta\w*|pipeline_\w+|builtin_expect|"
    r"builtin_assume|builtin_unreachable|launch_bounds__|align__|forceinline__|noinline__)"
    r"|atomic[A-Z]\w*|make_\w+|printf|assert|memcpy|memset|dim3|[A-Z][A-Z0-9_]*"
    r"|this_thread_block|this_grid|tiled_partition|coalesced_threads|sync|reduce|"
    r"load_matrix_sync|store_matrix_sync|mma_sync|fill_fragment")
_KEYWORDS = frozenset({"if", "for", "while", "switch", "return", "sizeof", "catch", "alignof",
                       "decltype", "static_cast", "reinterpret_cast", "const_cast",
                       "dynamic_cast", "static_assert", "defined", "noexcept", "alignas",
                       "typeid", "throw", "new", "delete", "else", "do",
                       # types, whose functional casts look like calls
                       "int", "float", "double", "bool", "char", "long", "short", "unsigned",
                       "signed", "void", "auto", "half", "size_t", "int64_t", "int32_t",
                       "uint32_t", "uint64_t", "int8_t", "uint8_t", "int16_t", "uint16_t"})
_DEFINED = re.compile(r"(?<![\w.:>])([A-Za-z_]\w*)\s*\((?:[^;{}()]|\([^;{}()]*\))*\)\s*"
                      r"(?:const\s*|noexcept\s*|override\s*|->\s*[\w:<>]+\s*)*\{")


def _call_allowed(name: str, own: set[str]) -> bool:
    return (name in own or name in _KEYWORDS or bool(_CALLABLE.fullmatch(name))) and not (
        name in C_ESCAPES or name.startswith(("__libc", "_dl_", "__dl")))


def _check_identifier(name: str, allowed_ops: set[str],
                      once: Callable[[str, str, str], None]) -> None:
    if name in C_ESCAPES or name.startswith(("__libc", "_dl_", "__dl")):
        once("cpp-api", name, f"CUDA C++ uses {name}, which leaves the kernel (processes, "
                              f"threads, files, dynamic loading); a kernel extension only "
                              f"allocates and launches")
    elif re.fullmatch(r"_?Py[A-Z_]\w*|PYBIND11_\w+|TORCH_LIBRARY\w*", name) and (
            name != "PYBIND11_MODULE"):
        once("cpp-api", name, f"CUDA C++ uses {name}: the Python C API and op registration "
                              f"reach past the kernel (they run Python, patch the harness or "
                              f"hide ops from the recorder); a kernel extension only allocates "
                              f"and launches")
    elif re.fullmatch(r"cuda[A-Z]\w*", name) and not (
            name in CUDA_RUNTIME or re.fullmatch(r"cudaDevAttr\w+|cudaFuncAttribute\w+", name)):
        once("cpp-api", name, f"CUDA C++ uses {name}, which is not among the CUDA runtime "
                              f"calls a kernel extension may make (no streams, events, graphs "
                              f"or host copies: work must run on the current stream, where "
                              f"the timer sees it)")
    elif re.fullmatch(r"cu[A-Z]\w*|CU[a-z]\w*", name):
        once("cpp-api", name, f"CUDA C++ uses the driver API ({name}); launch with <<<...>>>")
    else:
        match = _LIBRARIES.fullmatch(name)
        if match and not _library_allowed(match.group(1), allowed_ops):
            once("cpp-api", match.group(1),
                 f"CUDA C++ uses {name}: {match.group(1)} does the work (allow the library op "
                 f"that uses it)")


_GEMM_OPS = {"mm", "matmul", "linear", "bmm", "addmm"}


def _library_allowed(library: str, allowed_ops: Iterable[str]) -> bool:
    ops = set(allowed_ops)
    if library in {"cublas", "cublasLt"}:
        return bool(ops & _GEMM_OPS)
    if library == "cudnn":
        return any(op.startswith("conv") for op in ops)
    return False
