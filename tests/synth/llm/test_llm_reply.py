"""parse_reply on realistic replies (replies/*.md) and edge cases."""

from __future__ import annotations

import ast

import pytest

from kernelevolve.synth.llm.reply import parse_reply
from tests.synth.conftest import fenced_code, reply_text

GOOD = fenced_code("good_block256")


@pytest.mark.parametrize("name", ["good_block256", "good_block1024", "compile_error",
                                  "repaired", "cheat_torch", "wrong_math"])
def test_whole_file_replies(name):
    parsed = parse_reply(reply_text(name), parent_source=None)
    assert parsed.problem == "" and not parsed.truncated and not parsed.edited
    assert parsed.source == fenced_code(name)
    ast.parse(parsed.source)


def test_no_code():
    parsed = parse_reply(reply_text("no_code"), parent_source=GOOD)
    assert parsed.source is None
    assert parsed.problem == "the reply holds no code block"
    assert not parsed.truncated


def test_truncated():
    parsed = parse_reply(reply_text("truncated"), parent_source=GOOD)
    assert parsed.source is None and parsed.truncated
    assert parsed.problem.startswith("the reply was cut off")
    assert "llm.max_tokens" in parsed.problem


def test_edit_block_applies_to_the_parent():
    parsed = parse_reply(reply_text("edit_block"), parent_source=GOOD)
    assert parsed.problem == "" and parsed.edited
    assert parsed.source == GOOD.replace("BLOCK_SIZE = 256", "BLOCK_SIZE = 512").replace(
        "num_warps=2", "num_warps=4")


def test_edit_block_without_parent():
    parsed = parse_reply(reply_text("edit_block"), parent_source=None)
    assert parsed.source is None and "no parent source" in parsed.problem


def test_edit_block_search_not_found_names_it():
    parent = GOOD.replace("BLOCK_SIZE = 256", "BLOCK_SIZE = 128")
    parsed = parse_reply(reply_text("edit_block"), parent_source=parent)
    assert parsed.source is None
    assert "not in the parent source" in parsed.problem and "BLOCK_SIZE = 256" in parsed.problem


def test_edit_block_forgives_indentation_and_trailing_spaces():
    reply = ("Smaller edit:\n<<<<<<< SEARCH\nBLOCK_SIZE = 256   \n=======\n"
             "BLOCK_SIZE = 512\n>>>>>>> REPLACE\n")
    parsed = parse_reply(reply, parent_source=GOOD)
    assert parsed.edited and "        BLOCK_SIZE = 512\n" in (parsed.source or "")


def test_unterminated_edit_block_is_truncated():
    reply = "```python\n<<<<<<< SEARCH\n        BLOCK_SIZE = 256\n=======\n        BLOCK_SIZE"
    parsed = parse_reply(reply, parent_source=GOOD)
    assert parsed.truncated and parsed.source is None


def test_think_sections_are_ignored():
    parsed = parse_reply(reply_text("think_good"), parent_source=None)
    assert parsed.problem == ""
    assert parsed.source is not None and parsed.source.startswith("import torch\n")
    assert "def k(x_ptr" not in parsed.source


def test_unclosed_think_is_truncated():
    parsed = parse_reply("<think>\nThe reference does leaky_relu, then", parent_source=None)
    assert parsed.truncated and "reasoning" in parsed.problem


def test_closing_think_tag_only():
    reply = "okay so fuse it all...\n</think>\n\n```python\n" + GOOD + "```\n"
    assert parse_reply(reply, None).source == GOOD


def test_the_block_defining_modelnew_wins_over_longer_ones():
    ref = reply_text("good_block1024").split("```python\n", 1)[1].split("```")[0]
    ref_only = ref.replace("class ModelNew", "class Model") + "\n# " + "x" * 3000 + "\n"
    reply = (f"The reference:\n```python\n{ref_only}```\nMy version:\n```py\n{GOOD}```\n"
             f"Run it with:\n```bash\npython bench.py\n```\n")
    assert parse_reply(reply, None).source == GOOD


def test_the_last_complete_modelnew_block_wins():
    first = GOOD.replace("BLOCK_SIZE = 256", "BLOCK_SIZE = 64")
    reply = f"Draft:\n```python\n{first}```\nWait, 64 is too small. Final:\n```python\n{GOOD}```"
    assert parse_reply(reply, None).source == GOOD


def test_bare_fence_and_tilde_fence():
    assert parse_reply(f"```\n{GOOD}```", None).source == GOOD
    assert parse_reply(f"~~~python\n{GOOD}~~~\n", None).source == GOOD


def test_code_without_modelnew():
    reply = "```python\nimport torch\n\ndef f(x):\n    return x\n```\n"
    parsed = parse_reply(reply, None)
    assert parsed.source is None and "no top-level class ModelNew" in parsed.problem


def test_only_non_python_blocks():
    parsed = parse_reply("Run:\n```bash\npip install triton\n```\n", None)
    assert parsed.source is None and "no Python code block (only: bash)" in parsed.problem


def test_syntax_error_is_not_a_parse_problem():
    broken = GOOD.replace("def forward(self, x):", "def forward(self, x)")
    parsed = parse_reply(f"```python\n{broken}```", None)
    assert parsed.problem == "" and parsed.source == broken


def test_complete_block_wins_over_a_cut_repeat():
    reply = f"```python\n{GOOD}```\nAgain, with comments:\n```python\n{GOOD[:300]}"
    parsed = parse_reply(reply, None)
    assert parsed.source == GOOD and not parsed.truncated


def test_kernel_and_module_in_separate_blocks_are_joined():
    kernel, module = GOOD.split("\n\nclass ModelNew", 1)
    module = "import torch\nimport torch.nn as nn\nimport triton\n\n\nclass ModelNew" + module
    reply = (f"First the kernel:\n```python\n{kernel}\n```\nThen the module:\n```python\n"
             f"{module}```\nUsage:\n```python\nm = ModelNew(0.1, 1.5, -0.25, 2.0)\n"
             f"y = m(torch.randn(8, 8))\n```\n")
    parsed = parse_reply(reply, None)
    assert parsed.problem == ""
    source = parsed.source or ""
    ast.parse(source)
    assert source.index("@triton.jit") < source.index("class ModelNew")
    assert source.count("import torch\n") == 1 and "import triton.language as tl" in source
    assert "m = ModelNew(" not in source  # the usage example stays out


def test_bare_code_without_fences():
    assert parse_reply(GOOD, None).source == GOOD


def test_empty_and_none_like_replies():
    assert parse_reply("", None).problem == "the reply holds no code block"
    assert parse_reply("   \n", GOOD).source is None
