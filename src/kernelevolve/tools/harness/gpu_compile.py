"""Compile, for a GPU, the Triton kernels a candidate launched in the interpreter.

Triton's interpreter runs a kernel's Python body on numpy arrays: a kernel can pass there and
still not compile for a GPU (a value typed float in one branch of a runtime ``if`` and int in the other, a pass
that fails). On the interpreter targets (cpu, mtia-sim) the candidate process keeps each
launch's kernel and arguments; :func:`launch_specs` turns them into Triton's signature strings and
constexpr values, and a fresh Python process (``python -m kernelevolve.tools.harness.gpu_compile``,
no interpreter state in it) imports the candidate so ``@triton.jit`` makes real JITFunctions and
compiles each kernel for ``sm_<arch>`` with the ptxas bundled with Triton: no GPU is needed.

Worker-side: torch, triton and the standard library only.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

# Launch options that go to the compiler, not to the kernel's parameters.
_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def _encode(value: Any) -> Any:
    """A constexpr value as JSON (a Triton dtype by name); ``ValueError`` where it has none."""
    import triton.language as tl

    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, tl.dtype):
        return {"tl_dtype": str(value)}
    if isinstance(value, tl.constexpr):
        return _encode(value.value)
    raise ValueError(f"a constexpr of type {type(value).__name__}")


def _decode(value: Any) -> Any:
    import triton.language as tl

    if isinstance(value, dict) and set(value) == {"tl_dtype"}:
        return tl.dtype(str(value["tl_dtype"]))
    return value


def launch_specs(launches: list[tuple[Any, tuple[Any, ...], dict[str, Any]]]
                 ) -> tuple[list[dict[str, Any]], list[str]]:
    """Each distinct (kernel, signature, constexprs) launched, as JSON; and the launches that
    cannot be described (a kernel not defined at module level, a constexpr without a name)."""
    from triton.runtime.jit import mangle_type

    specs: list[dict[str, Any]] = []
    skipped: list[str] = []
    seen: set[str] = set()
    for kernel, args, kwargs in launches:
        fn = getattr(kernel, "fn", None)
        name = getattr(fn, "__name__", None)
        if fn is None or name is None or "<locals>" in getattr(fn, "__qualname__", ""):
            skipped.append(f"{name or kernel!r}: not a module-level kernel")
            continue
        params = list(inspect.signature(fn).parameters.values())
        values = dict(zip([p.name for p in params], args, strict=False))
        values.update({k: v for k, v in kwargs.items() if k in values or
                       any(p.name == k for p in params)})
        signature: dict[str, str] = {}
        constexprs: dict[str, Any] = {}
        try:
            for p in params:
                value = values.get(p.name, p.default)
                constexpr = "constexpr" in str(p.annotation)
                if constexpr or value is None or value is inspect.Parameter.empty:
                    signature[p.name] = "constexpr"
                    constexprs[p.name] = _encode(None if value is inspect.Parameter.empty
                                                 else value)
                else:
                    signature[p.name] = str(mangle_type(value))
        except ValueError as exc:
            skipped.append(f"{name}: {exc}")
            continue
        spec = {"kernel": name, "signature": signature, "constexprs": constexprs,
                "options": {k: kwargs[k] for k in _OPTIONS if kwargs.get(k) is not None}}
        key = json.dumps(spec, sort_keys=True)
        if key not in seen:
            seen.add(key)
            specs.append(spec)
    return specs, skipped


class CompileTimeout(Exception):
    """The compiler's process outlived its limit: no evidence either way that the kernels
    compile (a loaded machine is slow), so the verdict is a timeout, never a compile error."""


def compile_specs(path: Path, specs: list[dict[str, Any]], arch: int, timeout_s: float
                  ) -> list[str]:
    """Compile ``specs`` for sm_<arch> in a fresh process; the errors, one line each. Raises
    CompileTimeout when the process takes longer than ``timeout_s``."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    request = json.dumps({"path": str(path), "arch": arch, "specs": specs})
    try:
        proc = subprocess.run([sys.executable, "-m", "kernelevolve.tools.harness.gpu_compile"],
                              input=request, capture_output=True, text=True, env=env,
                              timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise CompileTimeout(f"compiling the launched kernels for sm_{arch} took more than "
                             f"{timeout_s:.0f} s") from None
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or [""])[-1]
        return [f"the compiler's process failed (exit code {proc.returncode}): {tail[:300]}"]
    return [line for line in proc.stdout.splitlines() if line.strip()]


def compile_spec(kernel: Any, spec: dict[str, Any], arch: int) -> Any:
    """``kernel`` (a JITFunction) compiled for sm_<arch> at one of :func:`launch_specs`'s specs;
    Triton's compiled kernel (its ``asm`` holds the PTX)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    constexprs = {k: _decode(v) for k, v in spec["constexprs"].items()}
    return triton.compile(ASTSource(kernel, spec["signature"], constexprs),
                          target=GPUTarget("cuda", arch, 32), options=spec["options"])


def _compile_all(path: Path, specs: list[dict[str, Any]], arch: int) -> list[str]:
    from triton.runtime.jit import JITFunction

    spec = importlib.util.spec_from_file_location("kernelevolve_gpu_compile_candidate", path)
    if spec is None or spec.loader is None:
        return [f"cannot import {path}"]
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    errors: list[str] = []
    for item in specs:
        obj = getattr(module, item["kernel"], None)
        for _ in range(8):  # autotune and heuristics wrappers hold the JITFunction as .fn
            if obj is None or isinstance(obj, JITFunction):
                break
            obj = getattr(obj, "fn", None)
        if not isinstance(obj, JITFunction):
            continue
        try:
            compile_spec(obj, item, arch)
        except Exception as exc:  # the candidate's kernel does not compile: data
            lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
            detail = lines[-1] if lines else type(exc).__name__
            errors.append(f"{item['kernel']}: {type(exc).__name__}: {detail[:300]}")
    return errors


def main() -> None:
    request = json.loads(sys.stdin.read())
    for error in _compile_all(Path(request["path"]), request["specs"], int(request["arch"])):
        print(error.replace("\n", " "))


if __name__ == "__main__":
    main()
