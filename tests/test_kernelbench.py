"""The real KernelBench files (``../shared/kernelbench``, unmodified): what broke on them once
must cost one check or one candidate, never a run. Kernels run in Triton's interpreter at the
sizes the cpu target shrinks them to."""

from __future__ import annotations

from kernelevolve.problem import MIN_SCALABLE_SIZE, load_problem, size_families
from kernelevolve.synth import offline
from kernelevolve.synth.offline.synthesizer import OfflineSynthesizer

HERE = __import__("pathlib").Path(__file__).resolve().parent
GROUPNORM_CANDIDATE = HERE / "data" / "kernelbench" / "groupnorm_triton.py"


def test_groupnorm_other_sizes_keep_the_channels_divisible_by_the_groups(kernelbench):
    problem = load_problem(kernelbench / "level1" / "35_GroupNorm_.py")
    base = problem.shrink_sizes(65536)
    assert base["num_groups"] == 8 and base["features"] % 8 == 0
    # The plain odd perturbation is what the constructor refused in a user's run.
    first = size_families(base)[0]
    assert "divisible by num_groups" in (problem.rejects(first) or "")
    sizes, why = problem.other_sizes(base)
    assert why == "" and sizes is not None and sizes != base
    assert sizes["features"] % sizes["num_groups"] == 0 and sizes["features"] != base["features"]
    assert problem.rejects(sizes) is None


def test_groupnorm_candidate_is_judged_on_other_shapes(kernelbench, cpu_pool):
    result = cpu_pool.evaluate(kernelbench / "level1" / "35_GroupNorm_.py", GROUPNORM_CANDIDATE)
    assert result.ok, result.message
    other = next(c for c in result.checks if c.name == "correct on other shapes")
    assert other.passed and not other.skipped and "'features': " in other.detail


def test_a_problem_that_refuses_every_other_size_is_checked_once_and_says_so(tmp_path, cpu_pool):
    problem = tmp_path / "fixed_width.py"
    problem.write_text(
        "import torch\nimport torch.nn as nn\n\n"
        "class Model(nn.Module):\n"
        "    def __init__(self, n):\n"
        "        super().__init__()\n"
        "        if n != 64:\n"
        "            raise ValueError(f'this model is built for n == 64, not {n}')\n"
        "    def forward(self, x):\n"
        "        return torch.relu(x)\n\n"
        "n = 64\n\n"
        "def get_inputs():\n    return [torch.randn(n)]\n\n"
        "def get_init_inputs():\n    return [n]\n")
    candidate = tmp_path / "cand.py"
    candidate.write_text(
        "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n\n"
        "@triton.jit\n"
        "def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    mask = offs < n\n"
        "    x = tl.load(x_ptr + offs, mask=mask)\n"
        "    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)\n\n"
        "class ModelNew(nn.Module):\n"
        "    def __init__(self, n):\n        super().__init__()\n"
        "    def forward(self, x):\n"
        "        x = x.contiguous()\n"
        "        out = torch.empty_like(x)\n"
        "        relu_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)\n"
        "        return out\n")
    result = cpu_pool.evaluate(problem, candidate)
    assert result.ok, result.message
    skipped = [c for c in result.checks if c.skipped]
    assert [c.name for c in skipped] == ["other shapes"]
    assert "refuses every other size" in skipped[0].detail and "n == 64" in skipped[0].detail
    assert any("checked at one shape only" in f for f in result.flags)


def test_size_families_differ_from_base_and_keep_small_sizes():
    base = {"batch": 112, "features": 64, "groups": 8, "k": 3}
    families = size_families(base)
    assert len(families) >= 4
    for sizes in families:
        assert sizes != base
        assert all(sizes[k] == v for k, v in base.items() if v <= MIN_SCALABLE_SIZE)
    uniform = [s for s in families if s["features"] * 112 == s["batch"] * 64]
    assert uniform, "a family that keeps the ratios between sizes"
    assert size_families({"k": 3, "axis": 1}) == []


def test_leaky_relu_analyzes_with_its_default_slope(kernelbench):
    plan = offline.analyze(load_problem(kernelbench / "level1" / "20_LeakyReLU.py"))
    assert plan.operator_class == "elementwise"
    assert "0.01" in plan.render(plan.default_params()) or "negative_slope" in plan.render(
        plan.default_params())


def test_rmsnorm_over_dim_1_is_covered_and_renders(kernelbench):
    # It was Unsupported ("no Triton rendering") until the reduction template learned to write
    # an output of the input's shape; a template that cannot render its defaults is still
    # refused by analyze() (test_a_render_failure_inside_a_run_is_a_draft_without_code).
    from kernelevolve.tools.harness.static import check_source

    problem = load_problem(kernelbench / "level1" / "36_RMSNorm_.py")
    plan = offline.analyze(problem)
    source = plan.render(plan.default_params())
    assert "@triton.jit" in source and check_source(source, problem.allowed_ops) == []


def test_a_render_failure_inside_a_run_is_a_draft_without_code(kernelbench, monkeypatch):
    synth = OfflineSynthesizer(load_problem(kernelbench / "level1" / "19_ReLU.py"))

    def refuse(params):
        raise offline.Unsupported("the load node has no Triton rendering in this template")

    monkeypatch.setattr(synth.plan.template, "render", refuse)
    params = synth.plan.default_params()
    draft = synth._draft(params, "defaults")
    assert draft.source is None and "no Triton rendering" in draft.problem
