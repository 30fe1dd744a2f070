"""The CLI's output takes the terminal width the command runs with, not the one at import."""

from __future__ import annotations

import os
import subprocess
import sys


def test_a_table_takes_the_width_the_command_runs_with():
    # A Console reads COLUMNS when it is made: one made at import would keep 80 here.
    code = ("import os\n"
            "from kernelevolve.cli import app\n"
            "os.environ['COLUMNS'] = '200'\n"
            "app(['targets'], standalone_mode=False)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True, env={**os.environ, "COLUMNS": "80"}).stdout
    assert max(len(line) for line in out.splitlines()) > 80, out
