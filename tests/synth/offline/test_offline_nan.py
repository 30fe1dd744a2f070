"""NaN and infinities through the elementwise ops the shared expression writer emits with
``tl.maximum`` / ``tl.minimum`` (relu, clamp, hardtanh, maximum, minimum, hardsigmoid,
hardswish): torch keeps a NaN where Triton's max/min return the other side on a GPU, so every
template passes ``propagate_nan``. The default candidate runs on inputs holding NaN and both
infinities and must put NaN, inf and -inf where the reference does. The interpreter's max/min
(numpy's) keep NaN either way, so on the CPU only the rendered source tells the fix is there;
``tests/gpu/test_nan_gpu.py`` runs the same script on a GPU, where a plain ``tl.maximum`` fails
it (a relu epilogue did, on an H200)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.synth.offline.test_offline_coverage import _problem

OPS = '''class Model(nn.Module):
    def forward(self, x, y):
        a = torch.clamp(torch.relu(x) * 2.0, max=3.0) + F.hardtanh(y)
        b = torch.maximum(x, y) - torch.minimum(x, y) + F.hardsigmoid(x) * F.hardswish(y)
        return a * b


def get_inputs():
    return [torch.randn(8, 64), torch.randn(8, 64)]


def get_init_inputs():
    return []
'''

# argv: the problem, the candidate's path, the device (cpu: Triton's interpreter)
RUN = '''
import os, sys
if sys.argv[3] == "cpu":
    os.environ["TRITON_INTERPRET"] = "1"
import importlib.util, json
import torch
from kernelevolve.synth.offline import analyze
from kernelevolve.problem import load_problem

problem = load_problem(sys.argv[1])
plan = analyze(problem)
with open(sys.argv[2], "w") as f:
    source = plan.render(plan.default_params())
    f.write(source)
mods = []
for name, path in (("ref", sys.argv[1]), ("cand", sys.argv[2])):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mods.append(mod)
torch.manual_seed(0)
x, y = torch.randn(8, 64), torch.randn(8, 64)
dev = sys.argv[3]
x[0, 3] = y[1, 4] = float("nan")
x[2, 5] = y[3, 6] = float("inf")
x[4, 7] = y[5, 8] = float("-inf")
want = mods[0].Model()(x, y)
got = mods[1].ModelNew()(x.to(dev), y.to(dev)).cpu()
fin = want.isfinite() & got.isfinite()
print(json.dumps({
    "kind": plan.operator_class,
    "nan": [int(want.isnan().sum()), int(got.isnan().sum()),
            bool(torch.equal(want.isnan(), got.isnan()))],
    "inf": bool(torch.equal(want.isinf(), got.isinf()) and torch.equal(want[want.isinf()],
                                                                        got[got.isinf()])),
    "err": float((want[fin] - got[fin]).abs().max()),
    "max_min": source.count("tl.maximum(") + source.count("tl.minimum("),
    "propagating": source.count("propagate_nan=tl.PropagateNan.ALL"),
}))
'''


def run_ops(tmp_path, device: str) -> dict:
    """RUN's result for OPS on ``device``."""
    problem = _problem(tmp_path, "nan_ops", OPS)
    done = subprocess.run([sys.executable, "-c", RUN, str(problem.path), str(tmp_path / "cand.py"),
                           device], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def check_ops(out: dict) -> None:
    want_nan, got_nan, same = out["nan"]
    assert want_nan > 2 and same, out  # relu(NaN) is NaN in torch, 0 with a plain tl.maximum
    assert out["inf"] and out["err"] < 1e-5, out
    assert out["kind"] == "elementwise", out


def test_nan_and_infinities_reach_the_output_as_in_torch(tmp_path):
    out = run_ops(tmp_path, "cpu")
    check_ops(out)
    # every max and min of the candidate asks for NaN to propagate
    assert out["max_min"] >= 8 and out["propagating"] == out["max_min"], out
