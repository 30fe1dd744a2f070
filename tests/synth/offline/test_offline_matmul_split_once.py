"""The fp32 matmul's split-once mode (TF32X3 = 2, issue #17's >= 1.5x over cuBLAS SGEMM): a pass
writes each operand's TF32 high part and remainder, both rounded to nearest, into rows aligned to
16 elements, and the GEMM sums three plain TF32 products of loaded tiles. The split is checked
bit by bit in Triton's interpreter (nearest TF32 values, ties to even, infinities and NaNs kept,
no finite value carried to infinity); candidates in that mode match their references there
(2-D, batched, a linear layer's transposed weight, split-K, a K that is no multiple of 16) and
pass the real harness. The small products have an accumulator of their own, added after the
loop (on an H200, chained into the large one they drifted past the tolerance, and added to it
every k step they stalled the tensor cores); until that form is timed the mode is a point of the
search space, not a default."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from kernelevolve.problem import load_problem
from kernelevolve.synth.offline import analyze
from kernelevolve.synth.offline.families.matmul import SPLIT_ONCE_TILES, program_k, split_k
from tests.synth.offline.test_offline_analyze import PROBLEMS
from tests.synth.offline.test_offline_coverage import _interpreted
from tests.synth.offline.test_offline_matmul_split import LONG_K

_SPLIT_CHECK = textwrap.dedent('''
    import json, os
    os.environ["TRITON_INTERPRET"] = "1"
    import numpy as np
    import torch
    import triton
    import triton.language as tl
    from kernelevolve.synth.offline.families.matmul import _SPLIT_KERNEL, _SPLIT_LAUNCHER

    ns = {"torch": torch, "triton": triton, "tl": tl}
    exec(compile(_SPLIT_KERNEL + "\\n\\n" + _SPLIT_LAUNCHER, "<split>", "exec"), ns)
    torch.manual_seed(0)
    special = torch.tensor([float("inf"), -float("inf"), float("nan"), 3.4028235e38,
                            -3.4028235e38, 1e-40, -1e-45, 0.0, -0.0, 1.0 + 2.0 ** -11,
                            1.0 + 3 * 2.0 ** -11, 1.0 + 2.0 ** -11 + 2.0 ** -20])
    x = torch.randn(3, 7, 37) * torch.logspace(-20, 20, 37)
    x.view(-1)[:special.numel()] = special
    t = x.transpose(-1, -2)  # [3, 37, 7] with the last dim strided: the loads gather
    flag = torch.zeros(1, dtype=torch.int32)
    hi, lo = ns["split_tf32"](t, flag)
    plain = torch.zeros(1, dtype=torch.int32)
    hi2, lo2 = ns["split_tf32"](t[2], plain)  # 2-D, with only finite values
    large = torch.zeros(1, dtype=torch.int32)  # one NaN far into a 3-D operand's last program
    ns["split_tf32"](torch.ones(2, 300, 70).index_put_((torch.tensor(1), torch.tensor(299),
                                                        torch.tensor(69)),
                                                       torch.tensor(float("nan"))), large)
    bits = hi.contiguous().view(torch.int32)
    print(json.dumps({
        "shape": list(hi.shape), "row_stride": hi.stride(-2),
        "low_bits": int((bits & 0x1FFF).abs().max()),
        "lo_low_bits": int((lo.contiguous().view(torch.int32) & 0x1FFF).abs().max()),
        "flags": [int(flag), int(plain), int(large)],
        "two_d_same": all(torch.allclose(u, v, rtol=0, atol=0, equal_nan=True)
                          for u, v in ((hi2, hi[2]), (lo2, lo[2]))),
        "pad_zero": bool((hi[..., 7:] == 0).all() and (lo[..., 7:] == 0).all()),
        "hi": hi[..., :7].double().flatten().tolist(),
        "lo": lo[..., :7].double().flatten().tolist(),
        "x": t.double().flatten().tolist()}))
''')


def _tf32_neighbours(v: float) -> tuple[float, float]:
    """The TF32 values just below and above |v| (sign restored) by bit arithmetic."""
    import struct

    bits = struct.unpack("<I", struct.pack("<f", v))[0]
    down = bits & 0xFFFFE000
    up = down + 0x2000
    f = lambda b: struct.unpack("<f", struct.pack("<I", b & 0xFFFFFFFF))[0]  # noqa: E731
    return f(down), f(up)


def test_the_split_is_the_nearest_tf32_value_and_its_rounded_remainder():
    done = subprocess.run([sys.executable, "-c", _SPLIT_CHECK], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    r = json.loads(done.stdout.strip().splitlines()[-1])
    # rows padded with zeros to 16 elements (the GEMM runs K there: zeros times zeros)
    assert r["shape"] == [3, 37, 16] and r["row_stride"] == 16 and r["pad_zero"]
    assert r["low_bits"] == 0 and r["lo_low_bits"] == 0  # both parts are TF32 values
    assert r["two_d_same"]
    assert r["flags"] == [1, 0, 1]  # set where an operand holds an infinity or NaN
    inf = float("inf")
    for x, hi, lo in zip(r["x"], r["hi"], r["lo"], strict=True):
        if x != x:  # NaN stays NaN, with no remainder
            assert hi != hi and lo == 0.0
            continue
        if abs(x) == inf:
            assert hi == x and lo == 0.0
            continue
        assert abs(hi) != inf, x  # never carried to infinity
        down, up = _tf32_neighbours(x)
        assert hi in (down, up), (x, hi)
        # nearest: no farther than the other neighbour (the float max truncates instead)
        if abs(x) < 3.4e38:
            assert abs(x - hi) <= abs(x - (up if hi == down else down)), (x, hi)
        # the remainder: what is left after it, at most 2^-11 of the remainder itself (or, among
        # fp32's subnormals, TF32's quantum 2^-136 there)
        assert abs((x - hi) - lo) <= abs(x - hi) * 2.0 ** -11 + 2.0 ** -136, (x, hi, lo)
    # ties go to even: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10 (even: 1); 1 + 3 * 2^-11
    # between 1 + 2^-10 (odd) and 1 + 2^-9 (even)
    pairs = dict(zip(r["x"], r["hi"], strict=True))
    assert pairs[1.0 + 2.0 ** -11] == 1.0
    assert pairs[1.0 + 3 * 2.0 ** -11] == 1.0 + 2.0 ** -9
    assert pairs[1.0 + 2.0 ** -11 + 2.0 ** -20] == 1.0 + 2.0 ** -10  # past the tie: up


BATCHED = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return torch.bmm(a, b)


batch = 3
m = 40
k = 37
n = 24


def get_inputs():
    return [torch.randn(batch, m, k), torch.randn(batch, k, n)]


def get_init_inputs():
    return []
'''


@pytest.mark.parametrize("mode", [2, 3])
def test_split_once_candidates_match_their_references_in_the_interpreter(tmp_path, mode):
    """Both forms: both operands split (2), or b only with a's parts taken in the kernel (3)."""
    (tmp_path / "long_k.py").write_text(LONG_K)
    (tmp_path / "batched.py").write_text(BATCHED)
    (tmp_path / "chains.py").write_text(BATCHED.replace("batch = 3", "batch = 1").replace(
        "k = 37", "k = 2100"))
    tiles = f"TF32X3={mode},BLOCK_M=32,BLOCK_N=32,BLOCK_K=16,num_stages=2"
    _interpreted([f"{PROBLEMS / '10_linear_bias_gelu.py'}@{tiles}",  # x @ W^T, bias, GELU
                  f"{tmp_path / 'batched.py'}@{tiles}",  # K = 37: masked, padded rows
                  f"{tmp_path / 'long_k.py'}@{tiles},SPLIT_K=4",  # split-K over split parts
                  # K = 32768 a program: 8 chains (the most) of 4096
                  f"{tmp_path / 'long_k.py'}@{tiles},SPLIT_K=1",
                  # K = 2100 in chains of 704, 704 and 692 (masked) k, each from zero
                  f"{tmp_path / 'chains.py'}@{tiles},CHAIN_K=1024"])


def test_split_once_is_the_default_where_it_measured_faster(kernelbench):
    """On an H200 split once beat tf32x3 in the kernel on the level-1 GEMMs except K = 32 (9,
    one k step): it keeps tf32x3, as do 16-bit GEMMs (no split). K = 2949 (8) is split once,
    its rows padded with zeros to 2960 and K run there (3.1 ms against 4.4). Where a's
    tiles meet at most 16 columns of output tiles only b is split (3): it measured faster on 3,
    6, 10, 11 (2-16 columns) and slower on the 4096^2 ones (32)."""
    level1 = kernelbench / "level1"

    def default(name: str) -> int | None:
        return analyze(load_problem(level1 / name)).default_params().get("TF32X3")

    assert default("1_Square_matrix_multiplication_.py") == 2
    assert default("17_Matmul_with_transposed_B.py") == 2
    assert default("3_Batched_matrix_multiplication.py") == 3  # N = 2048: 16 columns
    assert default("6_Matmul_with_large_K_dimension_.py") == 3
    assert default("11_4D_tensor_matrix_multiplication.py") == 3
    assert default("8_Matmul_with_irregular_shapes_.py") == 2  # K = 2949: padded to 2960
    assert default("9_Tall_skinny_matrix_multiplication_.py") == 1
    assert analyze(load_problem(PROBLEMS / "11_matmul_bf16.py")).default_params().get(
        "TF32X3") is None


def test_one_k_step_gemms_visit_the_output_tiles_in_row_order(kernelbench, tmp_path):
    """Where K fits one k step the output's stores are the work: GROUP_M 1 and, for fp32, a
    64 x 128 tile in one stage (KernelBench 9 on an H200: 1.91 ms against 2.59 grouped at
    128 x 128 in three); longer K keeps grouped tiles for L2 reuse. (9 itself now starts on
    the persistent kernel, ``test_offline_matmul_persistent.py``; this is the per-tile kernel's
    start where TMA cannot store the output's rows: N = 4098.)"""
    level1 = kernelbench / "level1"
    odd = tmp_path / "tall_skinny_odd_n.py"
    odd.write_text((level1 / "9_Tall_skinny_matrix_multiplication_.py").read_text()
                   .replace("torch.rand(N, M)", "torch.rand(N, M + 2)"))
    plan = analyze(load_problem(odd))
    params = plan.default_params()
    assert params["PERSISTENT"] == 0 and params["GROUP_M"] == 1  # K = 32
    assert {k: params[k] for k in ("BLOCK_M", "BLOCK_N", "num_warps", "num_stages")} == {
        "BLOCK_M": 64, "BLOCK_N": 128, "num_warps": 4, "num_stages": 1}
    assert plan.feasible(params) is None

    def group(name: str) -> int:
        return analyze(load_problem(level1 / name)).default_params()["GROUP_M"]

    assert group("1_Square_matrix_multiplication_.py") == 8


def test_split_once_fits_shared_memory_and_registers(kernelbench):
    square = analyze(load_problem(kernelbench / "level1" / "1_Square_matrix_multiplication_.py"))
    params = square.default_params()
    assert params["TF32X3"] == 2 and {0, 1} <= set(square.space["TF32X3"])
    split = {**params, **SPLIT_ONCE_TILES}
    assert square.feasible(split) is None
    source = square.render(split)
    assert "a, a_lo = split_tf32(a, special)" in source
    assert 'input_precision="tf32")' in source and "for c in tl.static_range(CHAINS):" in source
    assert "redo = flag != 0" in source and "if redo:" in source  # the FMA path for inf / NaN
    # chains of at most CHAIN_K, at least two from K = 4096 on, at most MAX_CHAINS
    assert "chains = min(max(triton.cdiv(k_range, CHAIN_K), 1 + (k_range >= 4096)), 8)" in source
    assert "CHAIN_K = 4096" in source
    # four tiles a k step, in every stage: 128 x 256 x 32 in three stages needs 288 KB
    why = square.feasible({**split, "BLOCK_N": 256, "num_stages": 3})
    assert why is not None and "shared memory" in why
    assert square.feasible({**split, "BLOCK_N": 256, "num_stages": 3, "TF32X3": 1}) is None
    # two accumulators (the sum, a chain's): 128 x 128 needs 8 warps
    why = square.feasible({**split, "num_warps": 4})
    assert why is not None and "accumulators" in why


def test_split_once_chains_are_capped_and_split_k_shortens_them(kernelbench):
    """K = 524288 (KernelBench 6): one program's range would need 128 chains of 4096; with the
    K split 32 ways each range is 4 chains."""
    long_k = analyze(load_problem(kernelbench / "level1" / "6_Matmul_with_large_K_dimension_.py"))
    params = {**long_k.default_params(), **SPLIT_ONCE_TILES}
    why = long_k.feasible({**params, "SPLIT_K": 1})
    assert why is not None and "split K further" in why
    assert long_k.feasible({**params, "SPLIT_K": 16}) is None  # 8 chains of 4096
    why = long_k.feasible({**params, "SPLIT_K": 16, "CHAIN_K": 2048})
    assert why is not None and "CHAIN_K = 2048" in why
    # the default splits until a program sums at most two chains (on an H200 the GEMM ran
    # 0.80 ms as 64 splits of two chains, 1.77 as 32 of four)
    default = long_k.default_params()
    assert default["TF32X3"] == 3 and default["SPLIT_K"] == 64
    assert program_k(524288, 64, default["BLOCK_K"]) == 2 * default["CHAIN_K"]
    # without split once the split stops once the GPU is full (4 tiles x 32 programs)
    assert split_k(long_k.template.spec, {**default, "TF32X3": 1}) == 32


_INF_CHECK = textwrap.dedent('''
    import importlib.util, json, os, sys
    os.environ["TRITON_INTERPRET"] = "1"
    import torch
    spec = importlib.util.spec_from_file_location("cand", sys.argv[1])
    cand = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cand)
    torch.manual_seed(0)
    a, b = torch.randn(3, 40, 37), torch.randn(3, 37, 24)
    # exact TF32 values (remainder 0: inf * 0 is NaN) and values whose remainder has the other
    # sign (inf * lo is an infinity against the large sum's)
    b[0, 5, :12] = 1.0
    b[0, 5, 12:] = torch.tensor([1.0 + 2.0 ** -11 + 2.0 ** -14, -(1.0 + 2.0 ** -11 + 2.0 ** -14)]
                                ).repeat(6)
    a[0, 2, 5] = float("inf")
    a[1, 3, 7] = float("nan")
    got, want = cand.ModelNew()(a, b), torch.bmm(a, b)
    print(json.dumps({"same": bool(torch.allclose(got, want, rtol=1e-5, atol=1e-5,
                                                  equal_nan=True)),
                      "inf_row": got[0, 2].tolist(), "want_inf_row": want[0, 2].tolist()}))
''')


@pytest.mark.parametrize("mode", [2, 3])
def test_an_infinite_input_gives_what_the_reference_gives(tmp_path, mode):
    """An infinite a element: split once, its high part is infinite and its remainder 0, so
    its products with b's remainders are NaN (inf * 0) or an infinity of the remainder's sign,
    against the large sum's; taken in the kernel (3), its remainder inf - inf is NaN. Either
    way the program sums its range again on the FMA units, so the row is the reference's
    infinities, not NaN."""
    path = tmp_path / "batched.py"
    path.write_text(BATCHED)
    plan = analyze(load_problem(path))
    source = tmp_path / "cand.py"
    source.write_text(plan.render({**plan.default_params(), "TF32X3": mode, "BLOCK_M": 32,
                                   "BLOCK_N": 32, "BLOCK_K": 16, "num_stages": 2}))
    done = subprocess.run([sys.executable, "-c", _INF_CHECK, str(source)], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    r = json.loads(done.stdout.strip().splitlines()[-1])
    assert r["same"], (r["inf_row"], r["want_inf_row"])
    assert any(abs(v) == float("inf") for v in r["want_inf_row"])


@pytest.mark.parametrize("mode", [2, 3])
def test_a_split_once_candidate_is_verified(tmp_path, small_pool, mode):
    path = tmp_path / "batched.py"
    path.write_text(BATCHED)
    problem = load_problem(path)
    plan = analyze(problem)
    source = plan.render({**plan.default_params(), "TF32X3": mode, "BLOCK_M": 32, "BLOCK_N": 32,
                          "BLOCK_K": 16, "num_stages": 2})
    result = small_pool.evaluate(problem, source)
    assert result.ok, f"{result.status}: {result.message}\n{result.stderr_tail[-2000:]}"
    assert any(c.name == "correct on other shapes" for c in result.checks)
