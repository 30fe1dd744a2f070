"""The start of a script the convolution tests run in a fresh process (Triton's interpreter must
be on before triton loads): the template's kernels and launcher in ``ns`` at small tiles,
``conv_nd`` and ``F`` bound, and the kernels named wrapped so that each launch appends its name
to ``launched``."""

from __future__ import annotations

import textwrap

_HEADER = textwrap.dedent('''
    import json, os
    os.environ["TRITON_INTERPRET"] = "1"
    import torch
    import triton
    import triton.language as tl
    from kernelevolve.synth.offline.families.conv.template import DEFAULTS
    from kernelevolve.synth.offline.families.conv.source import KERNELS, LAUNCHER

    ns = {"torch": torch, "triton": triton, "tl": tl, **DEFAULTS, "BLOCK_M": 32,
          "BLOCK_N": 16, "BLOCK_K": 16, "NUM_WARPS": 4, "BLOCK_H": 1, "BLOCK_W": 64,
          "SUB_M": 0, "MAXNREG": 0, "W_BCAST": 0}
    exec(compile(KERNELS + "\\n\\n" + LAUNCHER, "<conv>", "exec"), ns)
    conv_nd, F = ns["conv_nd"], torch.nn.functional
    launched = []
    for name in SPIED:
        kernel = ns[name]
        class Spy:
            def __init__(self, kernel, name):
                self.kernel, self.name = kernel, name
            def __getitem__(self, grid):
                launched.append(self.name)
                return self.kernel[grid]
        ns[name] = Spy(kernel, name)
''')


def conv_script(spied: tuple[str, ...], body: str) -> str:
    """The header spying on the kernels ``spied``, then ``body`` (dedented)."""
    return _HEADER.replace("SPIED", repr(spied)) + textwrap.dedent(body)
