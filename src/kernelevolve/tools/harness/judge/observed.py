"""What the candidate's process reports about one forward, as the judge reads it (running.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernelevolve.tools.harness.candidate import Verdict


@dataclass
class Observed:
    """What the candidate's process reports about one forward, type-checked: it is read, never
    trusted to be well-formed."""

    seconds: float
    ops: list[str]
    launches: int
    odd_outputs: list[str]
    modified: list[int]
    threads: int
    stream_switched: bool
    tampered: list[str]
    notes: list[str]
    retained: list[int]
    kept_storages: list[int]  # how many calls ago: outputs let go of whose memory lives on
    autotune_configs: int  # the most configs an autotuned kernel had to turn through

    @classmethod
    def of(cls, reply: dict[str, Any]) -> Observed:
        try:
            return cls(
                seconds=float(reply["seconds"]), ops=[str(o) for o in reply["ops"]],
                launches=int(reply["launches"]),
                odd_outputs=[str(o) for o in reply["odd_outputs"]],
                modified=[int(i) for i in reply["modified"]], threads=int(reply["threads"]),
                stream_switched=bool(reply["stream_switched"]),
                tampered=[str(t) for t in reply["tampered"]],
                notes=[str(n) for n in reply.get("notes", [])],
                retained=[int(i) for i in reply.get("retained", [])],
                kept_storages=[int(i) for i in reply.get("kept_storages", [])],
                autotune_configs=max(1, int(reply.get("autotune_configs", 1))))
        except (KeyError, TypeError, ValueError) as exc:
            raise Verdict("cheat", f"the candidate's process sent a malformed report "
                                   f"({type(exc).__name__}: {exc})") from exc
