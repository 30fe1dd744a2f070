"""Training data and a reward from tuning runs, for post-training a kernel-writing model.

``collect``/``write`` (export.py) turn the run store's synthesizer calls into TRL and verl
datasets (``kernelevolve export --format trl|verl|jsonl``); ``reward``/``KernelReward``
(reward.py) are the one reward derived from the harness's verdict, offline on exported records
and online as a TRL GRPO ``reward_func`` backed by an evaluation pool. TRL and datasets are the
optional extra ``kernelevolve[rl]``; nothing here imports them.
"""

from kernelevolve.rl.export import (
    FORMATS,
    RECORD_SCHEMA,
    ExportFilter,
    TrajectoryRecord,
    collect,
    run_records,
    write,
)
from kernelevolve.rl.redact import Redactor
from kernelevolve.rl.reward import (
    DEFAULT_SPEC,
    KernelReward,
    RewardSpec,
    completion_text,
    result_reward,
    reward,
)

__all__ = [
    "DEFAULT_SPEC",
    "FORMATS",
    "RECORD_SCHEMA",
    "ExportFilter",
    "KernelReward",
    "Redactor",
    "RewardSpec",
    "TrajectoryRecord",
    "collect",
    "completion_text",
    "reward",
    "result_reward",
    "run_records",
    "write",
]
