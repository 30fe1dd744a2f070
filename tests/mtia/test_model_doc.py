"""MODEL.md and the code agree; the package imports without the control-plane dependencies."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import kernelevolve.tools.mtia as mtia
from kernelevolve.tools.mtia.generations import constants_markdown


def test_model_md_embeds_the_constants_table():
    text = (Path(mtia.__file__).parent / "MODEL.md").read_text()
    assert constants_markdown() in text
    assert "simulated" in text.splitlines()[2]


def test_package_imports_with_only_stdlib_torch_triton_numpy():
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('pydantic', 'pydantic_settings', 'typer', 'rich', 'jinja2',"
        " 'chromadb', 'langgraph', 'langchain_core'):\n"
        "            raise ImportError(name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from kernelevolve.tools.mtia import GENERATIONS, simulate_forward, simulate_reference\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=None)
