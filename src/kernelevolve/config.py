"""One configuration tree, merged from a TOML file, ``KERNELEVOLVE_*`` environment variables and
explicit overrides (CLI flags). Unknown keys and missing files are errors, never silent defaults.

Environment variables use ``__`` between levels: ``KERNELEVOLVE_EVAL__TIMEOUT_S=120``.
A config file is named with ``--config`` or ``KERNELEVOLVE_CONFIG``. A ``KERNELEVOLVE_*``
variable that names no setting (and is not one of ``OTHER_ENV_VARS``) is an error, as is an
unknown key in the file; each bad value is reported with the name the user wrote, the value and
what is expected.
"""

from __future__ import annotations

import difflib
import json
import os
import tomllib
import types
import typing
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from kernelevolve.errors import ConfigError


def data_dir() -> Path:
    """The user's data directory for kernelevolve (``KERNELEVOLVE_HOME`` overrides it)."""
    home = os.environ.get("KERNELEVOLVE_HOME")
    return Path(home) if home else Path(platformdirs.user_data_dir("kernelevolve"))


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ProfileConfig(_Section):
    """Profiling of candidates that passed correctness, after timing (tools/profile_jobs.py)."""

    enabled: bool = Field(False, description="profile verified candidates on GPU targets")
    tools: list[Literal["torch", "proton", "ncu"]] = Field(
        ["torch", "proton", "ncu"],
        description="instruments to run (cheapest first); the roofline pass always runs",
    )
    timeout_s: float = Field(120.0, gt=0, description="wall-clock budget of one profile")
    torch_iters: int = Field(3, ge=1, description="forwards under the PyTorch profiler")
    proton_iters: int = Field(5, ge=1, description="forwards in the Proton session")
    ncu_path: str | None = Field(
        None, description="ncu executable; default: PATH, then /usr/local/cuda/bin/ncu"
    )
    ncu_launch_count: int = Field(10, ge=1, description="kernel launches ncu profiles at most")
    ncu_timeout_s: float = Field(90.0, gt=0)
    proton_timeout_s: float = Field(60.0, gt=0)
    ceilings_path: str = Field(
        default_factory=lambda: str(data_dir() / "roofline" / "ceilings.json"),
        description="cache of the measured roofline ceilings, one entry per device name",
    )
    remeasure_ceilings: bool = Field(False, description="measure the ceilings even if cached")
    raw_dir: str | None = Field(None, description="keep the instruments' raw outputs here")


class BaselineFlags(_Section):
    """PyTorch's numeric flags for the eager and torch.compile baselines a speedup is measured
    against; a field left unset takes the preset's value (``eval.baseline``)."""

    cudnn_allow_tf32: bool | None = Field(
        None, description="torch.backends.cudnn.allow_tf32: cuDNN convolutions (and RNNs) in "
                          "TF32; PyTorch's default is True")
    float32_matmul_precision: Literal["highest", "high", "medium"] | None = Field(
        None, description="torch.set_float32_matmul_precision: 'highest' (PyTorch's default) "
                          "full fp32 matrix products, 'high' TF32, 'medium' bf16")
    compile_mode: Literal["default", "reduce-overhead", "max-autotune",
                          "max-autotune-no-cudagraphs"] | None = Field(
        None, description="torch.compile's mode for the compiled baseline (unset: 'default')")


class EvalConfig(_Section):
    """How candidates are evaluated (see tools/harness)."""

    n_input_sets: int = Field(5, ge=1, le=100, description="fresh random input sets per check")
    extra_shapes: bool = Field(
        True, description="also check on overridden module-level sizes (catches hard-wired shapes)"
    )
    shape_overrides: dict[str, int] = Field(
        default_factory=dict, description="sizes for the extra-shape check, e.g. {'batch_size': 3}"
    )
    cpu_max_elements: int = Field(
        1 << 16, ge=64, description="on the cpu target, sizes shrink until inputs hold at most this"
    )
    atol: float | None = Field(None, gt=0, description="override the dtype-aware absolute tolerance")
    rtol: float | None = Field(None, ge=0, description="override the dtype-aware relative tolerance")
    allow_loose_fp32: bool = Field(
        False, description="permit fp32 tolerances looser than 1e-3 (off: such values are refused)"
    )
    nonfinite: Literal["require", "report", "off"] = Field(
        "report",
        description="inputs with a few NaN, +inf and -inf values: the output must hold the "
                    "reference's NaN and infinities at the same places ('require' refuses a "
                    "kernel that does not; 'report' records the failed check and a flag; 'off' "
                    "skips it)")
    allowed_ops: list[str] = Field(
        default_factory=list,
        description="aten ops the candidate may call besides allocation/view ops, e.g. ['conv2d', 'mm']",
    )
    timeout_s: float = Field(300.0, gt=0, description="wall-clock limit of one evaluation")
    memory_limit_gb: float = Field(16.0, gt=0, description="address-space limit of a cpu worker")
    min_trials: int = Field(100, ge=1, description="timing: at least this many trials ...")
    min_time_s: float = Field(1.0, ge=0, description="... or at least this long, whichever first")
    max_trials: int = Field(2000, ge=1)
    warmup_ms: float = Field(50.0, ge=0, description="timing: warm-up time before trials")
    compile_reference: bool = Field(True, description="also time torch.compile of the reference")
    baseline: Literal["defaults", "fp32"] = Field(
        "defaults",
        description="the flags eager and torch.compile are timed with: 'defaults' as PyTorch "
                    "runs them for a user (cuDNN convolutions in TF32, matmuls in full fp32), "
                    "'fp32' with TF32 off everywhere; on cuda the other preset is timed too "
                    "where its flags change the problem's ops, and both speedups are reported")
    baseline_flags: BaselineFlags = Field(
        default_factory=BaselineFlags,
        description="single flags over the preset, e.g. {float32_matmul_precision = 'high'}")
    precision: Literal["baseline", "fp32"] = Field(
        "baseline",
        description="the precision contract. 'baseline': a kernel passes the fp32 rule, or its "
                    "error against the float64 truth (largest and root-mean-square, per output) "
                    "is within precision_factor of the error the timed baseline itself has "
                    "there, measured by the judge on the same inputs (where PyTorch computes a "
                    "convolution in TF32, a kernel may too). 'fp32': the fp32 rule only")
    precision_factor: float = Field(
        3.0, ge=1.0, le=8.0,
        description="precision 'baseline': how many times the baseline's own error a kernel's "
                    "may be (3: a TF32 kernel that truncates where cuDNN rounds, ~2.6x its "
                    "error, passes; one in bf16, ~8x, does not)")
    gpu_compile_arch: int | None = Field(
        90, ge=70, le=120,
        description="interpreter targets (cpu, mtia-sim): also compile every Triton kernel the "
                    "candidate launched for this NVIDIA compute capability (90: H100/H200), with "
                    "Triton's bundled ptxas, so 'verified' means it compiles for the GPU too; "
                    "None skips it")
    suspicious_speedup: float = Field(
        10.0, gt=1, description="speedups above this are flagged and re-verified"
    )
    device_kernels: bool = Field(
        True, description="cuda: after the timing, one forward under the device profiler "
                          "(CUPTI), whose every kernel must be the candidate's own or an allowed "
                          "torch op's; off only where CUPTI misbehaves on a machine")
    seed: int | None = Field(
        None, description="base seed of the input sets; unset: a fresh random one per evaluation"
    )
    profile: ProfileConfig = Field(default_factory=ProfileConfig)
    backend: Literal["local", "ray"] = Field(
        "local",
        description="where candidates are evaluated: 'local' (warm workers on this host) or "
                    "'ray' (an actor per GPU of a Ray cluster; pip install 'kernelevolve[ray]')")
    ray_address: str | None = Field(
        None,
        description="backend 'ray': the cluster to join ('auto', 'host:6379' or "
                    "'ray://host:10001'); unset: a private Ray instance on this host, shut "
                    "down with the pool")
    workers_per_gpu: int = Field(
        1, ge=1,
        description="evaluation workers started per device (their CPU stages overlap; GPU "
                    "timing is never concurrent on one GPU)")


class KBConfig(_Section):
    """The knowledge base (kb/)."""

    path: Path | None = Field(None, description="Chroma directory; default <data dir>/kb")
    top_k: int = Field(4, ge=1, le=50)
    skill_min_gain: float = Field(
        0.05, ge=0, description="distil a skill only when the child is this much faster (0.05 = 5%)"
    )
    skill_merge_distance: float = Field(
        0.3,
        gt=0,
        lt=2,
        description="a new skill whose change is closer than this (cosine distance) to the "
        "change of a skill for the same target and operator is merged into it",
    )
    skill_max_distance: float = Field(
        0.5,
        gt=0,
        le=2,
        description="retrieve a skill only when it is at least this close (cosine distance)",
    )

    def resolved_path(self) -> Path:
        return self.path if self.path is not None else data_dir() / "kb"


class LLMConfig(_Section):
    """The language model that writes candidates. Unset ``model``: the offline synthesizer."""

    provider: str = Field(
        "openai",
        description="'openai' (any OpenAI-compatible endpoint) or a LangChain provider name "
        "(e.g. 'anthropic', 'ollama') when its integration package is installed",
    )
    model: str | None = Field(None, description="model name; unset: no LLM (offline synthesizer)")
    base_url: str | None = Field(None, description="endpoint, e.g. http://127.0.0.1:8080/v1")
    api_key: SecretStr | None = Field(
        None, description="API key; for 'openai' also read from OPENAI_API_KEY"
    )
    temperature: float = Field(0.7, ge=0, le=2)
    max_tokens: int = Field(4096, ge=64, description="longest reply")
    timeout_s: float = Field(300.0, gt=0, description="one request")
    max_retries: int = Field(2, ge=0, description="retries of a failed request (network, 5xx)")
    mode: Literal["online", "batch"] = Field(
        "online",
        description="online: ask the endpoint while the run goes; batch: when the run needs "
        "replies, write its requests in the OpenAI Batch API's JSONL format, checkpoint and "
        "exit; `kernelevolve resume RUN --replies FILE` continues with the Batch API's output "
        "(no endpoint or key needed on this machine)",
    )
    use: Literal["auto", "endpoint", "local", "offline"] = Field(
        "auto",
        description="which synthesizer writes kernels; auto: the endpoint when llm.model is set, "
        "else the local model when installed (`kernelevolve llm install-local`), else offline",
    )
    local_model: Literal["auto", "0.5b", "1.5b"] = Field(
        "auto", description="local Qwen2.5-Coder size; auto: the largest one installed"
    )
    local_dir: Path | None = Field(None, description="local model files; default <data dir>/models")
    local_threads: int | None = Field(
        None, ge=1, description="CPU threads of the local server; unset: half the cores (min 1)"
    )
    local_max_tokens: int = Field(
        1280, ge=64, description="longest reply of the local model (a kernel file takes ~400-900 "
        "tokens; a small model that loops stops here)"
    )

    def resolved_local_dir(self) -> Path:
        return self.local_dir if self.local_dir is not None else data_dir() / "models"


class SearchConfig(_Section):
    """The tree search (graph/search.py) and its budget."""

    strategy: Literal["mcts", "evolutionary"] = "mcts"
    goal: float = Field(1.5, gt=0, description="stop once the best speedup vs eager reaches this")
    rounds: int = Field(
        12, ge=1, description="budget: rounds (each one expands `batch` new candidates)"
    )
    wall_s: float = Field(3600.0, gt=0, description="budget: wall-clock seconds of the run")
    tokens: int = Field(2_000_000, ge=0, description="budget: LLM tokens (prompt + reply)")
    max_repairs: int = Field(2, ge=0, description="Debugger repairs of one failed candidate")
    max_reply_retries: int = Field(
        2, ge=0, description="re-asks when a reply holds no usable code"
    )
    batch: int = Field(
        1, ge=1, le=16,
        description="candidates a round drafts and evaluates at once: the Planner picks this "
        "many expansions (children of several frontier nodes, or of one node with different "
        "memory operators and intents); their synthesizer calls overlap, their evaluations go "
        "to the pool together (GPU timing stays serialized per GPU); 1: one at a time"
    )
    max_children: int = Field(3, ge=1, description="MCTS: children of a node before descending")
    uct_c: float = Field(0.7, ge=0, description="MCTS exploration constant")
    tournament_k: int = Field(3, ge=2, description="evolutionary: tournament size")
    stagnation_rounds: int = Field(
        4, ge=1, description="rounds without a better best before a memoryless restart"
    )
    max_restarts: int = Field(2, ge=0, description="restarts before the search counts as stalled")
    fp16x3: bool = Field(
        False, description="offline synthesizer: also try fp16x3 products in fp32 convolutions "
        "(scaled fp16 parts, twice TF32's tensor-core rate; the scale is the whole tensor's, so "
        "an output whose inputs all lie ~1e8 below the tensor's largest value can miss the fp32 "
        "tolerance)")
    seed: int = Field(0, description="the search's own random choices")
    retrieve: bool = Field(True, description="retrieve knowledge for each round (Librarian)")
    warm_start: int = Field(
        2, ge=0, description="verify first this many best known kernels of earlier runs of the "
        "same problem on the same target (from the run store); 0: start cold"
    )
    distill: bool = Field(True, description="distil skills from improvements (Librarian)")
    nothing_to_gain: float = Field(
        0.9, ge=0, le=1.0,
        description="stop at the first timed result when eager already reaches this fraction "
        "of the measured memory roofline (traffic at least 4x the L2); 0: never stop for it")


class RunsConfig(_Section):
    """Where runs are written."""

    dir: Path | None = Field(None, description="run directories; default <data dir>/runs")

    def resolved_dir(self) -> Path:
        return self.dir if self.dir is not None else data_dir() / "runs"


class StoreConfig(_Section):
    """The shared run store (store/): every run and candidate, for listing, inspection and warm
    starts."""

    path: Path | None = Field(
        None, description="SQLite file (':memory:' keeps it in memory); default "
        "<data dir>/store.sqlite"
    )

    def resolved_path(self) -> Path:
        return self.path if self.path is not None else data_dir() / "store.sqlite"


class Settings(BaseSettings):
    """The whole configuration tree (build it with ``load_settings``, which reads the file and
    the environment)."""

    model_config = SettingsConfigDict(
        env_prefix="KERNELEVOLVE_", env_nested_delimiter="__", extra="forbid"
    )

    eval: EvalConfig = Field(default_factory=EvalConfig)
    kb: KBConfig = Field(default_factory=KBConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    search: SearchConfig = Field(default_factory=SearchConfig)
    runs: RunsConfig = Field(default_factory=RunsConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings],
                                   init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The environment is read by load_settings (read_env), which knows each variable's
        # name for its error messages and refuses the ones that name no setting.
        return (init_settings,)


ENV_PREFIX = "KERNELEVOLVE_"
# KERNELEVOLVE_* variables the project reads outside the settings tree: never "unknown".
OTHER_ENV_VARS: dict[str, str] = {
    "KERNELEVOLVE_HOME": "the data directory (config.data_dir)",
    "KERNELEVOLVE_CONFIG": "the config file (load_settings)",
    "KERNELEVOLVE_PROMPTS_DIR": "prompt template overrides (prompts/)",
    "KERNELEVOLVE_LOCK_DIR": "the directory of the per-GPU timing locks (harness worker)",
    "KERNELEVOLVE_PROFILE_JUDGE": "a developer's profile of the judge (harness)",
    "KERNELEVOLVE_GPU_WAIT_FILE": "where a worker's judge records its time queued for the GPU "
                                  "(set by the pool)",
}


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The model class of a field (``X | None`` unwrapped), or None."""
    args = typing.get_args(annotation) if isinstance(annotation, types.UnionType) \
        or typing.get_origin(annotation) is typing.Union else (annotation,)
    for arg in args:
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
    return None


def _is_complex(annotation: Any) -> bool:
    """A field whose environment value is JSON (a list, a dict, a section)."""
    args = typing.get_args(annotation) if isinstance(annotation, types.UnionType) \
        or typing.get_origin(annotation) is typing.Union else (annotation,)
    return any(typing.get_origin(a) in (list, dict, tuple, set) or a in (list, dict)
               or _model_of(a) is not None for a in args if a is not type(None))


def _is_dict(annotation: Any) -> bool:
    args = typing.get_args(annotation) if isinstance(annotation, types.UnionType) \
        or typing.get_origin(annotation) is typing.Union else (annotation,)
    return any(typing.get_origin(a) is dict or a is dict for a in args)


def setting_keys(model: type[BaseModel] = Settings, prefix: tuple[str, ...] = ()
                 ) -> Iterator[tuple[str, ...]]:
    """Every key of the tree: sections, nested sections and leaves, as paths."""
    for name, field in model.model_fields.items():
        path = (*prefix, name)
        yield path
        sub = _model_of(field.annotation)
        if sub is not None:
            yield from setting_keys(sub, path)


def _resolve(parts: list[str]) -> tuple[bool, bool]:
    """(names a setting?, is its value JSON?) for a path of lower-case key parts."""
    model: type[BaseModel] | None = Settings
    for i, part in enumerate(parts):
        if model is None or part not in model.model_fields:
            return False, False
        annotation = model.model_fields[part].annotation
        if i == len(parts) - 1:
            return True, _is_complex(annotation)
        if _is_dict(annotation):  # KERNELEVOLVE_EVAL__SHAPE_OVERRIDES__BATCH_SIZE=3
            return len(parts) == i + 2, False
        model = _model_of(annotation)
    return False, False


def env_name(path: tuple[str, ...]) -> str:
    return ENV_PREFIX + "__".join(p.upper() for p in path)


def read_env(environ: Mapping[str, str] | None = None
             ) -> tuple[dict[str, Any], dict[tuple[str, ...], str]]:
    """The settings given by ``KERNELEVOLVE_*`` variables as nested values, and which variable
    gave each path. A variable that names no setting is a ConfigError naming the closest one."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    names: dict[tuple[str, ...], str] = {}
    problems: list[str] = []
    for var, raw in sorted(environ.items()):
        if not var.upper().startswith(ENV_PREFIX) or var.upper() in OTHER_ENV_VARS:
            continue
        parts = var[len(ENV_PREFIX):].lower().split("__")
        known, as_json = _resolve(parts)
        if not known:
            valid = [env_name(p) for p in setting_keys()] + list(OTHER_ENV_VARS)
            close = difflib.get_close_matches(var.upper(), valid, n=1, cutoff=0.6)
            problems.append(f"{var} names no setting"
                            + (f"; did you mean {close[0]}?" if close else
                               "; the settings are listed in docs/configuration.md"))
            continue
        value: Any = raw
        if as_json:
            try:
                value = json.loads(raw)
            except ValueError:
                problems.append(f"{var}={raw!r}: expected JSON here (a list, a table or a "
                                f"section), e.g. {var}='[\"conv2d\"]' or '{{\"key\": 1}}'")
                continue
        node = values
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
        names[tuple(parts)] = var
    if problems:
        raise ConfigError(_listed("environment", problems))
    return values, names


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _holds(values: Any, path: tuple[str | int, ...]) -> bool:
    """Whether nested ``values`` give ``path`` or a section above it."""
    for part in path:
        if not isinstance(values, dict) or part not in values:
            return False
        values = values[part]
    return True


def _expected(error: Any) -> str:
    msg = str(error["msg"])
    for lead in ("Input should be ", "Value should be "):
        if msg.startswith(lead):
            return "expected " + msg[len(lead):]
    return msg[:1].lower() + msg[1:]


def describe_errors(exc: ValidationError, where: Any) -> list[str]:
    """One line per problem of a validation error: the key as the user wrote it, the bad value
    and what is expected; an unknown key names the closest known one. ``where`` maps a key path
    to (the name, where it was given): ``("KERNELEVOLVE_EVAL__TIMEOUT_S", "")``,
    ``("eval.timeout_s", "in FILE")``, ``("search.rounds", "--rounds")``."""
    lines = []
    for error in exc.errors():
        path = tuple(p for p in error["loc"] if isinstance(p, str | int))
        name, given = where(path)
        at = f" ({given})" if given else ""
        if error["type"] == "extra_forbidden":
            parent = tuple(str(p) for p in path[:-1])
            keys = [".".join(k) for k in setting_keys() if k[:-1] == parent]
            close = difflib.get_close_matches(".".join(map(str, path)), keys, n=1, cutoff=0.6)
            lines.append(f"{name}{at}: no such setting"
                         + (f"; did you mean {close[0]}?" if close else
                            f"; the keys here: {', '.join(keys)}" if keys else ""))
        elif error["type"] == "missing":
            lines.append(f"{name}{at} is missing")
        else:
            secret = "key" in str(path[-1]) if path else False
            value = "***" if secret else repr(error["input"])
            lines.append(f"{name} = {value}{at}: {_expected(error)}")
    return lines


def load_settings(path: str | Path | None = None, *, flags: Mapping[str, str] | None = None,
                  origin: str = "given by the caller", **overrides: Any) -> Settings:
    """Build the configuration: defaults < file < environment < ``overrides``.

    ``overrides`` are nested dicts by section, e.g. ``load_settings(eval={"timeout_s": 60})``;
    an error in one names it by ``flags`` (dotted key -> the flag the user typed, e.g.
    ``{"search.rounds": "--rounds"}``), else as ``key (origin)``.
    """
    path = path or os.environ.get("KERNELEVOLVE_CONFIG")
    file_values: dict[str, Any] = {}
    if path:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"config file {p} does not exist; fix the path or drop --config")
        try:
            file_values = tomllib.loads(p.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {p} is not valid TOML: {exc}") from exc
    env_values, env_names = read_env()

    def where(key: tuple[str | int, ...]) -> tuple[str, str]:
        dotted = ".".join(map(str, key))
        if _holds(overrides, key):
            flag = next((f for k, f in (flags or {}).items()
                         if dotted == k or dotted.startswith(k + ".")), None)
            return dotted, flag or origin
        for n in range(len(key), 0, -1):
            if key[:n] in env_names and _holds(env_values, key):
                return env_names[key[:n]], ""  # type: ignore[index]
        if _holds(file_values, key):
            return dotted, f"in {path}"
        return dotted, ""

    try:
        merged = _deep_merge(_deep_merge(file_values, env_values), overrides)
        return Settings.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(_listed("configuration", describe_errors(exc, where))) from exc


def _listed(what: str, problems: list[str]) -> str:
    """One problem on the line; several one per line."""
    if len(problems) == 1:
        return f"invalid {what}: {problems[0]}"
    return f"invalid {what} ({len(problems)} problems):\n" + "\n".join(f"  {p}" for p in problems)
