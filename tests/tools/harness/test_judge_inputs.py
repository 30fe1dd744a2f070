"""The judge's inputs a kernel cannot predict and its bookkeeping of outputs (issue #47): the
variants' transforms (drawn per evaluation, one copy of the input each), float constructor
arguments varied, every dim's stride changed, sizes at their real value on the interpreter
targets, digests of earlier outputs, the candidate process's checks for outputs it keeps."""

from __future__ import annotations

from pathlib import Path

import torch

from kernelevolve.problem import load_problem
from kernelevolve.tools.harness import compare, worker
from kernelevolve.tools.harness.candidate import OutputStorages, retained_outputs
from kernelevolve.tools.harness.judge import variants

KERNELBENCH = Path(__file__).resolve().parents[4] / "shared" / "kernelbench" / "level1"


def _variants(seed: int) -> list[str]:
    gen = torch.Generator().manual_seed(seed)
    return [family(gen, 0)[0] for family in variants._VARIANTS]


def test_variants_are_drawn_per_evaluation():
    """The scale, the shift and the spread change with the evaluation's seed: a kernel cannot
    detect the judge's variant by a fixed factor."""
    a, b = _variants(1), _variants(2)
    assert a[0] != b[0] and a[1] != b[1] and a[5] != b[5] and a[6] != b[6]
    assert a[7:] == b[7:]  # the layouts are what they are


def test_a_variant_scales_far_down_where_fp16_products_go_subnormal():
    for seed in range(20):
        name, transform = variants._tiny(torch.Generator().manual_seed(seed), 0)
        factor = float(transform(torch.ones(1)))
        assert 1e-6 <= abs(factor) <= 1e-4, name


def test_each_transform_keeps_shape_and_dtype_and_changes_values():
    gen = torch.Generator().manual_seed(3)
    t = torch.rand(6, 5, 4)  # non-negative, as torch.rand's inputs
    for family in variants._VARIANTS:
        name, transform = family(gen, 0)
        out = transform(t)
        assert out.shape == t.shape and out.dtype == t.dtype, name
        assert torch.isfinite(out).all(), name
        if "stride" in name or "non-contiguous" in name:
            assert torch.equal(out, t) and not out.is_contiguous(), name
        else:
            assert not torch.equal(out, t), name
    signs = variants._signs(torch.Generator().manual_seed(4), 0)[1](t)
    assert (signs < 0).any() and (signs > 0).any() and torch.equal(signs.abs(), t)


def test_ties_and_outliers():
    t = torch.randn(1000, 300)
    out = variants._ties(torch.Generator().manual_seed(5), 0)[1](t)
    assert out.unique().numel() < t.numel() // 100  # a grid: many exact ties
    assert out.abs().max() > 100 * t.abs().max()  # outliers 1e3 times as large


def test_milder_forms_shrink():
    gen = torch.Generator().manual_seed(6)
    s0 = abs(float(variants._scaled(gen, 0)[0].split("x ")[1]))
    gen = torch.Generator().manual_seed(6)
    s3 = abs(float(variants._scaled(gen, 3)[0].split("x ")[1]))
    assert s3 == s0 / 1000


def test_every_dim_stride_changed():
    t = torch.randn(3, 4, 5)
    r = variants._reversed_layout(t)
    assert torch.equal(r, t)
    assert all(a != b for a, b in zip(r.stride(), t.stride(), strict=True))


def test_float_constructor_arguments_vary():
    varied, changed = worker.vary_floats([16, 2.0, 0.0, (1.5, 3), "x", True],
                                         torch.Generator().manual_seed(7))
    assert varied[0] == 16 and varied[2] == 0.0 and varied[4] == "x" and varied[5] is True
    assert varied[1] != 2.0 and 0.6 * 2.0 <= varied[1] <= 1.6 * 2.0
    assert varied[3][0] != 1.5 and varied[3][1] == 3
    assert len(changed) == 2


def test_a_size_at_its_real_value_on_the_interpreter_targets():
    """KernelBench's softmax rows are 393,216 wide; shrunk checks see 192. One plan takes the
    row as long as fits (far past a BLOCK capped at 4096), the batch shrunk to its least."""
    problem = load_problem(KERNELBENCH / "23_Softmax.py")
    base = problem.shrink_sizes(1 << 16)
    plans = problem.real_size_plans([base], 2 << 16, limit=1)
    assert len(plans) == 1
    name, sizes = plans[0]
    assert name == "dim" and sizes["dim"] > 8 * base["dim"] and sizes["dim"] > 4096
    assert problem.input_elements(sizes) <= 2 << 16


def test_digests_tell_bitwise_equality():
    a = torch.randn(1000)
    b = a.clone()
    assert compare.fingerprint(a, 11) == compare.fingerprint(b, 11)
    b[500] = torch.nextafter(b[500], torch.tensor(float("inf")))
    assert compare.fingerprint(a, 11) != compare.fingerprint(b, 11)
    assert compare.fingerprint((a, 3), 11) != compare.fingerprint((a, 4), 11)
    odd = torch.arange(7, dtype=torch.uint8)  # a byte count that is no multiple of 4
    assert compare.fingerprint(odd, 1) != compare.fingerprint(odd + 1, 1)


def test_own_copy_copies_only_what_shares_memory():
    x = torch.randn(4, 4)
    fresh = torch.randn(4, 4)
    assert compare.own_copy(fresh, [x]) is not x
    assert compare.own_copy(fresh, [x]).data_ptr() == fresh.data_ptr()
    view = x.view(16)
    copied = compare.own_copy(view, [x])
    assert copied.data_ptr() != x.data_ptr() and torch.equal(copied, view)


class _Fresh(torch.nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        out.copy_(x)
        return out


class _Ring(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ring = [torch.empty(4, 4) for _ in range(3)]
        self.turn = 0

    def forward(self, x):
        self.turn = (self.turn + 1) % 3
        return self.ring[self.turn]


class _ViewOfKept(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.big = torch.empty(64)

    def forward(self, x):
        return self.big[:16].view(4, 4)


class _Pair(torch.nn.Module):
    def forward(self, x):
        both = torch.empty(2, *x.shape)
        return both[0], both[1]


def test_outputs_the_candidate_keeps_are_found():
    x = torch.randn(4, 4)
    with torch.no_grad():
        assert retained_outputs(_Fresh()(x), [x]) == []
        assert retained_outputs(_Pair()(x), [x]) == []
        assert retained_outputs(_Ring()(x), [x]) == [0]
        assert retained_outputs(_ViewOfKept()(x), [x]) == [0]
        assert retained_outputs(x, [x]) == []  # an input: the input checks' business
        log = [("kernel", (x, _Fresh()(x)), {})]
        out = log[0][1][1]
        assert retained_outputs(out, [x], log) == []  # the harness's own launch log


class _RingOfViews(torch.nn.Module):
    """Five output slots of one tensor no Python name holds (only a view of it is kept): the
    reference check sees nothing, and a ring longer than the outputs the judge holds is never
    seen overwriting one (red team 47, c5d)."""

    def __init__(self, ring: int = 5):
        super().__init__()
        self.ring, self.slots, self.calls = ring, None, 0

    def forward(self, x):
        if self.slots is None:
            self.slots = torch.empty(self.ring, *x.shape)[0:self.ring]
        self.calls += 1
        return self.slots[self.calls % self.ring]


def _calls(model: torch.nn.Module, n: int, keep: int) -> list[list[int]]:
    """``n`` forwards, the caller holding the last output and ``keep`` earlier ones, as the
    candidate process does; what ``OutputStorages`` finds before each forward."""
    x = torch.randn(4, 4)
    storages, last, previous, found = OutputStorages(), None, [], []
    with torch.no_grad():
        for _ in range(n):
            found.append(storages.still_alive(last, previous))
            out = model(x)
            storages.handed_out(out, [x, *model.parameters(), *model.buffers()])
            previous = [last, *previous][:keep] if last is not None else previous
            last = out
            del out
    return found


def test_outputs_let_go_of_must_be_freed():
    """At any ring length: an output the caller let go of whose storage is still alive."""
    assert retained_outputs(_RingOfViews()(torch.randn(4, 4)), []) == []  # invisible to gc
    assert any(_calls(_RingOfViews(5), 8, keep=4))
    assert any(_calls(_RingOfViews(50), 8, keep=4))  # caught at the first output let go of
    assert not any(_calls(_Fresh(), 8, keep=4))
    assert not any(_calls(_Pair(), 8, keep=1))


class _ReturnsInputView(torch.nn.Module):
    def forward(self, x):
        return x.view(16)


class _Cycle(torch.nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        box: list = [out]
        box.append(box)  # a reference cycle: freed by a collection, not kept
        return out


def test_inputs_and_cycles_are_not_kept_memory():
    assert not any(_calls(_ReturnsInputView(), 6, keep=2))
    assert not any(_calls(_Cycle(), 6, keep=2))


class _Gated(torch.nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.gate = torch.nn.Parameter(torch.randn(dim))
        self.scale = None


class _FoldsOnLoad(_Gated):
    """Red team 47, c6a/c6b: the work on the weights done by torch when they are loaded, outside
    the recorded forward (the allowlist refuses the override and the hook; this is the runtime's
    own check behind it)."""

    def __init__(self, dim: int):
        super().__init__(dim)
        self.register_load_state_dict_post_hook(_FoldsOnLoad.fold)

    @staticmethod
    def fold(module, incompatible):
        module.scale = 1 / (1 + 2.718281828 ** -module.gate)


def _build(cls: type) -> dict:
    from kernelevolve.tools.harness.candidate import CandidateSide
    from kernelevolve.tools.harness.guard import LaunchCounter

    side = CandidateSide(Path("unused.py"), torch.device("cpu"), LaunchCounter(), None, "t")
    side.cls = cls
    return side.do_build("k", [8], {"gate": torch.randn(8)}, seed=0)


def test_loading_the_weights_is_recorded():
    assert not set(_build(_Gated)["ops"]) - worker.ALLOWED_ATEN_OPS
    assert set(_build(_FoldsOnLoad)["ops"]) - worker.ALLOWED_ATEN_OPS  # pow, add, reciprocal
