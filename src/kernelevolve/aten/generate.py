"""``kernelevolve aten generate``: KernelBench-format problems from PyTorch's OpInfo database.

For every selected operator the OpInfo's CPU samples for the dtype are tried, largest first; a
sample becomes a problem when its call, rendered as ``Model.forward``, reproduces the OpInfo's
own op on the sample's tensors, and the scaled file's reference runs (on the meta device for the
sizes, then for real) with finite outputs. Each problem records its source in its docstring;
``suite.json`` lists the problems and every operator left out, with the reason.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel, Field

from kernelevolve import __version__
from kernelevolve.aten.ops import CLASSES, CURATED, CURATED_BY_KEY, OpSpec, skip_reason
from kernelevolve.aten.sample import (
    Described,
    SampleUnsupported,
    Scaling,
    describe,
    exec_source,
    forward_on,
    render,
    scalings,
)
from kernelevolve.errors import ConfigError, ProblemError

MANIFEST = "suite.json"
# Target elements of the largest input (or output) after scaling, per class: a few million
# for memory-bound ops, about 1024x1024 operands for the matmul family.
TARGET_ELEMENTS = {"matmul": 1 << 20, "convolution": 1 << 20, "pooling": 1 << 21}
DEFAULT_TARGET = 1 << 22
# Samples tried per operator before it is reported as having none that fits.
MAX_TRIES = 12
_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
           "float64": torch.float64, "int64": torch.int64, "int32": torch.int32,
           "bool": torch.bool}


class GeneratedProblem(BaseModel):
    """One problem file of a suite."""

    file: str
    op: str = Field(description="OpInfo name, with '.variant' when it has one")
    op_class: str
    sample: int = Field(description="index of the sample among the OpInfo's samples")
    noncontiguous: bool = Field(False, description="the sample made non-contiguous by "
                                                   "OpInfo's SampleInput.noncontiguous()")
    n_samples: int
    dtype: str
    scaling: str
    sizes: dict[str, int]
    structure: list[str] = Field(default_factory=list,
                                 description="broadcast, non-contiguous, 0-dim, scalar argument")


class SkippedOp(BaseModel):
    op: str
    reason: str


class Suite(BaseModel):
    """What ``generate`` wrote: the problems and the operators left out."""

    out_dir: str
    dtype: str
    torch_version: str
    kernelevolve_version: str = __version__
    created: str
    problems: list[GeneratedProblem]
    skipped: list[SkippedOp]

    def classes(self) -> dict[str, int]:
        counts = {c: 0 for c in CLASSES}
        for p in self.problems:
            counts[p.op_class] = counts.get(p.op_class, 0) + 1
        return counts


def load_op_db() -> list[Any]:
    """PyTorch's OpInfo list; a clear error naming the fix when ``expecttest`` is missing."""
    try:
        import expecttest  # noqa: F401  (torch's testing internals import it)
    except ImportError as exc:
        raise ConfigError(
            "generating the ATen suite needs the `expecttest` package (PyTorch's OpInfo "
            "database imports it): pip install expecttest, or install kernelevolve with its "
            "aten extra") from exc
    from torch.testing._internal.common_methods_invocations import op_db

    return list(op_db)


def op_key(info: Any) -> str:
    return f"{info.name}.{info.variant_test_name}" if info.variant_test_name else info.name


def _resolve(name: str) -> Any:
    obj: Any = torch
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def call_forms(info: Any, spec: OpSpec | None = None) -> list[tuple[str, bool]]:
    """(callee, is_method) forms for the op, most faithful first."""
    forms: list[tuple[str, bool]] = [(spec.call, False)] if spec and spec.call else []
    fn = _resolve(info.name)
    if fn is not None and fn is info.op:
        forms.append((f"torch.{info.name}", False))
    method = getattr(info.method_variant, "__name__", None)
    if method:
        forms.append((method, True))
    if fn is not None and callable(fn) and fn is not info.op:
        forms.append((f"torch.{info.name}", False))
    return forms


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        return bool(torch.equal(a, b)) or (a.dtype.is_floating_point
                                          and bool(torch.allclose(a, b, equal_nan=True)))
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return False


def _tensors_out(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, list | tuple) and value:
        out = [t for v in value for t in _tensors_out(v)]
        if len(out) >= len(value):
            return out
    raise SampleUnsupported(f"the op returns {type(value).__name__}, not tensors")


def _sample_tensors(sample: Any) -> list[torch.Tensor]:
    out: list[torch.Tensor] = []

    def visit(v: Any) -> None:
        if isinstance(v, torch.Tensor):
            out.append(v)
        elif isinstance(v, list | tuple) and not isinstance(v, torch.Size):
            for x in v:
                visit(x)

    visit(sample.input)
    for a in sample.args:
        visit(a)
    for v in sample.kwargs.values():
        visit(v)
    return out


def _fits(namespace: dict[str, Any], limit: int) -> bool:
    with torch.device("meta"):
        inputs = namespace["get_inputs"]()
        try:
            outs = _tensors_out(forward_on(namespace, inputs))
        except (NotImplementedError, RuntimeError):
            return True  # no meta kernel (or it reads values): the real run below decides
    largest = max([t.numel() for t in inputs] + [t.numel() for t in outs])
    return largest <= limit


def _real_run(namespace: dict[str, Any], limit: int) -> None:
    torch.manual_seed(0)
    inputs = namespace["get_inputs"]()
    outs = _tensors_out(forward_on(namespace, inputs))
    if max(t.numel() for t in outs) > limit:
        raise SampleUnsupported("the scaled problem's output is too large")
    for t in outs:
        if t.is_complex():
            raise SampleUnsupported("the op returns a complex tensor")
        if t.dtype.is_floating_point and not bool(torch.isfinite(t).all()):
            raise SampleUnsupported("the reference's output is not finite on generated inputs")


def _docstring(info: Any, spec: OpSpec, index: int, n: int, dtype: str, sample: Any,
               scaling: Scaling, nc: bool = False) -> str:
    def show(v: Any) -> str:
        if isinstance(v, torch.Tensor):
            layout = "" if v.is_contiguous() else f", strides {tuple(v.stride())}"
            return f"tensor{tuple(v.shape)} {str(v.dtype).replace('torch.', '')}{layout}"
        if isinstance(v, list | tuple) and not isinstance(v, torch.Size):
            inner = ", ".join(show(x) for x in v)
            return f"[{inner}]" if isinstance(v, list) else f"({inner})"
        return repr(v)

    kwargs = ", ".join(f"{k}={show(v)}" for k, v in sample.kwargs.items()) or "none"
    return (f"ATen operator `{op_key(info)}` ({spec.op_class}), generated by kernelevolve aten.\n\n"
            f"Source: PyTorch {torch.__version__} OpInfo `{info.name}`"
            + (f" (variant `{info.variant_test_name}`)" if info.variant_test_name else "")
            + f", sample {index} of {n} for {dtype} on cpu"
            + (" made non-contiguous (SampleInput.noncontiguous())" if nc else "") + ".\n"
            f"Sample: input {show(sample.input)}; args {show(list(sample.args))}; "
            f"kwargs {kwargs}.\nSizes: {scaling.note}.")


def _features(sample: Any) -> frozenset[str]:
    """The structure a sample shows: broadcasting, non-contiguous, scalar arguments."""
    ts = _sample_tensors(sample)
    out = set()
    shapes = {t.shape for t in ts if t.is_floating_point()}
    if len(shapes) > 1:
        try:
            torch.broadcast_shapes(*shapes)
            out.add("broadcast")
        except RuntimeError:
            pass
    if any(not t.is_contiguous() for t in ts):
        out.add("non-contiguous")
    if any(t.dim() == 0 for t in ts):
        out.add("0-dim tensor")
    if any(type(a) in (int, float) for a in (*sample.args, *sample.kwargs.values())):
        out.add("scalar argument")
    return frozenset(out)


def _ranked(samples: Sequence[Any]) -> list[int]:
    """Sample indices: the largest (most elements over all tensors) first, then, largest
    first again, each showing structure (broadcasting, non-contiguity, scalars) not yet shown."""
    def size(i: int) -> int:
        return sum(t.numel() for t in _sample_tensors(samples[i]))

    by_size = sorted(range(len(samples)), key=lambda i: -size(i))
    order, seen = by_size[:1], set(_features(samples[by_size[0]])) if by_size else set()
    rest = by_size[1:]
    while rest:
        new = [i for i in rest if _features(samples[i]) - seen]
        pick = new[0] if new else rest[0]
        order.append(pick)
        seen |= _features(samples[pick])
        rest.remove(pick)
    return order


def generate_op(info: Any, spec: OpSpec, dtype: str, n_samples: int = 1,
                max_elements: int | None = None
                ) -> tuple[list[tuple[str, GeneratedProblem]], str | None]:
    """Up to ``n_samples`` problems (source, record) for one OpInfo, or the reason for none;
    ``max_elements`` caps the largest tensor (default: per class, :data:`TARGET_ELEMENTS`)."""
    torch_dtype = _DTYPES[dtype]
    if torch_dtype not in info.supported_dtypes("cpu"):
        return [], f"has no {dtype} implementation on cpu"
    forms = call_forms(info, spec)
    if not forms:
        return [], "no public torch function or Tensor method to call"
    try:
        torch.manual_seed(0)
        samples = list(info.sample_inputs("cpu", torch_dtype))
    except Exception as exc:  # OpInfo's own generator: its failure costs this op only
        return [], f"its OpInfo sample generator raised {type(exc).__name__}: {exc}"
    if not samples:
        return [], f"its OpInfo has no {dtype} samples"
    limit = min(TARGET_ELEMENTS.get(spec.op_class, DEFAULT_TARGET), max_elements or 1 << 62)
    made: list[tuple[str, GeneratedProblem]] = []
    reasons: list[str] = []
    describable = []
    for i in _ranked(samples):  # (cheap: refuses a sample before anything runs)
        try:
            describe(samples[i], spec)
            describable.append(i)
        except SampleUnsupported as exc:
            reasons.append(f"sample {i}: {exc}")
    queue = [(i, False) for i in describable[:MAX_TRIES]]
    while queue and len(made) < n_samples:
        index, nc = queue.pop(0)
        # OpInfo's own non-contiguous form of a sample (its test_noncontiguous_samples)
        sample = samples[index].noncontiguous() if nc else samples[index]
        try:
            made.append(_one(info, spec, dtype, sample, index, len(samples), forms, limit, nc))
        except SampleUnsupported as exc:
            reasons.append(f"sample {index}{' made non-contiguous' if nc else ''}: {exc}")
            continue
        if len(made) == 1 and "non-contiguous" not in made[0][1].structure:
            queue.insert(0, (index, True))
    if made:
        return made, None
    common = max(set(reasons), key=reasons.count) if reasons else "no sample"
    return [], f"no sample fits ({len(reasons)} refused; e.g. {common})"


def _one(info: Any, spec: OpSpec, dtype: str, sample: Any, index: int, n: int,
         forms: list[tuple[str, bool]], limit: int, nc: bool = False
         ) -> tuple[str, GeneratedProblem]:
    d: Described = describe(sample, spec)
    if not d.leaves:
        raise SampleUnsupported("no tensor argument")
    try:
        expected = info.op(sample.input, *sample.args, **sample.kwargs)
        _tensors_out(expected)
    except SampleUnsupported:
        raise
    except Exception as exc:
        raise SampleUnsupported(f"the OpInfo's op raised {type(exc).__name__}") from exc
    form = None
    originals = _sample_tensors(sample)
    for callee, method in forms:
        source = render(d, callee=callee, method=method, scaling=Scaling(), docstring="")
        copies = [t.clone() for t in originals]
        try:
            got = forward_on(exec_source(source), copies)
        except Exception:  # this form does not take the sample: try the next
            continue
        if not all(torch.equal(a, b) or (a.is_floating_point() and bool(
                torch.allclose(a, b, equal_nan=True))) for a, b in zip(copies, originals,
                                                                       strict=True)):
            raise SampleUnsupported("the op writes into its inputs (in-place): a problem's "
                                    "inputs must stay unmodified")
        if _same(got, expected):
            form = (callee, method)
            break
    if form is None:
        raise SampleUnsupported("no call form reproduces the OpInfo's op on its sample")
    last_error = "no scaling"
    for scaling in scalings(d, spec, limit):
        source = render(d, callee=form[0], method=form[1], scaling=scaling,
                        docstring=_docstring(info, spec, index, n, dtype, sample, scaling, nc))
        try:
            namespace = exec_source(source)
            if not _fits(namespace, 4 * limit):
                last_error = "the scaled problem's output is too large"
                continue
            _real_run(namespace, 4 * limit)
        except SampleUnsupported as exc:
            last_error = str(exc)
            continue
        except Exception as exc:  # the op refuses these sizes: try the next scaling
            last_error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
            continue
        record = GeneratedProblem(file="", op=op_key(info), op_class=spec.op_class,
                                  sample=index, noncontiguous=nc, n_samples=n, dtype=dtype,
                                  scaling=scaling.note, sizes=dict(scaling.constants),
                                  structure=sorted(_features(sample)))
        return source, record
    raise SampleUnsupported(last_error)


def file_name(key: str, sample: int, noncontiguous: bool = False) -> str:
    return (re.sub(r"[^A-Za-z0-9]+", "_", key).strip("_") + f"__s{sample}"
            + ("nc" if noncontiguous else "") + ".py")


def select(db: Iterable[Any], ops: Sequence[str] | None) -> tuple[list[tuple[Any, OpSpec]],
                                                                   list[SkippedOp]]:
    """The OpInfos to generate (the curated list, or ``ops`` by name) and those left out."""
    infos = {op_key(i): i for i in db}
    chosen: list[tuple[Any, OpSpec]] = []
    skipped: list[SkippedOp] = []
    if ops:
        unknown = [o for o in ops if o not in infos
                   and not any(k.startswith(o + ".") for k in infos)]
        if unknown:
            raise ConfigError(f"unknown OpInfo name(s) {', '.join(unknown)}: names are as in "
                              f"torch's op_db, e.g. add, nn.functional.conv2d, max.binary "
                              f"(`kernelevolve aten list` lists them)")
        keys = [k for k in infos for o in ops if k == o or k.startswith(o + ".")]
    else:
        keys = [s.key for s in CURATED]
        missing = [k for k in keys if k not in infos]
        skipped += [SkippedOp(op=k, reason=f"not in this torch's op_db ({torch.__version__})")
                    for k in missing]
        keys = [k for k in keys if k in infos]
    for key in dict.fromkeys(keys):
        reason = skip_reason(key)
        if reason:
            skipped.append(SkippedOp(op=key, reason=reason))
            continue
        spec = CURATED_BY_KEY.get(key) or OpSpec(name=infos[key].name,
                                                 variant=infos[key].variant_test_name,
                                                 op_class="uncurated")
        chosen.append((infos[key], spec))
    if not ops:
        curated = set(CURATED_BY_KEY)
        for key in infos:
            if key not in curated:
                reason = skip_reason(key) or "not in the curated list (generate it with --ops)"
                skipped.append(SkippedOp(op=key, reason=reason))
    return chosen, skipped


def generate_suite(out_dir: str | Path, *, ops: Sequence[str] | None = None,
                   dtype: str = "float32", samples: int = 1,
                   max_elements: int | None = None,
                   on_op: Callable[[int, int, str], None] | None = None) -> Suite:
    """Write one problem file per (operator, sample) into ``out_dir`` and ``suite.json``;
    ``max_elements`` caps the largest tensor of a problem (default: a few million elements
    for memory-bound classes, about 1024x1024 operands for the matmul family)."""
    if dtype not in _DTYPES:
        raise ConfigError(f"unknown --dtype {dtype!r}: choose one of {', '.join(_DTYPES)}")
    if samples < 1:
        raise ConfigError(f"--samples must be at least 1, got {samples}")
    if max_elements is not None and max_elements < 1024:
        raise ConfigError(f"--max-elements must be at least 1024, got {max_elements}")
    db = load_op_db()
    chosen, skipped = select(db, ops)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    from kernelevolve.problem import load_problem

    problems: list[GeneratedProblem] = []
    for i, (info, spec) in enumerate(chosen):
        if on_op is not None:
            on_op(i, len(chosen), spec.key)
        made, reason = generate_op(info, spec, dtype, samples, max_elements)
        if reason:
            skipped.append(SkippedOp(op=spec.key, reason=reason))
        for source, record in made:
            path = out / file_name(spec.key, record.sample, record.noncontiguous)
            path.write_text(source)
            try:
                load_problem(path)
            except ProblemError as exc:
                path.unlink()
                skipped.append(SkippedOp(op=spec.key, reason=f"the problem loader refused "
                                                             f"the file: {exc}"))
                continue
            problems.append(record.model_copy(update={"file": path.name}))
    suite = Suite(out_dir=str(out), dtype=dtype, torch_version=torch.__version__,
                  created=time.strftime("%Y-%m-%d %H:%M:%S %Z"), problems=problems,
                  skipped=skipped)
    (out / MANIFEST).write_text(suite.model_dump_json(indent=1))
    return suite


def read_suite(directory: str | Path) -> Suite:
    """The manifest ``generate`` wrote into ``directory``."""
    path = Path(directory) / MANIFEST
    if not path.is_file():
        raise ConfigError(f"{directory} has no {MANIFEST}: generate the suite there first "
                          f"(kernelevolve aten generate --out {directory})")
    return Suite.model_validate(json.loads(path.read_text()))
