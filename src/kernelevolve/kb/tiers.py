"""The knowledge base's tiers, apart from its models so the CLI can name them in its help
without importing pydantic."""

from __future__ import annotations

from typing import Literal, get_args

Tier = Literal["constraints", "guides", "hardware", "skills"]
TIERS: tuple[Tier, ...] = get_args(Tier)
# Tiers a user may add documents to; skills are written by distillation only.
ADDABLE_TIERS: tuple[Tier, ...] = ("constraints", "guides", "hardware")
