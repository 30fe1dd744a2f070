"""What the judge makes of a candidate process's reply it cannot take in: an object that is not
tensors and plain data is a cheat; running out of memory while copying the candidate's tensors
(a GPU shared with other work: it happened on the H200 beside another benchmark) is the device's
state, a runtime error, not a cheat."""

from __future__ import annotations

import io
import socket
import struct
from collections import OrderedDict

import pytest
import torch

from kernelevolve.tools.harness.candidate import Verdict, recv, send, unreadable_reply


def test_a_plain_reply_round_trips() -> None:
    a, b = socket.socketpair()
    with a, b:
        send(a, {"out": [torch.arange(4.0)], "n": 3})
        got = recv(b, trusted=False)
    assert got["n"] == 3 and torch.equal(got["out"][0], torch.arange(4.0))


def test_a_reply_holding_arbitrary_objects_is_refused_as_a_cheat() -> None:
    a, b = socket.socketpair()
    buf = io.BytesIO()
    torch.save({"out": OrderedDict(x=socket.socket)}, buf)  # a class: not plain data
    data = buf.getvalue()
    with a, b:
        a.sendall(struct.pack("<Q", len(data)) + data)
        with pytest.raises(Exception) as info:
            recv(b, trusted=False)
    verdict = unreadable_reply(info.value)
    assert verdict.status == "cheat" and "refuses to read" in verdict.message


@pytest.mark.parametrize("exc", [torch.OutOfMemoryError("CUDA out of memory. Tried to allocate "
                                                        "8.00 GiB."), MemoryError()])
def test_running_out_of_memory_reading_the_reply_is_a_runtime_error(exc: Exception) -> None:
    verdict = unreadable_reply(exc)
    assert isinstance(verdict, Verdict)
    assert verdict.status == "runtime_error" and not verdict.fatal
    assert "ran out of memory" in verdict.message and type(exc).__name__ in verdict.message
