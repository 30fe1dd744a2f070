"""The memory-bound templates' new paths (issue #17): few long rows split across programs (layer
norm of 16 rows of 4M elements), norms that walk 2-D tiles of contiguous runs instead of dividing
per element, and full reductions that read a broadcast operand at the tile's columns.

Each candidate is rendered at small BLOCK and N_PROGRAMS (some past the search space) so that the new path runs at small
sizes; it runs in Triton's interpreter in a fresh process, where every kernel launch is counted
(so the test knows the split path ran) and the output is compared with the float64 reference,
and a few go through the real harness on the cpu target."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelevolve.problem import load_problem
from kernelevolve.synth.offline import analyze

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"

# name -> (problem body, parameters besides the defaults)
ROWS = {
    # 2 rows of 16 x 64 = 1024: 8 splits of one 128-wide tile each, a moment pass, the output.
    "layernorm": ("""
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm((16, 64))
        with torch.no_grad():
            self.ln.weight.copy_(1.0 + 0.1 * torch.randn(16, 64))
            self.ln.bias.copy_(0.1 * torch.randn(16, 64))

    def forward(self, x):
        return self.ln(x)


def get_inputs():
    return [torch.randn(2, 16, 64) * 3.0 + 50.0]


def get_init_inputs():
    return []
""", {"BLOCK_N": 128, "BLOCK_M": 1, "N_PROGRAMS": 256, "num_warps": 1}),
    # 3 rows of 1000 (not a whole number of tiles): the online max / sum-of-exp pair combined
    # over the splits.
    "softmax": ("""
class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(3, 1000) * 4.0]


def get_init_inputs():
    return []
""", {"BLOCK_N": 128, "BLOCK_M": 1, "N_PROGRAMS": 256, "num_warps": 1}),
    # A row output: the last kernel is one program per row block, no column loop.
    "row_var": ("""
class Model(nn.Module):
    def forward(self, x):
        return torch.var(x, dim=-1, unbiased=False)


def get_inputs():
    return [torch.randn(3, 900) + 10.0]


def get_init_inputs():
    return []
""", {"BLOCK_N": 128, "BLOCK_M": 1, "N_PROGRAMS": 256, "num_warps": 1}),
    # A plain sum pass, then the output (RMS norm over the last dim).
    "rms": ("""
class Model(nn.Module):
    def forward(self, x):
        return x * torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + 1e-6)


def get_inputs():
    return [torch.randn(2, 700)]


def get_init_inputs():
    return []
""", {"BLOCK_N": 128, "BLOCK_M": 2, "N_PROGRAMS": 256, "num_warps": 1}),
}

NORMS = {
    # R = 42 of 64-wide tiles, P = 4 tiles of one row each: 4 splits per channel.
    "batchnorm2d": ("""
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d(3)

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    return [torch.randn(4, 3, 6, 7) + 5.0]


def get_init_inputs():
    return []
""", {"BLOCK": 64, "N_PROGRAMS": 512, "num_warps": 2}),
    # R = 3: tiles of 16 batch rows x 4 columns, the last one masked in both dims.
    "batchnorm1d": ("""
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    return [torch.randn(40, 4, 3)]


def get_init_inputs():
    return []
""", {"BLOCK": 64, "N_PROGRAMS": 512, "num_warps": 2}),
    # 2 channels a group of 5 x 7: apply tiles of 2 channel rows x 32 columns.
    "groupnorm": ("""
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(3, 6)
        with torch.no_grad():
            self.gn.weight.copy_(torch.randn(6))
            self.gn.bias.copy_(torch.randn(6))

    def forward(self, x):
        return self.gn(x)


def get_inputs():
    return [torch.randn(2, 6, 5, 7)]


def get_init_inputs():
    return []
""", {"BLOCK": 64, "N_PROGRAMS": 512, "num_warps": 2}),
    "instancenorm": ("""
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.InstanceNorm2d(3)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(2, 3, 10, 13) - 20.0]


def get_init_inputs():
    return []
""", {"BLOCK": 64, "N_PROGRAMS": 512, "num_warps": 2}),
}

FULL = {
    # The target broadcasts over the rows: tiles of one row x 128 of the 300 columns.
    "hinge": ("""
class Model(nn.Module):
    def forward(self, predictions, targets):
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))


def get_inputs():
    return [torch.rand(9, 300), torch.randint(0, 2, (300,)).float() * 2 - 1]


def get_init_inputs():
    return []
""", {"BLOCK": 128, "N_PROGRAMS": 64, "num_warps": 4}),
    # A 5-wide broadcast suffix and a 3 x 5 one: tiles of 16 rows x 8 columns, one operand
    # read at the column, the other at the column modulo its size.
    "two_suffixes": ("""
class Model(nn.Module):
    def forward(self, x, w, v):
        return torch.sum((x - w) * v)


def get_inputs():
    return [torch.randn(7, 3, 5), torch.randn(3, 5), torch.randn(5)]


def get_init_inputs():
    return []
""", {"BLOCK": 128, "N_PROGRAMS": 64, "num_warps": 4}),
    # A tensor output: x / ||x||, the apply kernel one tile per program.
    "frobenius": ("""
class Model(nn.Module):
    def forward(self, x):
        return x / torch.norm(x, p="fro")


def get_inputs():
    return [torch.rand(3, 5, 7, 11)]


def get_init_inputs():
    return []
""", {"BLOCK": 128, "N_PROGRAMS": 64, "num_warps": 4}),
}

# Runs each rendered candidate's ModelNew in the interpreter (on before triton loads) against
# the float64 reference, counting the launches of every kernel; prints one JSON object:
# name -> {"rel": max abs error / max abs reference, "launched": [kernel names]}.
_INTERPRET = """
import importlib.util, json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
import torch
from kernelevolve.problem import call_factory, load_problem


class Counted:
    def __init__(self, name, kernel, seen):
        self.name, self.kernel, self.seen = name, kernel, seen

    def __getitem__(self, grid):
        self.seen.append(self.name)
        return self.kernel[grid]


report = {}
for name, problem_path, source in json.loads(sys.argv[1]):
    problem = load_problem(problem_path)
    module = problem.module(problem.sizes)
    spec = importlib.util.spec_from_file_location("cand_" + name, source)
    candidate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(candidate)
    seen = []
    for attr in [a for a in vars(candidate) if a.endswith("_kernel")]:
        setattr(candidate, attr, Counted(attr, getattr(candidate, attr), seen))
    torch.manual_seed(0)
    reference = module.Model()
    new = candidate.ModelNew()
    new.load_state_dict(reference.state_dict())
    torch.manual_seed(1)
    inputs = call_factory(module, "get_inputs", problem.path)
    with torch.no_grad():
        got = new(*inputs).double()
        exact = reference.double()(*[x.double() for x in inputs])
    rel = float((got - exact).abs().max() / exact.abs().max())
    report[name] = {"rel": rel, "launched": sorted(set(seen))}
print(json.dumps(report))
"""


def _render(tmp_path: Path, cases: dict[str, tuple[str, dict[str, int]]]) -> dict[str, tuple]:
    """name -> (problem, plan, candidate source path)."""
    out = {}
    for name, (body, params) in cases.items():
        path = tmp_path / f"{name}.py"
        path.write_text(HEADER + body)
        problem = load_problem(path)
        plan = analyze(problem)
        source = tmp_path / f"cand_{name}.py"
        # Past the search space where the sizes are small (BLOCK=64), as the accuracy tests do.
        source.write_text(plan.template.render({**plan.default_params(), **params}))
        out[name] = (problem, plan, source)
    return out


def _interpret(rendered: dict[str, tuple]) -> dict[str, dict]:
    jobs = [(name, str(problem.path), str(source))
            for name, (problem, _, source) in rendered.items()]
    done = subprocess.run([sys.executable, "-c", _INTERPRET, json.dumps(jobs)],
                          capture_output=True, text=True, timeout=900,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_few_long_rows_are_split_across_programs(tmp_path):
    rendered = _render(tmp_path, ROWS)
    ln = rendered["layernorm"][2].read_text()
    # Layer norm: mean and squared deviations in one pass, so two reads of x, split or not.
    assert "mean and squared deviations at once" in ln
    assert ln.count("for start in range(0, n_cols, BLOCK_N)") == 2
    report = _interpret(rendered)
    for name, (_, plan, _) in rendered.items():
        base = f"fused_{plan.operator_class}"
        assert f"{base}_split0_kernel" in report[name]["launched"], (name, report[name])
        assert f"{base}_kernel" not in report[name]["launched"], (name, report[name])
        assert report[name]["rel"] < 1e-5, (name, report[name])


def test_many_rows_keep_one_program_per_row_block(tmp_path):
    body, params = ROWS["layernorm"]
    rendered = _render(tmp_path, {"layernorm": (body, {**params, "N_PROGRAMS": 256,
                                                       "BLOCK_N": 1024})})
    report = _interpret(rendered)["layernorm"]
    assert report["launched"] == ["fused_layernorm_kernel"] and report["rel"] < 1e-5, report


def test_norms_and_full_reductions_walk_tiles(tmp_path):
    rendered = _render(tmp_path, {**NORMS, **FULL})
    assert "% R" not in rendered["batchnorm2d"][2].read_text()
    hinge = rendered["hinge"][2].read_text()
    assert "targets_ptr + cols[None, :]" in hinge and "% targets_numel" not in hinge
    two = rendered["two_suffixes"][2].read_text()
    assert "w_ptr + cols[None, :]," in two and "v_ptr + cols[None, :] % v_numel" in two
    report = _interpret(rendered)
    for name, result in report.items():
        assert result["rel"] < 1e-5, (name, result)
    assert "norm_partial_kernel" in report["batchnorm2d"]["launched"]


@pytest.mark.parametrize("name", ["layernorm", "softmax", "groupnorm", "hinge"])
def test_new_paths_are_verified_by_the_harness(tmp_path, small_pool, name):
    cases = {**ROWS, **NORMS, **FULL}
    (problem, _, source), = _render(tmp_path, {name: cases[name]}).values()
    result = small_pool.evaluate(problem, source.read_text())
    assert result.ok, f"{name}: {result.status}: {result.message}\n{result.stderr_tail[-2000:]}"
    assert any(c.name == "correct on other shapes" for c in result.checks)
