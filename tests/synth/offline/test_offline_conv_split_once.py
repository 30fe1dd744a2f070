"""Split once for the convolutions' implicit GEMMs (TF32X3 = 2, tf32.py): a pass writes x (or
its channels-last copy) and the K-major weight copy as TF32 high parts and remainders, in the
same layout, and the GEMM sums three plain TF32 products of loaded tiles. Checked in Triton's
interpreter: the dense split (bits, layout kept, a strided input made contiguous, the
infinity/NaN flag) and convolutions whose input holds infinities and NaNs, which take the FMA
path and give torch's values; in both input layouts and a transposed convolution's phases."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from kernelevolve.synth.offline import analyze
from tests.synth.offline.test_offline_coverage import _problem

_CHECK = textwrap.dedent('''
    import json, os
    os.environ["TRITON_INTERPRET"] = "1"
    import torch
    import triton
    import triton.language as tl
    from kernelevolve.synth.offline.families.conv.template import DEFAULTS
    from kernelevolve.synth.offline.families.conv.source import KERNELS, LAUNCHER

    ns = {"torch": torch, "triton": triton, "tl": tl, **DEFAULTS, "BLOCK_M": 32,
          "BLOCK_N": 16, "BLOCK_K": 16, "NUM_WARPS": 4, "BLOCK_H": 1, "BLOCK_W": 64,
          "SUB_M": 0, "MAXNREG": 0, "W_BCAST": 0}
    exec(compile(KERNELS + "\\n\\n" + LAUNCHER, "<conv>", "exec"), ns)
    torch.manual_seed(0)
    out = {}
    # the dense split: a channels-last (permuted) tensor keeps its layout
    x = torch.randn(2, 5, 3, 4).permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
    x.reshape(-1)[:3] = torch.tensor([1.0 + 2.0 ** -11, 3.4028235e38, -1e-40])
    flag = torch.zeros(1, dtype=torch.int32)
    hi, lo = ns["split_dense"](x, flag)
    out["layout_kept"] = hi.stride() == x.stride() and lo.stride() == x.stride()
    out["hi_low_bits"] = int((hi.contiguous().view(torch.int32) & 0x1FFF).abs().max())
    out["lo_low_bits"] = int((lo.contiguous().view(torch.int32) & 0x1FFF).abs().max())
    rel = ((hi.double() + lo.double() - x.double()).abs() / x.double().abs().clamp_min(1e-30))
    out["max_rel"] = float(rel.max())
    out["finite_flag"] = int(flag)
    strided = torch.randn(4, 6)[:, ::2]
    hi_s, _ = ns["split_dense"](strided, flag)
    out["strided_contiguous"] = hi_s.is_contiguous() and torch.equal(
        hi_s, ns["split_dense"](strided.contiguous(), flag)[0])
    # the channels-last copy in one pass, plain and split, and x already channels-last
    x5 = torch.randn(2, 5, 3, 4, 6)
    x5[1, 3, 2, 1, 0] = float("nan")
    plain, same = ns["channels_last_parts"](x5, None, False)
    flag = torch.zeros(1, dtype=torch.int32)
    hi, lo = ns["channels_last_parts"](x5, flag, True)
    cl = x5.permute(0, 2, 3, 4, 1).contiguous().permute(0, 4, 1, 2, 3)
    out["cl_plain"] = (same is plain and plain.stride() == cl.stride()
                       and torch.equal(plain.nan_to_num(), x5.nan_to_num()))
    out["cl_split"] = (hi.stride() == cl.stride() and lo.stride() == cl.stride()
                       and torch.equal(hi.nan_to_num(), ns["split_dense"](cl, flag)[0].nan_to_num())
                       and bool((hi + lo - x5).nan_to_num().abs().max() < 1e-6))
    out["cl_flag"] = int(flag)
    xs = ns["_GemmInput"](cl, True, False)
    out["cl_kept"] = xs.get()[0] is cl
    # convolutions with an infinity and a NaN in x: the FMA path, torch's values
    x = torch.randn(2, 4, 7, 9)
    x[0, 1, 3, 4] = float("inf")
    x[1, 2, 5, 1] = float("nan")
    w = torch.randn(6, 4, 3, 3)
    b = torch.randn(6)
    cases = {}
    for layout in (0, 1, 2):
        got = ns["conv_nd"](x, w, b, 1, 1, 1, 1, False, 0, tf32x3=2, channels_last=layout)
        want = torch.nn.functional.conv2d(x, w, b, padding=1)
        cases[f"conv_{layout}"] = torch.allclose(got, want, rtol=1e-4, atol=1e-4,
                                                 equal_nan=True)
    wt = torch.randn(4, 3, 3, 3)
    got = ns["conv_nd"](x, wt, None, 2, 1, 1, 1, True, 1, tf32x3=2, channels_last=0)
    want = torch.nn.functional.conv_transpose2d(x, wt, None, 2, 1, 1)
    cases["transposed"] = torch.allclose(got, want, rtol=1e-4, atol=1e-4, equal_nan=True)
    finite = torch.randn(2, 4, 7, 9)
    got = ns["conv_nd"](finite, w, b, 2, 0, 1, 1, False, 0, tf32x3=2, channels_last=1)
    want = torch.nn.functional.conv2d(finite, w, b, stride=2)
    cases["finite"] = torch.allclose(got, want, rtol=1e-5, atol=1e-5)
    out["cases"] = cases
    print(json.dumps(out))
''')


def test_split_once_convolutions_match_torch_in_the_interpreter():
    done = subprocess.run([sys.executable, "-c", _CHECK], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    res = json.loads(done.stdout.strip().splitlines()[-1])
    assert res["layout_kept"] and res["strided_contiguous"]
    assert res["hi_low_bits"] == 0 and res["lo_low_bits"] == 0  # both parts are TF32 values
    assert res["max_rel"] < 2.0 ** -21  # x = hi + lo to about 2^-22
    assert res["finite_flag"] == 0  # no infinity or NaN in that input
    # the channels-last copy: x's values, the layout a permuted copy has, split or not; a NaN
    # sets the flag; an x already channels-last is read as it is
    assert res["cl_plain"] and res["cl_split"] and res["cl_flag"] == 1 and res["cl_kept"]
    assert res["cases"] == {"conv_0": True, "conv_1": True, "conv_2": True, "transposed": True,
                            "finite": True}, res["cases"]


def _first_layer(c: int, dtype: str, groups: int = 1) -> str:
    return ("class Model(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n"
            f"        self.conv = nn.Conv2d({c}, 32, 5, padding=2, groups={groups}, "
            f"dtype=torch.{dtype})\n\n"
            "    def forward(self, x):\n        return self.conv(x)\n\n\n"
            f"def get_inputs():\n    return [torch.rand(2, {c}, 12, 12, dtype=torch.{dtype})]\n\n\n"
            "def get_init_inputs():\n    return []\n")


@pytest.mark.parametrize(("c", "dtype", "layout", "tf32x3", "block_k"),
                         [(3, "float32", 0, 2, 16), (8, "float32", 2, 1, 16),
                          (3, "float16", 2, None, 16), (32, "float32", 1, 1, 32)],
                         ids=["fp32-3ch", "fp32-8ch", "fp16-3ch", "fp32-32ch"])
def test_narrow_fp32_convolutions_default_to_the_table_with_split_once(tmp_path, c, dtype,
                                                                       layout, tf32x3, block_k):
    """On an H200 the table with split once ran KernelBench's 3-channel convolutions 1.1-1.5x
    faster than the runs along rows, and level 2's 8-channel ones 1.4-2.1x slower; 16-bit
    convolutions have no split and keep the runs; from 16 channels, channels-last."""
    params = analyze(_problem(tmp_path, f"conv{c}_{dtype}", _first_layer(c, dtype)))
    default = params.default_params()
    assert (default["CHANNELS_LAST"], default.get("TF32X3"), default["BLOCK_K"]) == (
        layout, tf32x3, block_k)
