"""Compile, for a GPU, the Triton kernels a candidate launched in the interpreter.

Triton's interpreter runs a kernel's Python body on numpy arrays: a kernel can pass there and
still not compile for a GPU (a value typed float in one branch of a runtime ``if`` and int in
the other, a pass that fails). On the interpreter targets (cpu, mtia-sim) the candidate process
describes every launch as it happens (:class:`LaunchLog`: Triton's signature strings and
constexpr values, every specialization and every autotune config, without a cap), and a fresh
Python process (``python -m kernelevolve.tools.harness.gpu_compile``, no interpreter state in
it) imports the candidate so ``@triton.jit`` makes real JITFunctions and compiles each kernel
for ``sm_<arch>`` with the ptxas bundled with Triton: no GPU is needed.

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
# What a GPU's autotuner counts as a config too slow to pick, not as the kernel's error
# (Autotuner._bench): an autotune config no launch ran may fail to compile so.
_AUTOTUNER_SKIPS = ("OutOfResources", "CompileTimeAssertionFailure", "PTXASError")


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


def launch_spec(kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                params: list[inspect.Parameter] | None = None) -> dict[str, Any]:
    """One launch's (kernel, signature, constexprs, options) as JSON; ``ValueError`` where it
    cannot be described (a kernel not defined at module level, a constexpr without a name).
    ``params``: the kernel function's parameters, where the caller has them."""
    from triton.runtime.jit import mangle_type

    fn = getattr(kernel, "fn", None)
    name = getattr(fn, "__name__", None)
    if fn is None or name is None or "<locals>" in getattr(fn, "__qualname__", ""):
        raise ValueError(f"{name or kernel!r}: not a module-level kernel")
    if params is None:
        params = list(inspect.signature(fn).parameters.values())
    names = {p.name for p in params}
    values = dict(zip([p.name for p in params], args, strict=False))
    values.update({k: v for k, v in kwargs.items() if k in names})
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    try:
        for p in params:
            value = values.get(p.name, p.default)
            constexpr = "constexpr" in str(p.annotation)
            if constexpr or value is None or value is inspect.Parameter.empty:
                signature[p.name] = "constexpr"
                constexprs[p.name] = _encode(None if value is inspect.Parameter.empty else value)
            else:
                signature[p.name] = str(mangle_type(value))
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None
    return {"kernel": name, "signature": signature, "constexprs": constexprs,
            "options": {k: kwargs[k] for k in _OPTIONS if kwargs.get(k) is not None}}


class LaunchLog:
    """Every distinct (kernel, signature, constexprs, options) launched, described as it is
    launched (:func:`launch_spec`: no tensor is held), without a cap: a specialization that runs
    only at the other shapes, or after 64 harmless launches, is compiled too. ``skipped``: the
    launches that cannot be described, once each."""

    def __init__(self) -> None:
        self.specs: dict[str, dict[str, Any]] = {}
        self.skipped: list[str] = []
        self.compiled: set[str] = set()  # keys of specs handed to the compiler already
        self._params: dict[Any, list[inspect.Parameter]] = {}

    def take_new(self) -> list[dict[str, Any]]:
        """The specs not handed out before (each is compiled once per evaluation)."""
        new = [key for key in self.specs if key not in self.compiled]
        self.compiled.update(new)
        return [self.specs[key] for key in new]

    def add(self, kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
            ran: bool = True) -> None:
        """``ran`` False: an autotune config logged at its kernel's launch without running
        (``autotune_only`` until a launch runs it)."""
        fn = getattr(kernel, "fn", None)
        try:
            params = self._params.get(fn) if fn is not None else None
            if params is None and callable(fn):
                params = self._params[fn] = list(inspect.signature(fn).parameters.values())
            spec = launch_spec(kernel, args, kwargs, params)
        except (ValueError, TypeError) as exc:
            if str(exc) not in self.skipped:
                self.skipped.append(str(exc))
            return
        key = json.dumps(spec, sort_keys=True, default=str)
        if key in self.specs:
            if ran and self.specs[key].pop("autotune_only", None) and key in self.compiled:
                self.compiled.discard(key)  # compiled leniently: again, as a config that ran
            return
        if not ran:
            spec["autotune_only"] = True
        self.specs[key] = spec


def launch_specs(launches: list[tuple[Any, tuple[Any, ...], dict[str, Any]]]
                 ) -> tuple[list[dict[str, Any]], list[str]]:
    """Each distinct spec of ``launches`` ((kernel, args, kwargs) each) and the launches that
    cannot be described (:class:`LaunchLog` over a recorded list)."""
    log = LaunchLog()
    for kernel, args, kwargs in launches:
        log.add(kernel, args, kwargs)
    return list(log.specs.values()), list(log.skipped)


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
    """``kernel`` (a JITFunction) compiled for sm_<arch> at one of :class:`LaunchLog`'s specs;
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
            if item.get("autotune_only") and type(exc).__name__ in _AUTOTUNER_SKIPS:
                continue
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
