"""The static check is an allowlist (issue #47): what a candidate may use passes, and every
gadget a red team used to reach past it (string imports, torch.ops, torch._C, torch.utils._*,
sys, dunders, C++ that runs Python) is refused with the name of the rule that refused it."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import torch

from kernelevolve.tools.harness import allowlist as al
from kernelevolve.tools.harness.guard import OpRecorder
from kernelevolve.tools.harness.static import check_source

ROOT = Path(__file__).resolve().parents[3]
HEADER = ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nimport triton\n"
          "import triton.language as tl\n")
MODEL = "\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n"


def found(source: str, **kw) -> list[tuple[str, str, str]]:
    return [(f.rule, f.kind, f.message) for f in check_source(source, **kw)]


def module(snippet: str) -> str:
    return HEADER + snippet + MODEL


def forward(body: str, init: str = "pass", args: str = "x") -> str:
    """A candidate whose constructor and forward are ``init`` and ``body`` (lines)."""
    indent = "\n        "
    return HEADER + (f"\nclass ModelNew(nn.Module):\n    def __init__(self):\n        "
                     f"super().__init__(){indent}{indent.join(init.splitlines())}\n\n"
                     f"    def forward(self, {args}):{indent}"
                     f"{indent.join(body.splitlines())}\n        return x\n")


def assert_refused(source: str, rule: str, needle: str, **kw) -> None:
    hits = found(source, **kw)
    assert any(r == rule and needle in m for r, _, m in hits), hits


def test_honest_source_passes():
    assert check_source(module("")) == []


def test_missing_model_new_is_a_contract_error():
    (finding,) = check_source(HEADER)
    assert finding.kind == "contract" and finding.rule == "model-new"
    assert "ModelNew" in finding.message


def test_syntax_error_is_a_contract_error():
    (finding,) = check_source("def broken(:\n")
    assert (finding.kind, finding.rule) == ("contract", "syntax")


# -- what a candidate may use ---------------------------------------------------------------------
@pytest.mark.parametrize("body", [
    # allocation, views, data movement, metadata
    "out = torch.empty_like(x)\ny = torch.empty((2, 3), dtype=torch.float32, device=x.device)",
    "y = x.view(-1).reshape(2, -1).permute(1, 0).contiguous().transpose(0, 1).flatten()",
    "n, s, p = x.numel(), x.stride(0), x.data_ptr()\nb = x.dtype.itemsize * x.element_size()",
    "z = torch.zeros(3).new_zeros(2).zero_()\nc = torch.cat([z, z]).unsqueeze(0).expand(2, -1)",
    "y = x.to(torch.float16).float().clone().detach()\nk = x.is_contiguous() and x.is_cuda",
    "w = torch.promote_types(x.dtype, torch.bfloat16)\nm = torch.finfo(x.dtype).max",
    "a, b = x.split(2)\nq = x.chunk(2)\nt = torch.stack([x, x]).movedim(0, -1)",
    # device queries, Triton on the host
    "props = torch.cuda.get_device_properties(x.device)\nsms = props.multi_processor_count",
    "grid = (triton.cdiv(x.numel(), 128),)\nblock = triton.next_power_of_2(x.shape[-1])",
    "cfg = triton.Config({'BLOCK': 64}, num_warps=4)\nd = x.device.type == 'cuda'",
    # Python
    "sizes = list(zip(x.shape, x.stride()))\nsizes.append(max(1, min(4, len(sizes))))",
    "import math\nscale = math.sqrt(x.shape[-1]) ** -0.5\nd = {}.get('a', sorted([2, 1]))",
])
def test_allocation_views_metadata_and_queries_pass(body):
    assert found(forward(body)) == []


def test_module_plumbing_and_the_reference_constructor_pass():
    init = ("self.conv = nn.Conv2d(3, 8, 3, padding=1)\n"
            "self.bias = nn.Parameter(torch.randn(8) * 0.02)\n"
            "self.ln = nn.LayerNorm(8)\n"
            "nn.init.kaiming_uniform_(self.bias.data.view(1, -1))\n"
            "self.register_buffer('scale', torch.tensor([1.0, 2.0]))\n"
            "self.act = nn.GELU()")
    body = ("w, b = self.conv.weight, self.conv.bias\n"
            "pad, eps = self.conv.padding, self.ln.eps\n"
            "s = self.scale.view(-1)")
    assert found(forward(body, init)) == []


def test_helper_modules_pass():
    source = HEADER + (
        "import enum\nimport typing\nimport functools\nimport itertools\nimport operator\n"
        "from collections import namedtuple\nfrom dataclasses import dataclass, field\n\n"
        "class Mode(enum.Enum):\n    A = enum.auto()\n\n"
        "class Cfg(typing.NamedTuple):\n    block: int\n\n"
        "Pair = namedtuple('Pair', 'a b')\n\n"
        "@dataclass\nclass Plan:\n    grid: tuple = field(default_factory=tuple)\n\n"
        "@functools.lru_cache(maxsize=None)\ndef tiles(n: int) -> typing.List[int]:\n"
        "    return [a * b for a, b in itertools.product(range(n), repeat=2)]\n\n"
        "total = functools.reduce(operator.mul, (2, 3), 1)\n") + MODEL
    assert found(source) == []


@pytest.mark.parametrize(("body", "ops"), [
    ("y = F.conv2d(x, self.conv.weight, self.conv.bias)", ["conv2d"]),
    ("y = torch.nn.functional.conv2d(x, self.conv.weight)", ["conv2d"]),
    ("y = self.conv(x)", ["conv2d"]),
    ("y = F.linear(x, self.lin.weight, self.lin.bias)", ["linear"]),
    ("y = torch.mm(x, self.lin.weight.t())", ["linear"]),  # the guard's aliases: addmm, mm, t
    ("y = x.matmul(self.lin.weight)", ["matmul"]),
])
def test_library_ops_the_user_allows_pass(body, ops):
    init = "self.conv = nn.Conv2d(3, 8, 3)\nself.lin = nn.Linear(4, 4)"
    assert found(forward(body, init), allowed_ops=ops) == []
    assert found(forward(body, init)) != []  # and only when allowed


def test_triton_kernel_module_passes():
    source = HEADER + (
        "from triton.tools.tensor_descriptor import TensorDescriptor\n"
        "from triton.language.extra import libdevice\n\n"
        "@triton.autotune(configs=[triton.Config({'BLOCK': 64})], key=['n'])\n"
        "@triton.jit\n"
        "def k(x_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    v = tl.load(x_ptr + offs, mask=offs < n, other=0.0)\n"
        "    v = tl.maximum(v, 0.0, propagate_nan=tl.PropagateNan.ALL)\n"
        "    tl.store(x_ptr + offs, libdevice.tanh(v).to(x_ptr.dtype.element_ty), mask=offs < n)\n"
        "\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
        "        d = TensorDescriptor.from_tensor(x, [16, 16])\n"
        "        k[(triton.cdiv(x.numel(), 64),)](x, x.numel())\n        return x\n")
    assert found(source) == []


# -- the gadgets (the red team and more): each refused by its rule ------------------------
GADGETS = [
    # modules reached by string, and the modules that do it
    ("import torch.package\nm = torch.package.sys_importer.import_module('numpy')\n", "import",
     "import of 'torch.package'"),
    ("m = torch.package.sys_importer.import_module('numpy')\n", "module-attribute",
     "torch.package is not in the candidate allowlist (it imports any module by name"),
    ("import importlib\n", "import", "import of 'importlib'"),
    ("import builtins\n", "import", "import of 'builtins'"),
    ("import sys\n", "import", "import of 'sys'"),
    ("from os import system\n", "import", "import of 'os'"),
    ("import numpy as np\n", "import", "import of 'numpy'"),
    ("m = __import__('os')\n", "dunder", "__import__"),
    ("m = torch.sys.modules['kernelevolve']\n", "module-attribute", "leads from an allowed module"),
    ("import typing\nm = typing.sys\n", "module-attribute", "typing.sys"),
    ("import dataclasses\nm = dataclasses.sys\n", "module-attribute", "dataclasses.sys"),
    ("import functools\nm = functools.reduce(getattr, ['sys'], torch)\n", "computed-name",
     "getattr passed as a value"),
    ("m = tl.extra.pkgutil\n", "module-attribute", "triton.language.extra.pkgutil"),
    ("import triton.runtime.interpreter\n", "import", "import of 'triton.runtime.interpreter'"),
    ("k = triton.runtime.driver\n", "module-attribute", "triton.runtime"),
    # torch.ops, torch._C, torch.utils._*, torch.library
    ("aten = torch.ops.aten\n", "module-attribute", "torch.ops is not in the candidate allowlist"),
    ("g = torch._C._DisableTorchDispatch\n", "private", "_C"),
    ("from torch._C import _DisableTorchDispatch\n", "import", "import of 'torch._C'"),
    ("from torch.utils._mode_utils import no_dispatch\n", "import",
     "import of 'torch.utils._mode_utils'"),
    ("m = torch.utils._mode_utils.no_dispatch\n", "private", "_mode_utils"),
    ("lib = torch.library.Library('x', 'DEF')\n", "module-attribute", "torch.library"),
    # modules as values, whose names would be read as a value's
    ("T = torch if len([]) else 0\nm = T.package\n", "module-value", "the module torch"),
    ("def f():\n    return torch\n", "module-value", "the module torch"),
    ("T = torch\nT = 0\n", "module-value", "the module torch"),
    ("ms = [torch.nn]\n", "module-value", "the module torch.nn"),
    ("xs = [torch for torch in [0]]\n", "module-value", "torch is imported and bound again"),
    ("import math as T\nimport operator as T\n", "module-value", "T is imported and bound"),
    ("def f(tl):\n    return tl.package\n", "module-value", "tl is imported and bound"),
    ("class C:\n    m = torch\n", "module-value", "the module torch"),
    ("class C:\n    import torch\n", "module-value", "an import in a class body"),
    # Python's runtime objects: a candidate's own name does not make a frame's its own
    ("class G:\n    def __init__(self):\n        self.gi_frame = self.f_back = None\n"
     "def gen():\n    yield 1\nf = gen().gi_frame.f_back\n", "value-attribute", ".gi_frame"),
    # dunders
    ("c = torch.ones(1).__class__\n", "dunder", "__class__"),
    ("g = (lambda: 0).__globals__\n", "dunder", "__globals__"),
    ("d = torch.__dict__\n", "dunder", "__dict__"),
    ("f = object.__getattribute__(torch, 'relu')\n", "dunder", "__getattribute__"),
    ("b = __builtins__\n", "dunder", "__builtins__"),
    ("s = __spec__\n", "dunder", "__spec__"),
    ("class C:\n    def __getattr__(self, name):\n        return name\n", "dunder",
     "defining __getattr__"),
    ("class C:\n    def __enter__(self):\n        return self\n", "dunder", "defining __enter__"),
    ("def __getattr__(name):\n    return name\n", "dunder", "defining __getattr__"),
    # builtins that evaluate strings or reach namespaces
    ("exec('x = 1')\n", "builtin", "exec()"),
    ("v = eval('1')\n", "builtin", "eval()"),
    ("c = compile('1', 'f', 'eval')\n", "builtin", "compile()"),
    ("g = globals()\n", "builtin", "globals()"),
    ("g = locals()\n", "builtin", "locals()"),
    ("g = vars(torch)\n", "builtin", "vars()"),
    ("setattr(torch, 'relu', None)\n", "builtin", "setattr()"),
    ("t = type(torch.ones(1))\n", "builtin", "type()"),
    ("f = open('/etc/passwd')\n", "builtin", "open()"),
    ("f = getattr(torch, 're' + 'lu')\n", "computed-name", "literal attribute name"),
    ("f = getattr(torch, 'ops')\n", "module-attribute", "torch.ops"),
    ("import operator\nf = operator.attrgetter('ops')\n", "module-attribute",
     "operator.attrgetter"),
    # the RNG that makes the inputs, and global switches
    ("s = torch.default_generator.initial_seed()\n", "module-attribute", "RNG"),
    ("g = torch.Generator()\n", "module-attribute", "RNG"),
    ("torch.manual_seed(0)\n", "module-attribute", "RNG"),
    ("rng = torch\nrng.manual_seed(0)\n", "module-attribute", "RNG"),
    ("torch.set_default_dtype(torch.float16)\n", "module-attribute", "global switches"),
    ("torch.backends.cuda.matmul.allow_tf32 = True\n", "module-attribute", "torch.backends"),
    ("torch.cuda.synchronize = None\n", "patch", "patches a library"),
    # other streams, timers, compilers
    ("s = torch.cuda.Stream()\n", "module-attribute", "other streams"),
    ("e = torch.cuda.Event\n", "module-attribute", "timing events"),
    ("f = torch.compile(lambda x: x)\n", "module-attribute", "torch.compile"),
    ("torch.allclose = lambda *a: True\n", "patch", "patches a library"),
    ("def f():\n    global CACHE\n", "global-state", "keep results between calls"),
    # torch computing
    ("y = torch.relu(torch.ones(1))\n", "module-attribute", "torch.relu"),
    ("y = F.softmax(torch.ones(1), dim=0)\n", "module-attribute", "torch.nn.functional.softmax"),
    ("y = torch.matmul(torch.ones(2, 2), torch.ones(2, 2))\n", "module-attribute", "matmul"),
    ("from torch import relu\n", "module-attribute", "torch.relu"),
    ("t = torch.tensor([1.0])\n", "constructor-only", "torch.tensor is allowed only in an __init__"),
    ("t = torch.randn(3)\n", "constructor-only", "torch.randn"),
    ("t = torch.Tensor([1.0])\n", "host-data", "torch.Tensor(...)"),
    ("t = torch.FloatTensor([1.0])\n", "module-attribute", "torch.FloatTensor"),
]


@pytest.mark.parametrize(("snippet", "rule", "needle"), GADGETS)
def test_gadgets_are_refused_by_name(snippet, rule, needle):
    assert_refused(module(snippet), rule, needle)


@pytest.mark.parametrize(("body", "rule", "needle"), [
    ("y = x.sum()", "value-attribute", ".sum is not in the candidate allowlist"),
    ("y = x.exp()", "value-attribute", "on a tensor it computes"),
    ("y = x.item()", "value-attribute", "on the host"),
    ("y = x.tolist()", "value-attribute", "on the host"),
    ("y = x.numpy()", "value-attribute", ".numpy"),
    ("y = x.untyped_storage()", "value-attribute", ".untyped_storage"),
    ("f = x.exp\ny = f()", "value-attribute", ".exp"),
    ("y = (x + 1).relu()", "value-attribute", ".relu"),
    ("y = x.new_tensor([1.0])", "value-attribute", ".new_tensor"),
    ("y = torch.randn(3)", "constructor-only", "torch.randn"),
    ("y = nn.Linear(2, 2)", "constructor-only", "torch.nn.Linear"),
    ("y = self.conv(x)", "library-module-call", "calling self.conv runs torch.nn.Conv2d (conv2d)"),
    ("y = self.act(x)", "library-module-call", "torch.nn.GELU (gelu)"),
    ("y = self.layers[0](x)", "library-module-call", "torch.nn.ModuleList"),
    ("y = ModelNew.helper(x)", "value-attribute", "call it through self"),
    ("y = self.conv.forward(x)", "value-attribute", ".forward"),
    ("y = self.conv._conv_forward(x, self.conv.weight, None)", "private", "_conv_forward"),
    ("y = nn.Conv2d.forward(self.conv, x)", "constructor-only", "torch.nn.Conv2d"),
    ("y = super(ModelNew, x).forward(x)", "value-attribute", "write super()"),
])
def test_computing_in_the_forward_is_refused(body, rule, needle):
    init = ("self.conv = nn.Conv2d(3, 8, 3)\nself.act = nn.GELU()\n"
            "self.layers = nn.ModuleList([nn.Linear(2, 2)])")
    source = forward(body, init) + "\n    def helper(self):\n        return self.exp()\n"
    assert_refused(source, rule, needle)


@pytest.mark.parametrize(("snippet", "needle"), [
    ("    def load_state_dict(self, state, strict=True, assign=False):\n        return None\n",
     "ModelNew.load_state_dict replaces nn.Module's load_state_dict"),
    ("    def state_dict(self):\n        return {}\n", "ModelNew.state_dict"),
    ("    def _load_from_state_dict(self, *a):\n        return None\n",
     "ModelNew._load_from_state_dict"),
    ("    def __init__(self):\n        super().__init__()\n        self.load_state_dict = None\n",
     "assigning self.load_state_dict"),
    ("    def __init__(self):\n        super().__init__()\n        self.forward = None\n",
     "assigning self.forward"),
    ("    to = None\n", "ModelNew.to"),
])
def test_module_overrides_are_refused(snippet, needle):
    source = HEADER + "\nclass ModelNew(nn.Module):\n" + snippet + (
        "\n    def forward(self, x):\n        return x\n")
    assert_refused(source, "module-override", needle)


@pytest.mark.parametrize("base", ["nn.Conv2d", "nn.Sequential", "torch.nn.Linear"])
def test_a_module_derives_from_nn_module_not_from_a_layer(base):
    source = HEADER + f"\nclass ModelNew({base}):\n    def forward(self, x):\n" \
                      f"        return self._conv_forward(x, self.weight, None)\n"
    assert_refused(source, "class-base", f"subclassing {base.replace('nn.', 'torch.nn.', 1)}"
                   if base.startswith("nn.") else f"subclassing {base}")
    assert_refused(source, "private", "_conv_forward")


def test_a_module_may_not_define_call():
    source = HEADER + "\nclass ModelNew(nn.Module):\n    def __call__(self, x):\n        return x\n"
    assert_refused(source, "dunder", "defining __call__")
    helper = HEADER + "\nclass Launch:\n    def __call__(self, x):\n        return x\n" + MODEL
    assert found(helper) == []


def test_torch_computing_outside_the_forward_is_refused():
    # c6a (issue 47): torch computed in load_state_dict, where nothing records it
    source = forward("", "self.s = torch.sigmoid(torch.randn(4)) * torch.exp(torch.randn(4))")
    assert_refused(source, "module-attribute", "torch.sigmoid")
    assert_refused(source, "module-attribute", "torch.exp")
    source = forward("", "self.conv = nn.Conv2d(3, 8, 3)\n"
                         "self.y = nn.Conv2d.forward(self.conv, torch.ones(1, 3, 8, 8))")
    assert_refused(source, "value-attribute", "torch.nn.Conv2d.forward")


def test_refusals_say_what_to_do():
    hits = found(forward("y = torch.relu(x)"))
    (message,) = [m for r, _, m in hits if r == "module-attribute"]
    assert "compute with a Triton kernel" in message and "--allow-op" in message
    (message,) = [m for _, _, m in found(forward("y = x.item()"))]
    assert "compute with a Triton kernel" in message


def test_aliases_are_resolved_and_ambiguous_names_are_values():
    assert_refused(module("T = torch\nf = T.ops\n"), "module-attribute", "torch.ops")
    assert_refused(module("from torch import nn as N\nf = N.functional.relu\n"),
                   "module-attribute", "torch.nn.functional.relu")
    # a name bound to a module in one place and to a value elsewhere is a value everywhere
    source = module("fi = torch.finfo(torch.float32)\n\ndef f(fi):\n    return fi.max()\n")
    assert_refused(source, "value-attribute", ".max")


def test_every_finding_names_its_rule():
    source = module("".join(snippet for snippet, _, _ in GADGETS[:20]))
    rules = {f.rule for f in check_source(source)}
    assert rules and "contract" not in rules


# -- CUDA C++ -------------------------------------------------------------------------------------
CUDA_RELU = r'''
CUDA = """
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void relu_kernel(const float* x, float* out, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] > 0.f ? x[i] : 0.f;
}

torch::Tensor relu(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous(), "x must be a contiguous CUDA tensor");
    auto out = torch::empty_like(x);
    long n = x.numel();
    auto stream = at::cuda::getCurrentCUDAStream();
    relu_kernel<<<(n + 255) / 256, 256, 0, stream>>>(x.data_ptr<float>(),
                                                     out.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""
CPP = "torch::Tensor relu(torch::Tensor x);"
ext = load_inline("relu_ext", cpp_sources=CPP, cuda_sources=[CUDA], functions=["relu"],
                  extra_cuda_cflags=["-O3", "--use_fast_math"], verbose=False)
'''
CPP_HEADER = HEADER + "from torch.utils.cpp_extension import load_inline\n"
CPP_MODEL = ("\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
             "        return ext.relu(x.contiguous())\n")


def cpp(kernel_body: str = "", host: str = "", flags: str = "") -> str:
    """A candidate whose extension's kernel and host function hold ``kernel_body``/``host``."""
    source = CUDA_RELU.replace("if (i < n)", kernel_body + "\n    if (i < n)").replace(
        "    return out;", host + "\n    return out;").replace(", verbose=False", flags)
    return CPP_HEADER + source + CPP_MODEL


def test_cuda_cpp_candidate_passes():
    assert found(cpp()) == []


def test_cuda_cpp_is_refused_where_it_is_not_enabled():
    assert_refused(cpp(), "cpp-disabled", "enabled only on the cuda target", allow_cpp=False)
    assert_refused(module("import torch.utils.cpp_extension\n"), "cpp-disabled",
                   "torch.utils.cpp_extension", allow_cpp=False)


@pytest.mark.parametrize(("kernel", "host", "needle"), [
    ("", "PyRun_SimpleString(\"import os\");", "PyRun_SimpleString"),
    ("", "PyObject* m = PyImport_ImportModule(\"sys\");", "PyImport_ImportModule"),
    ("", "pybind11::exec(\"import os\");", "pybind11::exec"),
    ("", "py::module_::import(\"sys\");", "py::module_::import"),
    ("", "system(\"ls\");", "system()"),
    ("", "FILE* f = popen(\"ls\", \"r\");", "popen()"),
    ("", "fork();", "fork()"),
    ("", "void* h = dlopen(\"libpython3.so\", 0);", "dlopen()"),
    ("", "std::thread t([]{});", "std::thread"),
    ("", "cudaStream_t s; cudaStreamCreate(&s);", "cudaStreamCreate"),
    ("", "cudaEvent_t e; cudaEventCreate(&e);", "cudaEventCreate"),
    ("", "cudaMemcpy(out.data_ptr(), x.data_ptr(), 4, cudaMemcpyDeviceToHost);", "cudaMemcpy"),
    ("", "auto y = at::matmul(x, x);", "at::matmul"),
    ("", "auto y = torch::relu(x);", "torch::relu"),
    ("", "auto y = x.sum();", ".sum()"),
    ("", "auto y = matmul(x, x);", "matmul()"),
    ("", "c10::impl::ExcludeDispatchKeyGuard g(c10::DispatchKey::Python);", "c10::impl"),
    ("", "TORCH_LIBRARY(mine, m) {}", "TORCH_LIBRARY"),
    ("", "cublasSgemm(h);", "cublas"),
    ("", "auto f = &system; f(\"ls\");", "system"),
    ("", "__libc_system(\"ls\");", "__libc_system"),
    ("", "run_it(\"ls\");", "run_it()"),  # declared only (extern), never defined here
    ("", "asm volatile(\"syscall\");", "system call in inline assembly"),
])
def test_cuda_cpp_beyond_the_allowlist_is_refused(kernel, host, needle):
    assert_refused(cpp(kernel, host), "cpp-api", needle)


@pytest.mark.parametrize(("prefix", "needle"), [
    ("#include <Python.h>", "#include <Python.h>"),
    ("#include <pybind11/embed.h>", "#include <pybind11/embed.h>"),
    ("#include <thread>", "#include <thread>"),
    ("#include <dlfcn.h>", "#include <dlfcn.h>"),
    ("#define CAT(a, b) a##b", "token pasting"),
    ("#define RUN system", "the macro RUN expands to system"),
    ('extern "C" int run_it(const char*);', "run_it()"),
    ("using namespace at;", "using namespace at"),
    ("%:include <Python.h>", "digraphs"),
    ("int \\\\u0073ystem_ = 0;", "universal character names"),
])
def test_cuda_cpp_spellings_that_hide_names_are_refused(prefix, needle):
    source = cpp().replace("#include <torch/extension.h>", prefix + "\n#include <torch/extension.h>")
    assert_refused(source, "cpp-api", needle)


def test_cuda_cpp_library_calls_pass_where_their_op_is_allowed():
    assert found(cpp(host="cublasSgemm(h);"), allowed_ops=["mm"]) == []
    assert found(cpp(host="auto y = at::matmul(x, x);"), allowed_ops=["matmul"]) == []


@pytest.mark.parametrize(("source", "needle"), [
    (CPP_HEADER + "SRC = 'void f() {}'\next = load_inline('e', cpp_sources=SRC, functions=['f'])\n"
     + CPP_MODEL, "must launch a CUDA kernel"),
    (CPP_HEADER + "ext = load_inline('e', cpp_sources=open('f.cpp').read())\n" + CPP_MODEL,
     "cpp_sources must be literal strings"),
    (CPP_HEADER + "SRC = 'x'\nSRC = 'y'\next = load_inline('e', cuda_sources=SRC)\n" + CPP_MODEL,
     "cuda_sources must be literal strings"),
    (cpp(flags=", extra_ldflags=['-lpython3.11']"), "extra_ldflags= is not allowed"),
    (cpp(flags=", extra_cflags=['-include', 'Python.h']"), "'-include'"),
    (CPP_HEADER + "build = load_inline\n" + CPP_MODEL, "must be called by name"),
    (CPP_HEADER + "import functools\nb = functools.partial(torch.utils.cpp_extension.load_inline)\n"
     + CPP_MODEL, "must be called by name"),
])
def test_cuda_cpp_sources_must_be_literal_and_launch_a_kernel(source, needle):
    assert_refused(source, "cpp-source", needle)


def test_an_extension_exposes_its_functions():
    # ext.relu is the extension's own function, not torch's relu
    assert found(cpp()) == [] and "ext.relu(" in cpp()


# -- the red team of issue 47 ---------------------------------------------------------------------
REDTEAM47 = ROOT / "tests" / "adversarial" / "redteam47" / "cases"


@pytest.mark.parametrize(("name", "rule"), [
    ("c1a_sysimporter_no_dispatch", "import"),
    ("c1b_sysimporter_patch_recorder", "import"),
    ("c1c_builtins_exec_string", "import"),
    ("c1d_numpy_writes_output", "import"),
    ("c1e_cpp_pyrun_patch_recorder", "cpp-api"),
    ("c1f_aten_ops_direct_control", "module-attribute"),
    ("c2a_seed_regenerates_inputs", "module-attribute"),
    ("c4e_cpp_host_loop", "cpp-source"),
    ("c6a_torch_in_load_state_dict", "module-override"),
])
def test_the_string_import_and_outside_the_forward_cheats_are_refused(name, rule):
    rules = {f.rule for f in check_source((REDTEAM47 / f"{name}.py").read_text())}
    assert rule in rules, rules
    assert {f.rule for f in check_source((REDTEAM47 / f"{name}.py").read_text(),
                                         allow_cpp=False)}


# -- the tables themselves ------------------------------------------------------------------------
def test_every_listed_name_exists():
    for name in al.ALLOWED_IMPORTS | al.CPP_IMPORTS:
        importlib.import_module(name)
    tables = [al.MODULE_NAMES, al.CONSTRUCTOR_NAMES, al.triton_language_names()]
    for table in tables:
        for name, names in table.items():
            mod = importlib.import_module(name)
            missing = sorted(n for n in names if not hasattr(mod, n))
            assert not missing, (name, missing)


def test_python_names_are_no_tensor_methods():
    assert not al.PYTHON_NAMES & set(dir(torch.Tensor))
    assert al.MODULE_STATE_NAMES & set(dir(torch.Tensor)) <= al.TENSOR_NAMES


def _sample_calls(x: torch.Tensor) -> dict[str, object]:
    return {
        "empty": lambda: torch.empty(2), "empty_like": lambda: torch.empty_like(x),
        "empty_strided": lambda: torch.empty_strided((2,), (1,)),
        "zeros": lambda: torch.zeros(2), "zeros_like": lambda: torch.zeros_like(x),
        "ones": lambda: torch.ones(2), "ones_like": lambda: torch.ones_like(x),
        "full": lambda: torch.full((2,), 1.0), "full_like": lambda: torch.full_like(x, 1.0),
        "arange": lambda: torch.arange(4), "cat": lambda: torch.cat([x, x]),
        "concat": lambda: torch.concat([x, x]), "concatenate": lambda: torch.concatenate([x, x]),
        "stack": lambda: torch.stack([x, x]), "reshape": lambda: torch.reshape(x, (-1,)),
        "flatten": lambda: torch.flatten(x), "unflatten": lambda: torch.unflatten(x, 0, (1, 2)),
        "movedim": lambda: torch.movedim(x, 0, 1), "moveaxis": lambda: torch.moveaxis(x, 0, 1),
        "permute": lambda: torch.permute(x, (1, 0)), "transpose": lambda: torch.transpose(x, 0, 1),
        "swapaxes": lambda: torch.swapaxes(x, 0, 1), "swapdims": lambda: torch.swapdims(x, 0, 1),
        "t": lambda: torch.t(x), "squeeze": lambda: torch.squeeze(x),
        "unsqueeze": lambda: torch.unsqueeze(x, 0), "narrow": lambda: torch.narrow(x, 0, 0, 1),
        "select": lambda: torch.select(x, 0, 0), "split": lambda: torch.split(x, 1),
        "chunk": lambda: torch.chunk(x, 2), "unbind": lambda: torch.unbind(x),
        "as_strided": lambda: torch.as_strided(x, (2,), (1,)),
        "broadcast_to": lambda: torch.broadcast_to(x, (2, 2, 3)),
        "clone": lambda: torch.clone(x), "detach": lambda: torch.detach(x),
    }


def test_torch_memory_names_dispatch_only_ops_the_runtime_guard_allows():
    x = torch.ones(2, 3)
    calls = _sample_calls(x)
    assert set(calls) == set(al.TORCH_MEMORY)
    with OpRecorder() as recorder:
        for call in calls.values():
            call()
    assert recorder.forbidden(set()) == []
