"""Check the example solutions against their problems on the CPU, through the Triton interpreter.

For every ``examples/solutions/NN_name.py`` this imports ``examples/problems/NN_name.py`` and the
solution from their files, shrinks the problem's module-level sizes until a problem's inputs and
parameters hold at most ``--limit`` elements, and compares ``ModelNew`` with ``Model`` on three
fresh random input sets for the shrunk sizes and for the same made odd, then on one more input set
with 37 for the largest size and 13 for the others. Problems without a solution only run their
reference at these sizes.
``--defaults`` instead runs every reference once at its default sizes with plain torch.

Usage: python examples/check_solutions.py [--defaults] [--limit N] [NAME ...]
"""

from __future__ import annotations

import os

# The interpreter must be chosen before triton (or any module with @triton.jit) is imported.
os.environ["TRITON_INTERPRET"] = "1"
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402
from types import ModuleType  # noqa: E402

import torch  # noqa: E402

HERE = Path(__file__).resolve().parent
PROBLEMS = HERE / "problems"
SOLUTIONS = HERE / "solutions"
TRIALS = 3  # input sets per size variant; the 37/13 variant, the slowest, gets one

# (atol, rtol) by output dtype; integer outputs must match exactly.
# References too slow to run once at default sizes on one CPU core (more than ~30 s).
SLOW_DEFAULTS = {
    "11_matmul_bf16": "bf16 GEMM at 4096^3: about 6 min on one core without native bf16",
}

TOLERANCES = {
    torch.float32: (1e-3, 1e-3),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (2e-2, 2e-2),
}


def load_module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def size_names(problem: ModuleType) -> list[str]:
    """Module-level integers >= 8: the sizes a harness may rescale."""
    return [
        name
        for name, value in vars(problem).items()
        if not name.startswith("_") and type(value) is int and value >= 8
    ]


def as_list(out: object) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return list(out)
    raise TypeError(f"forward returned {type(out).__name__}, not tensors")


def numel_of(problem: ModuleType) -> int:
    """Elements in the inputs plus the model's parameters and buffers."""
    inputs = problem.get_inputs()
    model = problem.Model(*problem.get_init_inputs())
    tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
    tensors += list(model.state_dict().values())
    return sum(t.numel() for t in tensors)


def cost(problem: ModuleType) -> int:
    # Meta tensors make the estimate free at default sizes; a get_inputs that reads data
    # (e.g. jagged offsets) falls back to real tensors.
    try:
        with torch.device("meta"):
            return numel_of(problem)
    except (NotImplementedError, RuntimeError):
        return numel_of(problem)


def shrink(problem: ModuleType, limit: int) -> dict[str, int]:
    """Halve every size above 8 together until the problem fits the limit, keeping the default
    shape's proportions; then cap any size at 8x the next largest, because the interpreter's time
    grows with the grid and a lopsided small shape exercises few tiles per program anyway."""
    names = size_names(problem)
    while cost(problem) > limit:
        shrinkable = [n for n in names if getattr(problem, n) > 8]
        if not shrinkable:
            break
        for n in shrinkable:
            setattr(problem, n, max(8, getattr(problem, n) // 2))
    while len(names) >= 2:
        first, second = sorted(names, key=lambda n: -getattr(problem, n))[:2]
        if getattr(problem, first) <= 8 * getattr(problem, second):
            break
        setattr(problem, first, getattr(problem, first) // 2)
    return {n: getattr(problem, n) for n in names}


def variants(problem: ModuleType, limit: int) -> list[tuple[str, dict[str, int], int]]:
    """The shrunk sizes, the same made odd, and 37 for the largest size with 13 for the rest."""
    shrunk = shrink(problem, limit)
    odd = {n: v if v % 2 else (v + 1 if v == 8 else v - 1) for n, v in shrunk.items()}
    largest = max(shrunk, key=lambda n: shrunk[n], default=None)
    mixed = {n: 37 if n == largest else 13 for n in shrunk}
    return [("shrunk", shrunk, TRIALS), ("odd", odd, TRIALS), ("37/13", mixed, 1)]


def apply(problem: ModuleType, sizes: dict[str, int]) -> None:
    for name, value in sizes.items():
        setattr(problem, name, value)


def compare(ref: list[torch.Tensor], out: list[torch.Tensor]) -> str | None:
    """None when the outputs agree, else why not."""
    if len(ref) != len(out):
        return f"{len(out)} outputs, expected {len(ref)}"
    for i, (r, o) in enumerate(zip(ref, out, strict=True)):
        if not isinstance(o, torch.Tensor):
            return f"output {i} is {type(o).__name__}"
        if o.shape != r.shape or o.dtype != r.dtype:
            return f"output {i}: {o.dtype}{list(o.shape)}, expected {r.dtype}{list(r.shape)}"
        if r.dtype in TOLERANCES:
            atol, rtol = TOLERANCES[r.dtype]
            if not torch.isfinite(o).all():
                return f"output {i} has NaN/Inf"
            if not torch.allclose(o, r, atol=atol, rtol=rtol):
                err = (o.float() - r.float()).abs().max().item()
                return f"output {i}: max abs error {err:.3g} (atol={atol}, rtol={rtol})"
        elif not torch.equal(o, r):
            wrong = (o != r).sum().item()
            return f"output {i}: {wrong} of {r.numel()} integers differ"
    return None


def check_variant(problem: ModuleType, solution: ModuleType | None, trials: int) -> str | None:
    torch.manual_seed(0)
    model = problem.Model(*problem.get_init_inputs())
    candidate = None
    if solution is not None:
        torch.manual_seed(0)
        candidate = solution.ModelNew(*problem.get_init_inputs())
        candidate.load_state_dict(model.state_dict(), strict=True)
    with torch.no_grad():
        for trial in range(trials):
            torch.manual_seed(1000 + trial)
            inputs = problem.get_inputs()
            ref = as_list(model(*inputs))
            if candidate is None:
                continue
            copies = [t.clone() if isinstance(t, torch.Tensor) else t for t in inputs]
            out = as_list(candidate(*copies))
            for i, (a, b) in enumerate(zip(inputs, copies, strict=True)):
                if isinstance(a, torch.Tensor) and not torch.equal(a, b):
                    return f"trial {trial}: candidate modified input {i}"
            why = compare(ref, out)
            if why is not None:
                return f"trial {trial}: {why}"
    return None


def check(stem: str, limit: int) -> bool:
    problem = load_module(PROBLEMS / f"{stem}.py", f"problem_{stem}")
    solution_path = SOLUTIONS / f"{stem}.py"
    solution = load_module(solution_path, f"solution_{stem}") if solution_path.exists() else None
    label = "solution" if solution is not None else "reference only"
    ok = True
    start = time.perf_counter()
    for name, sizes, trials in variants(problem, limit):
        apply(problem, sizes)
        t0 = time.perf_counter()
        try:
            why = check_variant(problem, solution, trials)
        except Exception:  # a failing candidate is a result to print, not a crash
            why = "raised:\n" + traceback.format_exc(limit=-3)
        status = "ok" if why is None else "FAIL"
        ok = ok and why is None
        shown = ", ".join(f"{k}={v}" for k, v in sizes.items())
        print(f"  {status:4} {name:7} {time.perf_counter() - t0:6.1f}s  {shown}")
        if why is not None:
            print("       " + why.replace("\n", "\n       "))
    verdict = "PASS" if ok else "FAIL"
    print(f"{verdict} {stem} ({label}) {time.perf_counter() - start:.1f}s\n", flush=True)
    return ok


def run_default(stem: str) -> None:
    if stem in SLOW_DEFAULTS:
        print(f"  {stem:28} skipped: {SLOW_DEFAULTS[stem]}", flush=True)
        return
    problem = load_module(PROBLEMS / f"{stem}.py", f"default_{stem}")
    torch.manual_seed(0)
    t0 = time.perf_counter()
    model = problem.Model(*problem.get_init_inputs())
    inputs = problem.get_inputs()
    t1 = time.perf_counter()
    with torch.no_grad():
        out = as_list(model(*inputs))
    t2 = time.perf_counter()
    shapes = " ".join(f"{o.dtype}{list(o.shape)}" for o in out)
    print(f"  {stem:28} setup {t1 - t0:5.1f}s  forward {t2 - t1:5.1f}s  -> {shapes}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="problem stems or prefixes (default: all)")
    parser.add_argument("--limit", type=int, default=65536, help="max input+parameter elements")
    parser.add_argument(
        "--defaults", action="store_true", help="only run the references at their default sizes"
    )
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

    stems = sorted(p.stem for p in PROBLEMS.glob("[0-9]*.py"))
    if args.names:
        stems = [s for s in stems if any(s.startswith(n) for n in args.names)]
    if args.defaults:
        print("references at default sizes (plain torch, CPU):")
        for stem in stems:
            run_default(stem)
        return 0
    failed = [s for s in stems if not check(s, args.limit)]
    print(
        f"{len(stems) - len(failed)}/{len(stems)} passed"
        + (f"; failed: {failed}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
