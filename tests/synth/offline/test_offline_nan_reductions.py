"""NaN and infinities through the reductions, pooling, arg-reductions and scans the offline
synthesizer writes: torch's max, min, max pooling and argmax/argmin keep a NaN (argmax and argmin
point at the first one), a masked cumsum is ``cumsum(x * mask)`` (a NaN masked out is still
NaN), an exclusive cumsum never adds the value it leaves out (inclusive minus it made inf - inf
into NaN). Each default candidate runs on inputs holding NaN, +inf and -inf in Triton's
interpreter (nan_reductions.py, one fresh process) and must put NaN and infinities where the
reference does. The interpreter's max and min (numpy's) keep NaN either way, so for those the
source must combine with the NaN-keeping max_nan/min_nan; ``tests/gpu/test_nan_gpu.py`` runs the
same script on a GPU, where a plain ``tl.max`` drops the NaN (as it did on an H200: KernelBench
41-43, 49, 51-53 before the fix)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).with_name("nan_reductions.py")


def run_script(device: str) -> dict:
    done = subprocess.run([sys.executable, str(SCRIPT), device], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def check(out: dict) -> None:
    assert set(out) >= {"argmax", "argmin", "amax", "max_pool", "cumsum_exclusive",
                        "masked_cumsum"}, out
    for name, r in out.items():
        assert r["nan"] and r["inf"] and r["err"] < 1e-4, (name, r)
    for name in ("amax", "amin_rows", "max_all", "max_pool", "argmax", "argmin"):
        assert out[name]["nan_combine"], (name, out[name])
    assert out["amax"]["n_nan"] >= 1 and out["cumsum_exclusive"]["n_nan"] >= 1, out


def test_reductions_pools_and_scans_keep_nan_and_infinities():
    check(run_script("cpu"))
