"""A batch-mode run's exchange of files: the requests it wrote and the replies it was given.

They live in the run directory's ``batch/`` folder: ``requests-001.jsonl``, ``requests-002.jsonl``
... (Batch API input files, one per stop) and ``replies-001.jsonl`` ... (copies of the output
files given to ``resume --replies``, so a later resume still has them). A request's
``custom_id`` names what it asks for, not its text nor when the graph asked it: the run's tag,
the search-tree node its reply becomes, the role (``coder``: a new candidate; ``debugger``: a
repair) and the Coder's attempt (re-asks after a reply without usable code), e.g.
``ke-325efef0-n0002-coder-1``. The call names the request itself (``REQUEST_NAME`` in its
LangChain metadata), so the ids do not depend on LangGraph's steps, on which branch of a round
ran first, or on how many resumes it took: a step that runs again on resume asks for the same
ids and finds its replies.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import threading
from pathlib import Path

from pydantic import BaseModel, Field

from kernelevolve.batchapi.lines import BatchReply, BatchRequest, read_lines, write_lines
from kernelevolve.errors import RepliesError

log = logging.getLogger(__name__)

BATCH_DIR = "batch"
# The LangChain metadata key under which a batch-mode call names its request
# (``request_name``); the chat model refuses a call without it.
REQUEST_NAME = "kernelevolve_request"
_REQUEST = re.compile(r"n\d{4,}-(coder|debugger)-\d+")
_TAG = re.compile(r"ke-[0-9a-f]{8}")


class RepliesWanted(BaseModel):
    """A run stopped for replies: the requests file to send and what it holds."""

    requests_file: str = Field(description="the Batch API input file to send")
    custom_ids: list[str]
    asked_before: list[str] = Field(
        default_factory=list, description="ids an earlier requests file held, still unanswered")
    errors: dict[str, str] = Field(
        default_factory=dict, description="ids whose reply was an error line, asked again")
    new_file: bool = Field(True, description="False: the same requests as the last file")


class Intake(BaseModel):
    """What a replies file brought to a run."""

    file: str
    kept_as: str | None = Field(None, description="its copy in the run's batch/ folder")
    lines: int
    new: list[str] = Field(default_factory=list, description="ids answered now")
    errors: dict[str, str] = Field(default_factory=dict, description="error lines: id -> why")
    known: list[str] = Field(default_factory=list, description="ids answered before")


def run_tag(run_id: str) -> str:
    """The prefix of a run's custom_ids (it tells a bench's runs apart in one file)."""
    return "ke-" + hashlib.sha256(run_id.encode()).hexdigest()[:8]


def tag_of(custom_id: str) -> str | None:
    """The run tag a custom_id begins with (None where it has none)."""
    head = "-".join(custom_id.split("-", 2)[:2])
    return head if _TAG.fullmatch(head) else None


def request_name(node_id: str, role: str, attempt: int) -> str:
    """What a call asks for, as its custom_id names it after the run tag: the node its reply
    becomes, ``coder`` or ``debugger``, and the attempt (``n0002-coder-1``)."""
    name = f"{node_id}-{role}-{attempt}"
    if not _REQUEST.fullmatch(name):
        raise ValueError(f"not a request name: {name!r} (node id, coder|debugger, attempt)")
    return name


def _numbered(folder: Path, stem: str) -> list[Path]:
    return sorted(folder.glob(f"{stem}-[0-9][0-9][0-9].jsonl"))


class Exchange:
    """The run's requests and replies (thread-safe: a batch round's branches ask at once)."""

    def __init__(self, run_dir: Path, run_id: str) -> None:
        self.dir = run_dir / BATCH_DIR
        self.tag = run_tag(run_id)
        self._lock = threading.Lock()
        self._asked: dict[str, str] = {}  # this drive's ids -> their messages' digest
        self.pending: dict[str, BatchRequest] = {}
        self.failed: dict[str, str] = {}
        self.requested: dict[str, BatchRequest] = {}
        self.replies: dict[str, BatchReply] = {}
        for path in _numbered(self.dir, "requests"):
            for req in read_lines(path, BatchRequest, "a Batch API request"):
                self.requested.setdefault(req.custom_id, req)
        for path in _numbered(self.dir, "replies"):
            for reply in read_lines(path, BatchReply, "a Batch API output line"):
                self._merge(reply)

    def _merge(self, reply: BatchReply) -> str:
        """Add one line: the first usable reply of an id stays (the run may have used it);
        an error line only stands where no usable one came. Returns 'new', 'known' or 'error'."""
        have = self.replies.get(reply.custom_id)
        if have is not None and have.failure is None:
            return "known"
        self.replies[reply.custom_id] = reply
        return "error" if reply.failure is not None else "new"

    # -- during a run ------------------------------------------------------------------------

    def begin(self) -> None:
        """A new drive of the graph: nothing wanted yet (the step that was cut off runs again
        and asks for the same ids)."""
        with self._lock:
            self._asked.clear()
            self.pending.clear()
            self.failed.clear()

    def custom_id(self, name: str) -> str:
        """The id of the request ``name`` (``request_name``) in this run."""
        if not _REQUEST.fullmatch(name):
            raise ValueError(f"not a request name: {name!r}")
        return f"{self.tag}-{name}"

    def reply_for(self, request: BatchRequest) -> BatchReply | None:
        """The usable reply to ``request``; None where there is none yet (it is recorded as
        wanted: the caller stops the step)."""
        with self._lock:
            seen = self._asked.setdefault(request.custom_id, request.digest)
            if seen != request.digest:
                # two different prompts under one name in one drive: a reply would answer the
                # wrong one, so the run stops rather than guess
                raise RepliesError(f"two different requests of this run are named "
                                   f"{request.custom_id}; this is a bug in kernelevolve, "
                                   "please report it")
            reply = self.replies.get(request.custom_id)
            if reply is not None and reply.failure is None:
                asked = self.requested.get(request.custom_id)
                if asked is not None and asked.digest != request.digest:
                    log.warning("the prompt of %s changed since it was written to a requests "
                                "file; using its reply anyway", request.custom_id)
                return reply
            self.pending[request.custom_id] = request
            if reply is not None:
                self.failed[request.custom_id] = reply.failure or ""
        return None

    def write_requests(self) -> RepliesWanted:
        """The wanted requests into the next ``requests-NNN.jsonl`` (none written where they
        are exactly the last file's)."""
        with self._lock:
            wanted = [self.pending[k] for k in sorted(self.pending)]
            failed = dict(self.failed)
        if not wanted:
            raise RepliesError("the run stopped for replies but recorded no request")
        self.dir.mkdir(exist_ok=True)
        files = _numbered(self.dir, "requests")
        ids = [r.custom_id for r in wanted]
        before = [i for i in ids if i in self.requested and i not in failed]
        if files:
            last_ids = [r.custom_id for r in read_lines(files[-1], BatchRequest, "a request")]
            if sorted(last_ids) == ids:
                return RepliesWanted(requests_file=str(files[-1]), custom_ids=ids,
                                     asked_before=before, errors=failed, new_file=False)
        path = self.dir / f"requests-{len(files) + 1:03d}.jsonl"
        write_lines(path, wanted)
        for req in wanted:
            self.requested.setdefault(req.custom_id, req)
        return RepliesWanted(requests_file=str(path), custom_ids=ids, asked_before=before,
                             errors=failed)

    # -- between runs ------------------------------------------------------------------------

    def take(self, path: Path) -> Intake:
        """Add a Batch API output (or error) file: every line must answer a request this run
        wrote; the file is kept in the run's ``batch/`` folder."""
        lines = read_lines(path, BatchReply, "a Batch API output line")
        unknown = [r.custom_id for r in lines if r.custom_id not in self.requested]
        if unknown:
            mine = [i for i in unknown if i.startswith(self.tag + "-")]
            hint = ("they carry this run's tag but no requests file of it holds them" if mine
                    else f"this run's ids begin with {self.tag}-; is it the output of another "
                         "run's requests?")
            shown = ", ".join(unknown[:5]) + (f" (and {len(unknown) - 5} more)"
                                              if len(unknown) > 5 else "")
            raise RepliesError(f"{path}: {len(unknown)} of its {len(lines)} lines answer "
                               f"requests this run never wrote: {shown}; {hint}. Nothing was "
                               f"taken from it")
        intake = Intake(file=str(path), lines=len(lines))
        for reply in lines:
            what = self._merge(reply)
            if what == "new":
                intake.new.append(reply.custom_id)
            elif what == "known":
                intake.known.append(reply.custom_id)
            else:
                intake.errors[reply.custom_id] = reply.failure or ""
        self.dir.mkdir(exist_ok=True)
        kept = self.dir / f"replies-{len(_numbered(self.dir, 'replies')) + 1:03d}.jsonl"
        shutil.copyfile(path, kept)
        intake.kept_as = str(kept)
        return intake

    def unanswered(self) -> list[str]:
        """Ids written to a requests file without a usable reply yet."""
        return sorted(i for i in self.requested
                      if i not in self.replies or self.replies[i].failure is not None)
