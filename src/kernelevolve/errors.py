"""The one error hierarchy for tool and configuration failures.

A candidate kernel that fails is *data* (an EvalResult with a status); these exceptions are for
everything else: a problem file that cannot be loaded, a bad config, a broken store. Each message
names the problem and what to do about it.
"""

from __future__ import annotations


class KernelEvolveError(Exception):
    """Base of every error kernelevolve raises on purpose."""


class ConfigError(KernelEvolveError):
    """A configuration file, environment variable or flag is wrong."""


class ProblemError(KernelEvolveError):
    """A problem file cannot be used as a KernelBench-format reference."""


class CandidateError(KernelEvolveError):
    """A candidate file cannot be read (missing, unreadable); a bad kernel is an EvalResult."""


class TargetError(KernelEvolveError):
    """A target is unknown or not available on this machine."""


class WorkerError(KernelEvolveError):
    """The evaluation worker itself (not the candidate) failed."""


class KnowledgeBaseError(KernelEvolveError):
    """The knowledge base cannot be opened, read or written."""


class StoreError(KernelEvolveError):
    """The run store cannot be opened, read or written."""


class LLMError(KernelEvolveError):
    """The language model endpoint cannot be reached or keeps failing."""


class SynthesisError(KernelEvolveError):
    """No synthesizer can write kernels for this problem (e.g. the offline one lacks a template)."""


class RunError(KernelEvolveError):
    """A run directory is missing, damaged or belongs to another problem."""


class RepliesError(KernelEvolveError):
    """A replies file (batch mode: the Batch API's output) cannot be used for this run."""
