"""Usage errors print the usage line and the message and exit 2, like any click program: no
traceback (typer >= 0.25 vendors its own click, whose exceptions the entry point must know)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("args, message", [
    (["kb", "list", "--json"], "No such option: --json"),
    (["profile", "p.py", "c.py", "--target", "cpu"], "No such option: --target"),
    (["tune"], "Missing argument"),
    (["no-such-command"], "No such command"),
])
def test_usage_errors_exit_2_with_the_usage_line(args, message):
    proc = subprocess.run([sys.executable, "-m", "kernelevolve.cli", *args],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert "Usage: " in proc.stderr
    assert "Traceback" not in proc.stderr and "╭" not in proc.stderr
    assert len(proc.stderr.splitlines()) <= 6, proc.stderr
