from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import kernelevolve.kb
from kernelevolve.config import KBConfig
from kernelevolve.errors import KnowledgeBaseError
from kernelevolve.kb import (
    Improvement,
    KnowledgeBase,
    Situation,
    SkillRecord,
    skill_from_improvement,
)

PARENT = textwrap.dedent(
    """
    @triton.jit
    def softmax_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK_N: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK_N)
        x = tl.load(in_ptr + row * stride + offs, mask=offs < n_cols, other=-float("inf"))
        m = tl.max(x, axis=0)
        tl.store(out_ptr + row, m)

    @triton.jit
    def normalize_kernel(out_ptr, in_ptr, max_ptr, stride, n_cols, BLOCK_N: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK_N)
        x = tl.load(in_ptr + row * stride + offs, mask=offs < n_cols, other=-float("inf"))
        e = tl.exp(x - tl.load(max_ptr + row))
        tl.store(out_ptr + row * stride + offs, e / tl.sum(e, axis=0), mask=offs < n_cols)

    def launch(x, out, mx):
        softmax_kernel[(x.shape[0],)](mx, x, x.stride(0), x.shape[1], BLOCK_N=1024, num_warps=4)
        normalize_kernel[(x.shape[0],)](out, x, mx, x.stride(0), x.shape[1], BLOCK_N=1024, num_warps=4)
    """
)
CHILD = textwrap.dedent(
    """
    @triton.jit
    def softmax_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK_N: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK_N)
        x = tl.load(in_ptr + row * stride + offs, mask=offs < n_cols, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        e = tl.exp2(x * 1.4426950408889634)
        tl.store(out_ptr + row * stride + offs, e / tl.sum(e, axis=0), mask=offs < n_cols)

    def launch(x, out):
        softmax_kernel[(x.shape[0],)](out, x, x.stride(0), x.shape[1], BLOCK_N=4096, num_warps=8)
    """
)


def _improvement(
    child_id: str = "run1/c7", child_ms: float = 0.8, intent: str | None = None
) -> Improvement:
    return Improvement(
        target="cuda:h100",
        operator_class="softmax",
        diagnosis="memory-bound",
        parent_id="run1/c3",
        child_id=child_id,
        parent_source=PARENT,
        child_source=CHILD,
        parent_latency_ms=1.0,
        child_latency_ms=child_ms,
        intent=intent
        or "fuse the max pass and the normalisation pass into one single-pass kernel that keeps "
        "the row in registers",
        run_id="run1",
    )


def test_skill_record_summarises_the_diff() -> None:
    record = skill_from_improvement(_improvement(), min_gain=0.05)
    assert record is not None
    assert record.gain == pytest.approx(0.25)
    assert record.source_candidate == "run1/c7" and record.parent_candidate == "run1/c3"
    for fact in ("BLOCK_N 1024 -> 4096", "num_warps 4 -> 8", "kernels 2 -> 1", "tl.exp2"):
        assert fact in record.change
    assert record.change.startswith("fuse the max pass")
    assert "memory-bound" in record.conditions and "cuda:h100" in record.conditions
    assert record.diff_excerpt and "+" in record.diff_excerpt


def test_no_skill_below_the_margin() -> None:
    assert skill_from_improvement(_improvement(child_ms=0.97), min_gain=0.05) is None
    assert skill_from_improvement(_improvement(child_ms=1.2), min_gain=0.05) is None


def test_distill_refuses_records_below_the_margin(kb: KnowledgeBase) -> None:
    record = SkillRecord(
        target="cuda:h100",
        operator_class="softmax",
        conditions="c",
        change="x",
        gain=0.01,
        source_candidate="c1",
    )
    with pytest.raises(KnowledgeBaseError, match="skill_min_gain"):
        kb.distill_skill(record)


def test_distilled_skill_is_retrieved_in_a_new_process(kb: KnowledgeBase, store_copy: Path) -> None:
    written = kb.distill_improvement(_improvement())
    assert written is not None and written.action == "added"
    script = textwrap.dedent(
        f"""
        import json
        from kernelevolve.config import KBConfig
        from kernelevolve.kb import KnowledgeBase, Situation
        kb = KnowledgeBase.open(KBConfig(path={str(store_copy)!r}))
        related = kb.retrieve(Situation(target="cuda:h100", operator_class="softmax",
                                        diagnosis="memory-bound"), k=4)
        other = kb.retrieve(Situation(target="mtia-sim:2i", operator_class="softmax",
                                      diagnosis="memory-bound"), k=4)
        print(json.dumps({{"related": [[h.doc_id, h.tier, h.distance, h.text] for h in related],
                          "other": [h.doc_id for h in other],
                          "skills": [s.id for s in kb.skills(target="cuda:h100")]}}))
        """
    )
    src = str(Path(kernelevolve.kb.__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["skills"] == [written.skill.id]
    doc_id, tier, _distance, text = out["related"][0]
    assert (doc_id, tier) == (written.skill.id, "skills")
    assert "BLOCK_N 1024 -> 4096" in text and "+25%" in text and "run1/c7" in text
    # Skills are per target: an MTIA run does not get the H100 lesson.
    assert written.skill.id not in out["other"]


def test_near_duplicates_merge_and_distinct_lessons_do_not(kb: KnowledgeBase) -> None:
    first = kb.distill_improvement(_improvement())
    again = kb.distill_improvement(
        _improvement(
            child_id="run2/c4",
            child_ms=0.7,
            intent="merge the two passes (max, then exp and normalise) into a single "
            "kernel that holds the row in registers",
        )
    )
    assert first is not None and again is not None
    assert again.action == "merged", again.merged_distance
    assert again.skill.id == first.skill.id
    assert again.skill.count == 2 and again.skill.sources == ["run1/c7", "run2/c4"]
    assert again.skill.best_gain == pytest.approx(1 / 0.7 - 1)

    # Recording the same candidate twice does not count twice.
    repeat = kb.distill_improvement(_improvement(child_id="run2/c4", child_ms=0.7))
    assert repeat is not None and repeat.skill.count == 2

    other = kb.distill_skill(
        SkillRecord(
            target="cuda:h100",
            operator_class="softmax",
            diagnosis="memory-bound",
            conditions="a softmax kernel on cuda:h100 diagnosed memory-bound",
            change="process 4 rows per program with a 2-D block so short rows fill the SMs",
            gain=0.12,
            source_candidate="run3/c2",
        )
    )
    assert other.action == "added"
    assert len(kb.skills(target="cuda:h100", operator_class="softmax")) == 2

    # Same lesson for another target is a different skill.
    elsewhere = kb.distill_skill(
        SkillRecord(
            target="cuda:a100",
            operator_class="softmax",
            conditions="c",
            change=first.skill.change,
            gain=0.3,
            source_candidate="run4/c1",
        )
    )
    assert elsewhere.action == "added"


def test_skills_lead_only_for_the_same_operator_without_errors(kb: KnowledgeBase) -> None:
    written = kb.distill_improvement(_improvement())
    assert written is not None
    skill_id = written.skill.id

    def ids(**situation: str) -> list[str]:
        return [h.doc_id for h in kb.retrieve(Situation(target="cuda:h100", **situation), k=4)]

    assert ids(operator_class="softmax")[0] == skill_id
    assert skill_id not in ids(operator_class="matmul", diagnosis="compute-bound")
    assert skill_id not in ids(
        operator_class="softmax", error_status="mismatch", error_message="nan"
    )


def test_skills_can_be_removed(kb: KnowledgeBase) -> None:
    written = kb.distill_improvement(_improvement())
    assert written is not None
    kb.remove(written.skill.id)
    assert kb.skills() == []
    reopened = KnowledgeBase.open(KBConfig(path=kb.path))
    assert reopened.skills() == []
