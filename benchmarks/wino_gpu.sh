#!/usr/bin/env bash
# Issue #17's Winograd kernel (WINO; conv.py) on a lent GPU machine, in one call: its GPU tests
# (beside the TMA GEMM's, which share their helpers), then the offline variant sweep at
# KernelBench's own sizes over the level-1 convolutions it fits, WINO 0 (the default: the TMA
# GEMM or the pointer kernel), 1 (sums added in fp32) and 2 (products chained on the tensor
# cores), each point's error checked by the harness's comparison against float64.
#
#     bash benchmarks/wino_gpu.sh .carry/kernelbench/level1 "$OUT"
#
# Writes into OUT: gpu_tests.log, and wino/ (offline_variants_gpu.py's variants.md and .json,
# written as each problem finishes). What to do with it: where WINO=1 (or 2, within the
# tolerance) beats WINO=0, make it the default for such shapes in conv.py, then judge those
# problems (bench_shards.py run ... --first 69_ ...) and merge into kernelbench_l1_h200/.
#
# Knobs (environment): KE_ENV (benchmarks/device_env.sh: sourced first; empty: none), KE_ONLY
# (the problems, 69 first: the one #17 waits on), KE_LIMIT_S (480: the sweep's hard limit).
set -uo pipefail

L1=$(realpath "${1:?usage: wino_gpu.sh <kernelbench level1 dir> <out dir>}")
OUT=$(mkdir -p "${2:?usage: wino_gpu.sh <kernelbench level1 dir> <out dir>}" && realpath "$2")
cd "$(dirname "$0")/.."
ENV_FILE=${KE_ENV-benchmarks/device_env.sh}
# shellcheck disable=SC1090
if [ -n "$ENV_FILE" ] && [ -f "$ENV_FILE" ]; then source "$ENV_FILE"; fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} PYTHONUNBUFFERED=1
# The level-1 convolutions WINO fits (every fp32 one with stride 1 and 2-5 adjacent taps along
# w, transposed phases included; 16+ channels a group)
ONLY=${KE_ONLY:-69_ 57_ 71_ 63_ 55_ 64_ 67_ 61_ 70_ 68_ 73_ 77_ 79_}

python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_conv_wino_gpu.py \
    tests/gpu/test_conv_tma_gpu.py > "$OUT/gpu_tests.log" 2>&1
tail -3 "$OUT/gpu_tests.log"
# shellcheck disable=SC2086
timeout "${KE_LIMIT_S:-480}" python3 benchmarks/offline_variants_gpu.py "$L1" --only $ONLY \
    --points '[{"WINO": 0}, {"WINO": 1}, {"WINO": 2}]' --out "$OUT/wino"
echo "sweep exit: $?"
