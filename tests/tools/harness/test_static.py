from __future__ import annotations

import pytest

from kernelevolve.tools.harness.static import check_source

HEADER = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"
MODEL = "\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n"


def kinds(source: str, **kw) -> list[tuple[str, str]]:
    return [(f.kind, f.message) for f in check_source(source, **kw)]


def test_honest_source_passes():
    assert check_source(HEADER + MODEL) == []


def test_missing_model_new_is_a_contract_error():
    (finding,) = check_source(HEADER)
    assert finding.kind == "contract" and "ModelNew" in finding.message


def test_syntax_error_is_a_contract_error():
    (finding,) = check_source("def broken(:\n")
    assert finding.kind == "contract" and "syntax error" in finding.message


@pytest.mark.parametrize(
    ("snippet", "needle"),
    [
        ("import os\n", "import of 'os'"),
        ("import numpy as np\n", "import of 'numpy'"),
        ("from torch._C import _DisableTorchDispatch\n", "torch._C"),
        ("f = torch.compile(lambda x: x)\n", "torch.compile"),
        ("import torch as T\nf = T.compile\n", "torch.compile"),
        ("from torch import compile as c\n", "torch.compile"),
        ("s = torch.cuda.Stream()\n", "other streams"),
        ("e = torch.cuda.Event\n", "timing events"),
        ("torch.manual_seed(0)\n", "RNG"),
        ("exec('x = 1')\n", "exec()"),
        ("g = (lambda: 0).__globals__\n", "__globals__"),
        ("torch.allclose = lambda *a: True\n", "patches a library"),
        ("def f():\n    global CACHE\n", "keep results between calls"),
        ("import triton.runtime.interpreter\n", "triton.runtime"),
        ("b = __builtins__\n", "__builtins__"),
        ("m = torch.sys.modules\n", "leads from an allowed module"),
        ("import dataclasses\nm = dataclasses.sys\n", "leads from an allowed module"),
        ("f = getattr(torch, 're' + 'lu')\n", "literal attribute name"),
        ("f = getattr(torch, '_C')\n", "private attribute"),
        ("rng = torch\nrng.manual_seed(0)\n", "RNG"),
        ("s = torch.initial_seed()\n", "RNG"),
        ("v = torch.ones(1).item()\n", "on the host"),
        ("v = torch.ones(1).tolist()\n", "on the host"),
        ("class Fake(torch.Tensor):\n    pass\n", "subclassing torch.Tensor"),
        ("torch.set_default_tensor_type(torch.HalfTensor)\n", "global switches"),
        ('cpp = """\n__global__ void k() {}\nvoid f(at::Tensor x) { x.matmul(x); }\n"""\n',
         "tensor method"),
        ('cpp = """\n__global__ void k() {}\nc10::impl::ExcludeDispatchKeyGuard g(k);\n"""\n',
         "dispatcher guards"),
    ],
)
def test_cheating_constructs_are_refused(snippet, needle):
    found = kinds(HEADER + snippet + MODEL)
    assert any(kind == "cheat" and needle in msg for kind, msg in found), found


def test_cuda_cpp_library_calls_are_refused_unless_allowed():
    cpp = ('cuda_src = """\n__global__ void k(float* x) {}\n'
           'torch::Tensor f(torch::Tensor a, torch::Tensor b) { return at::matmul(a, b); }\n"""\n')
    found = kinds(HEADER + cpp + MODEL)
    assert any("at::matmul" in msg for _, msg in found)
    cublas = 'src = """\n__global__ void k() {}\nvoid g() { cublasSgemm(h); }\n"""\n'
    assert any("cublas" in m for _, m in kinds(HEADER + cublas + MODEL))
    assert kinds(HEADER + cublas + MODEL, allowed_ops=["mm"]) == []


def test_cuda_cpp_allocation_is_fine():
    cpp = ('cuda_src = """\n__global__ void k(float* x) {}\n'
           'torch::Tensor f(torch::Tensor a) { auto out = torch::empty_like(a); return out; }\n"""\n')
    assert kinds(HEADER + cpp + MODEL) == []
