"""Every KernelBench plan renders the source it rendered when tests/data/golden_sources.json was
recorded, byte for byte (golden.py says what is rendered and how to record it again).

By default one file per operator class (about half a minute); ``KERNELEVOLVE_GOLDEN=all`` checks
all 200 files (minutes: a convolution plan renders some fifty variants)."""

from __future__ import annotations

import json
import os

import pytest

from tests.synth.golden import RECORD, hashes, refusal, sample

_RECORD = json.loads(RECORD.read_text())
_NAMES = sorted(_RECORD) if os.environ.get("KERNELEVOLVE_GOLDEN") == "all" else sample(_RECORD)


@pytest.mark.parametrize("name", _NAMES)
def test_plan_renders_the_recorded_source(kernelbench, name):
    found = hashes(kernelbench / name)
    known = _RECORD[name]
    changed = sorted(k for k in known.keys() | found.keys() if known.get(k) != found.get(k))
    assert not changed, f"{name}: renderings changed: {changed}"


def test_a_refusal_hashes_the_same_at_any_object_address():
    def message(address: str) -> Exception:
        return ValueError(f"no template for <built-in method foo of type object at {address}>")

    assert refusal(message("0x7f12a0b3c4d0")) == refusal(message("0x55d1e2f3a4b8"))
    assert refusal(message("0x7f12a0b3c4d0")) != refusal(ValueError("no template for bar"))
