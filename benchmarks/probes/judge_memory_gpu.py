"""The judge's peak device memory on KernelBench problems at their own sizes, seen from outside
the evaluation's processes: ``nvidia-smi`` polled every 0.1 s for every process on the GPU (the
worker, its judge and the candidate's process; memory as the driver counts it, the caching
allocator's reserve and the CUDA context included), against the problem's inputs.

Each problem's offline default kernel is evaluated once through ``WorkerPool`` (timed, no
torch.compile reference), so the same script measures any tree: put the tree's ``src`` first
on PYTHONPATH (``--label`` names it in the table).

    python benchmarks/probes/judge_memory_gpu.py .carry/kernelbench/level1 --largest 6 \\
        --label after --out /tmp/mem_after.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import threading
import time
from pathlib import Path

import torch


def input_bytes(path: Path) -> int:
    from kernelevolve.problem import call_factory, load_problem

    problem = load_problem(path)
    module = problem.module(problem.sizes)
    with torch.device("meta"):
        values = call_factory(module, "get_inputs", problem.path)
    return sum(t.numel() * t.element_size() for t in values if isinstance(t, torch.Tensor))


class Poller:
    """The largest memory each process on the GPU used, and the largest sum over them."""

    def __init__(self) -> None:
        self.per_pid: dict[int, int] = {}
        self.total = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                                  "--format=csv,noheader,nounits"], capture_output=True,
                                 text=True, check=False).stdout
            now = 0
            for line in out.splitlines():
                pid, _, mib = line.partition(",")
                if pid.strip().isdigit() and mib.strip().isdigit():
                    used = int(mib) << 20
                    self.per_pid[int(pid)] = max(self.per_pid.get(int(pid), 0), used)
                    now += used
            self.total = max(self.total, now)
            time.sleep(0.1)

    def __enter__(self) -> Poller:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("problems", type=Path)
    ap.add_argument("--largest", type=int, default=6, help="the N files with the largest inputs")
    ap.add_argument("--only", nargs="*", help="file-name prefixes instead of --largest")
    ap.add_argument("--label", default="this tree")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()

    from kernelevolve.config import EvalConfig
    from kernelevolve.problem import load_problem
    from kernelevolve.synth import offline
    from kernelevolve.tools.harness.pool import WorkerPool

    files = sorted(p for p in args.problems.glob("*.py") if not p.name.startswith("_"))
    if args.only:
        files = [f for f in files if f.name.startswith(tuple(args.only))]
    sized = sorted(((input_bytes(f), f) for f in files), key=lambda x: -x[0])
    if not args.only:
        sized = sized[:args.largest]
    rows = []
    config = EvalConfig(min_trials=20, min_time_s=0.2, compile_reference=False, timeout_s=580)
    with WorkerPool("cuda", config) as pool:
        for nbytes, path in sized:
            problem = load_problem(path)
            plan = offline.analyze(problem)
            source = plan.render(plan.default_params())
            t0 = time.perf_counter()
            with Poller() as poll:
                result = pool.evaluate(path, source)
            own = sorted(poll.per_pid.values(), reverse=True)
            mem = getattr(result, "memory", None)
            rows.append({
                "problem": path.stem, "inputs_gib": nbytes / 2**30, "status": str(result.status),
                "message": result.message[:300], "seconds": time.perf_counter() - t0,
                "largest_process_gib": own[0] / 2**30 if own else None,
                "second_process_gib": own[1] / 2**30 if len(own) > 1 else None,
                "all_processes_gib": poll.total / 2**30,
                "judge_allocated_peak_gib": mem.judge_peak_bytes / 2**30 if mem else None,
                "footprint_gib": mem.footprint_bytes / 2**30 if mem else None})
            print(json.dumps(rows[-1]), flush=True)
    meta = {"label": args.label, "device": torch.cuda.get_device_name(0),
            "torch": torch.__version__, "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "total_gib": torch.cuda.get_device_properties(0).total_memory / 2**30}
    args.out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
