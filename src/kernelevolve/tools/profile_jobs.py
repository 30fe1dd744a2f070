"""The profiling job graph: instruments composed as passes, cheap before expensive, chosen by
config, run only for candidates that passed correctness (the worker calls :func:`run_profile`
after timing, so a candidate that failed never gets here).

Worker-side: torch, triton and the standard library only. Every pass returns a plain dict shaped
like ``kernelevolve.tools.diagnosis.ProfileReport``; the parent validates them and derives the
roofline and the Diagnosis from all of them.

This module is also the *driver* that instruments needing a process of their own run:
``python -m kernelevolve.tools.profile_jobs --mode ncu|proton|run ...`` rebuilds the problem's
inputs and the candidate, warms it up, and runs its forward inside a marked region. ncu replays
kernels from outside the process and must see only the candidate's forward (not input generation
or the warm-up): the driver opens the CUDA profiler range (``cudaProfilerStart``) around the
forward alone and ncu runs with ``--profile-from-start off``. Proton runs there too, so its CUPTI
session never shares the worker's process with the PyTorch profiler's.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelevolve.tools.profiling import (
    ProfileContext,
    ProfileOptions,
    unavailable,
)

# -- the passes -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Pass:
    """One instrument as a pass of the job graph."""

    tool: str  # the name config and the CLI use: roofline, torch, proton, ncu
    instrument: str  # the report's instrument name
    cost: int  # rough relative cost; passes run cheapest first
    run: Callable[[ProfileContext, ProfileOptions], dict[str, Any]]


def _roofline(ctx: ProfileContext, opts: ProfileOptions) -> dict[str, Any]:
    from kernelevolve.tools import roofline

    return roofline.run(ctx, opts)


def _torch(ctx: ProfileContext, opts: ProfileOptions) -> dict[str, Any]:
    from kernelevolve.tools import torch_profiler

    return torch_profiler.run(ctx, opts)


def _proton(ctx: ProfileContext, opts: ProfileOptions) -> dict[str, Any]:
    from kernelevolve.tools import proton

    return proton.run(ctx, opts)


def _ncu(ctx: ProfileContext, opts: ProfileOptions) -> dict[str, Any]:
    from kernelevolve.tools import ncu

    return ncu.run(ctx, opts)


PASSES: dict[str, Pass] = {}


def register_pass(p: Pass) -> None:
    PASSES[p.tool] = p


# The roofline pass counts the forward's work and loads (or, once per device, measures) the
# ceilings; it always runs, since the diagnosis needs it.
for _p in (Pass("roofline", "roofline", 0, _roofline), Pass("torch", "torch-profiler", 1, _torch),
           Pass("proton", "proton", 2, _proton), Pass("ncu", "ncu", 3, _ncu)):
    register_pass(_p)


def plan(opts: ProfileOptions) -> list[Pass]:
    """The passes to run, cheapest first."""
    chosen = [PASSES["roofline"]] + [PASSES[t] for t in opts.tools if t in PASSES]
    return sorted(dict.fromkeys(chosen), key=lambda p: p.cost)


def run_profile(ctx: ProfileContext, opts: ProfileOptions | dict[str, Any]) -> list[dict[str, Any]]:
    """Run the chosen instruments on a verified candidate; one report dict per pass.

    A pass that fails records why in its report and the others still run; passes left when
    ``opts.timeout_s`` is spent are reported as skipped.
    """
    if isinstance(opts, dict):
        opts = ProfileOptions.from_dict(opts)
    deadline = time.monotonic() + opts.timeout_s
    reports = []
    for p in plan(opts):
        t0 = time.monotonic()
        if t0 >= deadline:
            report = unavailable(p.instrument, f"skipped: the profile's time budget "
                                               f"({opts.timeout_s:.0f} s) was spent")
        else:
            try:
                report = p.run(ctx, dataclasses.replace(opts, timeout_s=deadline - t0))
            except Exception as exc:  # an instrument boundary: recorded, the others still run
                report = unavailable(p.instrument, f"{type(exc).__name__}: {exc}",
                                     [traceback.format_exc()[-2000:]])
        report["elapsed_s"] = time.monotonic() - t0
        reports.append(report)
    return reports


# -- the driver -------------------------------------------------------------------------------

def build(problem_path: str, candidate_path: str, sizes: dict[str, int], seed: int,
          device: str) -> tuple[Any, list[Any], Any]:
    """The candidate (weights copied from the reference, as the harness does), its inputs and
    the reference, on ``device``; the same construction as the evaluation worker's."""
    import importlib.util

    import torch

    from kernelevolve.problem import call_factory, parse_problem

    problem = parse_problem(problem_path)
    module, ref, init_inputs = problem.instantiate(sizes, seed)
    spec = importlib.util.spec_from_file_location("kernelevolve_profiled_candidate", candidate_path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {candidate_path}")
    cand_module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = cand_module
    spec.loader.exec_module(cand_module)
    torch.manual_seed(seed)
    cand = cand_module.ModelNew(*init_inputs)
    cand.load_state_dict(ref.state_dict(), strict=True)
    torch.manual_seed(seed)
    inputs = [v.to(device) if isinstance(v, torch.Tensor) else v
              for v in call_factory(module, "get_inputs", problem.path)]
    return cand.to(device), inputs, ref.to(device)


def _driver(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.mode == "proton":
        from kernelevolve.tools import proton

        proton.enable_intra_kernel_scopes()  # before the candidate's kernels compile
    model, inputs, _ = build(args.problem, args.candidate, json.loads(args.sizes), args.seed,
                             device)

    def forward() -> Any:
        with torch.no_grad():
            return model(*inputs)

    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    for _ in range(2):  # compiles and autotunes outside any measured region
        forward()
    sync()
    status: dict[str, Any] = {"ok": True, "device": device}
    if args.mode == "ncu":
        torch.cuda.profiler.start()
        forward()
        sync()
        torch.cuda.profiler.stop()
    elif args.mode == "proton":
        from kernelevolve.tools import proton

        status.update(proton.session(Path(args.out), forward, sync, args.iters, args.candidate))
    else:
        for _ in range(args.iters):
            forward()
        sync()
    return status


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run one candidate's forward for an instrument.")
    parser.add_argument("--mode", choices=("ncu", "proton", "run"), required=True)
    parser.add_argument("--problem", required=True)
    parser.add_argument("--candidate", required=True)
    parser.add_argument("--sizes", default="{}", help="JSON of the problem's sizes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--iters", type=int, default=1)
    parser.add_argument("--out", required=True, help="directory for outputs and driver.json")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        status = _driver(args)
    except Exception as exc:  # process boundary: the parent reads what went wrong
        status = {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                  "traceback": traceback.format_exc()[-3000:]}
    (out / "driver.json").write_text(json.dumps(status, indent=1))
    sys.exit(0 if status["ok"] else 1)


if __name__ == "__main__":
    main()
