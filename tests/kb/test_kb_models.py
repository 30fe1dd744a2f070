from __future__ import annotations

from enum import StrEnum

import pytest
from pydantic import ValidationError

from kernelevolve.errors import KnowledgeBaseError
from kernelevolve.kb import Improvement, Situation, kb_target, parse_target
from kernelevolve.kb.models import parse_tier


@pytest.mark.parametrize(
    "tag",
    [
        "any",
        "cuda",
        "cuda:h100",
        "CUDA:H200",
        "rocm:mi300x",
        "rocm",
        "mtia-sim:2i",
        "mtia-sim:v1",
        "mtia-sim:300",
        "mtia-sim",
        "cpu",
    ],
)
def test_valid_targets(tag: str) -> None:
    assert parse_target(tag) == tag.lower()


@pytest.mark.parametrize(
    "tag", ["tpu", "tpu:v5", "cuda:", "cuda:H 100", "mtia-sim:v9", "cpu:x86", "mtia"]
)
def test_invalid_targets_name_the_valid_forms(tag: str) -> None:
    with pytest.raises(KnowledgeBaseError, match=r"cuda:<gpu>"):
        parse_target(tag)


def test_any_is_not_a_situation_target() -> None:
    with pytest.raises(KnowledgeBaseError, match="unknown target 'any'"):
        Situation(target="any")


def test_unknown_tier_lists_the_tiers() -> None:
    with pytest.raises(KnowledgeBaseError, match="constraints, guides, hardware, skills"):
        parse_tier("tutorials")


def test_situation_normalises_inputs_from_other_modules() -> None:
    class Status(StrEnum):
        OK = "ok"
        COMPILE = "compile_error"

    s = Situation(target="cuda:h100", diagnosis="latency_bound", error_status=Status.OK)
    assert s.diagnosis == "occupancy-bound"
    assert s.error_status is None
    assert Situation(target="cpu", error_status=Status.COMPILE).error_status == "compile_error"
    with pytest.raises(ValidationError):
        Situation(target="cpu", diagnosis="slow")


def test_improvement_gain() -> None:
    imp = Improvement(
        target="cuda:h100",
        operator_class="softmax",
        parent_id="a",
        child_id="b",
        parent_source="",
        child_source="",
        parent_latency_ms=2.0,
        child_latency_ms=1.6,
    )
    assert imp.gain == pytest.approx(0.25)


def test_kb_target_from_device_names() -> None:
    assert kb_target("cuda", "NVIDIA H100 80GB HBM3") == "cuda:h100"
    assert kb_target("cuda", "NVIDIA H200") == "cuda:h200"
    assert kb_target("cuda", "NVIDIA A100-SXM4-80GB") == "cuda:a100"
    assert kb_target("cuda", "NVIDIA GeForce RTX 4090") == "cuda"
    assert kb_target("rocm", "AMD Instinct MI300X") == "rocm:mi300x"
    assert kb_target("mtia-sim:2i") == "mtia-sim:2i"
