"""The reply: the cascade run under the process boundary's catch-all, and what the worker sends
back (shaped like ``EvalResult``)."""

from __future__ import annotations

import platform
import time
from typing import Any

import torch

from kernelevolve.errors import ProblemError
from kernelevolve.tools.harness import flags
from kernelevolve.tools.harness.candidate import Verdict, tb_tail
from kernelevolve.tools.harness.judge.memory import Memory
from kernelevolve.tools.harness.judge.precision import Precision


def device_name(device: torch.device, target: str = "") -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if target.startswith("mtia-sim"):
        return f"simulated MTIA {target.partition(':')[2]} (Triton interpreter on the CPU)"
    return f"cpu ({platform.processor() or platform.machine()}, Triton interpreter)"


def versions() -> dict[str, str]:
    import triton

    info = {"python": platform.python_version(), "torch": torch.__version__,
            "triton": triton.__version__}
    if torch.cuda.is_available():
        info["cuda"] = str(torch.version.cuda)
    return info


class Reply(Memory, Precision):
    """The verdict of the cascade (``run``, composed by ``worker.Evaluation``) and the reply."""

    def run(self) -> dict[str, Any]:
        """The stages in their order: ``worker.Evaluation.run``."""
        raise NotImplementedError

    def result(self) -> dict[str, Any]:
        t0 = time.perf_counter()
        out: dict[str, Any]
        try:
            out = self.run()
        except Verdict as v:
            out = {"status": v.status, "message": v.message, "fatal": v.fatal}
        except ProblemError as exc:
            out = {"status": "crash", "message": f"the reference problem failed: {exc}",
                   "harness_error": str(exc)}
        except Exception as exc:  # process boundary: record it
            out = {"status": "crash", "fatal": True,
                   "message": f"the harness failed while evaluating this candidate: "
                              f"{type(exc).__name__}: {exc}\n{tb_tail(exc)}"}
        finally:
            memory = self.memory_use()
            self.remote.close()
            self.held.close()
        elapsed = time.perf_counter() - t0
        out.update({
            "target": self.state.target, "device": device_name(self.device, self.state.target),
            "checks": self.checks, "errors": [self.errors[k] for k in sorted(self.errors)],
            "aten_ops": sorted(self.ops_seen), "kernel_launches": self.max_launches,
            "nondeterministic": self.nondeterministic, "flags": self.flags,
            "elapsed_s": elapsed,
            "first_call_s": self.first_call_s, "compile_reference_s": self.compile_ref_s,
            "overhead_s": max(0.0, elapsed - self.first_call_s - self.compile_ref_s),
            "stages": {k: round(v, 4) for k, v in self.stages.items()},
            "versions": versions(), "memory": memory,
            "precision": {
                "contract": str(self.cfg.get("precision", "baseline")),
                "factor": float(self.cfg.get("precision_factor", 3.0)),
                "baseline": flags.label(self.baseline),
                "inexact_ops": self.contract_ops(), "passed_under_it": self.contract_passes,
                "why": self.contract_why()},
        })
        out.setdefault("timing", None)
        return out
