#!/usr/bin/env bash
# Issue #18 on a lent GPU machine: `kernelevolve tune --target cuda --llm local` (Qwen2.5-Coder
# 0.5B served by xllamacpp on the machine's CPU cores) for a few rounds on two example problems,
# with profiling on, so the runs' traces show the LLM calls, evaluations with timings and
# diagnoses, repairs and the prompts built from them. It proves the plumbing of the loop on real
# hardware, not the small model's quality.
#
#     bash benchmarks/experiments/gpu_llm_tune.sh <qwen2.5-coder-0.5b.gguf> "$OUT"
#
# Writes into OUT (at most 8 files, 2 folders deep, as the device call returns them):
#   gpu_llm_tune.md      the log's timestamps, each run's summary and search tree
#   gpu_llm_tune.tar.gz  per problem: tune log, `trace --events`, `show` of every node (prompt,
#                        reply, evaluation, diagnosis), the HTML report, the run directory
#
# Nothing is downloaded: the GGUF is linked into KERNELEVOLVE_HOME/models, where `--llm local`
# looks for it (llm.local_dir defaults to <KERNELEVOLVE_HOME>/models; the file is recognised by
# its name and size). The packages the image lacks (LangGraph, LangChain, pydantic, xllamacpp,
# ...) come from benchmarks/device/device_env.sh and the carried wheels when that file is there.
#
# Knobs (environment): KE_ENV (benchmarks/device/device_env.sh: sourced first; empty: none),
# KE_TARGET (cuda; cpu for a dry run on a machine without a GPU),
# KE_ROUNDS (3), KE_STEP_S (210: the hard limit of one tune; its wall budget is 60 s less, checked
# between rounds), KE_THREADS (8: llama.cpp threads; xllamacpp's PyPI wheel is a CPU build, so
# the GPU only evaluates kernels), KE_PROBLEMS (two example problems).
#
# Experiment of 2026-12-02 (issue #18); fed docs/results.md
# (benchmarks/results/llm_tune_cuda_h200/).
set -uo pipefail

GGUF=$(realpath "${1:?usage: gpu_llm_tune.sh <gguf> <out dir>}")
OUT=$(mkdir -p "${2:?usage: gpu_llm_tune.sh <gguf> <out dir>}" && realpath "$2")
cd "$(dirname "$0")/../.."
ENV_FILE=${KE_ENV-benchmarks/device/device_env.sh}
# shellcheck disable=SC1090
if [ -n "$ENV_FILE" ] && [ -f "$ENV_FILE" ]; then source "$ENV_FILE"; fi
export OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1 COLUMNS=${COLUMNS:-160}

TARGET=${KE_TARGET:-cuda}
ROUNDS=${KE_ROUNDS:-3}
STEP_S=${KE_STEP_S:-210}
PROBLEMS=${KE_PROBLEMS:-examples/problems/03_leaky_relu_scale_clamp.py examples/problems/06_rmsnorm.py}
WORK=$(mktemp -d /tmp/gpu-llm-tune-XXXX)
SUMMARY="$OUT/gpu_llm_tune.md"
T0=$(date +%s)

say() { echo "[$(date -u +%H:%M:%S) +$(( $(date +%s) - T0 ))s] $*" | tee -a "$SUMMARY"; }
run_step() {  # run_step LIMIT_S LOG CMD...: the command under a hard time limit, logged
    local limit=$1 log=$2; shift 2
    timeout -k 10 "$limit" "$@" >"$log" 2>&1
    local rc=$?
    [ $rc -eq 124 ] && say "  TIMED OUT after ${limit}s: $*"
    return $rc
}

export KERNELEVOLVE_HOME="$WORK/home"
export KERNELEVOLVE_LLM__LOCAL_MODEL=0.5b
export KERNELEVOLVE_LLM__LOCAL_THREADS=${KE_THREADS:-8}
mkdir -p "$KERNELEVOLVE_HOME/models"
ln -s "$GGUF" "$KERNELEVOLVE_HOME/models/qwen2.5-coder-0.5b.gguf"
# Profiling on, so verified candidates carry a diagnosis (ncu left out: slow, and it needs
# counter permissions the machine may not grant).
cat >"$WORK/config.toml" <<'EOF'
[eval.profile]
enabled = true
tools = ["torch", "proton"]
timeout_s = 60
EOF

echo "# kernelevolve tune --llm local on $TARGET" >"$SUMMARY"
say "work dir $WORK; target $TARGET; rounds $ROUNDS; step limit ${STEP_S}s"
python3 - <<'EOF' 2>&1 | tee -a "$SUMMARY"
import importlib.metadata as md, os
import torch
from kernelevolve.config import load_settings
from kernelevolve.synth.llm.local import installed_model, server_available
cfg = load_settings().llm
print("device:", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
      "| cpus:", os.cpu_count(), "| local model:", installed_model(cfg),
      "| xllamacpp:", server_available() and md.version("xllamacpp"))
EOF

for p in $PROBLEMS; do
    name=$(basename "$p" .py)
    run="$WORK/runs/$name"
    say "tune $name (--llm local:0.5b, $ROUNDS rounds)"
    run_step "$STEP_S" "$WORK/$name.tune.log" kernelevolve tune "$p" --target "$TARGET" \
        --llm local:0.5b --rounds "$ROUNDS" --wall $(( STEP_S - 60 )) --no-kb \
        --config "$WORK/config.toml" --run-dir "$run" --out "$WORK/${name}_tuned.py"
    say "  tune exit $? ($(grep -c ' draft ' "$WORK/$name.tune.log") drafts, $(grep -c ' evaluate ' "$WORK/$name.tune.log") evaluations)"
    [ -d "$run" ] || continue
    run_step 120 "$WORK/$name.trace.txt" kernelevolve trace "$run" --events
    for cand in "$run"/candidates/n*.py; do
        [ -f "$cand" ] || continue
        node=$(basename "$cand" .py)
        run_step 120 "$WORK/$name.show_$node.txt" kernelevolve show "$run" "$node"
    done
    run_step 120 "$WORK/$name.report.log" kernelevolve report "$run" --out "$WORK/$name.report.html"
    { echo; echo "## $name"; echo; echo '```'; tail -n 25 "$WORK/$name.tune.log";
      echo; cat "$WORK/$name.trace.txt" 2>/dev/null | head -n 80; echo '```'; } >>"$SUMMARY"
done

say "packing"
tar czf "$OUT/gpu_llm_tune.tar.gz" -C "$WORK" --exclude=home/models . 2>>"$SUMMARY"
du -h "$OUT"/* | tee -a "$SUMMARY"
say "done"
