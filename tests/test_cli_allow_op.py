"""``tune --allow-op``: a plain KernelBench-style file whose forward starts with a convolution
(as most of level 2 does) is tuned with the library convolution kept and what follows it fused,
when the user allows the op; without it the offline synthesizer writes the convolution too (the
convolution template's kernels, then the fused epilogue) and names the flag in the kernel's
description."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelevolve.graph.session import Session

PROBLEM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)
        self.bias = nn.Parameter(0.1 * torch.randn(out_channels, 1, 1))

    def forward(self, x):
        return torch.relu(self.conv(x)) + self.bias


batch_size = 2
in_channels = 3
out_channels = 8
height = 8
width = 8
kernel_size = 3


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
'''


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELEVOLVE_")}
    return {**env, "KERNELEVOLVE_HOME": str(home), "OMP_NUM_THREADS": "1", "COLUMNS": "200"}


def _tune(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    problem = tmp_path / "conv_relu_bias.py"
    problem.write_text(PROBLEM)
    cmd = [sys.executable, "-m", "kernelevolve.cli", "tune", str(problem), "--target", "cpu",
           "--llm", "offline", "--rounds", "1", "--no-kb", "--quiet",
           "--out", str(tmp_path / "tuned.py"), *extra]
    return subprocess.run(cmd, env=_env(tmp_path / "home"), capture_output=True, text=True,
                          timeout=400)


@pytest.mark.slow
def test_tune_keeps_an_allowed_library_convolution_and_fuses_the_rest(tmp_path: Path) -> None:
    done = _tune(tmp_path, "--allow-op", "conv2d")
    assert done.returncode == 0, done.stdout + done.stderr
    kernel = (tmp_path / "tuned.py").read_text()
    assert "conv2d(" in kernel and "@triton.jit" in kernel
    assert "torch.relu" not in kernel  # the epilogue is the Triton kernel's work


@pytest.mark.slow
def test_tune_without_the_permission_writes_the_convolution_too(tmp_path: Path) -> None:
    done = _tune(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    kernel = (tmp_path / "tuned.py").read_text()
    assert "conv2d_out = conv_nd(x, self.conv.weight, None, self.conv.stride" in kernel
    assert "def conv_gemm_kernel(" in kernel and "def fused_elementwise_kernel(" in kernel
    assert "torch.nn.functional.conv2d" not in kernel and "torch.relu" not in kernel
    assert "`--allow-op conv2d` keeps the library's" in kernel  # the user learns the choice


def test_a_resumed_run_keeps_the_permission(tmp_path: Path, monkeypatch) -> None:
    from kernelevolve.config import load_settings

    for key in list(os.environ):
        if key.startswith("KERNELEVOLVE_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("KERNELEVOLVE_HOME", str(tmp_path / "home"))
    problem = tmp_path / "conv_relu_bias.py"
    problem.write_text(PROBLEM)
    settings = load_settings(eval={"allowed_ops": ["conv2d"]})
    settings.llm.model = "offline"
    with Session.create(problem, target="cpu", settings=settings) as session:
        assert session.problem.allowed_ops == ["conv2d"]
        # reopened while it is there (a run closed before its first checkpoint is removed)
        with Session.open(session.run_dir) as reopened:
            assert reopened.problem.allowed_ops == ["conv2d"]
            assert reopened.deps.synthesizer.name == "offline"
