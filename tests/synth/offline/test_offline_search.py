"""mutate / crossover / repair: steps through a plan's parameter space."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kernelevolve.problem import load_problem
from kernelevolve.synth.offline import DIAGNOSES, analyze, crossover, mutate, repair

PROBLEMS = Path(__file__).resolve().parents[3] / "examples" / "problems"


@pytest.fixture(scope="module")
def plans():
    return {name: analyze(load_problem(PROBLEMS / f"{file}.py")) for name, file in {
        "elementwise": "01_gelu_sigmoid_bias", "softmax": "04_row_softmax",
        "strided": "08_max_middle_dim", "matmul": "10_linear_bias_gelu",
        "conv": "12_conv2d_relu_scale_bias"}.items()}


def _in_space(plan, params):
    return set(params) == set(plan.space) and all(v in plan.space[k] for k, v in params.items())


def _tiles(params):
    return {k: v for k, v in params.items() if k.startswith("BLOCK_")}


def test_memory_bound_grows_a_tile(plans):
    plan = plans["elementwise"]
    params, intent = mutate(plan, plan.default_params(), "memory-bound", random.Random(0))
    assert params["BLOCK_SIZE"] == 2048 and params["num_warps"] == 4
    assert intent == "memory-bound: BLOCK_SIZE 1024 -> 2048 to move more bytes per program"
    for name in ("softmax", "strided"):
        plan = plans[name]
        start = plan.default_params()
        new, intent = mutate(plan, start, "memory-bound", random.Random(1))
        assert intent.startswith("memory-bound:")
        assert sum(_tiles(new).values()) > sum(_tiles(start).values())


def test_occupancy_bound_shrinks(plans):
    for name, plan in plans.items():
        start = plan.default_params()
        for seed in range(5):
            new, intent = mutate(plan, start, "occupancy-bound", random.Random(seed))
            assert intent.startswith("occupancy-bound:"), name
            changed = [k for k in new if new[k] != start[k]]
            assert len(changed) == 1 and new[changed[0]] < start[changed[0]], (name, intent)


def test_compute_bound_matmul_grows_tiles_or_stages(plans):
    plan = plans["matmul"]
    start = plan.default_params()
    seen = set()
    for seed in range(20):
        new, intent = mutate(plan, start, "compute-bound", random.Random(seed))
        (key,) = [k for k in new if new[k] != start[k]]
        assert key in {"BLOCK_M", "BLOCK_N", "num_stages"} and new[key] > start[key]
        assert "compute-bound" in intent and key in intent
        seen.add(key)
    assert len(seen) >= 2


def test_latency_bound_is_read_as_occupancy_bound(plans):
    plan = plans["softmax"]
    _, intent = mutate(plan, plan.default_params(), "latency-bound", random.Random(0))
    assert intent.startswith("occupancy-bound:")


def test_random_neighbour_without_diagnosis(plans):
    plan = plans["matmul"]
    start = plan.default_params()
    new, intent = mutate(plan, start, None, random.Random(3))
    assert new != start and intent.startswith("explore:")
    (key,) = [k for k in new if new[k] != start[k]]
    values = plan.space[key]
    assert abs(values.index(new[key]) - values.index(start[key])) == 1


def test_mutation_stays_in_space_and_always_moves(plans):
    rng = random.Random(7)
    for plan in plans.values():
        params = plan.default_params()
        for _ in range(150):
            diagnosis = rng.choice([*DIAGNOSES, None])
            new, intent = mutate(plan, params, diagnosis, rng)
            assert _in_space(plan, new) and new != params
            assert intent and "\n" not in intent
            if diagnosis is not None:
                assert diagnosis in intent
            params = new


def test_a_diagnosis_at_its_limit_still_moves(plans):
    plan = plans["elementwise"]
    top = {"BLOCK_SIZE": max(plan.space["BLOCK_SIZE"]), "num_warps": 4}
    new, intent = mutate(plan, top, "memory-bound", random.Random(0))
    assert new != top and intent.startswith("memory-bound: no parameter left")


def test_unknown_diagnosis_and_bad_params_are_refused(plans):
    plan = plans["elementwise"]
    with pytest.raises(ValueError, match="unknown diagnosis"):
        mutate(plan, plan.default_params(), "cache-bound", random.Random(0))
    with pytest.raises(ValueError, match="BLOCK_SIZE"):
        mutate(plan, {"BLOCK_SIZE": 3, "num_warps": 4}, None, random.Random(0))


def test_crossover_takes_each_parameter_from_a_parent(plans):
    plan = plans["matmul"]
    a = plan.default_params()
    b = {**a, "BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 4, "num_warps": 4,
         "num_stages": 2}
    rng = random.Random(0)
    children = [crossover(plan, a, b, rng) for _ in range(30)]
    for child in children:
        assert _in_space(plan, child)
        assert all(child[k] in (a[k], b[k]) for k in plan.space)
    assert len({tuple(sorted(c.items())) for c in children}) > 2


def test_repair_after_out_of_shared_memory_drops_a_stage(plans):
    plan = plans["matmul"]
    params = {**plan.default_params(), "num_stages": 4}
    message = ("ModelNew.forward raised OutOfResources: out of resource: shared memory, "
               "Required: 262144, Hardware limit: 232448. Reducing block sizes or `num_stages` "
               "may help.")
    fixed, why = repair(plan, params, "compile_error", message)
    assert fixed == {**params, "num_stages": 3}
    assert "num_stages 4 -> 3" in why and why.startswith("compile_error")


def test_repair_after_register_pressure_shrinks_the_largest_tile(plans):
    plan = plans["matmul"]
    params = {**plan.default_params(), "BLOCK_N": 256}
    fixed, why = repair(plan, params, "runtime_error",
                        "triton OutOfResources: too many resources requested for launch")
    assert fixed["BLOCK_N"] == 128 and "BLOCK_N 256 -> 128" in why


def test_repair_after_mtia_local_memory_shrinks(plans):
    plan = plans["softmax"]
    params = plan.default_params()
    message = ("MTIA (mtia-sim:2i, simulated) cannot run this kernel: fused_softmax_kernel: tile "
               "footprint 512 KB exceeds the 384 KB local memory of a PE (program (0, 0, 0)); "
               "use smaller tiles")
    fixed, why = repair(plan, params, "compile_error", message)
    assert sum(_tiles(fixed).values()) < sum(_tiles(params).values())
    assert "out of on-chip resources" in why


def test_repair_gives_up_where_parameters_cannot_help(plans):
    plan = plans["elementwise"]
    defaults = plan.default_params()
    assert repair(plan, defaults, "cheat", "the forward ran torch ops that do the work") is None
    assert repair(plan, defaults, "compile_error", "misaligned: MTIA DMA needs 32-byte") is None
    assert repair(plan, defaults, "mismatch", "output 0: 3 values outside atol") is None
    smallest = {"BLOCK_SIZE": 256, "num_warps": 1}
    assert repair(plan, smallest, "compile_error", "out of resources: shared memory") is None


def test_a_wrong_result_makes_the_products_more_precise_first(plans):
    """Split once (TF32X3 2) chains the tensor cores' truncating accumulation: on an H200 its
    5e-5 error missed the tolerance on 2 of 8.4M values of KernelBench level 2's 95 (a bounded
    epilogue, inputs x 100). A mismatch steps up the precision ladder 2 -> 1 (tf32x3) -> 0
    (ieee), keeping the rest; past the top it goes back to the defaults, never to a less
    precise default."""
    plan = plans["matmul"]
    split = {**plan.default_params(), "TF32X3": 2, "num_stages": 4}  # a mutated point
    fixed, why = repair(plan, split, "mismatch", "output 0: 2 values outside atol")
    assert fixed == {**split, "TF32X3": 1}
    assert "TF32X3 2 -> 1" in why and "more precise" in why and why.startswith("mismatch")
    fixed, _ = repair(plan, fixed, "mismatch", "output 0: 2 values outside atol")
    assert fixed == {**split, "TF32X3": 0}
    # the most precise already: the defaults' tiles, at that precision
    back, why = repair(plan, fixed, "mismatch", "output 0: 2 values outside atol")
    assert back == {**plan.default_params(), "TF32X3": 0} and "default" in why
    assert repair(plan, back, "mismatch", "output 0: 2 values outside atol") is None
    # b split once with a's parts taken in the kernel (3) steps up to split once
    in_kernel = {**plan.default_params(), "TF32X3": 3, "GROUP_M": 4}
    fixed, why = repair(plan, in_kernel, "mismatch", "2 values outside atol")
    assert fixed == {**in_kernel, "TF32X3": 2} and "TF32X3 3 -> 2" in why
    # other failures leave the precision to the defaults as before
    fixed, _ = repair(plan, split, "timeout", "the evaluation timed out")
    assert fixed == plan.default_params()


def test_repair_falls_back_to_the_defaults(plans):
    plan = plans["conv"]
    params = {"BLOCK_SIZE": 8192, "num_warps": 16}
    for status in ("timeout", "mismatch", "crash", "runtime_error"):
        fixed, why = repair(plan, params, status, "something went wrong")
        assert fixed == plan.default_params() and why.startswith(status)


def test_repair_shrinks_as_far_as_the_reported_footprint_needs():
    plan = analyze(load_problem(Path(__file__).resolve().parents[3] / "examples" / "problems"
                                / "04_row_softmax.py"))
    params = {**plan.default_params(), "BLOCK_N": 8192}
    msg = ("MTIA (mtia-sim:2i, simulated) cannot run this kernel: fused_softmax_kernel: tile "
           "footprint 1024 KB exceeds the 384 KB local memory of a PE; use smaller tiles")
    fixed = repair(plan, params, "compile_error", msg)
    assert fixed is not None
    new, why = fixed
    shrink = params["BLOCK_N"] * params.get("BLOCK_M", 1) / (new["BLOCK_N"] * new.get("BLOCK_M", 1))
    assert shrink >= 1024 / 384, (new, why)  # one repair, enough halvings (here 2)
