"""The ATen suite generator on PyTorch's real OpInfo database: the curated list, the skip
reasons, and generated problems that load through the problem loader, keep their sample's
structure, run their reference at the sizes the cpu target shrinks them to, and are judged by
the real harness."""

from __future__ import annotations

import ast
import json
import sys
import warnings

import pytest
import torch

from kernelevolve.aten import generate as gen
from kernelevolve.aten.ops import CLASSES, CURATED, CURATED_BY_KEY, SKIPPED
from kernelevolve.errors import ConfigError
from kernelevolve.problem import load_problem

pytest.importorskip("expecttest")

# One operator per class, and samples showing the structure the generator must keep.
SAMPLE_OPS = ["add", "abs", "sum", "nn.functional.layer_norm", "softmax", "cumsum", "gather",
              "scatter", "mm", "nn.functional.avg_pool2d", "nn.functional.conv2d", "topk",
              "permute", "nn.functional.mse_loss"]


@pytest.fixture(scope="module")
def op_db():
    return gen.load_op_db()


@pytest.fixture(scope="module")
def suite(tmp_path_factory, op_db):
    """The sample operators at small sizes (the whole suite at its own: the slow test)."""
    out = tmp_path_factory.mktemp("aten")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return gen.generate_suite(out, ops=SAMPLE_OPS, samples=2, max_elements=1 << 15), out


@pytest.fixture(scope="module")
def add_suite(tmp_path_factory, op_db):
    """add at its default size, with a second sample that broadcasts."""
    out = tmp_path_factory.mktemp("aten-add")
    return gen.generate_suite(out, ops=["add"], samples=3), out


def test_the_curated_list_covers_every_class_with_160_operators_or_more(op_db):
    assert len(CURATED) >= 160
    assert len(CURATED_BY_KEY) == len(CURATED), "a curated operator is listed twice"
    assert {s.op_class for s in CURATED} == set(CLASSES)
    keys = {gen.op_key(i) for i in op_db}
    assert not [s.key for s in CURATED if s.key not in keys], "curated ops not in op_db"
    assert not [s.key for s in CURATED if s.key in SKIPPED]


def test_every_op_db_entry_is_generated_or_left_out_with_a_reason(op_db):
    chosen, skipped = gen.select(op_db, None)
    assert {spec.key for _, spec in chosen} == set(CURATED_BY_KEY)
    reasons = {s.op: s.reason for s in skipped}
    assert set(reasons) | set(CURATED_BY_KEY) == {gen.op_key(i) for i in op_db}
    assert all(reasons.values())
    assert "draws random numbers" in reasons["bernoulli"]
    assert "in-place" in reasons["zero_"]
    assert "sparse" in reasons["to_sparse"]
    assert "complex" in reasons["fft.fft"]
    assert "--ops" in reasons["linalg.cross"]  # available by name, not curated


def test_unknown_ops_and_a_missing_expecttest_name_the_fix(op_db, monkeypatch, tmp_path):
    with pytest.raises(ConfigError, match="unknown OpInfo name.*no_such_op.*kernelevolve aten"):
        gen.select(op_db, ["add", "no_such_op"])
    with pytest.raises(ConfigError, match="unknown --dtype"):
        gen.generate_suite(tmp_path, ops=["add"], dtype="float8")
    monkeypatch.setitem(sys.modules, "expecttest", None)
    with pytest.raises(ConfigError, match="pip install expecttest.*aten extra"):
        gen.load_op_db()


def test_each_generated_problem_loads_and_its_reference_runs_shrunk_and_perturbed(suite):
    result, out = suite
    assert set(SAMPLE_OPS) <= {p.op for p in result.problems}  # (and softmax's variant)
    manifest = json.loads((out / gen.MANIFEST).read_text())
    assert len(manifest["problems"]) == len(result.problems) >= len(SAMPLE_OPS)
    for record in result.problems:
        path = out / record.file
        problem = load_problem(path)
        assert set(record.sizes) <= set(problem.sizes)  # module-level, so the harness scales
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        assert f"OpInfo `{record.op.split('.')[0]}" in doc and f"sample {record.sample} " in doc
        full = problem.input_elements()
        small = problem.shrink_sizes(65536)
        assert problem.input_elements(small) <= max(65536, full // 16), record.file
        for sizes in (small, problem.other_sizes(small)[0]):
            if sizes is None:
                continue
            module, model, _ = problem.instantiate(sizes)
            torch.manual_seed(1)
            out_value = model(*module.get_inputs())
            leaves = out_value if isinstance(out_value, tuple | list) else [out_value]
            assert all(isinstance(t, torch.Tensor) for t in leaves)
            assert all(torch.isfinite(t).all() for t in leaves if t.is_floating_point())


def test_scaling_keeps_broadcasting_index_ranges_and_non_contiguity(suite, add_suite):
    add = [p for p in add_suite[0].problems if "broadcast" in p.structure]
    assert add, "a later add sample shows broadcasting"
    problem = load_problem(add_suite[1] / add[0].file)
    module, _, _ = problem.instantiate()
    shapes = [t.shape for t in module.get_inputs()]
    assert len(set(shapes)) > 1 and torch.broadcast_shapes(*shapes)
    assert max(t.numel() for t in module.get_inputs()) >= 1 << 20  # realistic, not 5x5
    result, out = suite
    by_op: dict[str, list[gen.GeneratedProblem]] = {}
    for p in result.problems:
        by_op.setdefault(p.op, []).append(p)
    gather = load_problem(out / by_op["gather"][0].file)
    module, model, _ = gather.instantiate()
    inputs = module.get_inputs()
    index = next(t for t in inputs if t.dtype == torch.int64)
    assert index.max() < max(inputs[0].shape) and model(*inputs).shape == index.shape
    scatter_src = (out / by_op["scatter"][0].file).read_text()
    assert "argsort" in scatter_src  # indices distinct along the scattered dim
    noncontig = [p for p in result.problems if "non-contiguous" in p.structure]
    assert noncontig, "a sample with a non-contiguous tensor"
    module, _, _ = load_problem(out / noncontig[0].file).instantiate()
    assert any(not t.is_contiguous() for t in module.get_inputs())


def test_a_generated_problem_is_judged_by_the_real_harness(add_suite, cpu_pool):
    from kernelevolve.synth import offline

    result, out = add_suite
    record = next(p for p in result.problems if p.op == "add" and "broadcast" in p.structure)
    problem = load_problem(out / record.file)
    plan = offline.analyze(problem)
    candidate = out / "add_candidate.py"
    candidate.write_text(plan.render(plan.default_params()))
    verdict = cpu_pool.evaluate(out / record.file, candidate)
    assert verdict.ok, verdict.message
    assert verdict.status == "ok"


def test_the_cli_generates_and_lists(tmp_path, op_db):
    from typer.testing import CliRunner

    from kernelevolve.cli import app

    runner = CliRunner()
    result = runner.invoke(app, ["aten", "generate", "--out", str(tmp_path), "--ops",
                                 "nn.functional.relu,neg", "--max-elements", "4096"])
    assert result.exit_code == 0, result.output
    assert len(list(tmp_path.glob("nn_functional_relu__s*.py"))) == 1
    assert len(list(tmp_path.glob("neg__s*.py"))) == 1
    assert "2 problems" in result.output and "elementwise_unary" in result.output
    result = runner.invoke(app, ["aten", "list", "--skipped"])
    assert result.exit_code == 0 and "bernoulli" in result.output
