"""What ptxas says of an offline kernel, without a GPU: registers, spills and its performance
warnings for sm_90, at the launches the kernel's own launcher makes at a problem's sizes.

The launcher runs on CPU tensors with every kernel replaced by a recorder (nothing executes);
the recorded launches become Triton signatures (the judge's ``gpu_compile.launch_specs``);
``triton.compile`` builds each for the target, and Triton's bundled ``ptxas -v`` reports on the
PTX. Useful before a device call: a variant that spills or serializes its tensor-core
instructions shows it here. Where a kernel spills, the cubin's SASS (Triton's bundled
``nvdisasm``) tells whether any spill sits between its first and last tensor-core instruction
(the main loop) or only outside it (a prologue, a fallback path).

    python benchmarks/probes/ptxas_report.py \\
        ../shared/kernelbench/level1/2_Standard_matrix_multiplication_.py \\
        --points '[{"TF32X3": 2, "CHAIN_K": 4096}, {"TF32X3": 2, "CHAIN_K": 2048}]' \\
        --shapes '[[256, 8192], [8192, 256]]'
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch


def record_launches(source: str, inputs: list[torch.Tensor], init_inputs: Sequence[Any] = ()
                    ) -> tuple[Any, list[tuple[Any, tuple, dict]]]:
    """``source`` imported as a module, and the (kernel, args, kwargs) of every launch its model
    (built from ``init_inputs``, the problem's ``get_init_inputs()``) makes on ``inputs``, its
    kernels replaced by recorders meanwhile."""
    from triton.runtime.jit import JITFunction

    path = Path(tempfile.mkdtemp(prefix="kev_ptxas_")) / "cand.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("kev_ptxas_cand", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    log: list[tuple[Any, tuple, dict]] = []

    class Recorder:
        def __init__(self, kernel: JITFunction) -> None:
            self.fn = kernel.fn  # what launch_specs reads: the Python function

        def __getitem__(self, grid: Any) -> Any:
            return lambda *args, **kwargs: log.append((self, args, kwargs))

    kernels = {n: v for n, v in vars(module).items() if isinstance(v, JITFunction)}
    for name, kernel in kernels.items():
        setattr(module, name, Recorder(kernel))
    try:
        module.ModelNew(*init_inputs)(*inputs)
    finally:  # the kernels back, for compiling (a kernel's globals name the others)
        for name, kernel in kernels.items():
            setattr(module, name, kernel)
    return module, log


def ptxas_info(module: Any, spec: dict[str, Any], arch: int) -> dict[str, Any]:
    import triton

    from kernelevolve.tools.harness.gpu_compile import compile_spec

    compiled = compile_spec(getattr(module, spec["kernel"]), spec, arch)
    ptx = Path(tempfile.mkdtemp(prefix="kev_ptx_")) / "k.ptx"
    ptx.write_text(compiled.asm["ptx"])
    bin_dir = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    cubin = ptx.with_suffix(".cubin")
    done = subprocess.run([str(bin_dir / "ptxas"), "-v", "--gpu-name", f"sm_{arch}a", str(ptx),
                           "-o", str(cubin)], capture_output=True, text=True)
    lines = [ln.strip() for ln in done.stderr.splitlines()
             if "registers" in ln or "spill" in ln or "Performance" in ln]
    if done.returncode:  # ptxas refused the PTX (a newer PTX version than it reads, say)
        lines.append(f"ptxas failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    elif any("spill stores" in ln and not ln.startswith("0 bytes stack") for ln in lines):
        sass = subprocess.run([str(bin_dir / "nvdisasm"), "-c", str(cubin)],
                              capture_output=True, text=True).stdout
        lines.append(spills_in_main_loop(sass))
    return {"kernel": spec["kernel"], "shared_bytes": compiled.metadata.shared,
            "constexprs": {k: v for k, v in spec["constexprs"].items() if k.isupper()},
            "ptxas": lines}


def spills_in_main_loop(sass: str) -> str:
    """Where the local-memory spills (``STL``/``LDL``) of a kernel's SASS lie against its main
    loop: the span from the label a backward branch after its last tensor-core instruction
    (``HGMMA``/``HMMA``) jumps to, at or before its first, to that branch."""
    lines = sass.splitlines()
    mma = [i for i, ln in enumerate(lines) if "HGMMA" in ln or "HMMA" in ln]
    spills = [i for i, ln in enumerate(lines) if re.search(r"\b(STL|LDL)\b", ln)]
    if not mma:
        return f"SASS: {len(spills)} spill instructions, no tensor-core instructions"
    labels = {m.group(1): i for i, ln in enumerate(lines)
              if (m := re.match(r"\s*(\.L_x_\d+):", ln))}
    loop = None
    for i in range(mma[-1], len(lines)):
        m = re.search(r"BRA\S* `?\(?(\.L_x_\d+)", lines[i])
        if m and labels.get(m.group(1), len(lines)) <= mma[0]:
            loop = (labels[m.group(1)], i)
            break
    if loop is None:
        return f"SASS: {len(spills)} spill instructions; no loop around the tensor-core ones"
    inside = sum(1 for i in spills if loop[0] <= i <= loop[1])
    return (f"SASS: {len(spills)} spill instructions, {inside} in the main loop (SASS lines "
            f"{loop[0]}-{loop[1]}, {len(mma)} tensor-core instructions)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("problem", type=Path)
    ap.add_argument("--points", type=json.loads, default=[{}],
                    help="a JSON list of parameter points, each over the plan's default")
    ap.add_argument("--shapes", type=json.loads, required=True,
                    help="the inputs' shapes, as JSON (fp32 tensors on the CPU)")
    ap.add_argument("--arch", type=int, default=90)
    args = ap.parse_args()
    os.environ.pop("TRITON_INTERPRET", None)
    from kernelevolve.problem import load_problem
    from kernelevolve.synth.offline import analyze
    from kernelevolve.tools.harness.gpu_compile import launch_specs

    problem = load_problem(args.problem)
    plan = analyze(problem)
    init_inputs = problem.instantiate()[2]
    inputs = [torch.rand(*shape) for shape in args.shapes]
    import triton

    print(f"# ptxas on sm_{args.arch}: {args.problem.name} at {args.shapes}\n")
    print(f"`python benchmarks/probes/ptxas_report.py {' '.join(sys.argv[1:])}`; compiled by this "
          f"machine's Triton {triton.__version__} (torch {torch.__version__}), no GPU: a "
          f"device's own Triton may allocate differently.\n")
    for point in args.points:
        params = {**plan.default_params(), **point}
        module, launches = record_launches(plan.render(params), inputs, init_inputs)
        specs, skipped = launch_specs(launches)
        print(f"## {json.dumps(point)}\n")
        for spec in specs:
            info = ptxas_info(module, spec, args.arch)
            print(f"- `{info['kernel']}` {info['constexprs']}, {info['shared_bytes']} B shared")
            for line in info["ptxas"]:
                print(f"  - {line}")
        for s in skipped:
            print(f"- skipped: {s}")
        print()


if __name__ == "__main__":
    main()
