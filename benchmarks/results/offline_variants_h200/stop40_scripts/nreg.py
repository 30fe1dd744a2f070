"""FILE's offline kernel at each spec's params, with maxnreg R on the FMA launch: do_bench ms
and the largest difference from eager. python3 nreg.py FILE '[{"params": {...}, "maxnreg": R}]'"""

import json
import sys
from pathlib import Path

import torch
from kernelevolve.llm.offline.analyze import analyze
from triton.testing import do_bench

from kernelevolve.problem import call_factory, load_problem

# the benchmarks' own candidate import (offline_variants_gpu._import)
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from offline_variants_gpu import _import as load  # noqa: E402

path = Path(sys.argv[1])
problem = load_problem(path)
plan = analyze(problem)
module, model, init = problem.instantiate(seed=0)
model = model.cuda().eval()
torch.manual_seed(1)
with torch.device("cuda"):
    inputs = list(call_factory(module, "get_inputs", path))
torch.backends.cudnn.allow_tf32 = False
with torch.no_grad():
    want = model(*inputs)
    eager = do_bench(lambda: model(*inputs))
print("eager", round(eager, 3), flush=True)
for k, spec in enumerate(json.loads(sys.argv[2])):
    params = {**plan.default_params(), **spec.get("params", {})}
    src = plan.render(params)
    if spec.get("maxnreg"):
        old = "SUB_M=sub_m, SUB_N=sub_n,"
        assert old in src
        src = src.replace(old, old + f" maxnreg={spec['maxnreg']},")
    new = load(src, f"cand{k}").ModelNew(*init).cuda()
    new.load_state_dict(model.state_dict(), strict=False)
    with torch.no_grad():
        err = float((new(*inputs) - want).abs().max())
        ms = do_bench(lambda new=new: new(*inputs))
    print(json.dumps({"spec": spec, "ms": round(ms, 3), "vs_eager": round(eager / ms, 3),
                      "err": err}), flush=True)
