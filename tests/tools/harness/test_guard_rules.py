"""The runtime guard's rules: which aten ops a forward may dispatch, tensor subclasses the op
recorder reports, and (in a fresh interpreter process, since the guards patch Triton) bounds
through triton.reinterpret, launch argument types, and @triton.autotune without a driver."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from kernelevolve.tools.harness.guard import ALLOWED_ATEN_OPS, OpRecorder


def forbidden(fn) -> list[str]:
    recorder = OpRecorder()
    with torch.no_grad(), recorder:
        fn()
    return recorder.forbidden(set())


def test_tensors_built_from_host_data_are_forbidden():
    assert "lift_fresh" not in ALLOWED_ATEN_OPS
    assert forbidden(lambda: torch.tensor([1.0, 2.0])) == ["lift_fresh"]
    assert forbidden(lambda: torch.as_tensor([1.0])) == ["lift_fresh"]


def test_data_movement_and_dtype_metadata_are_allowed():
    x, y = torch.randn(4), torch.randn(4)
    assert forbidden(lambda: torch.cat([x, y])) == []
    assert forbidden(lambda: torch.stack([x, y])) == []
    assert forbidden(lambda: torch.promote_types(x.dtype, torch.float16)) == []
    assert forbidden(lambda: (torch.result_type(x, y), torch.can_cast(x.dtype, y.dtype),
                              torch.finfo(x.dtype), x.shape, x.stride(), x.numel())) == []


def test_tensors_printed_as_text_are_reported():
    # repr/str/format of a tensor run with every dispatch mode off: a host read no op shows.
    x = torch.randn(4)
    for show in (repr, str, lambda t: f"{t}", lambda t: format(t, "")):
        (found,) = forbidden(lambda show=show: show(x))
        assert "printed as text" in found and "compute with a Triton kernel" in found
    assert forbidden(lambda: (str(x.shape), f"{x.dtype}", repr(x.stride()))) == []
    assert "printed" not in repr(x)  # outside a recording nothing is noted or changed


def test_ops_reaching_a_dispatching_subclass_are_reported():
    class Hiding(torch.Tensor):
        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            return torch.zeros(2)

    carrier = torch.Tensor._make_subclass(Hiding, torch.ones(2))
    found = forbidden(lambda: carrier.clone())
    assert any("tensor subclass Hiding" in f and "unrecorded" in f for f in found), found
    weight = torch.nn.Parameter(torch.ones(2))
    assert forbidden(lambda: weight.view(-1).clone()) == []


INTERPRETED = r'''
import json
import torch
import triton
import triton.language as tl
from kernelevolve.tools.harness import guard, interpreter

guard.InterpreterBounds().install()
out = {}


@triton.jit
def abs_bits_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0) & 0x7FFFFFFF, mask=mask)


x = -torch.arange(1.0, 301.0)
res = torch.empty_like(x)
abs_bits_kernel[(3,)](triton.reinterpret(x, tl.int32), triton.reinterpret(res, tl.int32), 300,
                      BLOCK_SIZE=128)
out["reinterpret"] = bool(torch.equal(res, x.abs()))
try:
    abs_bits_kernel[(3,)](triton.reinterpret(x, tl.int32), triton.reinterpret(res, tl.int32),
                          384, BLOCK_SIZE=128)
    out["reinterpret_oob"] = "no error"
except Exception as exc:
    out["reinterpret_oob"] = str(exc)


@triton.jit
def _double(v):
    return v * 2


@triton.jit
def apply_kernel(x_ptr, n_elements, FN: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    tl.store(x_ptr + offs, FN(tl.load(x_ptr + offs, mask=mask)), mask=mask)


class Sly(float):
    pass


y = torch.ones(8)
apply_kernel[(1,)](y, 8, FN=_double, BLOCK_SIZE=8)
out["jit_fn_argument"] = y.tolist()
for name, args, kwargs in [("python_fn", (y, 8), {"FN": lambda v: v}),
                           ("float_subclass", (y, Sly(8.0)), {"FN": _double}),
                           ("object", (y, object()), {"FN": _double})]:
    try:
        apply_kernel[(1,)](*args, **kwargs, BLOCK_SIZE=8)
        out[name] = "no error"
    except TypeError as exc:
        out[name] = str(exc)


@triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 64}), triton.Config({"BLOCK_SIZE": 128})],
                 key=["n_elements"])
@triton.jit
def tuned_copy_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


z = torch.randn(300)
copied = torch.empty_like(z)
tuned_copy_kernel[lambda meta: (triton.cdiv(300, meta["BLOCK_SIZE"]),)](z, copied, 300)
out["autotune_equal"] = bool(torch.equal(z, copied))
out["autotune_best"] = tuned_copy_kernel.best_config.kwargs
out["autotune_notes"] = interpreter.AUTOTUNE.notes
print("RESULT " + json.dumps(out))
'''


@pytest.fixture(scope="module")
def interpreted() -> dict:
    env = {**os.environ, "TRITON_INTERPRET": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", INTERPRETED], env=env, capture_output=True,
                          text=True, timeout=300)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    return json.loads(lines[-1].removeprefix("RESULT "))


def test_bounds_cover_reinterpreted_tensors(interpreted):
    assert interpreted["reinterpret"] is True
    assert "out-of-bounds load" in interpreted["reinterpret_oob"]


def test_launch_arguments_no_compiled_kernel_takes_are_refused(interpreted):
    assert interpreted["jit_fn_argument"] == [2.0] * 8
    for key, kind in (("python_fn", "function"), ("float_subclass", "Sly"), ("object", "object")):
        message = interpreted[key]
        assert f"is of type {kind}" in message, message
        assert "compiled Triton kernel cannot take" in message


def test_autotune_runs_a_config_unbenchmarked_and_says_so(interpreted):
    # Outside a forward the turn is 0: the first config (test_interpreter.py turns them).
    assert interpreted["autotune_equal"] is True
    assert interpreted["autotune_best"] == {"BLOCK_SIZE": 64}
    (note,) = interpreted["autotune_notes"]
    assert "tuned_copy_kernel" in note and "interpreter cannot" in note
    assert "2 configs" in note
