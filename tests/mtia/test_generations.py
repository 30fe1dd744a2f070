"""The generations table: keys, sources for every constant, the published anchors."""

from __future__ import annotations

import pytest

from kernelevolve.tools.metrics import METRICS
from kernelevolve.tools.mtia import GENERATIONS, get_generation
from kernelevolve.tools.mtia.generations import Const


def test_generations_are_keyed_2i_v1_300():
    assert set(GENERATIONS) == {"2i", "v1", "300"}
    assert get_generation("mtia-sim:v1") is GENERATIONS["v1"]
    with pytest.raises(ValueError, match="unknown MTIA generation"):
        get_generation("v9")


@pytest.mark.parametrize("gen", sorted(GENERATIONS))
def test_every_constant_has_a_source_or_is_an_estimate(gen):
    consts = GENERATIONS[gen].constants()
    assert len(consts) >= 20
    for name, const in consts.items():
        assert isinstance(const, Const)
        assert const.unit, name
        assert const.source.startswith(("MTIA", "estimate: ")), (name, const.source)


def test_published_anchors():
    g2i, v1, g300 = GENERATIONS["2i"], GENERATIONS["v1"], GENERATIONS["300"]
    assert g2i.n_pe == 64 and v1.n_pe == 64 and g300.n_pe == 72
    assert g2i.dpe_pe_flops == pytest.approx(2.76e12, rel=0.01)
    assert g2i.sram_bw.value == 2.7e12 and g2i.dram_bw.value == 204.8e9
    assert 0.10 <= g2i.dram_ecc_overhead.value <= 0.15
    assert v1.dpe_chip_flops.value == 51.2e12 and g300.dpe_chip_flops.value == 560e12
    assert g2i.to_dict()["simulated"] is True


def test_metrics_are_declared_in_the_one_schema():
    names = [n for n, spec in METRICS.items() if spec.source == "mtia-sim"]
    assert "mtia_sim_time" in names and "mtia_sim_cache_hit_rate" in names
    assert all(n.startswith("mtia_sim_") for n in names)
