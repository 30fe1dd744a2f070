"""Batch mode (``llm.mode = "batch"``): a run writes the replies it needs as an OpenAI Batch API
input file, checkpoints and exits; ``resume --replies`` continues with the Batch API's output.

``lines`` the file formats, ``exchange`` a run's requests and replies, ``chat`` the chat model
that answers from them, ``answer`` sends a requests file to a live endpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelevolve.batchapi.exchange import (
    REQUEST_NAME,
    Exchange,
    Intake,
    RepliesWanted,
    request_name,
    run_tag,
    tag_of,
)
from kernelevolve.batchapi.lines import BatchReply, BatchRequest

__all__ = ["REQUEST_NAME", "BatchChatModel", "BatchReply", "BatchRequest", "Exchange", "Intake",
           "RepliesNeeded", "RepliesWanted", "attach", "request_name", "run_tag", "tag_of"]


def __getattr__(name: str) -> Any:
    # the chat model loads LangChain and LangGraph (seconds): only where a run needs it, not
    # for `--help`
    if name in ("BatchChatModel", "RepliesNeeded"):
        from kernelevolve.batchapi import chat

        return getattr(chat, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def attach(synthesizer: Any, run_dir: Path, run_id: str) -> Exchange | None:
    """The run's Exchange, bound into ``synthesizer``'s chat model where that is a batch one
    (None for any other synthesizer)."""
    from kernelevolve.batchapi.chat import BatchChatModel

    chat = getattr(synthesizer, "chat", None)
    if not isinstance(chat, BatchChatModel):
        return None
    chat.exchange = Exchange(run_dir, run_id)
    return chat.exchange
