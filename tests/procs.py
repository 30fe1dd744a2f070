"""Processes seen from /proc: what a stopped run may have left behind."""

from __future__ import annotations

import sys
from pathlib import Path

# `kernelevolve` with SIGINT handled as in a terminal. A test runner started in the background
# (`cmd &` in a shell without job control, as CI systems may) passes SIGINT on ignored, and
# Python then leaves it ignored: Ctrl-C could not be tested.
CLI = [sys.executable, "-c", "import signal; signal.signal(signal.SIGINT, "
       "signal.default_int_handler); from kernelevolve.cli import main; main()"]


def children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid`` (from /proc)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(stat.parent.name))
    return out


def alive(pid: int) -> bool:
    """Running (a zombie that nobody reaped has exited: it is not running)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
