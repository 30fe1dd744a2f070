"""The ray backend against a real Ray instance on this machine: actors that own real worker
subprocesses (Triton's interpreter on the cpu and mtia-sim targets), spread, hung, killed and
lost mid-run. One Ray instance for the module; the test that shuts it down comes last."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from kernelevolve.config import EvalConfig, load_settings
from kernelevolve.errors import ConfigError, WorkerError
from kernelevolve.graph.session import Session
from kernelevolve.graph.state import Event, EventKind
from kernelevolve.tools.harness.pool import WorkerPool, make_pool

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
PROBLEM = EXAMPLES / "problems" / "03_leaky_relu_scale_clamp.py"
SOLUTION = EXAMPLES / "solutions" / "03_leaky_relu_scale_clamp.py"
HONEST = SOLUTION.read_text()
WRONG = HONEST.replace("x * negative_slope", "x * 0.5")
HANG = HONEST.replace("        return leaky_relu_scale_clamp(\n",
                      "        while True:\n            pass\n        return leaky_relu_scale_clamp(\n")
TIMEOUT_S = 10.0
# Small sizes, no GPU-compile pass: an evaluation takes well under a second once warm.
CONFIG = EvalConfig(backend="ray", n_input_sets=1, cpu_max_elements=4096, gpu_compile_arch=None,
                    timeout_s=TIMEOUT_S)


@pytest.fixture(scope="module")
def ray():
    try:
        import ray
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("ray is missing: CI installs it with the test extra")
        pytest.skip("ray is not installed (pip install 'kernelevolve[ray]')")
    # A fresh instance ("local": never a cluster this host happens to run). Logical CPUs: the
    # module pool's two actors and a run's one (each asks for num_cpus=1).
    ray.init(address="local", num_cpus=3, include_dashboard=False, log_to_driver=False,
             logging_level=logging.WARNING)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def pool(ray):
    with make_pool("cpu", CONFIG, workers=2) as p:
        yield p


def _group_alive(pgid: int) -> bool:
    """Any live process in process group ``pgid`` (a worker and its judge and candidate)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            return True
    return False


def test_candidates_spread_over_the_actors_in_order(pool):
    assert pool.backend == "ray"
    items = [SOLUTION, WRONG, HONEST, SOLUTION, WRONG, HONEST]
    results = pool.evaluate_many(PROBLEM, items)
    assert [r.status for r in results] == ["ok", "mismatch", "ok", "ok", "mismatch", "ok"], \
        [r.message for r in results]
    assert results[0].candidate == str(SOLUTION.resolve()) and results[2].candidate == "<source>"
    assert results[0].problem == str(PROBLEM)  # the caller's path, not the actor's copy
    assert "static" in results[0].stages and "correctness" in results[0].stages
    actors = pool.actors()
    served = [a for a in actors if a.jobs > 0]
    assert len(served) == 2, actors
    pids = {p for a in served for p in a.worker_pids}
    assert len(pids) == 2 and None not in pids
    assert sum(a.jobs for a in actors) == len(items)


def test_a_hung_candidate_times_out_and_only_it_is_lost(pool):
    results = pool.evaluate_many(PROBLEM, [HANG, SOLUTION, HONEST, SOLUTION])
    assert results[0].status == "timeout", results[0].message
    assert f"{TIMEOUT_S:.0f} s" in results[0].message
    assert [r.status for r in results[1:]] == ["ok", "ok", "ok"]
    assert pool.evaluate(PROBLEM, SOLUTION).ok  # the stopped worker's slot works again


def test_an_actor_killed_mid_evaluation_is_a_crash_and_is_replaced(pool, ray):
    before = pool.actors()
    outcome: dict[str, object] = {}
    thread = threading.Thread(target=lambda: outcome.update(r=pool.evaluate(PROBLEM, HANG)))
    thread.start()
    deadline = time.monotonic() + 30
    while not any(a.busy for a in pool.actors()):
        assert time.monotonic() < deadline, "the hung candidate never started"
        time.sleep(0.1)
    time.sleep(1.0)  # inside the candidate's forward by now
    running = pool.actors()
    for info in running:  # the idle actor too: its death must not be blamed on a candidate
        ray.kill(ray.get_actor(info.name))
    thread.join(60)
    crashed = outcome["r"]
    assert crashed.status == "crash", crashed.message  # type: ignore[attr-defined]
    busy = next(a for a in running if a.busy)
    assert "evaluation actor died" in crashed.message  # type: ignore[attr-defined]
    assert f"node {busy.node}" in crashed.message  # type: ignore[attr-defined]
    assert "ray.kill" in crashed.message  # type: ignore[attr-defined]
    # The workers' judge and hung candidate processes died with their actors, and their
    # directories went with them.
    groups = [p for a in running for p in a.worker_pids if p is not None]
    dirs = [Path(f"/proc/{p}/cwd").resolve() for p in groups]
    assert len(groups) == 2 and all(d.name.startswith("kernelevolve-worker") for d in dirs)
    deadline = time.monotonic() + 15
    while any(_group_alive(g) for g in groups) or any(d.exists() for d in dirs):
        assert time.monotonic() < deadline, "a killed actor's worker processes or files live on"
        time.sleep(0.2)
    results = pool.evaluate_many(PROBLEM, [SOLUTION, WRONG])
    assert [r.status for r in results] == ["ok", "mismatch"]
    after = pool.actors()
    assert len(after) == 2 and not {a.name for a in after} & {a.name for a in before}


def test_closing_a_pool_leaves_the_process_connection_up(ray):
    with make_pool("cpu", CONFIG, workers=1) as joined:
        assert joined.size == 1
    assert ray.is_initialized()  # connected before the pool: the module's instance stays


def test_the_ray_backend_without_ray_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    with pytest.raises(ConfigError, match=r"pip install 'kernelevolve\[ray\]'"):
        make_pool("cpu", EvalConfig(backend="ray"))


def test_the_local_backend_starts_workers_per_device():
    with make_pool("cpu", EvalConfig(workers_per_gpu=2)) as local:
        assert isinstance(local, WorkerPool) and local.backend == "local" and local.size == 2
    with make_pool("cpu", EvalConfig(workers_per_gpu=2), workers=1) as one:
        assert one.size == 1


def _nodes(session: Session) -> dict[str, tuple[str, str | None]]:
    return {n.id: (n.status, n.source) for n in session.values()["tree"].nodes.values()}


def test_a_run_whose_cluster_went_away_resumes(tmp_path: Path, ray) -> None:
    # Last in the module: it shuts the module's Ray instance down.
    settings = load_settings(
        search={"retrieve": False, "distill": False, "rounds": 2, "goal": 100.0},
        eval={"backend": "ray", "n_input_sets": 1, "cpu_max_elements": 4096,
              "gpu_compile_arch": None},
        runs={"dir": str(tmp_path / "runs")})
    run_dir = tmp_path / "run"

    def lose_the_cluster(event: Event) -> None:
        if event.kind == EventKind.evaluate and ray.is_initialized():
            ray.shutdown()  # after the first evaluation: every actor, and the head, gone

    with Session.create(PROBLEM, target="mtia-sim:2i", settings=settings, run_dir=run_dir,
                        on_event=lose_the_cluster) as session:
        with pytest.raises(WorkerError, match="connection to the Ray cluster"):
            session.run()
        before = _nodes(session)
    assert "n0001" in before and not (run_dir / "result.json").exists()

    # No cluster now: the resumed run's pool starts a private instance, and stops it at close.
    with Session.open(run_dir, settings=settings) as session:
        result = session.run()
        after = _nodes(session)
    assert not ray.is_initialized()
    assert result.finished and result.stop_reason == "budget spent: 2 rounds", result
    assert all(after[k] == v for k, v in before.items()), "a node changed or vanished"
    assert len(after) > len(before) and result.best_node is not None
