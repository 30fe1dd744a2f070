"""The prompt templates and their one loader.

Templates are Jinja2 files shipped beside this module (``*.j2``). A user override directory,
named by ``KERNELEVOLVE_PROMPTS_DIR``, is searched first: a file there with the same name replaces
the bundled one. Rendering is strict: a value a template uses but was not given raises, so a
prompt never carries a placeholder; an absent optional section is left out by the template.

The functions that build each prompt's context (and clip long text) sit beside the parser of
their reply, in ``kernelevolve.synth.llm.reply``.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import jinja2

from kernelevolve.errors import ConfigError

__all__ = ["BUNDLED_DIR", "ENV_VAR", "render", "search_path"]

BUNDLED_DIR = Path(__file__).resolve().parent
ENV_VAR = "KERNELEVOLVE_PROMPTS_DIR"


def search_path() -> list[Path]:
    """The template directories, first match wins: the user override (if set), then the bundled."""
    dirs: list[Path] = []
    override = os.environ.get(ENV_VAR)
    if override:
        path = Path(override).expanduser()
        if not path.is_dir():
            raise ConfigError(
                f"{ENV_VAR}={override} is not a directory; create it (copy the templates you "
                f"want to change from {BUNDLED_DIR}) or unset {ENV_VAR}"
            )
        dirs.append(path)
    dirs.append(BUNDLED_DIR)
    return dirs


@functools.lru_cache(maxsize=8)
def _environment(dirs: tuple[Path, ...]) -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(d) for d in dirs]),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # plain-text prompts, not HTML
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render(name: str, **ctx: Any) -> str:
    """Render the template ``name`` (e.g. ``"coder.j2"``) with ``ctx``.

    Raises ConfigError when no directory holds the template, when it does not parse, or when it
    uses a value that ``ctx`` does not provide.
    """
    dirs = search_path()
    env = _environment(tuple(dirs))
    try:
        return env.get_template(name).render(**ctx)
    except jinja2.TemplateNotFound as exc:  # the template, or one it imports or includes
        searched = ", ".join(str(d) for d in dirs)
        raise ConfigError(
            f"prompt template {exc.name!r} not found; searched {searched} "
            f"(a user override directory is set with {ENV_VAR})"
        ) from exc
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(
            f"prompt template {exc.filename or exc.name or name} line {exc.lineno}: {exc.message}"
        ) from exc
    except jinja2.UndefinedError as exc:
        raise ConfigError(
            f"prompt template {name!r} (searched {', '.join(str(d) for d in dirs)}) uses an "
            f"undefined value: {exc.message}"
        ) from exc
