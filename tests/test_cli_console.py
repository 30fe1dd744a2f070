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


# -- run ids and paths are never cut: at 80 columns, in a pipe, in any terminal ----------------

RUN_ID = "20261207-132218-12_conv2d_relu_scale_bias_with_a_long_name-1f2e"
RUN_DIR = "/home/someone/.local/share/kernelevolve/runs/" + RUN_ID


def _record(run_id: str = RUN_ID):
    from kernelevolve.store.models import RunRecord

    return RunRecord(run_id=run_id, problem="12_conv2d_relu_scale_bias_with_a_long_name",
                     problem_digest="0", target="mtia-sim:2i", synthesizer="openai:qwen2.5-coder",
                     created="2026-12-07 13:22:36 UTC", finished=True,
                     stop_reason="budget spent: 2 rounds", best_node="n0002", best_speedup=3.0,
                     simulated=True, rounds=2, candidates=2, verified=2)


def _console(width: int):
    import io

    from rich.console import Console

    return Console(file=io.StringIO(), width=width)


def test_runs_never_folds_or_cuts_a_run_id_at_80_columns():
    from kernelevolve.graph.inspect import render_runs

    console = _console(80)
    render_runs([_record(), _record(RUN_ID[:-4] + "abcd")], console)
    out = console.file.getvalue()
    assert "…" not in out
    lines = out.splitlines()
    assert RUN_ID in lines and RUN_ID[:-4] + "abcd" in lines  # whole, on a line of its own
    assert "12_conv2d_relu_scale_bias_with_a_long_name" in out and "3.00x sim" in out

    wide = _console(250)  # where it fits, the table
    render_runs([_record()], wide)
    row = next(x for x in wide.file.getvalue().splitlines() if RUN_ID in x)
    assert row.startswith("│ " + RUN_ID) and "3.00x sim" in row


def test_the_tune_summary_never_cuts_a_path_at_80_columns():
    from kernelevolve.graph.render import render_tune_result
    from kernelevolve.graph.rundir import TuneResult

    result = TuneResult(run_id=RUN_ID, run_dir=RUN_DIR, problem="p.py", target="mtia-sim:2i",
                        synthesizer="offline", finished=True, stop_reason="budget spent",
                        best_node="n0002", best_speedup=3.0, simulated=True,
                        kernel_path=RUN_DIR + "/best.py",
                        kernel_out="/work/somewhere/deep/12_conv2d_relu_scale_bias_tuned.py")
    console = _console(80)
    render_tune_result(result, console)
    lines = console.file.getvalue().splitlines()
    assert "…" not in console.file.getvalue()
    for key, value in (("run", RUN_ID), ("run directory", RUN_DIR),
                       ("kernel", RUN_DIR + "/best.py"),
                       ("kernel written to", result.kernel_out)):
        assert any(x.startswith(key + " ") and x.endswith("  " + value) for x in lines), key
    # what "simulated" means, in one line
    assert any(x.startswith("simulated: ") and "model of the chip" in x for x in lines)


def test_runs_piped_prints_whole_run_ids(tmp_path):
    """Through a pipe (not a terminal: rich assumes 80 columns) `kernelevolve runs` prints every
    run id whole on its own line."""
    from kernelevolve.config import StoreConfig
    from kernelevolve.store import open_store

    home = tmp_path / "home"
    with open_store(StoreConfig(path=home / "store.sqlite")) as store:
        store.record(_record())
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELEVOLVE_")}
    env.pop("COLUMNS", None)
    env["KERNELEVOLVE_HOME"] = str(home)
    out = subprocess.run([sys.executable, "-m", "kernelevolve.cli", "runs"], env=env,
                         capture_output=True, text=True, timeout=120, check=True).stdout
    assert RUN_ID in out.splitlines() and "…" not in out, out
