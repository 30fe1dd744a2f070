"""The agents, the graph, the bench and the CLI import without loading Triton: Triton reads
TRITON_INTERPRET once, when it is first imported, so a module that loads it early fixes the
mode for the whole process (the interpreter targets and the simulator tests set it first)."""

from __future__ import annotations

import subprocess
import sys


def test_the_agent_modules_leave_triton_unloaded():
    code = ("import sys\n"
            "import kernelevolve.agents.coder, kernelevolve.agents.librarian\n"
            "import kernelevolve.agents.planner, kernelevolve.agents.profiler_analyst\n"
            "import kernelevolve.agents.debugger, kernelevolve.graph.session\n"
            "import kernelevolve.bench, kernelevolve.cli\n"
            "loaded = sorted(m for m in sys.modules if m == 'triton' or m.startswith('triton.'))\n"
            "print(' '.join(loaded[:5]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True).stdout.strip()
    assert out == "", f"triton was loaded at import: {out}"
