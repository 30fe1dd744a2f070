"""Secrets out of exported training data: API keys and tokens, and credentials in URLs.

A prompt, a reply or a candidate's stderr can carry a secret (a model that echoes its
configuration, a user note, a kernel that prints the environment). Every string an export
writes passes through ``Redactor.text``: the secret values this process knows (the ``llm``
config's key, and the environment's variables named like keys, tokens, secrets or passwords)
are replaced, and so is whatever has the shape of a credential (``user:password@`` in a URL,
``?api_key=...``, ``Bearer ...``, ``sk-...``, ``hf_...``, ``ghp_...`` tokens).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "[redacted]"
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$", re.IGNORECASE)
_MIN_SECRET = 8  # shorter values ("1", "true") would blank out ordinary text
_PATTERNS = [
    # scheme://user:password@host and scheme://token@host
    (re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^\s/@:'\"]*(?::[^\s/@'\"]*)?@"),
     rf"\1{REDACTED}@"),
    (re.compile(r"([?&](?:api[_-]?key|key|token|access[_-]?token|secret|password|sig)=)"
                r"[^&\s'\"]+", re.IGNORECASE), rf"\1{REDACTED}"),
    (re.compile(r"(\b(?:Bearer|Basic|Token)\s+)[A-Za-z0-9._~+/=-]{8,}"), rf"\1{REDACTED}"),
    (re.compile(r"\b(?:sk|rk|pk)-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}"), REDACTED),
    (re.compile(r"\b(?:hf|ghp|gho|ghs|github_pat|xox[bap]|lsv2_pt|glpat)_[A-Za-z0-9_-]{16,}"),
     REDACTED),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), REDACTED),
]


class Redactor:
    """Replaces known secret values and credential-shaped text in strings."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = {s for s in secrets if s and len(s) >= _MIN_SECRET}
        self.secrets = sorted(values, key=len, reverse=True)  # longest first: no partial leaks

    @classmethod
    def from_environment(cls, extra: Iterable[str | None] = (),
                         environ: Mapping[str, str] | None = None) -> Redactor:
        """Knows the values of the environment's secret-named variables and ``extra``."""
        env = os.environ if environ is None else environ
        found = [v for k, v in env.items() if _SECRET_NAME.search(k)]
        return cls([*found, *(e for e in extra if e)])

    def text(self, value: str) -> str:
        for secret in self.secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        for pattern, repl in _PATTERNS:
            value = pattern.sub(repl, value)
        return value

    def data(self, value: Any) -> Any:
        """``value`` (JSON-like: dicts, lists, strings, numbers) with every string redacted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value
