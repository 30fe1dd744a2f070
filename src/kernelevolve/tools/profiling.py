"""What the profiler passes share (``profile_jobs`` runs them; ``ncu``, ``proton``,
``torch_profiler`` and ``roofline`` are them): the options, the verified candidate they profile,
the environment of a driver process, the report of an instrument that could not run, and the
copy of its raw output. Worker-side: torch and the standard library only."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kernelevolve

# The directory holding the kernelevolve package, put on PYTHONPATH of driver processes.
_SRC_DIR = str(Path(kernelevolve.__file__).resolve().parent.parent)
TOOLS = ("torch", "proton", "ncu")


@dataclass(frozen=True)
class ProfileOptions:
    """What to profile and how; the worker-side mirror of ``config.ProfileConfig`` (a test
    checks that both agree)."""

    enabled: bool = False
    tools: tuple[str, ...] = TOOLS
    timeout_s: float = 120.0
    torch_iters: int = 3
    proton_iters: int = 5
    ncu_path: str | None = None
    ncu_launch_count: int = 10
    ncu_timeout_s: float = 90.0
    proton_timeout_s: float = 60.0
    ceilings_path: str | None = None
    remeasure_ceilings: bool = False
    raw_dir: str | None = None

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> ProfileOptions:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise ValueError(f"unknown profile options {unknown}; known: {sorted(names)}")
        given = dict(values)
        if "tools" in given:
            bad = [t for t in given["tools"] if t not in TOOLS]
            if bad:
                raise ValueError(f"unknown profiling tools {bad}; choose from {list(TOOLS)}")
            given["tools"] = tuple(given["tools"])
        return cls(**given)


@dataclass
class ProfileContext:
    """One verified candidate, ready to run on the worker's device."""

    problem: str  # path of the problem file
    candidate: str  # path of the candidate file (Triton needs a real file)
    sizes: dict[str, int]  # the problem's module-level sizes the inputs were built at
    seed: int  # seed of the weights and inputs, so a driver process rebuilds the same ones
    model: Any  # the candidate module instance (torch.nn.Module) on the device
    inputs: list[Any]
    reference: Any = None  # the reference module instance, for counting FLOPs
    forward_ms: float | None = None  # the harness's median latency of one forward
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="ke-profile-")))

    def forward(self) -> Any:
        import torch

        with torch.no_grad():
            return self.model(*self.inputs)

    @property
    def device_type(self) -> str:
        import torch

        for v in self.inputs:
            if isinstance(v, torch.Tensor):
                return v.device.type
        params = list(self.model.parameters())
        return params[0].device.type if params else "cpu"

    def driver_args(self, mode: str, out: Path, iters: int = 1) -> list[str]:
        """The command line of a driver process that runs this candidate's forward."""
        return [sys.executable, "-m", "kernelevolve.tools.profile_jobs", "--mode", mode,
                "--problem", self.problem, "--candidate", self.candidate,
                "--sizes", json.dumps(self.sizes), "--seed", str(self.seed),
                "--iters", str(iters), "--out", str(out)]


def driver_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_SRC_DIR, env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def unavailable(instrument: str, reason: str, notes: list[str] | None = None) -> dict[str, Any]:
    """The report of an instrument that could not run; the other instruments still do."""
    return {"instrument": instrument, "unavailable": reason, "metrics": [], "kernels": [],
            "notes": notes or []}


def keep_raw(opts: ProfileOptions, src: Path, name: str, report: dict[str, Any]) -> None:
    """Copy an instrument's raw output into ``opts.raw_dir`` (when asked) and list it."""
    if opts.raw_dir is None or not src.exists():
        return
    import shutil

    dest = Path(opts.raw_dir) / name
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    report.setdefault("raw_files", []).append(str(dest))
