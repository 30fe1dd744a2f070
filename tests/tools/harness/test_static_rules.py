"""The static rules by class: computed attribute names, host round trips of tensor data, tensor
subclasses and dispatch overrides, and @triton.jit bodies that only the interpreter would run.
Each rule is checked on several spellings of its trick, and every honest candidate in the
repository must pass them all (the offline synthesizer's: test_static_offline.py)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from kernelevolve.problem import parse_problem
from kernelevolve.tools.harness.static import check_source

ROOT = Path(__file__).resolve().parents[3]
HEADER = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"
MODEL = "\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n"
KERNEL = '''
@triton.jit
def copy_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, BODY, mask=mask)
'''


def findings(source: str) -> list[tuple[str, str]]:
    return [(f.kind, f.message) for f in check_source(source)]


def refused(snippet: str, needle: str, kind: str = "cheat", rule: str | None = None) -> None:
    found = [(f.kind, f.message, f.rule) for f in check_source(HEADER + snippet + MODEL)]
    assert any(k == kind and needle in m and rule in (None, r) for k, m, r in found), found


def kernel(body: str, extra: str = "") -> str:
    return HEADER + extra + KERNEL.replace("BODY", body) + MODEL


# -- class 6: reaching attributes by computed names ----------------------------------------------
@pytest.mark.parametrize(("snippet", "needle"), [
    ("import operator\nf = operator.attrgetter('x')\n", "operator.attrgetter"),
    ("from operator import attrgetter\n", "operator.attrgetter"),
    ("import operator as op\nf = op.methodcaller('clone')\n", "operator.methodcaller"),
    ("import operator\nf = getattr(operator, 'methodcaller')\n", "operator.methodcaller"),
    ("import functools, typing\nm = functools.reduce(getattr, ('sys',), typing)\n",
     "getattr passed as a value"),
    ("g = getattr\n", "getattr passed as a value"),
    ("names = list(map(hasattr, [torch], ['x']))\n", "hasattr passed as a value"),
    ("f = getattr(torch, 'co' + 'mpile')\n", "literal attribute name"),
    ("f = getattr(torch, 'compile')\n", "torch.compile is not in the candidate allowlist"),
    ("d = vars(torch)\n", "vars()"),
    ("d = torch.__dict__\n", "__dict__"),
    ("f = object.__getattribute__(torch, 'relu')\n", "__getattribute__"),
    ("from dataclasses import sys\n", "dataclasses.sys is not in the candidate allowlist"),
    ("from torch import _C\n", "private attribute _C"),
    ("import typing\nh = typing.get_type_hints(int)\n", "typing.get_type_hints"),
    ("import typing\nr = typing.ForwardRef('x')\n", "typing.ForwardRef"),
    ("import functools\nd = functools.singledispatch\n", "functools.singledispatch"),
    ("import dataclasses\nd = dataclasses.make_dataclass\n", "dataclasses.make_dataclass"),
    ("class H:\n    m: \"__import__('gc')\"\n", "in a string annotation: access to __import__"),
    ("def f(x: 'torch._C') -> 'vars(x)':\n    return x\n", "in a string annotation"),
])
def test_computed_attribute_access_is_refused(snippet, needle):
    refused(snippet, needle)


# -- class 6: tensor data through the host ---------------------------------------------------------
@pytest.mark.parametrize(("snippet", "needle"), [
    ("t = torch.tensor([1.0])\n", "torch.tensor is allowed only in an __init__"),
    ("t = torch.as_tensor([1.0])\n", "torch.as_tensor"),
    ("t = torch.asarray([1.0])\n", "torch.asarray"),
    ("from torch import frombuffer\n", "torch.frombuffer"),
    ("t = torch.from_dlpack(x)\n", "torch.from_dlpack"),
    ("T = torch\nt = T.tensor([1.0])\n", "torch.tensor is allowed only in an __init__"),
    ("t = torch.Tensor([1.0])\n", "torch.Tensor(...)"),
    ("t = torch.FloatTensor([1.0])\n", "torch.FloatTensor"),
    ("t = torch.cuda.HalfTensor([1.0])\n", "torch.cuda.HalfTensor"),
    ("t = torch.ones(2).new_tensor([1.0])\n", ".new_tensor"),
    ("v = torch.ones(2).numpy()\n", ".numpy"),
    ("import numpy\n", "import of 'numpy'"),
])
def test_host_round_trips_are_refused(snippet, needle):
    refused(snippet, needle)


def test_host_messages_say_what_to_do():
    (message,) = {m for _, m in findings(HEADER + "t = torch.tensor([1.0])\n" + MODEL)}
    assert "builds a tensor from data Python computed on the host" in message
    assert "compute with a Triton kernel" in message


def test_building_parameters_from_numbers_in_the_constructor_is_fine():
    source = HEADER + ("\nclass ModelNew(nn.Module):\n    def __init__(self, v: float):\n"
                       "        super().__init__()\n"
                       "        self.v = nn.Parameter(torch.tensor(v))\n\n"
                       "    def forward(self, x):\n        return x\n")
    assert findings(source) == []


def test_tensor_annotations_and_isinstance_are_fine():
    source = HEADER + ("def f(x: torch.Tensor) -> torch.Tensor:\n"
                       "    assert isinstance(x, torch.Tensor)\n    return x\n") + MODEL
    assert findings(source) == []


# -- class 6: tensor subclasses and dispatch overrides --------------------------------------------
@pytest.mark.parametrize(("snippet", "needle"), [
    ("class P(torch.nn.Parameter):\n    pass\n", "subclassing torch.nn.Parameter"),
    ("class P(nn.Parameter):\n    pass\n", "subclassing torch.nn.Parameter"),
    ("from torch.nn.parameter import Buffer\nclass B(Buffer):\n    pass\n",
     "subclassing torch.nn.parameter.Buffer"),
    ("Base = torch.Tensor\nclass T(Base):\n    pass\n", "subclassing torch.Tensor"),
    ("class T(type(torch.ones(1))):\n    pass\n", "computed base"),
    ("Base = (torch.Tensor,)[0]\nclass T(Base):\n    pass\n", "computed base"),
    ("class M(type):\n    pass\n", "metaclass"),
    ("class C(metaclass=type):\n    pass\n", "metaclass"),
    ("T = type('T', (torch.Tensor,), {})\n", "type() is not allowed"),
    ("class C:\n    @classmethod\n    def __torch_dispatch__(cls, f, t, a=(), k=None):\n"
     "        pass\n", "defining __torch_dispatch__"),
    ("class C:\n    def __torch_function__(self, *a):\n        pass\n",
     "defining __torch_function__"),
    ("class C:\n    __torch_function__ = None\n", "defining __torch_function__"),
    ("class C:\n    def __del__(self):\n        pass\n", "defining __del__"),
    ("from torch.utils import _python_dispatch\n", "_python_dispatch"),
    ("from torch.utils._python_dispatch import TorchDispatchMode\n",
     "import of 'torch.utils._python_dispatch'"),
    ("torch.nn.modules.module.register_module_forward_hook(print)\n", "torch.nn.modules"),
    ("h = torch.ones(1).register_hook\n", ".register_hook"),
])
def test_subclasses_and_dispatch_overrides_are_refused(snippet, needle):
    refused(snippet, needle)


def test_ordinary_classes_pass():
    source = HEADER + (
        "import enum\nimport typing\nfrom dataclasses import dataclass\n\n"
        "class Mode(enum.Enum):\n    A = 1\n\n"
        "class Cfg(typing.NamedTuple):\n    block: int\n\n"
        "@dataclass\nclass Plan:\n    grid: tuple\n\n"
        "class Base(nn.Module):\n    pass\n\n"
        "class Err(ValueError):\n    pass\n\n"
        "class Blocks(nn.ModuleList):\n    pass\n\n"
        "class ModelNew(Base):\n    def forward(self, x):\n        return x\n")
    assert findings(source) == []


# -- class 7: @triton.jit bodies -----------------------------------------------------------------
@pytest.mark.parametrize(("body", "extra", "needle"), [
    ("helper(x)", "\ndef helper(x):\n    return x\n", "calls helper()"),
    ("math.exp(x)", "import math\n", None),  # folded on constexprs only: allowed
    ("torch.relu(x)", "", "calls torch.relu()"),
    ("sqrt(x)", "from math import sqrt\n", None),
    ("operator.neg(x)", "import operator\n", "calls operator.neg()"),
    ("abs(x)", "", "calls abs(), which is neither"),
    ("x + zip", "", "uses zip, which"),
    ("(lambda v: v)(x)", "", "nested function"),
    ("getattr(tl, 'exp')(x)", "", "computed function"),
    ("x * SCALE", "SCALE = 2.0\n", "reads the module-level SCALE"),
    ("x * _H", "_H = object()\n", "reads the module-level _H"),
    ("x.handle.data", "", ".handle is not allowed"),
])
def test_jit_bodies_use_only_what_compiled_triton_accepts(body, extra, needle):
    found = findings(kernel(body, extra))
    if needle is None:
        assert not [m for _, m in found if "copy_kernel" in m], found
        return
    assert any(needle in m for _, m in found), found
    named = [m for k, m in found if needle in m]
    assert all("copy_kernel" in m or "handle" in m for m in named), named


def test_jit_call_refusal_is_a_contract_error_naming_function_and_fix():
    found = check_source(kernel("helper(x)", "\ndef helper(x):\n    return x\n"))
    (finding,) = [f for f in found if "helper" in f.message]
    assert finding.kind == "contract"
    assert "@triton.jit function copy_kernel calls helper()" in finding.message
    assert "make it a @triton.jit function or use tl.* operations" in finding.message


@pytest.mark.parametrize(("body", "extra"), [
    ("tl.where(x > 0, x, 0.0)", ""),
    ("tl.math.exp(x)", ""),
    ("libdevice.exp(x)", "from triton.language.extra import libdevice\n"),
    ("_relu(x)", "\n@triton.jit\ndef _relu(x):\n    return tl.maximum(x, 0.0)\n"),
    ("x * SCALE", "SCALE = tl.constexpr(2.0)\n"),
    ("x.to(DTYPE)", "DTYPE = tl.float32\n"),
    ("x.to(tl.float32).to(out_ptr.dtype.element_ty)", ""),
    ("x * min(BLOCK_SIZE, 4) + max(1, 2) + float('inf') * 0 + len([1])", ""),
    ("x * triton.cdiv(BLOCK_SIZE, 2)", ""),
    ("_inner(x)", "\n@triton.jit\ndef _inner(x):\n    return x\n"),
])
def test_honest_jit_bodies_pass(body, extra):
    assert findings(kernel(body, extra)) == []


def test_kernel_made_by_calling_triton_jit_is_checked_too():
    source = HEADER + (
        "\ndef helper(x):\n    return x\n\n"
        "def _body(x_ptr):\n    tl.store(x_ptr, helper(tl.load(x_ptr)))\n\n"
        "body_kernel = triton.jit(_body)\n") + MODEL
    assert any("_body calls helper()" in m for _, m in findings(source))


def test_constexpr_function_is_callable_from_a_kernel():
    source = kernel("x * _half(BLOCK_SIZE)", "\n@triton.constexpr_function\n"
                                             "def _half(n):\n    return n // 2\n")
    assert findings(source) == []


ADVERSARIAL = ROOT / "tests" / "adversarial"
# An honest candidate's problem, where that problem allows library ops (the rest allow none).
PROBLEM_OF = {
    "linear_then_triton_relu.py": ADVERSARIAL / "problems" / "linear_relu_epilogue.py",
    **{p.name: p for p in (ROOT / "examples" / "problems").glob("*.py")},
}


def _accepted_redteam47() -> list[Path]:
    """The issue-47 red team's cases whose CASE says they must be accepted."""
    out = []
    for path in (ADVERSARIAL / "redteam47" / "cases").glob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if (isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "CASE"
                    and ast.literal_eval(node.value).get("expect") == "accepted"):
                out.append(path)
    return out


def _reply_code(path: Path) -> str:
    """The last fenced Python block of a scripted LLM reply."""
    return re.findall(r"```python\n(.*?)```", path.read_text(), re.S)[-1]


def _honest_sources() -> list[tuple[str, str]]:
    """(label, source) of every honest candidate written by hand in the repository."""
    folders = [ROOT / "examples" / "solutions", ADVERSARIAL / "honest",
               ADVERSARIAL / "redteam" / "honest"]
    paths = [p for folder in folders for p in folder.glob("*.py")]
    paths += (ADVERSARIAL / "redteam" / "judge_changes" / "candidates").glob("*_honest.py")
    paths += _accepted_redteam47()
    data = ROOT / "tests" / "data"
    paths += [data / "relu_triton.py", data / "conv2d_small_candidate.py",
              data / "kernelbench" / "groupnorm_triton.py",
              data / "gpu_compile" / "matmul_dot_16x16.py",
              data / "gpu_compile" / "scale_branch_types.py",
              data / "profiles" / "kernels" / "copy_scoped_candidate.py",  # Proton scopes
              ROOT / "tests" / "tools" / "harness" / "data" / "size_global_candidate.py"]
    out = [(f"{p.parent.name}/{p.name}", p.read_text()) for p in paths]
    # the CUDA C++ candidate the GPU tests verify (read, not imported: it is a GPU test module)
    gpu = ast.parse((ROOT / "tests" / "gpu" / "test_cuda_harness.py").read_text())
    out += [("gpu/CUDA_RELU", ast.literal_eval(node.value)) for node in gpu.body
            if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "CUDA_RELU"]
    replies = ROOT / "tests" / "synth" / "llm" / "replies"
    out += [(f"replies/{p.name}", _reply_code(p))
            for p in sorted(replies.glob("*.md")) if p.stem.startswith(("good", "think_good",
                                                                        "repaired"))]
    return sorted(out)


def _allowed_ops(label: str) -> list[str]:
    problem = PROBLEM_OF.get(label.rsplit("/", 1)[-1])
    return parse_problem(problem).allowed_ops if problem and label.startswith(
        ("solutions/", "honest/")) else []


@pytest.mark.parametrize(("label", "source"), _honest_sources(), ids=lambda v: v[:60])
def test_every_honest_candidate_passes_the_static_check(label, source):
    assert check_source(source, _allowed_ops(label)) == []


def test_the_honest_candidates_were_found():
    labels = [label for label, _ in _honest_sources()]
    assert len(labels) >= 40 and len({label.split("/")[0] for label in labels}) >= 7
    assert "gpu/CUDA_RELU" in labels
