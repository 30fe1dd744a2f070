"""The one loader of the Triton source a template emits as it is: real ``.py`` files in a
family's ``kernels/`` folder (``families/conv/kernels/conv_kernels.py``), which ruff lints and
the wheel ships as package data.

Such a file is a module in two parts: above the marker line, what lets it stand alone for a
linter (imports, stand-ins for the names the candidate module defines around it); below it, the
text the template emits, byte for byte (the file's last newline excepted).
"""

from __future__ import annotations

import functools
from importlib import resources

from kernelevolve.errors import SynthesisError

MARKER = "# ---- emitted below this line, as it is ----\n"


@functools.cache
def load(family: str, name: str) -> str:
    """The emitted text of ``families/<family>/kernels/<name>.py``."""
    path = resources.files("kernelevolve.synth.offline.families").joinpath(
        family, "kernels", f"{name}.py")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise SynthesisError(f"the {family} template's kernel file {name}.py is missing from "
                             f"the installed package ({path}); reinstall kernelevolve") from exc
    head, found, body = text.partition(MARKER)
    if not found:
        raise SynthesisError(f"{path} has no line {MARKER.strip()!r}: the loader cannot tell "
                             f"its emitted text from its header")
    return body.removesuffix("\n")
