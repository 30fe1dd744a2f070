"""Rejection-sampling SFT (and optionally GRPO) of a Hugging Face model on exported kernelevolve
trajectories, then the search loop with the untrained and the trained model on held-out problems:
verified rate and rounds to the first verified kernel.

    kernelevolve export --format trl --out exported/          # runs from the run store
    python benchmarks/suites/rl_posttrain.py --model Qwen2.5-Coder-0.5B-Instruct/ --data exported/ \
        --problems examples/problems/03_leaky_relu_scale_clamp.py examples/problems/06_rmsnorm.py \
        --target cuda --rounds 4 --grpo-steps 50 --out benchmarks/results/rl_posttrain_h200

Steps:

1. Training set (rejection sampling): the verified calls of ``sft.jsonl`` (LLM replies and the
   offline synthesizer's demonstrations), the best ``--top-k`` per distinct prompt by the
   harness's reward; every record of a held-out problem (same reference digest) is left out.
2. SFT with TRL's ``SFTTrainer`` (completion-only loss on the conversational prompt/completion
   rows), saved to ``<out>/sft``.
3. ``--grpo-steps N``: GRPO with TRL's ``GRPOTrainer`` on the held-in prompts of ``grpo.jsonl``;
   the reward is ``kernelevolve.rl.KernelReward``, which sends every completion to a real
   evaluation pool on ``--target`` (cheat < crash < failure 0 < verified, graded by speedup).
   Saved to ``<out>/grpo``.
4. Evaluation: each model (base, sft, grpo) drives the real search loop (``Session`` with the
   LLM synthesizer over a transformers chat model: the same prompts, reply parsing, re-asks,
   Debugger and harness as any run) for ``--rounds`` rounds on every held-out problem. Written
   to ``<out>/results.json`` and ``results.md``: per model the verified rate, the mean rounds
   to the first verified kernel, LLM calls and tokens; per problem the round of the first
   verified kernel (or none) and the best speedup.

Needs ``pip install 'kernelevolve[rl]'`` (trl, datasets; transformers comes with kernelevolve).
On a GPU host the models train and generate on the GPU, and ``--target cuda`` times kernels.

``--model-gguf FILE`` starts from the local model's GGUF instead of a Hugging Face directory
(``kernelevolve llm install-local`` puts it at ``<llm.local_dir>/qwen2.5-coder-0.5b.gguf``; needs
the ``gguf`` package): its Qwen2 weights are dequantised to fp32 and written with its tokenizer
and chat template into ``<out>/base-hf`` (``gguf_to_hf``). SFT keeps fp32 master weights (bf16
autocast on a GPU); the evaluations generate in bf16 on a GPU. Replies longer than
``--max-new-tokens`` are left out of the training set (``--max-completion-tokens``).
``--jobs N`` runs each (model, problem) evaluation in a process of its own, N at once, the base
model's while the SFT trains. ``benchmarks/experiments/gpu_rl_posttrain.sh`` runs it that way on a
GPU machine with the carried training set ``benchmarks/data/rl_sft``.

``--tiny`` replaces ``--model`` with a 2-layer randomly initialised Qwen2 and a tokenizer trained
on the exported texts (``kernelevolve.rl.tiny``): no download, a few minutes on a CPU. It proves
the pipeline, not a model: its replies hold no code, so every round ends without a candidate.
This script was run end to end that way on the 2-core CPU development machine (no GPU), about
4 minutes (results in ``benchmarks/results/rl_posttrain_tiny_cpu/``)::

    export KERNELEVOLVE_HOME=/tmp/rlbench
    kernelevolve tune examples/problems/01_gelu_sigmoid_bias.py --target cpu --rounds 2 --no-kb
    kernelevolve tune examples/problems/07_row_mean.py --target cpu --rounds 2 --no-kb
    kernelevolve export --format trl --out /tmp/rlbench/exported
    python benchmarks/suites/rl_posttrain.py --tiny --data /tmp/rlbench/exported \
        --problems examples/problems/03_leaky_relu_scale_clamp.py --target cpu --rounds 2 \
        --grpo-steps 2 --num-generations 2 --out /tmp/rlbench/posttrain

SFT, GRPO (rewards from the cpu pool: 0.0, no code) and the three evaluations ran; every model
verified nothing, as a random model must. The real run (a real model on a GPU host) has not
been run yet.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import shlex
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatResult

ROOT = Path(__file__).resolve().parents[2]
_ROLES = {"system": "system", "human": "user", "ai": "assistant"}


class HFChatModel(BaseChatModel):
    """A LangChain chat model over a transformers causal LM and its tokenizer (chat template),
    so the project's LLM synthesizer drives it like any endpoint."""

    model: Any
    tokenizer: Any
    name: str = "hf"
    max_new_tokens: int = 1024
    temperature: float = 0.7
    lock: Any = None

    @property
    def _llm_type(self) -> str:
        return "transformers"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None,
                  **kwargs: Any) -> ChatResult:
        import torch

        chat = [{"role": _ROLES.get(m.type, "user"), "content": m.text} for m in messages]
        ids = self.tokenizer.apply_chat_template(chat, add_generation_prompt=True,
                                                 return_tensors="pt", return_dict=True)
        ids = {k: v.to(self.model.device) for k, v in ids.items()}
        with (self.lock or threading.Lock()), torch.no_grad():
            out = self.model.generate(
                **ids, max_new_tokens=self.max_new_tokens, do_sample=self.temperature > 0,
                temperature=self.temperature if self.temperature > 0 else None,
                pad_token_id=self.tokenizer.pad_token_id)
        n_in = int(ids["input_ids"].shape[1])
        new = out[0, n_in:]
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        usage = UsageMetadata(input_tokens=n_in, output_tokens=int(new.shape[0]),
                              total_tokens=n_in + int(new.shape[0]))
        message = AIMessage(content=text, usage_metadata=usage,
                            response_metadata={"model_name": self.name})
        return ChatResult(generations=[ChatGeneration(message=message)])


# -- data --------------------------------------------------------------------------------------


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        sys.exit(f"{path} is missing: export the runs first (kernelevolve export --format trl "
                 f"--out {path.parent})")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def problem_digests(paths: Sequence[Path]) -> dict[str, Path]:
    from kernelevolve.problem import load_problem

    return {load_problem(p).digest: p for p in paths}


def fitting_replies(rows: list[dict[str, Any]], model_dir: str, longest: int
                    ) -> tuple[list[dict[str, Any]], int]:
    """The rows whose reply fits in ``longest`` tokens: a model cannot learn to finish a reply
    it will be cut off from writing at evaluation (``--max-new-tokens``)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    kept = [r for r in rows
            if len(tokenizer("".join(m["content"] for m in r["completion"]))["input_ids"])
            <= longest]
    return kept, len(rows) - len(kept)


def rejection_sample(rows: list[dict[str, Any]], held_out: set[str], top_k: int
                     ) -> list[dict[str, Any]]:
    """The verified rows outside the held-out problems, the best ``top_k`` per prompt."""
    by_prompt: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row.get("problem_digest") in held_out:
            continue
        by_prompt.setdefault(json.dumps(row["prompt"]), []).append(row)
    out: list[dict[str, Any]] = []
    for group in by_prompt.values():
        group.sort(key=lambda r: -float(r.get("reward", 0.0)))
        out += group[:top_k]
    return out


# -- the local model's GGUF ---------------------------------------------------------------------

# llama.cpp's tensor names for a Qwen2 block -> transformers' Qwen2ForCausalLM names
_GGUF_BLOCK = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
               "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
               "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
               "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
_GGUF_TOP = {"token_embd.weight": "model.embed_tokens.weight",
             "output_norm.weight": "model.norm.weight", "output.weight": "lm_head.weight"}


def _hf_name(gguf_name: str) -> str:
    if gguf_name in _GGUF_TOP:
        return _GGUF_TOP[gguf_name]
    blk, layer, module, kind = gguf_name.split(".")
    if blk != "blk" or module not in _GGUF_BLOCK:
        raise ValueError(f"unexpected tensor {gguf_name} in a qwen2 GGUF")
    return f"model.layers.{layer}.{_GGUF_BLOCK[module]}.{kind}"


def gguf_to_hf(gguf_path: Path, out: Path) -> Path:
    """The local model's GGUF (Qwen2 architecture) dequantised into a Hugging Face model
    directory with its tokenizer, in float32 (SFT keeps fp32 master weights; evaluation loads
    bf16 on a GPU). Nothing to do when ``out`` already holds it.

    The weights are dequantised here with the ``gguf`` package's reader (Q4_K, Q5_0, Q6_K and
    Q8_0 blocks in the 0.5B file) rather than by ``from_pretrained(gguf_file=...)``, whose
    handling changed between transformers releases (newer ones keep the blocks packed, which
    cannot be trained). Qwen2's q/k weights are stored unpermuted (llama.cpp permutes only
    llama-style rotary layouts), so the tensors map one to one. The tokenizer and its chat
    template come from transformers' GGUF tokenizer conversion.
    """
    import numpy as np
    import torch
    from gguf import GGUFReader
    from gguf.quants import dequantize
    from safetensors.torch import save_file
    from transformers import AutoTokenizer, GenerationConfig, Qwen2Config

    if (out / "config.json").is_file() and (out / "tokenizer_config.json").is_file():
        return out
    t0 = time.perf_counter()
    reader = GGUFReader(gguf_path)

    def meta(key: str) -> Any:
        if key not in reader.fields:
            raise ValueError(f"{gguf_path} has no {key}")
        return reader.fields[key].contents()

    arch = meta("general.architecture")
    if arch != "qwen2":
        sys.exit(f"{gguf_path} is a {arch} model; --model-gguf reads qwen2 (Qwen2.5) only")
    def unpack(t: Any) -> torch.Tensor:
        shape = [int(d) for d in reversed(t.shape)]  # GGUF lists the innermost dimension first
        values = np.array(dequantize(t.data, t.tensor_type), dtype=np.float32)  # a writable copy
        return torch.from_numpy(values.reshape(shape))

    # numpy's block arithmetic releases the GIL: threads share the ~1 minute of one core
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as threads:
        state = dict(zip([_hf_name(t.name) for t in reader.tensors],
                         threads.map(unpack, reader.tensors), strict=True))
    tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    heads = int(meta("qwen2.attention.head_count"))
    config = Qwen2Config(
        vocab_size=state["model.embed_tokens.weight"].shape[0],
        hidden_size=int(meta("qwen2.embedding_length")),
        intermediate_size=int(meta("qwen2.feed_forward_length")),
        num_hidden_layers=int(meta("qwen2.block_count")),
        num_attention_heads=heads,
        num_key_value_heads=int(meta("qwen2.attention.head_count_kv")),
        max_position_embeddings=int(meta("qwen2.context_length")),
        rope_theta=float(meta("qwen2.rope.freq_base")),
        rms_norm_eps=float(meta("qwen2.attention.layer_norm_rms_epsilon")),
        tie_word_embeddings="lm_head.weight" not in state,
        bos_token_id=int(meta("tokenizer.ggml.bos_token_id")),
        eos_token_id=int(meta("tokenizer.ggml.eos_token_id")),
        pad_token_id=tokenizer.pad_token_id)
    # Written as a checkpoint directly (no model built here): from_pretrained checks the names.
    out.mkdir(parents=True, exist_ok=True)
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    config.save_pretrained(str(out))
    # stop at the end of a chat turn as llama.cpp does (<|im_end|>), or at <|endoftext|>
    GenerationConfig(eos_token_id=sorted({config.eos_token_id, tokenizer.eos_token_id,
                                          tokenizer.pad_token_id} - {None}),
                     bos_token_id=config.bos_token_id,
                     pad_token_id=tokenizer.pad_token_id).save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    print(f"dequantised {gguf_path.name} ({len(state)} tensors, "
          f"{sum(v.numel() for v in state.values()) / 1e6:.0f}M parameters) into {out} in "
          f"{time.perf_counter() - t0:.0f} s", flush=True)
    return out


# -- training ----------------------------------------------------------------------------------


def _common_args(out: Path, args: argparse.Namespace) -> dict[str, Any]:
    import torch

    return {"output_dir": str(out), "report_to": [], "save_strategy": "no", "logging_steps": 1,
            "seed": args.seed, "per_device_train_batch_size": args.batch_size,
            "use_cpu": not torch.cuda.is_available(), "disable_tqdm": True,
            "dataloader_num_workers": 0, "bf16": torch.cuda.is_available()}


def train_sft(model_dir: str, rows: list[dict[str, Any]], out: Path, args: argparse.Namespace
              ) -> dict[str, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        from datasets import Dataset
        from trl import SFTConfig, SFTTrainer
    except Exception as exc:  # e.g. datasets' pyarrow floor above a machine's own pyarrow
        print(f"TRL unusable here ({type(exc).__name__}: {exc}); SFT by the plain loop")
        return train_sft_plain(model_dir, rows, out, args)

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    # fp32 master weights (bf16 autocast on a GPU): a bf16 weight rounds away an update of 1e-5
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    ds = Dataset.from_list([{"prompt": r["prompt"], "completion": r["completion"]}
                            for r in rows])
    config = SFTConfig(num_train_epochs=args.sft_epochs, learning_rate=args.sft_lr,
                       max_length=args.max_length, max_steps=args.sft_steps or -1,
                       **_common_args(out, args))
    trainer = SFTTrainer(model=model, args=config, train_dataset=ds, processing_class=tokenizer)
    t0 = time.perf_counter()
    trainer.train()
    trainer.save_model(str(out))
    tokenizer.save_pretrained(str(out))
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    return {"rows": len(rows), "steps": trainer.state.global_step, "first_loss": losses[0],
            "last_loss": losses[-1], "wall_s": round(time.perf_counter() - t0, 1)}


def train_sft_plain(model_dir: str, rows: list[dict[str, Any]], out: Path,
                    args: argparse.Namespace) -> dict[str, Any]:
    """The same SFT without TRL: completion-only loss over the chat-templated prompt and reply,
    AdamW, fp32 master weights with bf16 autocast on a GPU, one row per step (no padding)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(args.seed)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).to(device)
    model.train()
    examples = []
    for r in rows:
        head = tokenizer.apply_chat_template(r["prompt"], tokenize=True,
                                             add_generation_prompt=True)
        full = tokenizer.apply_chat_template(r["prompt"] + r["completion"], tokenize=True)
        head = list(getattr(head, "input_ids", head))
        full = list(getattr(full, "input_ids", full))[: args.max_length]
        if len(full) <= len(head):  # the reply does not fit in max_length
            continue
        labels = [-100] * len(head) + full[len(head):]
        examples.append((torch.tensor([full]), torch.tensor([labels])))
    if not examples:
        raise SystemExit(f"no training row fits in --max-length {args.max_length}")
    steps = args.sft_steps or args.sft_epochs * len(examples)
    optim = torch.optim.AdamW(model.parameters(), lr=args.sft_lr)
    losses: list[float] = []
    t0 = time.perf_counter()
    for step in range(steps):
        if step % len(examples) == 0:
            order = torch.randperm(len(examples)).tolist()
        ids, labels = examples[order[step % len(examples)]]
        with torch.autocast(device, dtype=torch.bfloat16, enabled=device == "cuda"):
            loss = model(input_ids=ids.to(device), labels=labels.to(device)).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optim.step()
        optim.zero_grad(set_to_none=True)
        losses.append(loss.item())
        print(f"sft step {step + 1}/{steps} loss {losses[-1]:.4f}", flush=True)
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    return {"rows": len(examples), "steps": steps, "first_loss": losses[0], "last_loss": losses[-1],
            "wall_s": round(time.perf_counter() - t0, 1), "trainer": "plain loop (no TRL)"}


def train_grpo(model_dir: str, rows: list[dict[str, Any]], out: Path, args: argparse.Namespace
               ) -> dict[str, Any]:
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from kernelevolve.config import EvalConfig
    from kernelevolve.rl import KernelReward
    from kernelevolve.tools.harness.pool import make_pool

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    keep = ("prompt", "reference", "parent_source", "problem")
    ds = Dataset.from_list([{k: r[k] for k in keep} for r in rows])
    rewards: list[float] = []
    with make_pool(args.target, EvalConfig(n_input_sets=args.n_input_sets)) as pool:
        kernel_reward = KernelReward(pool)

        def reward_func(prompts: Any, completions: Any, **columns: Any) -> list[float]:
            got = kernel_reward(prompts, completions, **columns)
            rewards.extend(got)
            return got

        reward_func.__name__ = "kernelevolve_reward"  # type: ignore[attr-defined]
        config = GRPOConfig(max_steps=args.grpo_steps, num_generations=args.num_generations,
                            max_completion_length=args.max_new_tokens,
                            learning_rate=args.grpo_lr, **_common_args(out, args))
        trainer = GRPOTrainer(model=model, reward_funcs=reward_func, args=config,
                              train_dataset=ds, processing_class=tokenizer)
        t0 = time.perf_counter()
        trainer.train()
    trainer.save_model(str(out))
    tokenizer.save_pretrained(str(out))
    return {"prompts": len(rows), "steps": trainer.state.global_step,
            "completions": len(rewards),
            "mean_reward": sum(rewards) / len(rewards) if rewards else None,
            "verified": sum(r >= 0.5 for r in rewards),
            "wall_s": round(time.perf_counter() - t0, 1)}


# -- evaluation --------------------------------------------------------------------------------


def load_chat(name: str, model_dir: str, args: argparse.Namespace) -> HFChatModel:
    """The model as a chat model: bf16 on a GPU, fp32 on the CPU."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype).to(device).eval()
    return HFChatModel(model=model, tokenizer=tokenizer, name=name,
                       max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                       lock=threading.Lock())


def evaluate_problem(chat: HFChatModel, problem: Path, args: argparse.Namespace, home: Path
                     ) -> dict[str, Any]:
    """The search loop driven by the model on one problem: when it first verified."""
    from kernelevolve.config import load_settings
    from kernelevolve.graph.session import Session
    from kernelevolve.synth.llm.chat import LLMSynthesizer

    # one run directory and store per model and problem: parallel jobs never share a store
    where = home / chat.name / problem.stem
    settings = load_settings(
        search={"rounds": args.rounds, "retrieve": args.kb, "distill": False,
                "warm_start": 0, "seed": args.seed, "wall_s": args.wall_s,
                **({"goal": args.goal} if args.goal else {})},
        eval={"n_input_sets": args.n_input_sets,
              "compile_reference": not args.no_compile_reference},
        runs={"dir": str(where / "runs")},
        store={"path": str(where / "store.sqlite")})
    t0 = time.perf_counter()
    with Session.create(problem, target=args.target, settings=settings,
                        synthesizer=LLMSynthesizer(chat, chat.name)) as session:
        result = session.run()
        tree = session.values()["tree"]
    first = min((n.round for n in tree.verified()), default=None)
    statuses: dict[str, int] = {}
    for n in tree.nodes.values():
        if n.parent is not None:
            statuses[n.status] = statuses.get(n.status, 0) + 1
    return {"problem": problem.stem, "verified": first is not None,
            "first_verified_round": first, "rounds": result.rounds,
            "best_speedup": result.best_speedup, "statuses": statuses,
            "llm_calls": result.usage.llm_calls, "tokens": result.usage.tokens,
            "wall_s": round(time.perf_counter() - t0, 1), "run_dir": result.run_dir}


def evaluation_job(name: str, model_dir: str, problem: Path, args: argparse.Namespace,
                   home: Path) -> dict[str, Any]:
    """One model on one problem in a process of its own (``--jobs``)."""
    return evaluate_problem(load_chat(name, model_dir, args), problem, args, home)


def job_result(future: Future[dict[str, Any]], problem: Path) -> dict[str, Any]:
    """A job's row; one that raised is recorded as such (the other jobs go on)."""
    try:
        return future.result()
    except Exception as exc:  # the process boundary: record what it caught
        print(f"evaluation of {problem.stem} failed: {type(exc).__name__}: {exc}", flush=True)
        return {"problem": problem.stem, "verified": False, "first_verified_round": None,
                "rounds": 0, "best_speedup": None, "statuses": {"job_failed": 1},
                "llm_calls": 0, "tokens": 0, "wall_s": None, "run_dir": None,
                "error": f"{type(exc).__name__}: {exc}"}


def summarize(name: str, model_dir: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    verified = [r for r in rows if r["verified"]]
    return {"model": name, "model_dir": model_dir, "problems": rows,
            "verified_rate": len(verified) / len(rows) if rows else 0.0,
            "mean_rounds_to_first_verified": (
                sum(r["first_verified_round"] for r in verified) / len(verified)
                if verified else None),
            "llm_calls": sum(r["llm_calls"] for r in rows),
            "tokens": sum(r["tokens"] for r in rows)}


# -- report ------------------------------------------------------------------------------------


def versions() -> dict[str, str]:
    import importlib.metadata

    out = {"python": platform.python_version(), "machine": platform.machine(),
           "cpus": str(os.cpu_count())}
    for pkg in ("torch", "triton", "transformers", "trl", "datasets", "gguf", "kernelevolve"):
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            out[pkg] = "missing"
    import torch

    out["device"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    return out


def markdown(report: dict[str, Any]) -> str:
    lines = ["# Post-training on exported trajectories", "",
             f"Command: `{report['command']}`", "",
             "Versions: " + ", ".join(f"{k} {v}" for k, v in report["versions"].items()), "",
             f"Training set: {report['training']['sft_rows']} verified calls (rejection "
             f"sampling, top {report['training']['top_k']} per prompt) of "
             f"{report['training']['sft_available']} exported"
             + (f", less {d['rows']} whose reply is longer than {d['tokens']} tokens"
                if (d := report["training"].get("dropped_longer_than")) else "")
             + "; held-out problems: " + ", ".join(report["held_out"]), ""]
    for stage in ("sft", "grpo"):
        if report["training"].get(stage):
            lines.append(f"- {stage}: " + ", ".join(f"{k} {v}" for k, v in
                                                    report["training"][stage].items()))
    lines += ["", "| model | verified rate | mean rounds to first verified | LLM calls | "
              "tokens |", "| --- | --- | --- | --- | --- |"]
    for m in report["models"]:
        mean = m["mean_rounds_to_first_verified"]
        lines.append(f"| {m['model']} | {m['verified_rate']:.2f} | "
                     f"{'-' if mean is None else f'{mean:.1f}'} | {m['llm_calls']} | "
                     f"{m['tokens']} |")
    lines += ["", "| model | problem | first verified round | best speedup | statuses |",
              "| --- | --- | --- | --- | --- |"]
    for m in report["models"]:
        for p in m["problems"]:
            speed = "-" if p["best_speedup"] is None else f"{p['best_speedup']:.2f}x"
            statuses = ", ".join(f"{k} {v}" for k, v in sorted(p["statuses"].items()))
            lines.append(f"| {m['model']} | {p['problem']} | "
                         f"{p['first_verified_round'] or 'none'} | {speed} | {statuses} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--model", help="a Hugging Face model directory (from_pretrained)")
    ap.add_argument("--model-gguf", type=Path,
                    help="the local model's GGUF (qwen2.5-coder-0.5b.gguf), dequantised into "
                         "<out>/base-hf first")
    ap.add_argument("--tiny", action="store_true", help="a tiny random model instead (CPU smoke)")
    ap.add_argument("--data", type=Path, required=True,
                    help="a directory written by kernelevolve export --format trl")
    ap.add_argument("--problems", type=Path, nargs="+", required=True,
                    help="held-out KernelBench-format problem files (or directories of them)")
    ap.add_argument("--target", default="cuda", help="cuda, cpu, mtia-sim:2i (default cuda)")
    ap.add_argument("--rounds", type=int, default=4, help="search rounds per problem")
    ap.add_argument("--wall-s", type=float, default=3600.0,
                    help="wall budget of each evaluation run (checked between rounds)")
    ap.add_argument("--goal", type=float, default=None,
                    help="stop a run at this speedup (a tiny one: at the first verified kernel)")
    ap.add_argument("--no-compile-reference", action="store_true",
                    help="do not time torch.compile of the reference (saves its compile)")
    ap.add_argument("--top-k", type=int, default=2, help="verified replies kept per prompt")
    ap.add_argument("--sft-epochs", type=float, default=2.0)
    ap.add_argument("--sft-steps", type=int, default=0, help="stop SFT after N steps (0: epochs)")
    ap.add_argument("--sft-lr", type=float, default=1e-5)
    ap.add_argument("--grpo-steps", type=int, default=0, help="GRPO steps after SFT (0: none)")
    ap.add_argument("--grpo-lr", type=float, default=1e-6)
    ap.add_argument("--num-generations", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=2)
    ap.add_argument("--max-length", type=int, default=None, help="SFT sequence cap (tokens)")
    ap.add_argument("--max-new-tokens", type=int, default=2048)
    ap.add_argument("--max-completion-tokens", type=int, default=None,
                    help="train only on replies of at most this many tokens (default: "
                         "--max-new-tokens; 0: all)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="evaluate each (model, problem) in a process of its own, this many at "
                         "once; the base model's runs then overlap the training")
    ap.add_argument("--temperature", type=float, default=0.7)
    ap.add_argument("--n-input-sets", type=int, default=3)
    ap.add_argument("--kb", action="store_true", help="retrieve knowledge in the evaluation runs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    if sum(map(bool, (args.model, args.model_gguf, args.tiny))) != 1:
        ap.error("give one of --model DIR (a Hugging Face model directory), --model-gguf FILE "
                 "or --tiny")
    args.out.mkdir(parents=True, exist_ok=True)
    problems = sorted({q for p in args.problems
                       for q in (sorted(p.glob("*.py")) if p.is_dir() else [p])})
    held_out = problem_digests(problems)

    sft_rows = read_jsonl(args.data / "sft.jsonl")
    grpo_rows = [r for r in read_jsonl(args.data / "grpo.jsonl")
                 if r.get("problem_digest") not in held_out]
    train = rejection_sample(sft_rows, set(held_out), args.top_k)
    if not train:
        sys.exit(f"no verified trajectory outside the held-out problems in {args.data}: tune "
                 "other problems first, then export again")
    model_dir = args.model
    if args.model_gguf:
        model_dir = str(gguf_to_hf(args.model_gguf, args.out / "base-hf"))
    if args.tiny:
        from kernelevolve.rl.tiny import save_tiny_model

        texts = [m["content"] for r in sft_rows + grpo_rows for m in r["prompt"]]
        texts += [m["content"] for r in sft_rows for m in r["completion"]]
        model_dir = str(save_tiny_model(args.out / "tiny-model", texts, seed=args.seed))
        args.max_new_tokens = min(args.max_new_tokens, 32)
    training: dict[str, Any] = {"sft_available": len(sft_rows), "top_k": args.top_k,
                                "grpo_prompts": len(grpo_rows)}
    longest = args.max_new_tokens if args.max_completion_tokens is None \
        else args.max_completion_tokens
    if longest and not args.tiny:
        train, dropped = fitting_replies(train, model_dir, longest)
        training["dropped_longer_than"] = {"tokens": longest, "rows": dropped}
        if not train:
            sys.exit(f"no verified reply of at most {longest} tokens to train on")
    training["sft_rows"] = len(train)
    home = Path(tempfile.mkdtemp(prefix="rl-posttrain-"))
    results: list[dict[str, Any]] = []
    report = {"command": "python " + " ".join(shlex.quote(a) for a in sys.argv),
              "versions": versions(), "target": args.target, "rounds": args.rounds,
              "held_out": [p.stem for p in problems], "training": training, "models": results,
              "tiny": args.tiny, "jobs": args.jobs}

    def write_report() -> None:  # after every model: a run cut short keeps what finished
        (args.out / "results.json").write_text(json.dumps(report, indent=1, default=str))
        (args.out / "results.md").write_text(markdown(report))

    pool = None
    if args.jobs > 1:  # every (model, problem) in a process of its own; the base model's
        # runs start at once and go on while the SFT trains
        pool = ProcessPoolExecutor(max_workers=args.jobs,
                                   mp_context=multiprocessing.get_context("spawn"))
    models: list[tuple[str, str]] = [("base", model_dir)]
    futures: dict[str, list[Future[dict[str, Any]]]] = {}

    def submit(name: str, path: str) -> None:
        if pool is not None:
            futures[name] = [pool.submit(evaluation_job, name, path, p, args, home)
                             for p in problems]

    submit("base", model_dir)
    try:
        print(f"SFT on {len(train)} verified calls ({len(sft_rows)} exported)", flush=True)
        training["sft"] = train_sft(model_dir, train, args.out / "sft", args)
        models.append(("sft", str(args.out / "sft")))
        submit("sft", str(args.out / "sft"))
        if args.grpo_steps:
            if not grpo_rows:
                sys.exit("no GRPO prompt outside the held-out problems in grpo.jsonl")
            print(f"GRPO for {args.grpo_steps} steps on {len(grpo_rows)} prompts", flush=True)
            training["grpo"] = train_grpo(str(args.out / "sft"), grpo_rows,
                                          args.out / "grpo", args)
            models.append(("grpo", str(args.out / "grpo")))
            submit("grpo", str(args.out / "grpo"))
        for name, path in models:
            print(f"evaluating {name} on {len(problems)} held-out problem(s)", flush=True)
            if pool is not None:
                rows = [job_result(f, p) for f, p in zip(futures[name], problems, strict=True)]
            else:
                chat = load_chat(name, path, args)
                rows = [evaluate_problem(chat, p, args, home) for p in problems]
            results.append(summarize(name, path, rows))
            write_report()
    except BaseException:
        if pool is not None:  # a failed step ends the running evaluations now, not after them
            for proc in list((getattr(pool, "_processes", None) or {}).values()):
                proc.terminate()
        raise
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
