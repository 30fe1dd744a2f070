"""KernelBench 69's shape at a batch (default 8) through the TMA GEMM (WINO=0) or the Winograd
kernel (WINO=1): a few forwards (ncu, filtered to ``conv_``, captures one) and do_bench's time.
Needs the Winograd kernel (wino.patch applied). On the device:

    ncu --kernel-name regex:conv_ --launch-skip 2 --launch-count 1 --section SpeedOfLight \\
        --section Occupancy --section LaunchStats --section WarpStateStats \\
        --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \\
        --section InstructionStats python3 prof69.py 1 8
"""

import sys
import tempfile
from pathlib import Path

import torch
from kernelevolve.llm.offline import analyze
from triton.testing import do_bench

from kernelevolve.problem import load_problem

sys.path.insert(0, ".")
from tests.rendered import conv_problem, load_rendered  # noqa: E402

wino = int(sys.argv[1])
batch = int(sys.argv[2]) if len(sys.argv) > 2 else 8
d = Path(tempfile.mkdtemp())
shape = (batch, 64, 128, 256)
conv = "nn.ConvTranspose2d(64, 128, (3, 5), bias=False)"
plan = analyze(load_problem(conv_problem(d / "p.py", conv, shape)))
params = {**plan.default_params(), "WINO": wino}
print(params)
model = load_rendered(plan, params, d / f"c{wino}.py").ModelNew().cuda()
x = torch.rand(*shape, device="cuda")
with torch.no_grad():
    for _ in range(3):
        model(x)
    torch.cuda.synchronize()
    print("ms", do_bench(lambda: model(x), warmup=20, rep=100))
