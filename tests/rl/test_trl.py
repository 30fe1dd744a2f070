"""The exported data with the real libraries: ``datasets`` loads every file, TRL's SFTTrainer
and GRPOTrainer each train two steps on the CPU with a tiny random model built from a config
(a tokenizer trained here, no download), on the exported prompts; GRPO's reward is the
project's, sending each completion to a real cpu evaluation pool."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

datasets = pytest.importorskip("datasets")
trl = pytest.importorskip("trl")

from kernelevolve.rl import KernelReward, Redactor, collect, write  # noqa: E402
from kernelevolve.rl.tiny import tiny_model, tiny_tokenizer  # noqa: E402
from kernelevolve.store import RunStore  # noqa: E402
from kernelevolve.tools.harness.pool import WorkerPool  # noqa: E402
from tests.rl.runs import Runs  # noqa: E402


@pytest.fixture(scope="module")
def exported(runs: Runs, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("exported")
    with RunStore(runs.home / "store.sqlite") as store:
        records = collect(store)
    write(records, out / "trl", "trl", Redactor())
    write(records, out / "verl", "verl", Redactor())
    return out


@pytest.fixture(scope="module")
def tokenizer(exported: Path):
    rows = [json.loads(x) for x in (exported / "trl" / "kto.jsonl").read_text().splitlines()]
    texts = [m["content"] for row in rows for m in row["prompt"] + row["completion"]]
    return tiny_tokenizer(texts)


def _args(cls, out: Path, **kwargs):
    return cls(output_dir=str(out), max_steps=2, per_device_train_batch_size=2, report_to=[],
               save_strategy="no", logging_steps=1, use_cpu=True, seed=0,
               dataloader_num_workers=0, disable_tqdm=True, **kwargs)


def test_datasets_loads_every_exported_file(exported: Path) -> None:
    sft = datasets.load_dataset("json", data_files=str(exported / "trl" / "sft.jsonl"),
                                split="train")
    assert sft.num_rows == 2 and {"prompt", "completion"} <= set(sft.column_names)
    assert [m["role"] for m in sft[0]["prompt"]] == ["system", "user"]
    kto = datasets.load_dataset("json", data_files=str(exported / "trl" / "kto.jsonl"),
                                split="train")
    assert sorted(kto["label"]) == [False] * 4 + [True] * 2
    rl = datasets.load_dataset("parquet", data_files=str(exported / "verl" / "rl.parquet"),
                               split="train")
    assert {"data_source", "prompt", "ability", "reward_model", "extra_info"} <= set(
        rl.column_names)
    assert rl[0]["reward_model"]["style"] == "rule" and "class Model" in rl[0]["reward_model"][
        "ground_truth"]
    verl_sft = datasets.load_dataset("parquet", data_files=str(exported / "verl" /
                                                               "sft.parquet"), split="train")
    assert [m["role"] for m in verl_sft[0]["messages"]] == ["system", "user", "assistant"]


def test_sft_trainer_two_steps_on_the_exported_set(exported: Path, tokenizer,
                                                   tmp_path: Path) -> None:
    ds = datasets.load_dataset("json", data_files=str(exported / "trl" / "sft.jsonl"),
                               split="train").select_columns(["prompt", "completion"])
    model = tiny_model(tokenizer)
    before = [p.detach().clone() for p in model.parameters()]
    trainer = trl.SFTTrainer(model=model, train_dataset=ds, processing_class=tokenizer,
                             args=_args(trl.SFTConfig, tmp_path, max_length=None,
                                        learning_rate=1e-3))
    trainer.train()
    assert trainer.state.global_step == 2
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert len(losses) == 2 and all(math.isfinite(x) and x > 0 for x in losses)
    assert any(not (a == b).all() for a, b in zip(before, model.parameters(), strict=True))


def test_grpo_trainer_two_steps_with_the_pool_as_reward(exported: Path, tokenizer,
                                                        rl_pool: WorkerPool,
                                                        tmp_path: Path) -> None:
    ds = datasets.load_dataset("json", data_files=str(exported / "trl" / "grpo.jsonl"),
                               split="train")
    reward = KernelReward(rl_pool)
    seen: list[int] = []

    def counted(prompts, completions, **columns):
        rewards = reward(prompts, completions, **columns)
        seen.append(len(rewards))
        assert all(r is None for r in reward.last)  # a random model writes no code
        return rewards

    counted.__name__ = "kernelevolve_reward"
    trainer = trl.GRPOTrainer(
        model=tiny_model(tokenizer), reward_funcs=counted, train_dataset=ds,
        processing_class=tokenizer,
        args=_args(trl.GRPOConfig, tmp_path, num_generations=2, max_completion_length=8))
    trainer.train()
    assert trainer.state.global_step == 2 and sum(seen) >= 4
    logged = [h for h in trainer.state.log_history if "reward" in h]
    assert logged and all(h["reward"] == 0.0 for h in logged)  # the failure value


@pytest.fixture(autouse=True)
def _quiet_trl(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    monkeypatch.setenv("WANDB_DISABLED", "true")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
