"""Which synthesizer writes the kernels: the configured LLM, else the built-in offline one
(``offline/synthesizer.py``), which answers the same prompt state as an LLM."""

from __future__ import annotations

from kernelevolve.config import Settings
from kernelevolve.errors import ConfigError
from kernelevolve.problem import Problem
from kernelevolve.synth import offline
from kernelevolve.synth.offline.synthesizer import OfflineSynthesizer
from kernelevolve.synth.synthesizer import Synthesizer


def operator_class(problem: Problem) -> str | None:
    """The problem's operator class as the offline analysis sees it (None when unknown)."""
    try:
        return offline.analyze(problem).operator_class
    except offline.Unsupported:
        return None


def tf32_allowed(settings: Settings, target: str | None) -> bool:
    """Whether kernels for ``target`` may compute fp32 convolutions in TF32: on a GPU, where
    the precision contract is the baseline's and the baseline's cuDNN runs in TF32 (PyTorch's
    default). The judge holds each such kernel to the baseline's measured error."""
    from kernelevolve.tools.harness import flags

    if target != "cuda" or settings.eval.precision != "baseline":
        return False
    chosen = flags.resolve(settings.eval.baseline, settings.eval.baseline_flags.model_dump())
    return bool(chosen["cudnn_allow_tf32"])


def choose_synthesizer(settings: Settings, problem: Problem, target: str | None = None
                       ) -> tuple[Synthesizer, str]:
    """The synthesizer ``llm.use`` picks (``kernelevolve.synth.llm.local.choose``) and why: by default
    the configured endpoint; else the offline synthesizer where its templates cover the operator
    and the installed local model where they do not; else the offline synthesizer (which may
    refuse the problem). A local one serves its model itself: call its ``close()`` when done."""
    from kernelevolve.synth.llm.local import LocalSynthesizer, choose

    def offline_gap() -> str | None:
        try:
            offline.analyze(problem)
        except offline.Unsupported as exc:
            return str(exc)
        return None

    use, local, why = choose(settings.llm, offline_gap)
    if settings.llm.mode == "batch" and use != "endpoint":
        raise ConfigError(f"llm.mode = batch writes requests for a model, but this run would "
                          f"use the {use} synthesizer ({why}): name the model with --llm MODEL "
                          f"(llm.model), or leave batch mode")
    if use == "endpoint":
        from kernelevolve.synth.llm.chat import LLMSynthesizer

        if settings.llm.mode == "batch":
            from kernelevolve.batchapi import BatchChatModel

            cfg = settings.llm
            chat = BatchChatModel(model_name=cfg.model or "", temperature=cfg.temperature,
                                  max_tokens=cfg.max_tokens)
            return (LLMSynthesizer(chat, cfg.model or "", endpoint="Batch API files",
                                   provider=cfg.provider),
                    f"{why}; batch mode: its requests go to files (llm.mode = batch)")
        return LLMSynthesizer.from_config(settings.llm), why
    if use == "local" and local is not None:
        return LocalSynthesizer(local, settings.llm, examples=settings.search.retrieve,
                                seed=settings.search.seed, store=settings.store), why
    return OfflineSynthesizer(problem, seed=settings.search.seed, opt_in=settings.search.fp16x3,
                              tf32=tf32_allowed(settings, target)), why


def make_synthesizer(settings: Settings, problem: Problem, target: str | None = None
                     ) -> Synthesizer:
    """``choose_synthesizer`` without the reason."""
    return choose_synthesizer(settings, problem, target)[0]
