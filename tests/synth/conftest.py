"""Fixtures of the LLM tests: prompt states for problem 03 and the reply fixtures."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kernelevolve.graph.search import DiagnosisInfo
from kernelevolve.graph.state import ErrorInfo, Knowledge, PromptState, Step, Task

REPO = Path(__file__).resolve().parents[2]
PROBLEM = REPO / "examples" / "problems" / "03_leaky_relu_scale_clamp.py"
REPLIES = Path(__file__).resolve().parent / "llm" / "replies"


def reply_text(name: str) -> str:
    """The text of the reply fixture ``replies/<name>.md``."""
    return (REPLIES / f"{name}.md").read_text()


def fenced_code(name: str) -> str:
    """The one python block of a reply fixture (as a model wrote it)."""
    text = reply_text(name)
    return text.split("```python\n", 1)[1].split("\n```", 1)[0] + "\n"


@pytest.fixture
def task() -> Task:
    return Task(
        problem_path=str(PROBLEM), problem_name="03_leaky_relu_scale_clamp",
        reference_source=PROBLEM.read_text(), target="cpu",
        target_description="Triton interpreter on the CPU (correctness only)", goal=1.5,
        timed=False, operator_class="elementwise",
    )


@pytest.fixture
def make_ps(task: Task) -> Callable[..., PromptState]:
    """A PromptState for ``operator`` with a realistic parent, trajectory and siblings."""
    good = fenced_code("good_block256")
    wide = fenced_code("good_block1024")

    def build(operator: str = "fresh", **overrides: Any) -> PromptState:
        parent = Step(node_id="n0002", operator="inherit", intent="fuse the chain in one pass",
                      status="ok", speedup=1.21, latency_ms=0.412, source=good)
        values: dict[str, Any] = dict(
            task=task,
            constraints=["mask every tl.load and tl.store", "accumulate in fp32"],
            knowledge=[Knowledge(title="Memory-bound playbook", tier="guides",
                                 text="Move fewer bytes: fuse elementwise chains, widen blocks.",
                                 reason="memory-bound")],
            operator=operator, intent="use larger blocks to cut the number of programs",
        )
        if operator != "fresh":
            values["parent"] = parent
        if operator == "inherit":
            values["trajectory"] = [
                Step(node_id="n0001", operator="fresh", intent="first Triton version",
                     status="ok", speedup=0.95),
            ]
        elif operator == "compare":
            values["siblings"] = [
                Step(node_id="n0004", operator="inherit", intent="BLOCK_SIZE 1024, 4 warps",
                     status="ok", speedup=1.40, source=wide),
                Step(node_id="n0005", operator="inherit", intent="two elements per thread",
                     status="mismatch", message="max abs error 0.34 on output 0",
                     source=good.replace("BLOCK_SIZE = 256", "BLOCK_SIZE = 128")),
            ]
        elif operator == "combine":
            values["siblings"] = [
                Step(node_id="n0007", operator="fresh", intent="BLOCK_SIZE 1024, 4 warps",
                     status="ok", speedup=1.38, source=wide),
            ]
        values.update(overrides)
        return PromptState(**values)

    return build


@pytest.fixture
def diagnosis() -> DiagnosisInfo:
    return DiagnosisInfo(kind="memory-bound", roofline_fraction=0.42, source="ncu",
                         evidence=["DRAM throughput 78% of peak", "compute 9% of peak"])


@pytest.fixture
def failed(task: Task) -> ErrorInfo:
    return ErrorInfo(
        node_id="n0006", status="runtime_error",
        message="ModelNew.forward raised NameError: name 'negative_slop' is not defined",
        stderr_tail="Traceback (most recent call last):\n  ...\nNameError: name 'negative_slop' "
                    "is not defined",
        source=fenced_code("compile_error"),
    )
