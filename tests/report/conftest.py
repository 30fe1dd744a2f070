"""One real run shared by the report tests: a scripted chat model on the simulated MTIA (a broken
kernel repaired by the Debugger, then an improvement on it), and a fake knowledge base through the
KnowledgeSource seam. The model's reply and the retrieved passage carry HTML and script, as an
untrusted model or document could."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelevolve.config import load_settings
from kernelevolve.graph.session import Session
from kernelevolve.kb import Hit, Improvement, Situation, SkillWrite
from kernelevolve.synth.llm.chat import LLMSynthesizer
from tests.synth.llm.scripted import ScriptedChatModel

ROOT = Path(__file__).resolve().parents[2]
PROBLEM = ROOT / "examples" / "problems" / "03_leaky_relu_scale_clamp.py"
REPLIES = ROOT / "tests" / "synth" / "llm" / "replies"

# Markup an attacker would try: it must reach the page as text, never as elements.
INJECTION = ('<script>document.body.setAttribute("data-pwned", "script")</script>'
             '<img src="x" onerror="document.body.setAttribute(\'data-pwned\', \'img\')">')
PASSAGE_TITLE = "Coalesced <b>loads</b> & stores"


class FakeKnowledge:
    """Returns one passage for every situation; distils nothing."""

    def __init__(self) -> None:
        self.situations: list[Situation] = []

    def retrieve(self, situation: Situation, k: int | None = None) -> list[Hit]:
        self.situations.append(situation)
        return [Hit(id="guides/coalescing#0", doc_id="guides/coalescing", tier="guides",
                    target="any", title=PASSAGE_TITLE, section="",
                    text=f"Load contiguous blocks. {INJECTION}", distance=0.2,
                    reason="operator class")]

    def distill_improvement(self, improvement: Improvement) -> SkillWrite | None:
        return None


@pytest.fixture(scope="session")
def report_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run directory: n0001 fails (runtime error), n0002 repairs it, n0003 improves on
    n0002 (round 2); the run stops on its round budget."""
    replies = [INJECTION + "\n\n" + (REPLIES / "compile_error.md").read_text(),
               (REPLIES / "repaired.md").read_text(),
               (REPLIES / "good_block1024.md").read_text()]
    tmp = tmp_path_factory.mktemp("report-run")
    settings = load_settings(
        search={"retrieve": True, "distill": False, "rounds": 2, "goal": 100.0,
                "max_children": 1},
        eval={"n_input_sets": 2}, runs={"dir": str(tmp / "runs")})
    synth = LLMSynthesizer(ScriptedChatModel(replies), "scripted-coder")
    with Session.create(PROBLEM, target="mtia-sim:2i", settings=settings, kb=FakeKnowledge(),
                        synthesizer=synth) as session:
        result = session.run()
    assert result.finished and result.best_node is not None, result
    return Path(result.run_dir)
