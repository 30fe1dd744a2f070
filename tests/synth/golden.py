"""The offline synthesizer's rendered sources, hashed: the golden record that a refactor of the
synthesizer (a module moved, a kernel string turned into a file) changes no candidate by a byte.

For every KernelBench file of levels 1 and 2, ``analyze`` gives a plan (or the reason it gives
none); its source is rendered at the defaults and at every single-parameter change of them (each
value of each key, the rest at their defaults), over the whole space, opt-in values included.
Where ``with_tf32`` changes the plan (fp32 convolutions) the TF32 plan is rendered the same way.
Each rendering is stored as a sha256 prefix (the sources would be megabytes); a refusal as the
hash of its message with object addresses (` at 0x7f12...`) left out, which change between runs.

    python tests/synth/golden.py            # compare with tests/data/golden_sources.json
    python tests/synth/golden.py --write    # record (only when a change is meant to alter them)
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RECORD = HERE.parent / "data" / "golden_sources.json"
KERNELBENCH = HERE.parents[2] / "shared" / "kernelbench"
LEVELS = ("level1", "level2")
# A refusal can name an object by its repr (`<built-in method foo of type object at 0x7f12...>`),
# whose address changes from run to run; the rest of the message is what the record holds.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _sha(text: str) -> str:
    # 64 bits of the sha256 tell a changed source as surely, in half the record
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def refusal(exc: Exception) -> str:
    """The hash of a refusal's message, object addresses left out."""
    return _sha(_ADDRESS.sub("", str(exc)))


def _renders(plan, prefix: str) -> dict[str, str]:
    from kernelevolve.synth.offline import Unsupported

    def one(params: dict[str, int]) -> str:
        try:
            return _sha(plan.render(params))
        except Unsupported as exc:
            return "unsupported " + refusal(exc)

    defaults = plan.default_params()
    out = {f"{prefix}default": one(defaults)}
    for key in sorted(plan.space):
        for value in plan.space[key]:
            if value != defaults[key]:
                out[f"{prefix}{key}={value}"] = one({**defaults, key: value})
    return out


def hashes(path: Path) -> dict[str, str]:
    """Rendering -> sha256 of the candidate source, for one problem file."""
    from kernelevolve.problem import load_problem
    from kernelevolve.synth.offline import Unsupported, analyze
    from kernelevolve.synth.offline.families.conv.template import with_tf32

    try:
        plan = analyze(load_problem(path))
    except Unsupported as exc:
        return {"unsupported": refusal(exc)}
    out = {"class": plan.operator_class, **_renders(plan, "")}
    tf32 = with_tf32(plan)
    if tf32 is not plan:
        out.update(_renders(tf32, "tf32 "))
    return out


def files(root: Path = KERNELBENCH) -> list[Path]:
    """The KernelBench files, sorted."""
    return [p for level in LEVELS for p in sorted((root / level).glob("*.py"))]


def sample(record: dict[str, dict[str, str]]) -> list[str]:
    """The record's first file of each operator class and its first unsupported one: every
    template at a tenth of the cost (the whole record takes minutes, mostly convolutions)."""
    first: dict[str, str] = {}
    for name in sorted(record):
        first.setdefault(record[name].get("class", "unsupported"), name)
    return sorted(first.values())


def key(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def main(argv: list[str]) -> int:
    record = {key(p): hashes(p) for p in files()}
    if "--write" in argv:
        RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        n = sum(len(v) for v in record.values())
        print(f"recorded {n} renderings of {len(record)} files in {RECORD}")
        return 0
    known = json.loads(RECORD.read_text())
    changed = sorted(k for k in known.keys() | record.keys() if known.get(k) != record.get(k))
    for name in changed:
        print(f"changed: {name}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
