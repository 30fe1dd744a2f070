"""The settings tree's errors: one line per problem, naming the key as the user wrote it (the
environment variable, the file's dotted key, the flag), the bad value and what is expected; a
KERNELEVOLVE_* variable that names no setting is an error with the closest valid name."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from kernelevolve.config import OTHER_ENV_VARS, load_settings
from kernelevolve.errors import ConfigError

SRC = Path(__file__).resolve().parents[1] / "src" / "kernelevolve"


@pytest.fixture(autouse=True)
def _no_user_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in list(os.environ):
        if key.upper().startswith("KERNELEVOLVE_") and key != "KERNELEVOLVE_HOME":
            monkeypatch.delenv(key)


def _error(**kw: object) -> str:
    with pytest.raises(ConfigError) as info:
        load_settings(**kw)  # type: ignore[arg-type]
    return str(info.value)


def test_a_misspelt_env_section_is_an_error_naming_the_closest_setting(monkeypatch) -> None:
    monkeypatch.setenv("KERNELEVOLVE_SERACH__ROUNDS", "3")
    assert _error() == ("invalid environment: KERNELEVOLVE_SERACH__ROUNDS names no setting; "
                        "did you mean KERNELEVOLVE_SEARCH__ROUNDS?")
    monkeypatch.delenv("KERNELEVOLVE_SERACH__ROUNDS")
    monkeypatch.setenv("KERNELEVOLVE_EVAL__TIMEOUT", "3")  # a misspelt key
    assert "did you mean KERNELEVOLVE_EVAL__TIMEOUT_S?" in _error()
    monkeypatch.delenv("KERNELEVOLVE_EVAL__TIMEOUT")
    monkeypatch.setenv("KERNELEVOLVE_HOMEDIR", "/tmp")  # near a variable read outside the tree
    assert "did you mean KERNELEVOLVE_HOME?" in _error()


def test_env_values_reach_the_tree_at_every_depth(monkeypatch) -> None:
    for var, value in {"KERNELEVOLVE_SEARCH__ROUNDS": "5", "KERNELEVOLVE_EVAL__PROFILE__ENABLED":
                       "true", "KERNELEVOLVE_EVAL__SHAPE_OVERRIDES__BATCH_SIZE": "3",
                       "KERNELEVOLVE_EVAL__ALLOWED_OPS": '["conv2d"]',
                       "KERNELEVOLVE_EVAL__BASELINE": "fp32", "KERNELEVOLVE_EVAL__PRECISION": "fp32",
                       "KERNELEVOLVE_EVAL__PRECISION_FACTOR": "2.5",
                       "KERNELEVOLVE_EVAL__BASELINE_FLAGS": '{"compile_mode": "max-autotune"}',
                       "KERNELEVOLVE_PROMPTS_DIR": "/nowhere", "KERNELEVOLVE_LOCK_DIR": "/tmp"
                       }.items():
        monkeypatch.setenv(var, value)
    s = load_settings(search={"goal": 2.0})
    assert (s.search.rounds, s.search.goal, s.eval.profile.enabled) == (5, 2.0, True)
    assert s.eval.shape_overrides == {"batch_size": 3} and s.eval.allowed_ops == ["conv2d"]
    assert (s.eval.baseline, s.eval.precision, s.eval.precision_factor) == ("fp32", "fp32", 2.5)
    assert s.eval.baseline_flags.compile_mode == "max-autotune"
    assert load_settings(search={"rounds": 7}).search.rounds == 7  # flags over the environment


def test_a_bad_env_value_names_the_variable_the_value_and_what_is_expected(monkeypatch
                                                                           ) -> None:
    monkeypatch.setenv("KERNELEVOLVE_EVAL__TIMEOUT_S", "abc")
    assert _error() == ("invalid configuration: KERNELEVOLVE_EVAL__TIMEOUT_S = 'abc': expected "
                        "a valid number, unable to parse string as a number")
    monkeypatch.setenv("KERNELEVOLVE_EVAL__TIMEOUT_S", "0")
    monkeypatch.setenv("KERNELEVOLVE_EVAL__BASELINE", "tf32")
    message = _error()
    assert message.splitlines() == [
        "invalid configuration (2 problems):",
        "  KERNELEVOLVE_EVAL__TIMEOUT_S = '0': expected greater than 0",
        "  KERNELEVOLVE_EVAL__BASELINE = 'tf32': expected 'defaults' or 'fp32'"]
    monkeypatch.delenv("KERNELEVOLVE_EVAL__TIMEOUT_S")
    monkeypatch.delenv("KERNELEVOLVE_EVAL__BASELINE")
    monkeypatch.setenv("KERNELEVOLVE_EVAL__ALLOWED_OPS", "conv2d")  # a list takes JSON
    assert "KERNELEVOLVE_EVAL__ALLOWED_OPS='conv2d': expected JSON" in _error()
    monkeypatch.setenv("KERNELEVOLVE_EVAL__ALLOWED_OPS", '["conv2d"]')
    monkeypatch.setenv("KERNELEVOLVE_LLM__API_KEY", "sk-secret")
    monkeypatch.setenv("KERNELEVOLVE_LLM__TEMPERATURE", "9")
    assert "sk-secret" not in _error()


def test_a_bad_file_names_the_dotted_key_the_file_and_the_closest_key(tmp_path: Path) -> None:
    path = tmp_path / "kernelevolve.toml"
    path.write_text('[eval]\ntimeout_s = -1\ntimeot = 3\n[serach]\nrounds = 2\n'
                    '[search]\nstrategy = "greedy"\n')
    assert _error(path=path).splitlines() == [
        "invalid configuration (4 problems):",
        f"  eval.timeout_s = -1 (in {path}): expected greater than 0",
        f"  eval.timeot (in {path}): no such setting; did you mean eval.timeout_s?",
        f"  search.strategy = 'greedy' (in {path}): expected 'mcts' or 'evolutionary'",
        f"  serach (in {path}): no such setting; did you mean search?"]


def test_a_bad_flag_is_named_as_typed(tmp_path: Path) -> None:
    assert _error(search={"rounds": 0}, flags={"search.rounds": "--rounds"}) == (
        "invalid configuration: search.rounds = 0 (--rounds): expected greater than or equal "
        "to 1")
    from typer.testing import CliRunner

    from kernelevolve.cli import app

    result = CliRunner().invoke(app, ["tune", str(tmp_path / "p.py"), "--batch", "17"])
    assert isinstance(result.exception, ConfigError)
    assert str(result.exception) == ("invalid configuration: search.batch = 17 (--batch): "
                                     "expected less than or equal to 16")


def test_the_variables_read_outside_the_tree_are_all_listed() -> None:
    """Every KERNELEVOLVE_* name the code reads from the environment itself is in
    OTHER_ENV_VARS (else setting it would be refused as naming no setting)."""
    read = set()
    for path in SRC.rglob("*.py"):
        text = path.read_text()
        read |= set(re.findall(r"environ(?:\.get\(|\[)\s*\"(KERNELEVOLVE_[A-Z0-9_]+)\"", text))
        read |= set(re.findall(r"=\s*\"(KERNELEVOLVE_[A-Z0-9_]+)\"\s*(?:#.*)?$", text, re.M))
    read -= {"KERNELEVOLVE_", "KERNELEVOLVE_ALLOWED_OPS"}  # a problem file's name, not the env
    assert read and read <= set(OTHER_ENV_VARS), read - set(OTHER_ENV_VARS)


def test_the_cli_prints_a_config_error_as_one_message(tmp_path: Path) -> None:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELEVOLVE_")}
    env.update(KERNELEVOLVE_HOME=str(tmp_path), KERNELEVOLVE_SERACH__ROUNDS="3", COLUMNS="80")
    proc = subprocess.run([sys.executable, "-m", "kernelevolve.cli", "runs"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.strip() == ("ConfigError: invalid environment: KERNELEVOLVE_SERACH__ROUNDS "
                                   "names no setting; did you mean KERNELEVOLVE_SEARCH__ROUNDS?")
