from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kernelevolve.errors import ProblemError
from kernelevolve.problem import (
    MIN_SCALABLE_SIZE,
    load_problem,
    parse_problem,
    perturbed_sizes,
)

DATA = Path(__file__).parent / "data"
EXAMPLES = Path(__file__).parent.parent / "examples"

GOOD = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
    def forward(self, x):
        return x * self.scale

rows = 64
cols = 4 * 32
hidden = rows * 2
dim = 1

def get_inputs():
    return [torch.randn(rows, hidden)]

def get_init_inputs():
    return [2.0]
"""


def write(tmp_path, text, name="p.py"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_unmodified_kernelbench_files_load():
    relu = load_problem(DATA / "kernelbench_relu.py")
    assert relu.sizes == {"batch_size": 4096, "dim": 393216}
    conv = load_problem(DATA / "kernelbench_conv_relu_bias.py")
    # chained assignments are sizes too; derived tuples are not
    assert conv.sizes["height"] == conv.sizes["width"] == 128
    assert "bias_shape" not in conv.sizes


def test_every_example_problem_loads():
    paths = sorted((EXAMPLES / "problems").glob("*.py"))
    assert len(paths) >= 12
    for path in paths:
        problem = load_problem(path)
        assert problem.sizes, f"{path.name} has no module-level sizes to override"


def test_size_override_follows_into_derived_values(tmp_path):
    problem = parse_problem(write(tmp_path, GOOD))
    # Literal arithmetic (cols = 4 * 32) is a size; sizes computed from names follow their
    # sources and are not overridable themselves.
    assert problem.sizes == {"rows": 64, "cols": 128, "dim": 1}
    module, model, init = problem.instantiate({"rows": 10})
    assert module.hidden == 20
    (x,) = module.get_inputs()
    assert x.shape == (10, 20)
    assert init == [2.0] and model.scale == 2.0


def test_chained_assignment_override_splits(tmp_path):
    problem = load_problem(DATA / "kernelbench_conv_relu_bias.py")
    module = problem.module({"height": 9})
    assert (module.height, module.width) == (9, 128)


def test_unknown_override_is_refused(tmp_path):
    problem = parse_problem(write(tmp_path, GOOD))
    with pytest.raises(ProblemError, match="cannot override \\['nope'\\]"):
        problem.module({"nope": 3})


def test_shrink_fits_budget_and_keeps_small_constants():
    problem = load_problem(DATA / "kernelbench_conv_relu_bias.py")
    sizes = problem.shrink_sizes(1 << 16)
    assert problem.input_elements(sizes) <= 1 << 16
    assert sizes["kernel_size"] == 3
    module, model, _ = problem.instantiate(sizes)
    (x,) = module.get_inputs()
    assert model(x).shape[0] == sizes["batch_size"]


def test_shrink_huge_kernelbench_shapes_without_allocating():
    problem = load_problem(DATA / "kernelbench_relu.py")  # 1.6e9 elements as written
    sizes = problem.shrink_sizes(1 << 16)
    assert sizes["batch_size"] * sizes["dim"] <= 1 << 16


def test_perturbed_sizes_differ_and_are_odd():
    base = {"batch": 16, "dim": 1024, "axis": 1, "k": 3}
    for variant in range(3):
        other = perturbed_sizes(base, variant)
        assert other["axis"] == 1 and other["k"] == 3
        for name in ("batch", "dim"):
            assert other[name] != base[name] and other[name] % 2 == 1
            assert other[name] > MIN_SCALABLE_SIZE


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("def get_inputs(:\n", "does not parse"),
        ("import torch\ndef get_inputs():\n    return []\n", "lacks Model, get_init_inputs"),
        (GOOD.replace("return [torch.randn(rows, hidden)]", "raise ValueError('boom')"),
         "get_inputs\\(\\) raised ValueError: boom"),
        (GOOD.replace("return [2.0]", "return 2.0"), "must return a list"),
        (GOOD + "\nraise RuntimeError('at import')\n", "raised while loading"),
    ],
)
def test_bad_problem_files_get_clear_errors(tmp_path, text, match):
    with pytest.raises(ProblemError, match=match):
        load_problem(write(tmp_path, text))


def test_missing_file(tmp_path):
    with pytest.raises(ProblemError, match="does not exist"):
        load_problem(tmp_path / "absent.py")


def test_instantiate_is_seeded(tmp_path):
    problem = load_problem(DATA / "kernelbench_conv_relu_bias.py")
    sizes = problem.shrink_sizes(4096)
    _, a, _ = problem.instantiate(sizes, seed=3)
    _, b, _ = problem.instantiate(sizes, seed=3)
    assert torch.equal(a.conv.weight, b.conv.weight)


INLINE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.w = nn.Parameter(w)
    def forward(self, x, labels):
        return x @ self.w

def get_inputs():
    return [torch.randn(16, 2 ** 8), torch.randint(0, 10, (16,))]

def get_init_inputs():
    return [torch.ones((256, 1))]
"""


def test_inline_shapes_become_sizes_that_overrides_move(tmp_path):
    problem = load_problem(write(tmp_path, INLINE))
    # Shape arguments of torch factories are lifted (randint's bounds are values, not shapes;
    # a size of 1 never moves).
    assert problem.sizes == {"_inline_get_inputs_0": 16, "_inline_get_inputs_1": 256,
                             "_inline_get_inputs_2": 16, "_inline_get_init_inputs_0": 256}
    module, model, _ = problem.instantiate({"_inline_get_inputs_1": 200,
                                            "_inline_get_init_inputs_0": 200})
    x, labels = module.get_inputs()
    assert x.shape == (16, 200) and labels.shape == (16,) and int(labels.max()) < 10
    assert model.w.shape == (200, 1)
    sizes, why = problem.other_sizes(problem.sizes)
    assert why == "" and sizes is not None and sizes["_inline_get_inputs_1"] != 256


SMALL = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, channels, kernel_size, dim):
        super().__init__()
        if channels != 3:
            raise ValueError("RGB only")
        self.conv = nn.Conv2d(channels, 4, kernel_size)
        self.dim = dim
    def forward(self, x):
        return torch.softmax(self.conv(x), dim=self.dim)

batch_size = 8
channels = 3
kernel_size = 3
dim = 1
height = width = 32

def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]

def get_init_inputs():
    return [channels, kernel_size, dim]
"""


def test_small_sizes_that_are_input_dimensions_move_where_the_problem_accepts_it(tmp_path):
    problem = load_problem(write(tmp_path, SMALL))
    # batch and channels shape the input; the kernel size and the axis do not.
    assert problem.small_extents(problem.sizes) == {"batch_size": 5, "channels": 2}
    sizes, why = problem.other_sizes(problem.sizes)
    assert why == "" and sizes is not None
    # The model refuses 2 channels: the first family it accepts moves the batch only.
    assert sizes["batch_size"] == 5 and sizes["channels"] == 3
    assert sizes["kernel_size"] == 3 and sizes["dim"] == 1 and sizes["height"] != 32
    assert problem.rejects(sizes) is None


def test_a_list_of_widths_is_sizes_and_shrinks_with_the_rest():
    """A model's hidden widths written as a list (KernelBench level 3's MLPs: ``layer_sizes =
    [400, 800]``) are sizes, one per element, so the interpreter's check shrinks them too: a
    3-layer MLP of 32768-wide layers had kept 1e9 weights at its "shrunk" sizes."""
    mlp = Path(__file__).parent / "synth" / "offline" / "data" / "mlp3.py"
    problem = load_problem(mlp)
    assert problem.sizes == {"batch_size": 128, "input_size": 16384, "layer_sizes[0]": 32768,
                             "layer_sizes[1]": 32768, "output_size": 16384}
    small = problem.shrink_sizes(4096)
    assert small["layer_sizes[0]"] < 100 and problem.input_elements(small) <= 2 * 4096
    module = problem.module({"layer_sizes[1]": 24})
    assert module.layer_sizes == [32768, 24]  # still a list, as written


def test_sizes_assigned_by_unpacking_are_sizes_of_their_own(tmp_path: Path) -> None:
    """KernelBench level 2 writes ``height, width = 64, 64``: each name is a size the harness
    shrinks and varies (left whole, a transposed convolution's 8x8x129x129 output kept 7 of 8
    level-2 programs past the interpreter's time limit)."""
    path = tmp_path / "unpacked.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        "    def forward(self, x):\n        return torch.relu(x)\n\n\n"
        "batch_size = 16\nheight, width = 64, 32\n\n\n"
        "def get_inputs():\n    return [torch.rand(batch_size, 3, height, width)]\n\n\n"
        "def get_init_inputs():\n    return []\n")
    problem = load_problem(path)
    assert {k: problem.sizes[k] for k in ("batch_size", "height", "width")} == {
        "batch_size": 16, "height": 64, "width": 32}
    module = problem.module({"height": 9, "width": 11})
    assert (module.batch_size, module.height, module.width) == (16, 9, 11)
    assert list(module.get_inputs()[0].shape) == [16, 3, 9, 11]
