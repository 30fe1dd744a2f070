"""On the interpreter targets, the kernels that ran there compiled for a GPU too."""

from __future__ import annotations

from kernelevolve.tools.harness.candidate import Verdict
from kernelevolve.tools.harness.judge.state import Judge


class Compiles(Judge):
    """The GPU compile stage (``eval.gpu_compile_arch``)."""

    def compile_for_gpu(self, again: bool = False) -> None:
        """On the interpreter targets, after every correctness check: every specialization
        of every kernel that ran, and every config of every autotuned kernel, must compile for
        the GPU too (gpu_compile.py; ``eval.gpu_compile_arch``). ``again`` (after the simulated
        timing, at the problem's own sizes): those launched since, if any."""
        arch = self.cfg.get("gpu_compile_arch")
        if not self.interpreted or (again and not arch):
            return
        if not arch:
            self.check("compiles for a GPU", True, "skipped: eval.gpu_compile_arch is unset",
                       skipped=True)
            return
        reply = self.remote.ask("gpu_compile", arch=int(arch),
                                timeout_s=float(self.cfg["timeout_s"]) / 2)
        if reply.get("timed_out"):
            raise Verdict("timeout", f"{reply['timed_out']} (no verdict on whether they compile: "
                                     f"raise eval.timeout_s on a loaded machine)")
        errors = [str(e) for e in reply.get("errors", [])]
        if errors:
            raise Verdict("compile_error", f"the kernels ran in Triton's interpreter but do not "
                                           f"compile for the GPU (sm_{arch}, Triton's own "
                                           f"compiler and ptxas): {'; '.join(errors)}")
        skipped = [str(k) for k in reply.get("skipped", [])]
        kernels = int(reply.get("kernels", 0))
        if again and not kernels:
            return
        self.check("compiles for a GPU" + (" (the simulated run's launches)" if again else ""),
                   True, f"sm_{arch}: {kernels} kernel(s) as launched"
                   + (f"; not compiled: {'; '.join(skipped)}" if skipped else ""))
