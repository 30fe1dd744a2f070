"""benchmarks/device/device_wheels.py keeps one version of each distribution in its folder: a second
(an older run's) made the device's ``pip install .whl/*.whl`` refuse every wheel (stop 43:
httpcore2 2.16.2 beside 2.17.0, "ResolutionImpossible")."""

from __future__ import annotations

from tests.benchmark_script import load


def test_a_new_version_replaces_the_old_and_leaves_the_rest(tmp_path):
    dw = load("device/device_wheels")
    out, new = tmp_path / "out", tmp_path / "new"
    out.mkdir()
    new.mkdir()
    for name in ("httpcore2-2.16.2-py3-none-any.whl", "sniffio-1.3.1-py3-none-any.whl",
                 "pydantic_core-2.50.5-cp312-cp312-manylinux2014_x86_64.whl"):
        (out / name).write_bytes(b"old")
    (new / "httpcore2-2.17.0-py3-none-any.whl").write_bytes(b"new")
    (new / "pydantic_core-2.50.5-cp312-cp312-manylinux2014_x86_64.whl").write_bytes(b"new")

    assert dw.place(new / "httpcore2-2.17.0-py3-none-any.whl", out) == [
        "httpcore2-2.16.2-py3-none-any.whl"]
    # the same file again: replaced in place, nothing removed
    assert dw.place(new / "pydantic_core-2.50.5-cp312-cp312-manylinux2014_x86_64.whl",
                    out) == []
    assert sorted(p.name for p in out.iterdir()) == [
        "httpcore2-2.17.0-py3-none-any.whl",
        "pydantic_core-2.50.5-cp312-cp312-manylinux2014_x86_64.whl",
        "sniffio-1.3.1-py3-none-any.whl"]
    assert (out / "pydantic_core-2.50.5-cp312-cp312-manylinux2014_x86_64.whl").read_bytes() == (
        b"new")
