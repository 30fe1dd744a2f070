"""On a GPU: an illegal memory access in one candidate ends that evaluation only, and the worker
pool goes on; prints each result's status, message and stderr tail.

    python benchmarks/device/gpu_fault_check.py
"""

from __future__ import annotations

import time
from pathlib import Path

from kernelevolve.config import EvalConfig
from kernelevolve.tools.harness.pool import WorkerPool

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


def main() -> None:
    bad = (DATA / "relu_triton.py").read_text().replace(
        "tl.store(out_ptr + offs,", "tl.store(out_ptr + offs + (1 << 40),")
    config = EvalConfig(n_input_sets=1, min_trials=10, min_time_s=0.1, timeout_s=60)
    with WorkerPool("cuda", config, workers=1) as pool:
        for label, cand in (("illegal access", bad), ("honest", DATA / "relu_triton.py")):
            t0 = time.perf_counter()
            r = pool.evaluate(DATA / "relu_bf16_small.py", cand)
            print(f"== {label}: {r.status.value} in {time.perf_counter() - t0:.1f} s")
            print(r.message[:600])
            print("-- stderr tail:\n" + r.stderr_tail[-1500:], flush=True)


if __name__ == "__main__":
    main()
