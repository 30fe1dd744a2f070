"""Runs: a run directory, its SQLite checkpoints, and the graph driven to the end, to a pause
(interactive runs) or resumed after a crash.

A run directory holds ``run.json`` (what was asked, with the settings), ``checkpoints.sqlite``
(LangGraph's checkpointer: the whole state after every step), ``candidates/<node>.py``,
``best.py`` (the best verified kernel so far) and, once the run ends, ``result.json``; its format
and the readers that need no Session are in ``graph/rundir.py``. A run that ends before its first
checkpoint leaves no directory behind.
"""

from __future__ import annotations

import json
import logging
import secrets
import shutil
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command, StateSnapshot
from pydantic import ValidationError

from kernelevolve.batchapi import Exchange, Intake, RepliesWanted, attach
from kernelevolve.batchapi.chat import RepliesNeeded
from kernelevolve.config import (
    EvalConfig,
    KBConfig,
    LLMConfig,
    ProfileConfig,
    SearchConfig,
    Settings,
    describe_errors,
    load_settings,
)
from kernelevolve.errors import ConfigError, KernelEvolveError, RepliesError, RunError
from kernelevolve.graph import search
from kernelevolve.graph.build import build_graph, recursion_limit
from kernelevolve.graph.rundir import (
    FINAL,
    RunSpec,
    StoredRun,
    TuneResult,
    checkpoint_serde,
    find_run,
    read_run,
)
from kernelevolve.graph.runtime import Deps
from kernelevolve.graph.state import Draft, Event, RunState, Task, Usage
from kernelevolve.kb import Hit, Improvement, KnowledgeSource, Situation, SkillWrite
from kernelevolve.problem import Problem, load_problem
from kernelevolve.synth.factory import choose_synthesizer, make_synthesizer, operator_class
from kernelevolve.synth.synthesizer import Synthesizer
from kernelevolve.targets import Target, get_target, tune_target
from kernelevolve.tools.harness.pool import make_pool
from kernelevolve.tools.harness.result import EvalResult

__all__ = ["FINAL", "LazyKnowledgeBase", "RunSpec", "Session", "StoredRun", "TuneResult",
           "checkpoint_serde", "constraints_for", "find_run", "known_seeds", "read_run",
           "resume", "search_eval_config", "tune"]

log = logging.getLogger(__name__)


def _new_run_id(problem: Problem) -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{problem.name}-{secrets.token_hex(2)}"


class Session:
    """One run in this process: open it (new or existing), drive it, close it."""

    def __init__(self, run_dir: Path, spec: RunSpec, settings: Settings, problem: Problem,
                 target: Target, *, kb: KnowledgeSource | None = None,
                 synthesizer: Synthesizer | None = None,
                 on_event: Callable[[Event], None] | None = None) -> None:
        self.run_dir, self.spec, self.settings = run_dir, spec, settings
        self.problem, self.target = problem, target
        synthesizer = synthesizer or make_synthesizer(settings, problem, target.name)
        if synthesizer.name != spec.synthesizer:
            raise RunError(f"run {spec.run_id} was made with the synthesizer {spec.synthesizer}, "
                           f"but this configuration gives {synthesizer.name}; resume it with "
                           "the same LLM settings")
        if kb is None and (settings.search.retrieve or settings.search.distill):
            kb = LazyKnowledgeBase(settings.kb)
        self.pool = make_pool(target, search_eval_config(settings, target))
        self._conn = sqlite3.connect(run_dir / "checkpoints.sqlite", check_same_thread=False)
        self.deps = Deps(settings=settings, problem=problem, target=target, pool=self.pool,
                         synthesizer=synthesizer, kb=kb, run_dir=run_dir,
                         interactive=spec.interactive, on_event=on_event,
                         kernel_out=Path(spec.kernel_out) if spec.kernel_out else None)
        self.graph = build_graph(self.deps, SqliteSaver(self._conn, serde=checkpoint_serde()))
        # batch mode (llm.mode = batch): the run's requests and replies files
        self.batch: Exchange | None = attach(synthesizer, run_dir, spec.run_id)
        self.config: Any = {"configurable": {"thread_id": spec.run_id},
                            "recursion_limit": recursion_limit(self.deps)}
        if settings.search.batch > 1:
            # LangGraph's thread pool for a superstep's tasks: room for every branch at once
            # (its default, min(32, cores + 4), would queue some of a batch on a small host).
            self.config["max_concurrency"] = settings.search.batch

    # -- opening -----------------------------------------------------------------------------

    @classmethod
    def create(cls, problem: str | Path | Problem, *, target: str | None = None,
               settings: Settings | None = None, interactive: bool = False,
               run_dir: str | Path | None = None, kb: KnowledgeSource | None = None,
               synthesizer: Synthesizer | None = None, seeds: list[Draft] | None = None,
               kernel_out: str | Path | None = None,
               on_event: Callable[[Event], None] | None = None) -> Session:
        """Start a new run (``synthesizer`` and ``kb`` replace the configured ones; ``seeds``
        are kernels to verify first, e.g. the best known ones of earlier runs; ``kernel_out``
        a file kept equal to the best kernel, see ``keep_best_at``).

        The run directory is made only once the synthesizer, the target and the problem are
        known to work, and removed again if the run ends before its first checkpoint."""
        settings = settings or load_settings()
        prob = problem if isinstance(problem, Problem) else load_problem(problem)
        prob = prob.allowing(settings.eval.allowed_ops)  # the synthesizer sees them too
        tgt = get_target(target) if target else tune_target()
        run_id = _new_run_id(prob)
        path = Path(run_dir) if run_dir else settings.runs.resolved_dir() / run_id
        if path.exists() and any(path.iterdir()):
            raise RunError(f"run directory {path} is not empty; pick another --run-dir")
        out = _checked_out(kernel_out) if kernel_out is not None else None
        reason = "given by the caller"
        chosen = synthesizer is None
        if synthesizer is None:
            synthesizer, reason = choose_synthesizer(settings, prob, tgt.name)
        existed = path.exists()
        try:
            path.mkdir(parents=True, exist_ok=True)
            spec = RunSpec(run_id=run_id, problem_path=str(prob.path.resolve()),
                           problem_digest=prob.digest, target=tgt.name,
                           synthesizer=synthesizer.name, synthesizer_reason=reason,
                           interactive=interactive, kernel_out=str(out) if out else None,
                           settings=_public_settings(settings),
                           created=time.strftime("%Y-%m-%d %H:%M:%S %Z"))
            (path / "run.json").write_text(spec.model_dump_json(indent=1))
            (path / "reference.py").write_text(prob.source)
            session = cls(path, spec, settings, prob, tgt, kb=kb, synthesizer=synthesizer,
                          on_event=on_event)
        except BaseException:
            _remove_run_dir(path, existed)
            if chosen:
                _close_synthesizer(synthesizer)
            raise
        session._made_dir, session._dir_existed = True, existed
        try:
            if seeds is None:
                seeds = known_seeds(settings, prob, tgt)
            session._seeds = [d.model_copy(update={"origin": "seed"}) for d in seeds]
            session._start_state = session._initial_state()
        except BaseException:
            session.close()
            raise
        return session

    @classmethod
    def open(cls, run: str | Path, *, settings: Settings | None = None,
             kb: KnowledgeSource | None = None, synthesizer: Synthesizer | None = None,
             kernel_out: str | Path | None = None, replies: Sequence[str | Path] = (),
             on_event: Callable[[Event], None] | None = None) -> Session:
        """Reopen a run (to resume it, answer its pause, or read it). ``kernel_out``: keep the
        best kernel there from now on (``keep_best_at``); unset: where the run kept it.
        ``replies``: Batch API output files for a batch-mode run (``take_replies``)."""
        path = find_run(run, settings)
        try:
            spec = RunSpec.model_validate_json((path / "run.json").read_text())
        except ValueError as exc:
            raise RunError(f"{path / 'run.json'} is damaged: {exc}") from exc
        run_settings = settings or load_settings(origin=f"in {path / 'run.json'}",
                                                 **_secrets_back(spec.settings))
        ref = path / "reference.py"
        prob = load_problem(ref if ref.is_file() else spec.problem_path)
        if prob.digest != spec.problem_digest:
            raise RunError(f"the reference of run {spec.run_id} changed since it started "
                           f"({ref}); start a new run instead")
        prob.name = Path(spec.problem_path).stem
        prob = prob.allowing(run_settings.eval.allowed_ops)
        session = cls(path, spec, run_settings, prob, get_target(spec.target), kb=kb,
                      synthesizer=synthesizer, on_event=on_event)
        try:
            if kernel_out is not None:
                session.keep_best_at(kernel_out)
            if replies:
                session.intakes = session.take_replies(replies)
        except BaseException:
            session.close()
            raise
        return session

    intakes: list[Intake] = []

    def take_replies(self, files: Sequence[str | Path]) -> list[Intake]:
        """Add Batch API output (or error) files to a batch-mode run's replies; a line that
        answers no request of this run is an error, and nothing of that file is taken."""
        if self.batch is None:
            raise RepliesError(f"run {self.spec.run_id} is not in batch mode (llm.mode = "
                               f"{self.settings.llm.mode}, synthesizer {self.spec.synthesizer}):"
                               " it has no requests to reply to")
        return [self.batch.take(Path(f)) for f in files]

    def keep_best_at(self, path: str | Path) -> Path:
        """Keep ``path`` equal to the run's best kernel: written now (if there is one) and
        whenever the best changes, also by a later resume (run.json records it)."""
        out = _checked_out(path)
        if self.spec.kernel_out != str(out):
            self.spec = self.spec.model_copy(update={"kernel_out": str(out)})
            (self.run_dir / "run.json").write_text(self.spec.model_dump_json(indent=1))
        self.deps.kernel_out = out
        if self.has_checkpoint():
            self._publish_best()
        return out

    def _initial_state(self) -> RunState:
        tree = search.SearchTree.new(timed=self.target.timed)
        task = Task(
            problem_path=str(self.problem.path), problem_name=self.problem.name,
            reference_source=self.problem.source, target=self.target.name,
            target_description=self.target.description, goal=self.settings.search.goal,
            timed=self.target.timed, simulated=self.target.simulated,
            operator_class=operator_class(self.problem),
            allowed_ops=sorted({*self.problem.allowed_ops, *self.settings.eval.allowed_ops}))
        return {"task": task, "constraints": constraints_for(self.target), "tree": tree,
                "round": 0, "expansion": None, "knowledge": [], "draft": None,
                "last_error": None, "diagnosis": None, "user_notes": [], "usage": Usage(),
                "stop_reason": None, "events": [], "seeds": list(self._seeds)}

    # -- driving -----------------------------------------------------------------------------

    _start_state: RunState | None = None
    _seeds: list[Draft] = []

    def run(self, guidance: Any = None) -> TuneResult:
        """Drive the run until it ends or (interactive) pauses for the user. ``guidance``
        answers a pause: free text lands in the prompt state, "stop" ends the run."""
        snap = self.graph.get_state(self.config)
        if self._start_state is not None and not snap.values:
            payload: Any = self._start_state
            self._start_state = None
        elif snap.interrupts:
            payload = Command(resume=guidance if guidance is not None else "continue")
        elif _steps_left(snap):
            payload = None  # resume after a crash: re-run the step that was cut off
        else:
            self._publish_best()
            return self.result()
        self.deps.reset_clock()
        awaiting: RepliesWanted | None = None
        if self.batch is not None:
            self.batch.begin()
        try:
            self.graph.invoke(payload, self.config)
        except RepliesNeeded:
            # batch mode: the step that asked stays unfinished (it runs again on resume); a
            # RepliesNeeded bubbles up only once every branch of its round ran and asked, so
            # one file holds them all
            if self.batch is None:
                raise
            awaiting = self.batch.write_requests()
        self._publish_best()
        result = self.result()
        if result.finished:
            self.final_timing(result)
            result = self.result()
        (self.run_dir / "trace.json").write_text(
            json.dumps([e.model_dump(mode="json") for e in self.events()], indent=1))
        if result.finished:
            (self.run_dir / "result.json").write_text(result.model_dump_json(indent=1))
        from kernelevolve.store import open_store, sync_from_state

        with open_store(self.settings.store) as store:
            sync_from_state(store, self.spec, self.values(), self.run_dir)
        if awaiting is not None:
            result = result.model_copy(update={"awaiting": awaiting})
        return result

    def has_checkpoint(self) -> bool:
        """Whether the run saved a step yet (without one there is nothing to resume)."""
        return bool(self.graph.get_state(self.config).values)

    def _publish_best(self) -> None:
        """``best.py`` and ``kernel_out`` as the checkpointed best kernel: a node writes them
        when it finds a better one, but a step cut off before its checkpoint runs again on
        resume and may end otherwise; nothing here is left stale."""
        if not self.has_checkpoint():
            return
        best = self.values()["tree"].best
        if best is not None and best.source is not None:
            self.deps.write_best(best.source)

    def values(self) -> RunState:
        snap = self.graph.get_state(self.config)
        if not snap.values:
            raise RunError(f"run {self.spec.run_id} has no checkpoint yet")
        return snap.values  # type: ignore[return-value]

    def events(self) -> list[Event]:
        return list(self.values().get("events", []))

    def result(self) -> TuneResult:
        snap = self.graph.get_state(self.config)
        values: RunState = snap.values  # type: ignore[assignment]
        tree = values["tree"]
        best = tree.best
        paused = snap.interrupts[0].value if snap.interrupts else None
        best_result = EvalResult.model_validate_json(best.result_json) \
            if best is not None and best.result_json else None
        final = self._final() if best is not None else None
        if final is not None:
            best_result = final
        return TuneResult(
            run_id=self.spec.run_id, run_dir=str(self.run_dir), problem=self.spec.problem_path,
            target=self.spec.target, synthesizer=self.spec.synthesizer,
            finished=not _steps_left(snap), stop_reason=values.get("stop_reason"),
            best_node=best.id if best else None,
            best_speedup=final.speedup if final else best.speedup if best else None,
            best_latency_ms=(final.timing.candidate.median_ms if final and final.timing
                             else best.latency_ms if best else None),
            simulated=bool(best_result and best_result.timing and best_result.timing.simulated),
            kernel_path=str(self.run_dir / "best.py") if best else None,
            kernel_out=self.spec.kernel_out,
            best_result=best_result, rounds=values.get("round", 0),
            candidates=len(tree.nodes) - 1, verified=len(tree.verified()),
            usage=values.get("usage", Usage()), paused=paused)

    def final_timing(self, result: TuneResult) -> None:
        """The figure the run reports for its best kernel, measured beside eager and
        torch.compile timed again (during the search their latencies were measured once and
        reused): the best kernel evaluated once more with ``fresh_references``, kept in
        ``final.json`` for that node. Nothing to do where nothing was timed, or the best
        kernel's figures are already fresh."""
        timing = result.best_result.timing if result.best_result else None
        if timing is None or timing.simulated or not timing.references_reused:
            return
        if self._final() is not None or result.kernel_path is None:
            return
        try:
            final = self.pool.evaluate(self.problem, Path(result.kernel_path),
                                       fresh_references=True)
        except KernelEvolveError as exc:  # the search's figures stand; the run is kept
            log.warning("re-timing the best kernel failed: %s", exc)
            return
        (self.run_dir / FINAL).write_text(json.dumps(
            {"node": result.best_node, "result": final.model_dump(mode="json")}, indent=1))

    def _final(self) -> EvalResult | None:
        """The best node's final evaluation (``final_timing``), if it was made for the node
        that is best now and verified."""
        path = self.run_dir / FINAL
        if not path.is_file():
            return None
        data = json.loads(path.read_text())
        best = self.values()["tree"].best
        if best is None or data.get("node") != best.id:
            return None
        final = EvalResult.model_validate(data["result"])
        return final if final.ok and final.timing is not None else None

    _made_dir = False  # this session made the run directory (Session.create)
    _dir_existed = False
    _closed = False

    def close(self) -> None:
        """Stop the workers (and a local model server the synthesizer started). A run this
        session started that never reached its first checkpoint cannot be resumed: its
        directory goes."""
        if self._closed:
            return
        self._closed = True
        try:
            self.pool.close()
            _close_synthesizer(self.deps.synthesizer)
        finally:
            try:
                empty = self._made_dir and not self.has_checkpoint()
            finally:
                self._conn.close()
            if empty:
                _remove_run_dir(self.run_dir, self._dir_existed)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _close_synthesizer(synthesizer: Synthesizer) -> None:
    closer = getattr(synthesizer, "close", None)
    if callable(closer):
        closer()


def _remove_run_dir(path: Path, existed: bool) -> None:
    """Remove what a run that never started wrote: the directory itself, or its contents where
    the directory was there before (an empty --run-dir the user made)."""
    if not existed:
        shutil.rmtree(path, ignore_errors=True)
        return
    for child in path.iterdir():
        if child.is_dir():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def _checked_out(path: str | Path) -> Path:
    """The kernel file a run keeps (``--out``), absolute; its directory must exist."""
    out = Path(path).expanduser().resolve()
    if out.is_dir():
        raise ConfigError(f"--out {path} is a directory; name the kernel file, e.g. "
                          f"{Path(path) / 'kernel_tuned.py'}")
    if not out.parent.is_dir():
        raise ConfigError(f"--out {path}: the directory {out.parent} does not exist")
    return out


def _steps_left(snap: StateSnapshot) -> bool:
    """The graph has not reached its end: tasks to run, or a step whose tasks all saved their
    writes but whose checkpoint was not written (the process died in between, e.g. after a
    batch's last branch). LangGraph's live snapshot leaves such tasks out of ``next``, though
    ``invoke(None)`` goes on from them; only a finished graph's last checkpoint has no tasks."""
    return bool(snap.next or snap.tasks)


def search_eval_config(settings: Settings, target: Target) -> EvalConfig:
    """The evaluation settings of a search. On ``cuda``, unless the user configured profiling,
    verified candidates get the cheap instruments (roofline and PyTorch profiler, a few seconds)
    so the Planner has a diagnosis to act on; ncu and Proton stay opt-in (tens of seconds)."""
    cfg = settings.eval
    if target.name == "cuda" and "profile" not in cfg.model_fields_set:
        cfg = cfg.model_copy(update={"profile": ProfileConfig(enabled=True, tools=["torch"])})
    return cfg


class LazyKnowledgeBase:
    """The configured knowledge base, opened on first use (indexing the bundled corpus the first
    time on a machine takes a minute; a run that never retrieves or distils skips it)."""

    def __init__(self, config: KBConfig) -> None:
        self.config = config
        self._kb: KnowledgeSource | None = None

    def _open(self) -> KnowledgeSource:
        if self._kb is None:
            from kernelevolve.kb import KnowledgeBase

            self._kb = KnowledgeBase.open(self.config)
        return self._kb

    def retrieve(self, situation: Situation, k: int | None = None) -> list[Hit]:
        return self._open().retrieve(situation, k)

    def distill_improvement(self, improvement: Improvement) -> SkillWrite | None:
        return self._open().distill_improvement(improvement)


def known_seeds(settings: Settings, problem: Problem, target: Target) -> list[Draft]:
    """The best verified kernels of earlier runs of this problem on this target (run store)."""
    if settings.search.warm_start == 0:
        return []
    from kernelevolve.store import open_store

    with open_store(settings.store) as store:
        known = store.best_known(problem_digest=problem.digest, target=target.name,
                                 limit=settings.search.warm_start)
    return [Draft(source=k.code, params=k.params, origin="seed",
                  intent=f"warm start: {k.node_id} of run {k.run_id}"
                  + (f" ({k.speedup:.2f}x)" if k.speedup is not None else ""))
            for k in known]


def constraints_for(target: Target) -> list[str]:
    """Rules of the target the prompt states up front (the knowledge base says more)."""
    rules = ["Outputs must match the reference within dtype-aware tolerances on fresh random "
             "inputs of several shapes; inputs must stay unchanged."]
    if target.name.startswith("mtia-sim"):
        rules += ["MTIA: every Triton program runs on one PE; loads and stores become DMA and "
                  "must be 32-byte aligned and contiguous where possible",
                  "MTIA: transcendental functions (exp, log, erf, sigmoid...) in fp32 only; "
                  "scatter stores are not allowed; a tile must fit the PE's local memory"]
    elif target.name == "cpu":
        rules += ["The cpu target runs Triton's interpreter: correctness only, no timing; "
                  "avoid bf16 arithmetic (cast to fp32)"]
    elif target.name == "cuda":
        rules += ["NVIDIA GPU: use tl.dot for matrix products (tensor cores), fp32 "
                  "accumulation; coalesced loads along the contiguous dimension"]
    return rules


def _public_settings(settings: Settings) -> dict[str, Any]:
    """The settings for run.json, without secrets."""
    data = settings.model_dump(mode="json")
    data["llm"]["api_key"] = None
    return data


def _secrets_back(data: dict[str, Any]) -> dict[str, Any]:
    """run.json's settings as overrides; the API key comes from the environment again."""
    data = json.loads(json.dumps(data))
    data.get("llm", {}).pop("api_key", None)
    return data


def tune(problem: str | Path | Problem, *, target: str | None = None, goal: float | None = None,
         rounds: int | None = None, llm: str | None = None, settings: Settings | None = None,
         run_dir: str | Path | None = None, kb: KnowledgeSource | None = None,
         synthesizer: Synthesizer | None = None,
         on_event: Callable[[Event], None] | None = None) -> TuneResult:
    """Search for a fast, verified kernel for ``problem`` on ``target``.

    ``target`` defaults to ``cuda`` on a GPU host and to the simulated MTIA 2i elsewhere;
    ``goal`` is the speedup vs eager that ends the run; ``rounds`` the expansion budget;
    ``llm`` a model name at the configured endpoint (unset: the configured LLM, else the
    offline synthesizer). Returns the best verified candidate with its evidence.
    """
    settings = settings or load_settings()
    search_over: dict[str, Any] = {}
    if goal is not None:
        search_over["goal"] = goal
    if rounds is not None:
        search_over["rounds"] = rounds
    llm_over = {"model": llm} if llm else {}
    if search_over or llm_over:
        try:
            settings = settings.model_copy(update={
                "search": SearchConfig.model_validate(
                    {**settings.search.model_dump(), **search_over}),
                "llm": LLMConfig.model_validate({**settings.llm.model_dump(), **llm_over})})
        except ValidationError as exc:
            lines = describe_errors(exc, lambda key: (str(key[-1]) if key else "", ""))
            raise ConfigError("invalid tune arguments: " + "; ".join(lines)) from exc
    with Session.create(problem, target=target, settings=settings, run_dir=run_dir, kb=kb,
                        synthesizer=synthesizer, on_event=on_event) as session:
        return session.run()


def resume(run: str | Path, *, settings: Settings | None = None,
           kb: KnowledgeSource | None = None, synthesizer: Synthesizer | None = None,
           replies: Sequence[str | Path] = (),
           on_event: Callable[[Event], None] | None = None) -> TuneResult:
    """Continue a run that was killed (or paused) from its last checkpoint; nothing is lost.
    ``replies``: Batch API output files for a batch-mode run that stopped for them."""
    with Session.open(run, settings=settings, kb=kb, synthesizer=synthesizer, replies=replies,
                      on_event=on_event) as session:
        return session.run()
