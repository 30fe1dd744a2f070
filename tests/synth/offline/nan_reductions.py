"""Run by tests/synth/offline/test_offline_nan_reductions.py (and tests/gpu/test_nan_gpu.py):
each problem's default offline candidate against its reference on inputs holding NaN, +inf and
-inf, on the device named by argv[1] ("cpu": Triton's interpreter, which must be on before
triton loads). Prints one JSON line: per problem, whether NaN and infinities land where the
reference puts them and the worst finite error, and whether the source combines with the
NaN-keeping max/min."""

import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path

if sys.argv[1] == "cpu":
    os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402

from kernelevolve.problem import load_problem  # noqa: E402
from kernelevolve.synth.offline import analyze  # noqa: E402

HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
FOOT = "\n\ndef get_init_inputs():\n    return []\n"
PROBLEMS = {  # name: (forward body, input shapes)
    "argmax": ("return torch.argmax(x, dim=1)", (4, 300, 6)),
    "argmin": ("return torch.argmin(x, dim=1)", (4, 300, 6)),
    "amax": ("return torch.max(x, dim=1)[0]", (4, 300, 6)),
    "amin_rows": ("return torch.min(x, dim=-1)[0]", (8, 200)),
    "max_all": ("return torch.max(x)", (64, 50)),
    "max_pool": ("return self.pool(x)", (2, 3, 16, 16)),
    "cumsum_exclusive": ("return torch.cumsum(x.narrow(1, 0, x.size(1) - 1), dim=1)", None),
    "masked_cumsum": ("return torch.cumsum(x * mask, dim=1)", (6, 300)),
    "softmax": ("return torch.softmax(x, dim=1)", (8, 300)),
    # over a middle dim (the strided template): 300 channels are five BLOCK_R tiles, so the
    # online max and sum rescale across tiles; NaN and +-inf land in several columns
    "softmax_channels": ("return torch.softmax(x, dim=1)", (4, 300, 6)),
    "logsumexp_channels": ("return torch.logsumexp(x, dim=1, keepdim=True)", (4, 300, 6)),
}
EXCLUSIVE = '''class Model(nn.Module):
    def forward(self, x):
        cumsum = torch.cumsum(x.narrow(dim=1, start=0, length=x.size(1) - 1), dim=1)
        return torch.cat((torch.zeros_like(x.select(1, 0).unsqueeze(1)), cumsum), dim=1)


def get_inputs():
    return [torch.rand(6, 300)]
'''


def source_for(name: str, body: str, shape) -> str:
    if name == "cumsum_exclusive":
        return HEAD + EXCLUSIVE + FOOT
    init = ("    def __init__(self):\n        super().__init__()\n        self.pool = nn.MaxPool2d("
            "kernel_size=3, stride=2, padding=1)\n\n" if name == "max_pool" else "")
    if name == "masked_cumsum":
        return (HEAD + f"class Model(nn.Module):\n    def forward(self, x, mask):\n        {body}"
                f"\n\n\ndef get_inputs():\n    return [torch.randn{tuple(shape)}, "
                f"torch.rand{tuple(shape)} > 0.5]\n" + FOOT)
    return (HEAD + f"class Model(nn.Module):\n{init}    def forward(self, x):\n        {body}\n\n\n"
            f"def get_inputs():\n    return [torch.randn{tuple(shape)}]\n" + FOOT)


def load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    dev = sys.argv[1]
    names = sys.argv[2:] or list(PROBLEMS)
    tmp = Path(tempfile.mkdtemp(prefix="nan_red_"))
    out = {}
    for name in names:
        body, shape = PROBLEMS[name]
        path = tmp / f"{name}.py"
        path.write_text(source_for(name, body, shape))
        plan = analyze(load_problem(path))
        source = plan.render(plan.default_params())
        cand_path = tmp / f"{name}_cand.py"
        cand_path.write_text(source)
        ref, cand = load(f"ref_{name}", path), load(f"cand_{name}", cand_path)
        torch.manual_seed(0)
        x, *rest = ref.get_inputs()
        flat = x.view(-1)
        # NaN early in one row and late in another; infinities elsewhere; one row has both
        for i, v in zip((5, flat.numel() // 2 + 7, 40, flat.numel() - 9, 41, 77),
                        (float("nan"),) * 2 + (float("inf"), float("-inf")) * 2, strict=True):
            flat[i] = v
        if name == "masked_cumsum":  # one NaN masked out: x * mask keeps it NaN
            rest[0].view(-1)[5] = False
            rest[0].view(-1)[flat.numel() // 2 + 7] = True
        want = ref.Model()(x, *rest)
        got = cand.ModelNew()(x.to(dev), *(r.to(dev) for r in rest)).cpu()
        if want.dtype.is_floating_point:
            fin = want.isfinite() & got.isfinite()
            out[name] = {
                "nan": bool(torch.equal(want.isnan(), got.isnan())),
                "n_nan": int(want.isnan().sum()),
                "inf": bool(torch.equal(want.isinf(), got.isinf())
                            and torch.equal(want[want.isinf()], got[got.isinf()])),
                "err": (float((want[fin] - got[fin]).abs().max())
                        / max(1.0, float(want[fin].abs().max()))) if fin.any() else 0.0,
            }
        else:
            out[name] = {"nan": bool(torch.equal(want, got)), "n_nan": -1,
                         "inf": bool(torch.equal(want, got)), "err": 0.0}
        out[name]["nan_combine"] = "max_nan" in source or "min_nan" in source
        out[name]["class"] = plan.operator_class
    print(json.dumps(out))


if __name__ == "__main__":
    main()
