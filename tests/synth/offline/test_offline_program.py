"""Programs of many operators (issue #50; ``offline/program.py``): a forward no single template
writes is split into consecutive parts, each a KernelBench problem of its own that a template
writes, and the parts' candidates are composed into one ModelNew. Checked in Triton's
interpreter: each part's candidate against its part problem, and the composed program against
the whole reference."""

from __future__ import annotations

import random

import pytest

from kernelevolve.problem import load_problem
from kernelevolve.synth.offline import Unsupported, analyze, mutate
from kernelevolve.synth.offline.analyze import analyze_single
from kernelevolve.synth.offline.program import split
from tests.synth.offline.test_offline_coverage import _interpreted, _problem

CONV_GELU_GROUPNORM = '''
class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, num_groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.group_norm = nn.GroupNorm(num_groups=num_groups, num_channels=out_channels)

    def forward(self, x):
        x = self.conv(x)
        x = torch.nn.functional.gelu(x)
        return self.group_norm(x)


batch_size = 2
in_channels = 4
out_channels = 8
size = 8


def get_inputs():
    return [torch.randn(batch_size, in_channels, size, size)]


def get_init_inputs():
    return [in_channels, out_channels, 3, 4]
'''

GEMM_NORM_VIEW = '''
class Model(nn.Module):
    def __init__(self, n, m, scale):
        super().__init__()
        self.fc = nn.Linear(n, m)
        self.norm = nn.LayerNorm(m)
        self.scale = scale

    def forward(self, x):
        y = self.fc(x) * self.scale
        y = self.norm(y)
        y = y.unsqueeze(1)
        return torch.relu(y) + 1.0


rows = 16
n = 32
m = 64


def get_inputs():
    return [torch.randn(rows, n)]


def get_init_inputs():
    return [n, m, 0.5]
'''


def test_a_convolution_then_a_group_norm_is_two_parts_each_checkable_alone(tmp_path):
    problem = _problem(tmp_path, "conv_gelu_gn", CONV_GELU_GROUPNORM)
    with pytest.raises(Unsupported):  # no single template writes it
        analyze_single(problem)
    plan = analyze(problem)
    assert plan.operator_class == "program"
    parts = plan.template.parts
    assert [p.plan.operator_class for p in parts] == ["convolution", "normalization"]
    assert [(p.inputs, p.output) for p in parts] == [(("x",), "gelu"), (("gelu",), "group_norm")]
    assert all(k.rpartition("@p")[2] in ("0", "1") for k in plan.space)
    # each part is a problem file of its own: the whole's constructor, its own forward, its
    # inputs computed by the nodes before it
    second = load_problem(parts[1].path)
    assert "self.group_norm(gelu)" in second.source and "_part_inputs" in second.source
    source = plan.render(plan.default_params())
    assert "def _p0_forward(self, x)" in source and "def _p1_forward(self, gelu)" in source
    assert "p0_conv_nd(" in source and "p1_channel_norm(" in source
    _interpreted([p.path for p in parts] + [problem.path])


def test_a_gemm_a_norm_and_an_epilogue_with_a_float_attribute(tmp_path):
    problem = _problem(tmp_path, "gemm_norm_view", GEMM_NORM_VIEW)
    plan = analyze(problem)
    parts = plan.template.parts
    assert [p.plan.operator_class if p.plan else "views" for p in parts] == [
        "matmul", "layernorm", "elementwise"]  # the unsqueeze fused into the last part
    source = plan.render(plan.default_params())
    assert "self.scale" in source  # the judge varies it: read at call time
    _interpreted([problem.path])


def test_views_no_template_takes_run_as_written(tmp_path):
    """KernelBench level 2's 67: a global average pool's two squeezes follow a reduction."""
    problem = _problem(tmp_path, "conv_gap", CONV_GELU_GROUPNORM.replace(
        "return self.group_norm(x)",
        "x = torch.nn.functional.adaptive_avg_pool2d(x, 1)\n"
        "        x = x.squeeze(-1).squeeze(-1)\n        return x"))
    plan = analyze(problem)
    parts = plan.template.parts
    assert [p.plan.operator_class if p.plan else "views" for p in parts] == [
        "convolution", "reduction", "views", "views"]
    source = plan.render(plan.default_params())
    assert "squeeze = adaptive_avg_pool2d.squeeze(-1)" in source
    _interpreted([problem.path])


def test_the_search_moves_through_every_parts_parameters(tmp_path):
    problem = _problem(tmp_path, "gemm_norm_view", GEMM_NORM_VIEW)
    plan = analyze(problem)
    rng = random.Random(0)
    params = plan.default_params()
    seen = set()
    for _ in range(12):
        params, _why = mutate(plan, params, "memory-bound", rng)
        plan.validate(params)
        seen |= {k for k, v in params.items() if v != plan.defaults[k]}
    assert {k.rpartition("@p")[2] for k in seen} >= {"0", "1"}


def test_a_logsumexp_after_a_gemm_is_a_row_part(tmp_path):
    """logsumexp is traced as its largest value, exponentials, a sum and a log (the largest
    taken as zero where infinite, as torch does): a row template writes it."""
    problem = _problem(tmp_path, "gemm_lse", GEMM_NORM_VIEW.replace(
        "return torch.relu(y) + 1.0", "return torch.logsumexp(y, dim=2) * 2.0"))
    plan = analyze(problem)
    assert [p.plan.operator_class for p in plan.template.parts][:2] == ["matmul", "layernorm"]
    _interpreted([problem.path])


def test_a_part_no_template_writes_is_named(tmp_path):
    body = GEMM_NORM_VIEW.replace("return torch.relu(y) + 1.0",
                                  "return torch.median(y, dim=2).values")
    with pytest.raises(Unsupported, match=r"split into parts: no template writes "
                                          r"call_method values|split into parts: no template "
                                          r"writes call_function .*median"):
        analyze(_problem(tmp_path, "gemm_median", body))
    with pytest.raises(Unsupported, match=r"no template writes"):
        split(_problem(tmp_path, "gemm_median2", body), analyze_single)


def test_a_three_layer_mlp_is_three_gemm_parts_checked_at_shrunk_widths():
    """Issue #49's 3-layer MLP (32768-wide hidden layers in a list): three GEMM parts with
    their ReLUs fused, checked in the interpreter at widths shrunk with the rest."""
    from pathlib import Path

    path = Path(__file__).with_name("data") / "mlp3.py"
    plan = analyze(load_problem(path))
    parts = plan.template.parts
    assert [p.plan.operator_class for p in parts] == ["matmul"] * 3
    assert "relu" in parts[0].plan.description and "relu" not in parts[2].plan.description
    _interpreted([path])


GEMM_POOL_SCALE_MAX = '''
class Model(nn.Module):
    def __init__(self, in_features, out_features, pool_kernel_size, scale_factor):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.avg_pool = nn.AvgPool1d(kernel_size=pool_kernel_size)
        self.scale_factor = scale_factor

    def forward(self, x):
        x = self.matmul(x)
        x = self.avg_pool(x.unsqueeze(1)).squeeze(1)
        x = torch.nn.functional.gelu(x)
        x = x * self.scale_factor
        return torch.max(x, dim=1).values


batch_size = 16
in_features = 32
out_features = 64


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, 4, 2.0]
'''


def test_a_float_attribute_is_read_at_call_time_in_every_part(tmp_path):
    """KernelBench level 2's 98: the module-level trace reads ``self.scale_factor`` as a number;
    traced as a marker and written back, the reduction part reads the attribute (the judge
    varies it: a hard-wired 2.0 was 4% off at another value)."""
    problem = _problem(tmp_path, "gemm_pool_scale_max", GEMM_POOL_SCALE_MAX)
    plan = analyze(problem)
    last = plan.template.parts[-1]
    assert last.plan.operator_class == "reduction"
    assert "gelu * self.scale_factor" in last.path.read_text()
    source = plan.render(plan.default_params())
    assert "* scale_factor" in source and "* 2.0" not in source
    _interpreted([problem.path])


SCALED_BY_SHAPE = '''
import math


class Model(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.fc = nn.Linear(d_in, d_out)

    def forward(self, x):
        h = self.fc(x)
        h = h / math.sqrt(h.shape[-1])
        return torch.softmax(h, dim=-1)


batch = 16
d_in = 32
d_out = 64


def get_inputs():
    return [torch.randn(batch, d_in)]


def get_init_inputs():
    return [d_in, d_out]
'''


def test_a_function_the_forward_calls_is_written_where_it_lives(tmp_path):
    """fx names the functions a graph calls by globals of its own (``math_sqrt``); a part's file
    and the composed program call them where they live (``math.sqrt``), and a part's docstring
    names what it calls without addresses (a transformer block's attention scale raised
    NameError: name 'math_sqrt' is not defined)."""
    problem = _problem(tmp_path, "scaled_by_shape", SCALED_BY_SHAPE)
    plan = analyze(problem)
    parts = plan.template.parts
    assert [p.plan.operator_class for p in parts] == ["matmul", "softmax"]
    sources = [load_problem(p.path).source for p in parts]
    assert any("math.sqrt(" in s for s in sources) and not any("math_sqrt" in s for s in sources)
    assert not any(" at 0x" in s for s in sources) and "(truediv softmax)" in sources[1]
    # the width is read again from the part's own input (a part takes tensors only)
    assert "getattr_1 = fc.shape" in sources[1]
    source = plan.render(plan.default_params())
    assert "math_sqrt" not in source


def test_a_scalar_computed_from_a_shape_follows_the_shape(tmp_path):
    """1 / sqrt(width) read from the shape is a size form (``d ** 0.5``): the GEMM's epilogue
    divides by the width's square root at every shape, not by the traced size's (baked in, the
    judge's other shapes refused it: a 3.6% error at width 49)."""
    problem = _problem(tmp_path, "scaled_by_shape", SCALED_BY_SHAPE)
    parts = analyze(problem).template.parts
    source = parts[1].plan.render(parts[1].plan.default_params())
    assert "** 0.5" in source and "8.0" not in source
    _interpreted([p.path for p in parts] + [problem.path])


TRANSFORMER_BLOCK = '''
import math


class Model(nn.Module):
    def __init__(self, d_model, n_heads, d_ff):
        super().__init__()
        self.n_heads = n_heads
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        b, t, d = x.shape
        h = self.ln1(x)
        q, k, v = self.qkv(h).split(d, dim=2)
        q = q.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2)
        k = k.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2)
        v = v.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.n_heads)
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, d)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


batch = 2
seq = 16
n_heads = 12
head_dim = 8
d_ff = 64


def get_inputs():
    return [torch.randn(batch, seq, n_heads * head_dim)]


def get_init_inputs():
    return [n_heads * head_dim, n_heads, d_ff]
'''

CONV_BN_RELU_BLOCK = '''
class Model(nn.Module):
    def __init__(self, c_in, c_mid, c_out):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_mid, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_mid)
        self.conv2 = nn.Conv2d(c_mid, c_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(x)))


batch = 2
c_in = 4
c_mid = 8
c_out = 8
size = 8


def get_inputs():
    return [torch.randn(batch, c_in, size, size)]


def get_init_inputs():
    return [c_in, c_mid, c_out]
'''


def test_a_transformer_block_written_out_is_a_program_with_one_attention_kernel(
        tmp_path, monkeypatch):
    """Shapes read in the forward (``b, t, d = x.shape``, ``d // heads``) are computed again
    by every part that uses them (a part takes tensors); the qkv split, the heads' views and
    ``contiguous`` run as written; the written-out attention (two products, a scale, a softmax)
    is one flash-attention part; the layer norms and the four GEMMs with their epilogues the
    rest. ``self.n_heads``, an int the module-level trace reads as a number, is read at call
    time (the judge varies it: 12 heads baked in failed at 9)."""
    from kernelevolve.synth.offline import program

    # about 12 s alone on this 2-core machine; CI runs two test processes beside each other
    monkeypatch.setattr(program, "SPLIT_BUDGET_S", 600.0)
    problem = _problem(tmp_path, "transformer_block", TRANSFORMER_BLOCK)
    plan = analyze(problem)
    kinds = [p.plan.operator_class for p in plan.template.parts if p.plan is not None]
    assert kinds == ["layernorm", "matmul", "attention", "matmul", "layernorm", "matmul",
                     "matmul"], kinds
    source = plan.render(plan.default_params())
    assert "n_heads = self.n_heads" in source and "getitem_1, 12," not in source
    _interpreted([problem.path])


def test_a_conv_batch_norm_relu_block_is_six_parts(tmp_path):
    """A part keeps the whole model's constructor: its batch norm is the one the forward calls
    (``bn1``), not every batch norm the model has (``bn2`` made the template refuse)."""
    problem = _problem(tmp_path, "conv_bn_relu", CONV_BN_RELU_BLOCK)
    plan = analyze(problem)
    kinds = [p.plan.operator_class for p in plan.template.parts if p.plan is not None]
    assert kinds == ["convolution", "normalization", "elementwise"] * 2, kinds
    _interpreted([problem.path])
