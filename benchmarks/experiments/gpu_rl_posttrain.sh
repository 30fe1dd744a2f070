#!/usr/bin/env bash
# Issue #19 on a lent GPU machine: Qwen2.5-Coder 0.5B (the local model's GGUF, dequantised for
# transformers) post-trained by rejection-sampling SFT on the carried verified trajectories
# (benchmarks/data/rl_sft, see its README), then the untrained and the trained model each drive
# the real search loop on held-out problems: verified rate and rounds to the first verified
# kernel (benchmarks/suites/rl_posttrain.py does the work; this bounds it in time and packs the
# output).
#
#     bash benchmarks/experiments/gpu_rl_posttrain.sh <qwen2.5-coder-0.5b.gguf> "$OUT"
#
# Writes into OUT: rl_posttrain.log (timestamps and the script's output), results.md and
# results.json (written after each model, so a run cut short keeps what finished), and
# rl_posttrain_runs.tar.gz (the evaluation runs' directories: every prompt, reply and verdict).
# The model weights (base-hf, sft) stay on the machine.
#
# Knobs (environment): KE_ENV (benchmarks/device/device_env.sh: sourced first; empty: none),
# KE_TARGET (cuda; cpu for a dry run), KE_ROUNDS (3 per problem),
# KE_WALL_S (150: wall budget of one evaluation run, checked between rounds), KE_LIMIT_S (510:
# hard limit for rl_posttrain.py), KE_SFT_EPOCHS (4), KE_SFT_STEPS (0: epochs decide),
# KE_MAX_LENGTH (4096 tokens per training row: every prompt and kept reply fits, under 3100),
# KE_MAX_NEW_TOKENS (2560: the longest reply, and the longest training reply), KE_JOBS (4:
# evaluation runs at once, each its own process with its own copy of the model on the GPU; the
# base model's runs overlap the SFT), KE_PROBLEMS (the two held-out problems), KE_WORK (the work
# directory; a second call given the first one's skips the dequantisation), KE_EXTRA (more
# rl_posttrain.py arguments).
#
# Experiment of 2026-12-02 (issue #19); fed docs/results.md (benchmarks/results/rl_posttrain_h200/).
set -uo pipefail

GGUF=$(realpath "${1:?usage: gpu_rl_posttrain.sh <gguf> <out dir>}")
OUT=$(mkdir -p "${2:?usage: gpu_rl_posttrain.sh <gguf> <out dir>}" && realpath "$2")
cd "$(dirname "$0")/../.."
ENV_FILE=${KE_ENV-benchmarks/device/device_env.sh}
# shellcheck disable=SC1090
if [ -n "$ENV_FILE" ] && [ -f "$ENV_FILE" ]; then source "$ENV_FILE"; fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1

TARGET=${KE_TARGET:-cuda}
PROBLEMS=${KE_PROBLEMS:-examples/problems/03_leaky_relu_scale_clamp.py examples/problems/07_row_mean.py}
WORK=${KE_WORK:-$(mktemp -d /tmp/gpu-rl-posttrain-XXXX)}  # a reused one keeps its base-hf
mkdir -p "$WORK"
LOG="$OUT/rl_posttrain.log"
T0=$(date +%s)
say() { echo "[$(date -u +%H:%M:%S) +$(( $(date +%s) - T0 ))s] $*" | tee -a "$LOG"; }

export KERNELEVOLVE_HOME="$WORK/home"
export TMPDIR="$WORK/tmp"  # rl_posttrain.py's evaluation runs land here, inside the archive
mkdir -p "$TMPDIR"
say "work dir $WORK; target $TARGET; problems $PROBLEMS"
python3 -c "
import importlib.metadata as md, torch
print({p: md.version(p) for p in ('torch', 'transformers', 'trl', 'datasets', 'gguf', 'accelerate')},
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'cpu')" 2>&1 | tee -a "$LOG"

# every line of the script's output gets its time since the start
# shellcheck disable=SC2086
timeout -k 15 "${KE_LIMIT_S:-510}" python3 benchmarks/suites/rl_posttrain.py \
    --model-gguf "$GGUF" --data benchmarks/data/rl_sft --problems $PROBLEMS \
    --target "$TARGET" --rounds "${KE_ROUNDS:-3}" --wall-s "${KE_WALL_S:-150}" --goal 0.001 \
    --no-compile-reference --n-input-sets 3 \
    --sft-epochs "${KE_SFT_EPOCHS:-4}" --sft-steps "${KE_SFT_STEPS:-0}" --sft-lr 2e-5 \
    --batch-size 2 --max-length "${KE_MAX_LENGTH:-4096}" \
    --max-new-tokens "${KE_MAX_NEW_TOKENS:-2560}" --temperature 0.7 --jobs "${KE_JOBS:-4}" \
    --out "$WORK/posttrain" ${KE_EXTRA:-} 2>&1 \
    | while IFS= read -r line; do printf '[+%ds] %s\n' "$SECONDS" "$line"; done | tee -a "$LOG"
say "rl_posttrain.py exit ${PIPESTATUS[0]} (124: the time limit)"

cp "$WORK/posttrain/results.md" "$WORK/posttrain/results.json" "$OUT/" 2>/dev/null \
    || say "no results file: no model finished its evaluation"
tar czf "$OUT/rl_posttrain_runs.tar.gz" -C "$WORK" --exclude=posttrain/base-hf \
    --exclude=posttrain/sft --exclude='*.safetensors' --exclude='*.pt' --exclude='torchinductor_*' \
    . 2>>"$LOG"
du -h "$OUT"/* | tee -a "$LOG"
say "done"
