"""A tiny randomly initialised chat model, built locally: no download, seconds on a CPU.

For tests and smoke runs of post-training (``benchmarks/suites/rl_posttrain.py --tiny``): a
byte-level BPE tokenizer trained on the given texts (the ``tokenizers`` library) with a ChatML chat
template, and a 2-layer Qwen2 causal LM from a config. Its replies are noise: it proves the plumbing
(datasets, trainers, the reward through the evaluation pool), not a model.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def tiny_tokenizer(texts: Iterable[str], vocab_size: int = 4096) -> Any:
    """A ``PreTrainedTokenizerFast``: byte-level BPE over ``texts``, ChatML template, left
    padding (what TRL's GRPO trainer asks for)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(list(texts) or ["import torch"], trainer)
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>",
                                 pad_token="<|endoftext|>", chat_template=CHAT_TEMPLATE)
    hf.padding_side = "left"
    return hf


def tiny_model(tokenizer: Any, seed: int = 0, layers: int = 2, hidden: int = 32) -> Any:
    """A randomly initialised ``Qwen2ForCausalLM`` sized for ``tokenizer``."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=2 * hidden,
        num_hidden_layers=layers, num_attention_heads=2, num_key_value_heads=1,
        max_position_embeddings=8192, tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    return Qwen2ForCausalLM(config)


def save_tiny_model(out_dir: str | Path, texts: Iterable[str], seed: int = 0) -> Path:
    """Build the tokenizer and model and save both to ``out_dir`` (a model directory that
    ``from_pretrained`` reads)."""
    out = Path(out_dir)
    tokenizer = tiny_tokenizer(texts)
    model = tiny_model(tokenizer, seed=seed)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
