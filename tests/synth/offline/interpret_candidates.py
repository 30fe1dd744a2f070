"""Run the offline synthesizer's default candidate of each problem file given in Triton's
interpreter (``path@KEY=V,KEY=V``: the default with those parameters changed), in this fresh process (the interpreter must be on before triton is imported),
against the reference at the problem's sizes shrunk to 4096 input elements and at the harness'
other sizes. Prints one JSON object: problem path -> null (matches) or the failure."""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"

import importlib.util  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

from kernelevolve.problem import call_factory, load_problem  # noqa: E402
from kernelevolve.synth.offline import analyze  # noqa: E402


def check(arg: str, workdir: Path) -> str | None:
    path, _, changed = arg.partition("@")
    problem = load_problem(path)
    plan = analyze(problem)
    params = plan.default_params()
    for item in filter(None, changed.split(",")):
        key, value = item.split("=")
        if key not in params:
            return f"{key} is not a parameter of the plan ({sorted(params)})"
        params[key] = int(value)
    source = workdir / f"cand_{problem.name}.py"
    source.write_text(plan.render(params))
    spec = importlib.util.spec_from_file_location(f"cand_{problem.name}", source)
    assert spec is not None and spec.loader is not None
    candidate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(candidate)
    base = problem.shrink_sizes(1 << 12)
    other, why = problem.other_sizes(base)
    if other is None:
        return f"no other sizes: {why}"
    for sizes in (base, other):
        module = problem.module(sizes)
        init = call_factory(module, "get_init_inputs", problem.path)
        torch.manual_seed(0)
        reference = module.Model(*init)
        new = candidate.ModelNew(*init)
        new.load_state_dict(reference.state_dict())
        torch.manual_seed(1)
        inputs = call_factory(module, "get_inputs", problem.path)
        with torch.no_grad():
            try:
                torch.testing.assert_close(new(*inputs), reference(*inputs), rtol=1e-4,
                                           atol=1e-5)
            except AssertionError as exc:
                return f"at {sizes}: {exc}"
    return None


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        for path in sys.argv[1:]:
            try:
                results[path] = check(path, Path(tmp))
            except Exception as exc:  # reported per problem to the test, which fails on it
                results[path] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(results))


if __name__ == "__main__":
    main()
