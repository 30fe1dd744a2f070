"""The Proton wrapper: parsing of Proton's hatchet tree (per-kernel times, launch metadata,
intra-kernel scopes) and the pass's reports where Proton cannot run.

``CAPTURED`` tests read real output of ``benchmarks/suites/profile_gpu.py`` on the H200 (Triton
3.6.0) and are required. Its layout: a list of the ROOT frame (``count`` 0, ``time (ns)`` 0) and the
device table; the ``kernelevolve.forward`` scope under ROOT; kernel leaves under it with
``count``, ``device_id``, ``device_type`` and ``time (ns)`` summed over the forwards; the
instrumented run's tree ROOT > kernel > scope with ``cycles`` (summed over warps) and
``normalized_cycles``. ``SYNTHETIC`` follows the same layout for the branches the captured runs
do not reach: Proton's launch-metadata scope, kernels outside the forwards, launch-metadata FLOPs
and bytes, other time units.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from kernelevolve.tools import proton
from kernelevolve.tools.profiling import ProfileOptions

CAPTURED = Path(__file__).resolve().parents[1] / "data" / "profiles" / "h200"


def _node(name: str, metrics: dict | None = None, children: list | None = None) -> dict:
    return {"frame": {"name": name, "type": "function"}, "metrics": metrics or {},
            "children": children or []}


def _kernel(name: str, count: int, time_ns: float, **extra: float) -> dict:
    return _node(name, {"count": count, "device_id": "0", "device_type": "CUDA",
                        "time (ns)": time_ns, **extra})


SYNTHETIC = [
    _node("ROOT", {"count": 0, "time (ns)": 0}, [
        _node(proton.FORWARD_SCOPE, {}, [
            _node("__proton_launch_metadata", {}, [_kernel("metadata_helper", 5, 900)]),
            _kernel("step_kernel", 1000, 2_000_000, flops32=5e6, bytes=8e6),
            _kernel("copy_kernel", 5, 500_000),
        ]),
        _kernel("input_prep_kernel", 1, 10_000),
    ]),
    {"CUDA": {"0": {"arch": "90", "bus_width": 6144, "clock_rate": 1980000,
                    "memory_clock_rate": 2619000, "num_sms": 132}}},
]


def _value(report: dict, name: str, kernel: str | None = None) -> float:
    return next(m["value"] for m in report["metrics"]
                if m["name"] == name and m.get("kernel") == kernel)


def test_per_forward_times_and_counts_from_the_forward_scopes():
    report = proton.parse_hatchet(SYNTHETIC, iters=5)
    assert report["unavailable"] is None
    assert _value(report, "proton_kernels") == pytest.approx(201)
    assert _value(report, "proton_kernel_time") == pytest.approx(500.0)  # us per forward
    assert _value(report, "proton_mean_kernel_time") == pytest.approx(500 / 201)
    assert [k["name"] for k in report["kernels"]] == ["step_kernel", "copy_kernel"]
    assert report["kernels"][0]["calls"] == pytest.approx(200)
    assert _value(report, "proton_kernel_calls", kernel="copy_kernel") == pytest.approx(1)
    # Proton's launch-metadata scope and kernels outside the forwards are not the candidate's.
    assert "metadata_helper" not in {k["name"] for k in report["kernels"]}
    assert any("outside the forward" in n for n in report["notes"])


def test_launch_metadata_flops_and_bytes():
    report = proton.parse_hatchet(SYNTHETIC, iters=5)
    assert _value(report, "proton_flops") == pytest.approx(5e6 / 5 / 1e9)
    assert _value(report, "proton_bytes") == pytest.approx(8e6 / 5 / 1e6)


def test_time_units_other_than_ns():
    tree = [_node("ROOT", {}, [_node(proton.FORWARD_SCOPE, {}, [
        _node("k", {"count": 2, "time (us)": 3.0})])])]
    assert _value(proton.parse_hatchet(tree, 1), "proton_kernel_time") == pytest.approx(3.0)


def test_intra_kernel_scopes_without_normalized_cycles_are_sums():
    scopes = [_node("ROOT", {}, [_node("copy_scoped_kernel", {}, [
        _node("load", {"cycles": 1200}), _node("store", {"cycles": 300})])])]
    report = proton.parse_hatchet(SYNTHETIC, 5, scopes)
    assert _value(report, "proton_scope_cycles", kernel="copy_scoped_kernel/load") == 1200
    assert _value(report, "proton_scope_cycles", kernel="copy_scoped_kernel/store") == 300
    assert any("summed over all warps" in n for n in report["notes"])


def test_captured_h200_intra_kernel_scopes_per_warp():
    raw = CAPTURED / "copy_scoped" / "raw"
    assert json.loads((raw / "proton_driver.json").read_text())["intra_kernel"] == "recorded"
    report = proton.parse_hatchet(proton.load(raw / "proton.hatchet"),
                                  ProfileOptions().proton_iters,
                                  proton.load(raw / "proton_scopes.hatchet"))
    assert report["unavailable"] is None
    assert [k["name"] for k in report["kernels"]] == ["copy_scoped_kernel"]
    scopes = {m["kernel"]: m["value"] for m in report["metrics"]
              if m["name"] == "proton_scope_cycles"}
    # Means per warp: 2,249,139,473 and 175,726,403 cycles over 32768 programs x 8 warps.
    assert scopes == {"copy_scoped_kernel/load": pytest.approx(175_726_403 / 262_144),
                      "copy_scoped_kernel/store": pytest.approx(2_249_139_473 / 262_144)}
    assert any("262,144 warps" in n for n in report["notes"])


def test_no_kernel_in_the_forwards_is_unavailable():
    tree = [_node("ROOT", {}, [_kernel("elsewhere", 1, 10)])]
    assert "no kernel" in proton.parse_hatchet(tree, 1)["unavailable"]


def test_intra_kernel_scope_detection():
    marked = "import triton.profiler.language as pl\n...\n    with pl.scope('load'):\n"
    assert proton.uses_intra_kernel_scopes(marked)
    assert not proton.uses_intra_kernel_scopes("with torch.no_grad(): pass  # scope")


def test_pass_needs_cuda(tmp_path):
    ctx = SimpleNamespace(device_type="cpu", workdir=tmp_path)
    assert "CUDA" in proton.run(ctx, ProfileOptions())["unavailable"]


def test_load_reads_gzip(tmp_path):
    import gzip

    path = tmp_path / "p.hatchet.gz"
    with gzip.open(path, "wt") as f:
        json.dump(SYNTHETIC, f)
    assert proton.load(path) == SYNTHETIC


@pytest.mark.parametrize("case,kernel,launches", [
    ("copy", "copy_kernel", 1), ("matmul_bf16", "matmul_kernel", 1),
    ("tiny_launches", "step_kernel", 200), ("register_heavy", "chase_kernel", 1),
    ("copy_scoped", "copy_scoped_kernel", 1)])
def test_captured_h200_hatchet_parses(case, kernel, launches):
    raw = CAPTURED / case / "raw"
    (path,) = sorted(raw.glob("proton.hatchet*"))
    tree = proton.load(path)
    driver = json.loads((raw / "proton_driver.json").read_text())
    assert driver["ok"] and driver["triton"] == "3.6.0"
    # Kernel leaves sit directly under the forward scope, their counts summed over the forwards.
    forward = tree[0]["children"][0]
    assert forward["frame"]["name"] == proton.FORWARD_SCOPE
    assert [c["frame"]["name"] for c in forward["children"]] == [kernel]
    assert forward["children"][0]["metrics"]["count"] == launches * driver["iters"]
    report = proton.parse_hatchet(tree, driver["iters"])
    assert report["unavailable"] is None
    assert [k["name"] for k in report["kernels"]] == [kernel]
    assert _value(report, "proton_kernels") == pytest.approx(launches)
    assert _value(report, "proton_kernel_calls", kernel=kernel) == pytest.approx(launches)
    assert not any("outside the forward" in n for n in report["notes"])
    stored = next(r for r in json.loads((CAPTURED / case / "report.json").read_text())
                  if r["instrument"] == "proton")
    assert _value(report, "proton_kernel_time") == pytest.approx(
        next(m["value"] for m in stored["metrics"] if m["name"] == "proton_kernel_time"))


def test_captured_h200_kernel_times_per_forward():
    times = {case: _value(proton.parse_hatchet(proton.load(CAPTURED / case / "raw" /
                                                            "proton.hatchet"), 5),
                          "proton_kernel_time")
             for case in ("copy", "matmul_bf16", "tiny_launches", "register_heavy")}
    # 1 GiB moved in ~262 us (~4.1 TB/s); 1.1 TFLOP in ~1.6 ms; 200 launches of ~0.84 us.
    assert times == {"copy": pytest.approx(262.44, rel=1e-3),
                     "matmul_bf16": pytest.approx(1596.43, rel=1e-3),
                     "tiny_launches": pytest.approx(167.57, rel=1e-3),
                     "register_heavy": pytest.approx(573.24, rel=1e-3)}
