"""Run one offline kernel twice at given params (for ncu): python3 one.py FILE '{"SUB_M": 8}'"""

import json
import sys
from pathlib import Path

import torch
from kernelevolve.llm.offline.analyze import analyze

from kernelevolve.problem import call_factory, load_problem

# the benchmarks' own candidate import (offline_variants_gpu._import)
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from offline_variants_gpu import _import as load  # noqa: E402

path = Path(sys.argv[1])
problem = load_problem(path)
plan = analyze(problem)
params = {**plan.default_params(), **json.loads(sys.argv[2])}
cand = load(plan.render(params), "cand")
module, model, init = problem.instantiate(seed=0)
torch.manual_seed(1)
with torch.device("cuda"):
    inputs = list(call_factory(module, "get_inputs", path))
new = cand.ModelNew(*init).cuda()
new.load_state_dict(model.state_dict(), strict=False)
with torch.no_grad():
    for _ in range(2):
        out = new(*inputs)
torch.cuda.synchronize()
print(params, out.shape)
