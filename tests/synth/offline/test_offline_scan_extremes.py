"""The scan template's cumprod where the running product leaves fp32's range: a carry that
underflowed to 0 (or overflowed to inf) times a tile's product that did the reverse is NaN in
a block-wise scan, where the reference, one element at a time, stays 0 (inf). KernelBench's
90_cumprod was a mismatch on an H100 so (inputs spread over six decades, one of the judge's
variants). Run in Triton's interpreter, in a fresh process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

PROBLEM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumprod(x, dim=self.dim)


batch_size = 4
input_shape = (4096,)
dim = 1


def get_inputs():
    return [torch.rand(batch_size, *input_shape)]


def get_init_inputs():
    return [dim]
'''

SCRIPT = textwrap.dedent('''
    import importlib.util, json, sys
    import torch
    from kernelevolve.problem import load_problem
    from kernelevolve.synth.offline import analyze

    problem = load_problem(sys.argv[1])
    plan = analyze(problem)
    with open(sys.argv[2], "w") as f:
        f.write(plan.render(plan.default_params()))
    spec = importlib.util.spec_from_file_location("cand", sys.argv[2])
    cand = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cand)
    half = 2048
    rows = [
        [1e-3] * half + [1e3] * half,                    # underflows to 0, then stays 0
        [1e3] * half + [1e-3] * half,                    # overflows to inf, then stays inf
        [-1e3] * half + [1e-3] * (half - 1) + [-2.0],    # -inf/+inf by parity, sign at the end
        [1e-3] * half + [1e3] * (half - 1) + [float("inf")],  # 0 * inf: NaN at the end
    ]
    x = torch.tensor(rows, dtype=torch.float32)
    out = cand.ModelNew(1)(x)
    ref = torch.cumprod(x, dim=1)
    # within fp32's tolerance where both are finite (the block-wise and the sequential
    # products round differently); equal where either is 0, inf or NaN
    close = (out - ref).abs() <= 1e-4 * ref.abs() + 1e-30
    bad = ~(close | (out == ref) | (out.isnan() & ref.isnan()))
    print([(r, c, float(x[r, c]), float(out[r, c]), float(ref[r, c]))
           for r, c in bad.nonzero().tolist()[:12]], file=sys.stderr)
    print(json.dumps({"mismatches": int(bad.sum()), "rows": bad.any(dim=1).tolist()}))
''')


def test_cumprod_keeps_zero_and_inf_where_the_running_product_does(tmp_path):
    problem = tmp_path / "cumprod_rows.py"
    problem.write_text(PROBLEM)
    env = {**os.environ, "TRITON_INTERPRET": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(problem), str(tmp_path / "c.py")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = proc.stdout.strip().splitlines()[-1]
    assert result == '{"mismatches": 0, "rows": [false, false, false, false]}', (
        result, proc.stderr[-1500:])
