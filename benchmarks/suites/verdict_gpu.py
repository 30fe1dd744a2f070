"""The verdict on a GPU: cheating candidates that the timing path used to reward, and honest
candidates at KernelBench's own sizes, through the real harness (judge and candidate process).

Each row: the candidate, the verdict it must get, the verdict it got, the timing and what the
evaluation cost. Honest KernelBench kernels are the offline synthesizer's default renderings
(and a hand-written GroupNorm), so the scale-aware tolerance and the size families meet the real
sizes (a softmax over 393,216 columns, a 7.5 GB GroupNorm input).

    python benchmarks/suites/verdict_gpu.py --kernelbench ../shared/kernelbench --out /tmp/verdict
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import sys
import tempfile
import time
from pathlib import Path

import torch
import triton
from harness_gpu import fmt, result_row

from kernelevolve.config import EvalConfig
from kernelevolve.tools.harness.pool import WorkerPool

ROOT = Path(__file__).resolve().parents[2]
GPU_CHEATS = ROOT / "tests" / "adversarial" / "gpu"
EXAMPLES = ROOT / "examples" / "problems"
# (problem, candidate, verdicts it may get, what it tests)
CHEATS = [
    (EXAMPLES / "11_matmul_bf16.py", GPU_CHEATS / "memo_after_warmup_by_pointer.py",
     ("mismatch", "cheat", "ok"), "memo by data pointer from the 4th call on one buffer (passes "
     "the static rules): refused (a timed trial's output, or a forward that launched nothing "
     "once pointers repeat), or timed honestly"),
    (EXAMPLES / "11_matmul_bf16.py", GPU_CHEATS / "memo_matmul_last_inputs.py",
     ("cheat", "ok", "mismatch"), "memo on the last inputs' pointers and version counters"),
    (EXAMPLES / "11_matmul_bf16.py", GPU_CHEATS / "memo_matmul_by_version.py",
     ("cheat", "ok", "mismatch"), "memo dictionary keyed on version counters"),
    (EXAMPLES / "11_matmul_bf16.py", ROOT / "examples" / "solutions" / "11_matmul_bf16.py",
     ("ok",), "the honest GEMM the memos wrap (their honest time)"),
]
KB_HONEST = ["level1/19_ReLU", "level1/23_Softmax", "level1/24_LogSoftmax",
             "level1/26_GELU_", "level1/1_Square_matrix_multiplication_"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernelbench", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--render", type=Path, default=None,
                    help="rewrite the Markdown from this JSON with the current expectations")
    args = ap.parse_args()
    if args.render is not None:
        summary = json.loads(args.render.read_text())
        expected = {c.stem: e for _, c, e, _ in CHEATS}
        for row in summary["rows"]:
            row["expected"] = list(expected.get(row["candidate"], row["expected"]))
            row["as_expected"] = row["status"] in row["expected"]
        args.render.write_text(json.dumps(summary, indent=1))
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "verdict_gpu.md").write_text(render(summary))
        return 0
    if not torch.cuda.is_available():
        sys.exit("this benchmark needs a CUDA GPU")
    from kernelevolve.problem import load_problem
    from kernelevolve.synth import offline

    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="verdict-"))
    cases = list(CHEATS)
    cases.append((args.kernelbench / "level1" / "23_Softmax.py",
                  GPU_CHEATS / "softmax_constant_wide.py", ("mismatch",),
                  "writes 1/dim (~2.5e-6) everywhere: under an absolute 1e-4, above a scaled one"))
    cases.append((args.kernelbench / "level1" / "35_GroupNorm_.py",
                  ROOT / "tests" / "data" / "kernelbench" / "groupnorm_triton.py", ("ok",),
                  "honest GroupNorm at 112x64x512x512: other shapes keep channels % groups"))
    for name in KB_HONEST:
        problem = args.kernelbench / f"{name}.py"
        plan = offline.analyze(load_problem(problem))
        path = work / f"{problem.stem}_offline.py"
        path.write_text(plan.render(plan.default_params()))
        cases.append((problem, path, ("ok",), f"offline synthesizer default ({plan.description})"))
    rows = []
    t_all = time.perf_counter()
    with WorkerPool("cuda", EvalConfig()) as pool:
        for problem, candidate, expected, what in cases:
            print(f"== {problem.stem} / {candidate.stem}", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            r = pool.evaluate(problem, candidate)
            row = {"problem": problem.stem, "candidate": candidate.stem, "what": what,
                   "expected": list(expected), "as_expected": r.status.value in expected,
                   **result_row(r, time.perf_counter() - t0)}
            rows.append(row)
            print(json.dumps(row)[:600], flush=True)
            (args.out / "verdict_gpu.json").write_text(json.dumps(_summary(rows, t_all), indent=1))
    summary = _summary(rows, t_all)
    (args.out / "verdict_gpu.json").write_text(json.dumps(summary, indent=1))
    (args.out / "verdict_gpu.md").write_text(render(summary))
    print(render(summary))
    return 0 if all(r["as_expected"] for r in rows) else 1


def _summary(rows: list[dict], t_all: float) -> dict:
    return {
        "device": torch.cuda.get_device_name(0),
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "triton": triton.__version__, "cuda": torch.version.cuda},
        "command": "python " + " ".join(shlex.quote(a) for a in sys.argv),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "total_wall_s": time.perf_counter() - t_all,
        "rows": rows,
    }


def render(s: dict) -> str:
    lines = ["# The verdict on the GPU: timing-path cheats and honest KernelBench kernels", "",
             f"- device: {s['device']}", f"- versions: {s['versions']}",
             f"- command: `{s['command']}`", f"- date: {s['date']}", "",
             "| problem | candidate | expected | got | vs eager | vs compile | candidate ms | "
             "eval s | overhead s | what |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in s["rows"]:
        mark = "" if r["as_expected"] else " **(unexpected)**"
        lines.append(f"| {r['problem']} | {r['candidate']} | {'/'.join(r['expected'])} | "
                     f"{r['status']}{mark} | {fmt(r['speedup_vs_eager'], '.2f')} | "
                     f"{fmt(r['speedup_vs_compiled'], '.2f')} | {fmt(r['candidate_ms'], '.4f')} | "
                     f"{fmt(r['wall_s'], '.1f')} | {fmt(r['overhead_s'], '.1f')} | {r['what']} |")
    for r in s["rows"]:
        if r["status"] != "ok":
            lines.append(f"\n`{r['problem']} / {r['candidate']}`: {r['status']}: {r['message']}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
