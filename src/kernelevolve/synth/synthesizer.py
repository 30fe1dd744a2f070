"""The seam between the agents and whatever writes kernels: an LLM (``llm/chat.py``) or the
offline synthesizer (``offline/``). Both read the one prompt state and answer with a Draft."""

from __future__ import annotations

from typing import Protocol

from kernelevolve.graph.state import Draft, PromptState


class Synthesizer(Protocol):
    """Writes candidates (Coder) and repairs failed ones (Debugger)."""

    name: str  # says in the run which synthesizer wrote the kernels, e.g. "offline"
    reads_knowledge: bool  # False: the Librarian need not retrieve for it
    reads_guidance: bool  # False: a user's words at a pause (chat) cannot reach its kernels

    def write(self, ps: PromptState) -> Draft:
        """A new candidate for the round described by ``ps`` (operator, parent, knowledge...)."""
        ...

    def repair(self, ps: PromptState) -> Draft:
        """A repaired version of ``ps.last_error.source``, told why it failed."""
        ...
