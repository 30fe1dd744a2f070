"""The FMA convolution kernel (``conv_fma_kernel``: a short reduction on the FMA units, a
window row's taps unrolled, exact fp32 products) and the phase-major transposed convolution
(each stride phase written contiguous into a buffer, one pass interleaving them). Checked in
Triton's interpreter against torch over strides, paddings, dilations, groups, a bias, 1-3
dims, fp16 and a transposed convolution's phases; and the plan's choice of them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from kernelevolve.synth.offline import analyze
from tests.synth.offline.conv_interp import conv_script
from tests.synth.offline.test_offline_coverage import _problem

_CHECK = conv_script((
    "conv_fma_kernel", "conv_gemm_kernel", "conv_gemm_cl_kernel", "phase_interleave_kernel"), '''
    torch.manual_seed(0)
    x, w, b = torch.randn(2, 3, 9, 11), torch.randn(5, 3, 3, 3), torch.randn(5)
    xg, wg = torch.randn(2, 4, 8, 8), torch.randn(6, 2, 3, 3)
    x3, w3 = torch.randn(2, 3, 5, 6, 4), torch.randn(7, 3, 3, 3, 1)
    x1, w1 = torch.randn(2, 3, 20), torch.randn(4, 3, 5)
    wt, wtg = torch.randn(4, 3, 3, 3), torch.randn(4, 2, 3, 3)
    cases = {
        "2d": (lambda **k: conv_nd(x, w, b, 2, 1, 1, 1, False, 0, **k),
               F.conv2d(x, w, b, 2, 1)),
        "dilated": (lambda **k: conv_nd(x, w, None, 1, 2, 2, 1, False, 0, **k),
                    F.conv2d(x, w, None, 1, 2, 2)),
        "3d": (lambda **k: conv_nd(x3, w3, None, (1, 2, 1), 1, 1, 1, False, 0, **k),
               F.conv3d(x3, w3, None, (1, 2, 1), 1)),
        "groups": (lambda **k: conv_nd(xg, wg, None, 1, 1, 1, 2, False, 0, **k),
                   F.conv2d(xg, wg, None, 1, 1, 1, 2)),
        "1d": (lambda **k: conv_nd(x1, w1, None, 3, 2, 1, 1, False, 0, **k),
               F.conv1d(x1, w1, None, 3, 2)),
        # no padding: every tap inside x, the kernel's bounds per tap left out (IN_BOUNDS)
        "unpadded": (lambda **k: conv_nd(x, w, b, (2, 1), 0, (1, 2), 1, False, 0, **k),
                     F.conv2d(x, w, b, (2, 1), 0, (1, 2))),
        "unpadded_3d": (lambda **k: conv_nd(x3, w3, None, 1, 0, 1, 1, False, 0, **k),
                        F.conv3d(x3, w3, None, 1, 0)),
        "transposed": (lambda **k: conv_nd(xg, wt, b[:3], 2, 1, 1, 1, True, 1, **k),
                       F.conv_transpose2d(xg, wt, b[:3], 2, 1, 1)),
        "transposed_groups": (lambda **k: conv_nd(xg, wtg, None, 3, 1, 2, 2, True, 1, **k),
                              F.conv_transpose2d(xg, wtg, None, 3, 1, 1, 2, 2)),
    }
    res = {}
    for name, (run, want) in cases.items():
        launched.clear()
        got = run(fma=True)
        res[name] = {"err": float((got - want).abs().max()), "shape": got.shape == want.shape,
                     "fma": "conv_fma_kernel" in launched,
                     "gemm": any(k.startswith("conv_gemm") for k in launched)}
    # the register tiles (SUB_M threads over positions x the rest over channels): 4 positions
    # x 1 channel a thread, and 1 x 4; a tile SUB_M does not fit falls back to a position a
    # thread (fma_threads). W_BCAST: the weights copied channels-innermost, padded to whole
    # tiles (5 and 3 channels in tiles of 16), loaded unmasked as the tile's broadcast; a
    # transposed convolution reads them in place. MAXNREG: a launch option the interpreter
    # ignores.
    tiled = {}
    for sub_m, maxnreg, w_bcast in ((8, 0, 0), (32, 128, 0), (0, 0, 1)):
        ns.update(SUB_M=sub_m, MAXNREG=maxnreg, W_BCAST=w_bcast)
        for name, (run, want) in cases.items():
            launched.clear()
            got = run(fma=True)
            tiled[f"{name}-{sub_m}-{w_bcast}"] = {"err": float((got - want).abs().max()),
                                                  "shape": got.shape == want.shape,
                                                  "fma": "conv_fma_kernel" in launched}
    ns.update(SUB_M=0, MAXNREG=0, W_BCAST=0)
    threads = [ns["fma_threads"](*a) for a in ((8, 32, 16, 4), (32, 32, 16, 4), (64, 32, 16, 4),
                                                (16, 64, 2, 2), (0, 64, 64, 2), (16, 64, 64, 2))]
    # fp16: fp32 accumulation, rounded once
    launched.clear()
    got = conv_nd(x.half(), w.half(), None, 1, 1, 1, 1, False, 0, fma=True)
    want = F.conv2d(x.half().float(), w.half().float(), None, 1, 1).half()
    res["fp16"] = {"err": float((got.float() - want.float()).abs().max()),
                   "dtype": str(got.dtype), "fma": "conv_fma_kernel" in launched}
    # a reduction longer than MAX_FMA_K takes the GEMM even when asked for the FMA kernel
    launched.clear()
    long_x, long_w = torch.randn(1, 64, 6, 6), torch.randn(4, 64, 3, 3)
    got = conv_nd(long_x, long_w, None, 1, 1, 1, 1, False, 0, fma=True)
    res["long"] = {"err": float((got - F.conv2d(long_x, long_w, None, 1, 1)).abs().max()),
                   "fma": "conv_fma_kernel" in launched,
                   "max_k": ns["MAX_FMA_K"]}
    # phase-major transposed convolutions: strides along w (and not), both kernels
    major = {}
    xt = torch.randn(2, 4, 5, 7)
    for st, pad, dil, op in [((2, 3), 1, 1, (1, 2)), ((1, 5), 1, 2, (0, 0)),
                             ((3, 2), (0, 2), (2, 1), (1, 0)), ((2, 1), 1, 1, (1, 0))]:
        wt2, bt = torch.randn(4, 3, 3, 3), torch.randn(3)
        want = F.conv_transpose2d(xt, wt2, bt, st, pad, op, 1, dil)
        for fma in (False, True):
            launched.clear()
            got = conv_nd(xt, wt2, bt, st, pad, dil, 1, True, op, fma=fma, phase_major=True)
            major[f"{st}-{fma}"] = {
                "err": float((got - want).abs().max()), "shape": got.shape == want.shape,
                "contiguous": got.is_contiguous(),
                "interleaved": "phase_interleave_kernel" in launched,
                "fma_launches": launched.count("conv_fma_kernel")}
    x5 = torch.randn(1, 2, 3, 4, 5)
    w5 = torch.randn(2, 2, 2, 3, 3)
    got = conv_nd(x5, w5, None, (2, 2, 3), 1, 1, 1, True, (1, 0, 2), phase_major=True)
    want = F.conv_transpose3d(x5, w5, None, (2, 2, 3), 1, (1, 0, 2))
    major["3d"] = {"err": float((got - want).abs().max()), "shape": got.shape == want.shape,
                   "contiguous": True, "interleaved": True, "fma_launches": 0}
    print(json.dumps({"res": res, "major": major, "tiled": tiled, "threads": threads}))
''')


def test_fma_and_phase_major_convolutions_match_torch_in_the_interpreter():
    done = subprocess.run([sys.executable, "-c", _CHECK], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    res, major, tiled = out["res"], out["major"], out["tiled"]
    for name in ("2d", "dilated", "3d", "groups", "1d", "unpadded", "unpadded_3d", "transposed",
                 "transposed_groups"):
        case = res[name]
        assert case["shape"] and case["err"] < 1e-4, (name, case)
        # the FMA kernel did the work, no GEMM beside it
        assert case["fma"] and not case["gemm"], (name, case)
    assert len(tiled) == 27
    for name, case in tiled.items():
        assert case["shape"] and case["fma"] and case["err"] < 1e-4, (name, case)
    # (sub_m, block_m, block_n, warps): 128 threads as 8 x 16 and 32 x 4; 64 positions over a
    # 32-position tile, 16 x 4 threads over a 2-channel tile and 0 fall back
    assert out["threads"] == [[8, 16], [32, 4], [0, 1], [0, 1], [0, 1], [16, 4]]
    assert res["fp16"]["fma"] and res["fp16"]["dtype"] == "torch.float16"
    assert res["fp16"]["err"] < 2e-2  # one fp16 rounding of values about 10
    assert res["long"]["max_k"] < 64 * 9 and not res["long"]["fma"]
    assert res["long"]["err"] < 1e-3
    for name, case in major.items():
        assert case["shape"] and case["contiguous"] and case["err"] < 1e-4, (name, case)
    # the interleaving pass runs only where the stride along w is above 1, and not for the
    # FMA kernel where it takes every phase in one launch: where a phase is empty (stride 5,
    # dilation 2, 3 taps along w: 2 of 5 phases), else a launch per phase
    assert major["(2, 3)-False"]["interleaved"] and major["(1, 5)-False"]["interleaved"]
    assert not major["(2, 1)-False"]["interleaved"]
    assert not major["(1, 5)-True"]["interleaved"] and major["(1, 5)-True"]["fma_launches"] == 1
    for st, phases in (("(2, 3)", 6), ("(3, 2)", 6), ("(2, 1)", 2)):
        assert major[f"{st}-True"]["fma_launches"] == phases, (st, major[f"{st}-True"])
    assert major["(2, 3)-True"]["interleaved"] and not major["(2, 1)-True"]["interleaved"]


def _conv(c: int, dtype: str = "float32", transposed: bool = False, stride: int = 1,
          kernel: int = 5, groups: int = 1, epilogue: str = "{}", padding: int = 2,
          size: tuple[int, int] = (12, 11)) -> str:
    """A KernelBench-shaped problem (module-level sizes, which the judge varies): a convolution
    to 16 channels (``c`` with groups), its result as ``epilogue`` writes it."""
    cls = "ConvTranspose2d" if transposed else "Conv2d"
    return ("class Model(nn.Module):\n"
            "    def __init__(self, c):\n        super().__init__()\n"
            f"        self.conv = nn.{cls}(c, {c if groups > 1 else 16}, {kernel}, "
            f"stride={stride}, padding={padding}, groups={groups}, dtype=torch.{dtype})\n\n"
            f"    def forward(self, x):\n        return {epilogue.format('self.conv(x)')}\n\n\n"
            f"batch = 2\nc = {c}\nh = {size[0]}\nw = {size[1]}\n\n\n"
            f"def get_inputs():\n    return [torch.rand(batch, c, h, w, dtype=torch.{dtype})]\n\n\n"
            "def get_init_inputs():\n    return [c]\n")


@pytest.mark.parametrize(("c", "dtype", "transposed", "stride", "kernel", "fma"), [
    (3, "float32", False, 1, 5, 1),      # an image's first layer
    (8, "float16", False, 2, 5, 1),      # 8 channels: 200 taps
    (16, "float32", False, 1, 5, 0),     # tunable (400 taps), the GEMM by default
    (32, "float32", False, 1, 5, None),  # 800 taps: the GEMM only
    (8, "float32", True, 2, 5, 1),       # a transposed phase: 8 x 9 taps
    (32, "float32", True, 5, 3, 1),      # KernelBench 81's shape of phase: 32 x 1 taps
    (32, "float32", True, 2, 3, 0),      # 79's: 32 x 4 taps
], ids=["3ch", "8ch-fp16", "16ch", "32ch", "transposed-8ch", "transposed-32ch",
        "transposed-32ch-stride2"])
def test_the_fma_kernel_is_the_default_for_narrow_short_reductions(tmp_path, c, dtype,
                                                                   transposed, stride, kernel,
                                                                   fma):
    """On an H200 the FMA kernel ran KernelBench's 3-channel convolutions 1.2-2.6x faster
    than the table with split once and the 8-channel transposed 72 and 75 1.5-2.1x faster;
    with 32 channels, 79 (4 taps a phase) slower than the GEMM, 81 (1 tap) faster."""
    plan = analyze(_problem(tmp_path, f"conv{c}_{dtype}_{transposed}",
                            _conv(c, dtype, transposed, stride, kernel)))
    assert plan.default_params().get("FMA") == fma
    assert ("FMA" in plan.space) == (fma is not None)
    if fma == 1:
        # a standard convolution's weights broadcast (W_BCAST); a transposed one with 8 or more
        # channels the 8 x 8 register tile, unless it runs in output order
        d = plan.default_params()
        assert d["W_BCAST"] == (0 if transposed else 1)
        tiled = transposed and c >= 8 and d.get("OUT_ROWS") != 1
        assert (d["SUB_M"], d["BLOCK_M"]) == ((8, 128) if tiled else (0, d["BLOCK_M"]))
    # phase-major output is a choice of transposed convolutions striding along w, off by default
    assert plan.default_params().get("PHASE_MAJOR") == (0 if transposed and stride > 1 else None)


@pytest.mark.slow
@pytest.mark.parametrize("point", [{"FMA": 1}, {"FMA": 1, "PHASE_MAJOR": 1},
                                   {"FMA": 0, "PHASE_MAJOR": 1}],
                         ids=["fma", "fma-phase-major", "gemm-phase-major"])
def test_fma_and_phase_major_candidates_are_verified(tmp_path, small_pool, point):
    """The rendered module through the judge (the interpreter's worker): correct at the traced
    sizes and on the other shapes it checks."""
    problem = _problem(tmp_path, "transposed8", _conv(8, "float32", True, 2, 5))
    plan = analyze(problem)
    params = {**plan.default_params(), "BLOCK_M": 32, "BLOCK_N": 16, **point}
    result = small_pool.evaluate(problem, plan.render(params))
    assert result.ok, f"{result.status}: {result.message}\n{result.stderr_tail[-2000:]}"
    assert any(c.name == "correct on other shapes" for c in result.checks)


@pytest.mark.slow
def test_broadcast_weights_are_verified(tmp_path, small_pool):
    """The default of a padded, strided 3-channel convolution (W_BCAST: the weights copied
    channels-innermost into whole channel tiles, loaded unmasked) through the judge: correct
    at the traced sizes, on the other shapes (other channel counts) and with NaN."""
    problem = _problem(tmp_path, "bcast3", _conv(3, "float32", False, 2, 3, padding=1))
    plan = analyze(problem)
    params = {**plan.default_params(), "BLOCK_M": 32, "BLOCK_N": 16}
    assert params["W_BCAST"] == 1 and params["FMA"] == 1
    source = plan.render(params)
    assert "W_BCAST = 1" in source
    result = small_pool.evaluate(problem, source)
    assert result.ok, f"{result.status}: {result.message}\n{result.stderr_tail[-2000:]}"
    names = {c.name for c in result.checks if c.passed}
    assert "correct on other shapes" in names and "NaN as the reference" in names, names


def test_bounds_left_out_with_padding_are_refused(tmp_path, small_pool):
    """The kernel leaves out its bounds only for a standard convolution without padding; a
    candidate that leaves them out with padding reads outside x, and the judge refuses it."""
    problem = _problem(tmp_path, "padded3", _conv(3, "float32", False, 1, 3, padding=1))
    plan = analyze(problem)
    source = plan.render({**plan.default_params(), "BLOCK_M": 32, "BLOCK_N": 16})
    rule = "IN_BOUNDS=not transposed and not any(pad)"
    assert plan.default_params()["FMA"] == 1 and source.count(rule) == 1
    result = small_pool.evaluate(problem, source.replace(rule, "IN_BOUNDS=True"))
    assert not result.ok, result.message


def _chain(c: int, transposed: bool = False, stride: int = 1, kernel: int = 3,
           groups: int = 1) -> str:
    """A level-2-shaped problem: a convolution, then an elementwise epilogue."""
    return _conv(c, "float32", transposed, stride, kernel, groups, "torch.relu({}) * 2.0", 1,
                 (9, 10))


@pytest.mark.parametrize(("c", "transposed", "stride", "groups", "fma"), [
    (8, False, 1, 1, 1),     # level 2's 8-channel chains (7, 57, 69, 71, 87)
    (3, False, 1, 1, 1),     # an image's first layer
    (32, False, 1, 1, 0),    # 288 taps: tunable, the GEMM by default
    (64, False, 1, 1, None),  # 576 taps: the GEMM only
    (32, True, 5, 1, 1),     # transposed, one tap a phase: 32 taps
    (32, True, 2, 1, 0),     # transposed, 4 taps a phase: 128
    (8, False, 1, 8, None),  # depthwise: the direct kernel, no GEMM
], ids=["8ch", "3ch", "32ch", "64ch", "transposed-32ch", "transposed-32ch-stride2",
        "depthwise"])
def test_a_fused_chain_tunes_the_fma_kernel_as_the_convolution_template_does(
        tmp_path, c, transposed, stride, groups, fma):
    """A convolution with an epilogue (``conv_nd`` inside the elementwise template) takes the
    FMA kernel on the same terms as a lone one: the call passes ``fma=FMA`` exactly when the
    plan tunes it (a NameError otherwise), on by default for at most 8 channels per group."""
    plan = analyze(_problem(tmp_path, f"chain{c}_{transposed}_{groups}",
                            _chain(c, transposed, stride, groups=groups)))
    assert plan.operator_class == "convolution", plan.description
    assert plan.default_params().get("FMA") == fma
    assert ("FMA" in plan.space) == (fma is not None)
    source = plan.render(plan.default_params())
    assert ("fma=FMA" in source) == (fma is not None)
    if fma:  # its tile: 64 positions x 64 channels, 2 warps (the epilogue's warps too)
        assert plan.default_params()["num_warps"] == 2
        assert "\nFMA = 1\n" in source


@pytest.mark.slow
def test_a_fused_chain_with_the_fma_kernel_is_verified(tmp_path, small_pool):
    """The 8-channel chain's default module (the FMA kernel, then the epilogue) through the
    judge in the interpreter's worker, on the traced sizes and the other shapes it checks."""
    problem = _problem(tmp_path, "chain8", _chain(8, stride=2))
    plan = analyze(problem)
    params = {**plan.default_params(), "BLOCK_M": 32, "BLOCK_N": 16}
    assert params["FMA"] == 1
    result = small_pool.evaluate(problem, plan.render(params))
    assert result.ok, f"{result.status}: {result.message}\n{result.stderr_tail[-2000:]}"
    assert any(c.name == "correct on other shapes" for c in result.checks)


_SWEEP = textwrap.dedent('''
    import json, os, random
    os.environ["TRITON_INTERPRET"] = "1"
    import torch, triton
    import triton.language as tl
    from kernelevolve.synth.offline.families.conv.template import DEFAULTS
    from kernelevolve.synth.offline.families.conv.source import KERNELS, LAUNCHER

    ns = {"torch": torch, "triton": triton, "tl": tl, **DEFAULTS, "BLOCK_M": 32,
          "BLOCK_N": 16, "BLOCK_K": 16, "NUM_WARPS": 4, "BLOCK_H": 1, "BLOCK_W": 64,
          "SUB_M": 0, "MAXNREG": 0, "W_BCAST": 0}
    exec(compile(KERNELS + "\\n\\n" + LAUNCHER, "<conv>", "exec"), ns)
    launched = []
    kernel = ns["conv_fma_kernel"]
    class Spy:
        def __getitem__(self, grid):
            launched.append(grid)
            return kernel[grid]
    ns["conv_fma_kernel"] = Spy()
    rng = random.Random(7)
    torch.manual_seed(7)
    rows = []
    for case in range(14):
        nd = rng.choice([1, 2, 2, 3])
        groups = rng.choice([1, 2])
        c_in, c_out_g = 2 * groups * rng.randint(1, 2), rng.randint(1, 5)
        k = [rng.randint(1, 4) for _ in range(nd)]
        st = [rng.randint(1, 5) for _ in range(nd)]
        dil = [rng.randint(1, 3) for _ in range(nd)]
        pad = [rng.randint(0, (d * (kk - 1)) // 2) for d, kk in zip(dil, k)]
        opad = [rng.randint(0, max(s, d) - 1) for s, d in zip(st, dil)]
        size = [rng.randint(1, 6) for _ in range(nd)]
        x = torch.randn(2, c_in, *size)
        w = torch.randn(c_in, c_out_g, *k)
        b = torch.randn(c_out_g * groups) if case % 2 else None
        f = getattr(torch.nn.functional, f"conv_transpose{nd}d")
        want = f(x, w, b, st, pad, opad, groups, dil)
        launched.clear()
        got = ns["conv_nd"](x, w, b, st, pad, dil, groups, True, opad, fma=True)
        # per dim, the phases and how many of them some tap reaches
        reached = [len({(p + d * t) % s for t in range(kk)}) for s, p, d, kk
                   in zip(st, pad, dil, k)]
        phases = 1
        for s_ in st:
            phases *= s_
        rows.append({"case": [nd, groups, c_in, k, st, dil, pad, opad, size],
                     "shape": got.shape == want.shape,
                     "err": float((got - want).abs().max()) if got.shape == want.shape else 1e9,
                     "launches": len(launched), "phases": phases,
                     "empty": any(r < s_ for r, s_ in zip(reached, st))})
    print(json.dumps(rows))
''')


def test_the_fma_kernel_takes_every_phase_of_random_transposed_convolutions():
    """Transposed convolutions drawn at random (1-3 dims; strides up to 5, dilations up to 3,
    which share factors or not; paddings, output paddings, groups, a bias or none) through the
    FMA kernel match torch in the interpreter: one launch taking every phase where some phase
    is empty (no window reaches it), else a launch per phase."""
    done = subprocess.run([sys.executable, "-c", _SWEEP], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(rows) == 14
    for row in rows:
        assert row["shape"] and row["err"] < 1e-4, row
        # one launch where a phase is empty, else one per phase the window reaches
        assert row["launches"] == 1 if row["empty"] else row["launches"] == row["phases"], row
    assert sum(row["empty"] for row in rows) >= 4  # both ways drawn
    assert sum(not row["empty"] for row in rows) >= 4


def test_a_reference_helper_named_like_a_template_helper_is_refused_by_name(tmp_path):
    """A candidate module holds the reference's helpers beside the templates' launchers in one
    namespace: a helper of the same name would silently replace one of them for every caller
    (as the elementwise template's ``_group_strides`` once replaced the convolution
    launcher's). The plan says which name instead of writing such a module."""
    from kernelevolve.synth.offline.plan import Unsupported

    body = _conv(3).replace(
        "class Model(nn.Module):",
        "def _tile_grid(c):\n    return c\n\n\nclass Model(nn.Module):").replace(
        "self.conv = nn.Conv2d(c,", "self.conv = nn.Conv2d(_tile_grid(c),")
    with pytest.raises(Unsupported, match="'_tile_grid' twice"):
        analyze(_problem(tmp_path, "clash", body))
    # the same helper under a name of its own is copied in and covered
    plan = analyze(_problem(tmp_path, "own", body.replace("_tile_grid", "_channels")))
    assert "def _channels(c):" in plan.render(plan.default_params())
