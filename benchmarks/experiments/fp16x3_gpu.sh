#!/bin/bash
# fp16x3 (the TMA GEMM's `TMA = 2`, and 3 chained) on a lent GPU: its GPU tests, then the
# tiles, stages and products of 69 and of two 64 x 64-tile problems (57, 77), every point
# checked against float64 by the harness's comparison. Run from the repository root with `.whl`
# and `.carry/kernelbench` carried (benchmarks/device/DEVICE.md), in two device calls (each part's
# timeouts keep a call under its 10 minutes):
#
#     bash benchmarks/experiments/fp16x3_gpu.sh "$OUT/r" tests 69  # about 8 minutes
#     bash benchmarks/experiments/fp16x3_gpu.sh "$OUT/r" 57        # about 3, then the judge in the call
#
# Writes DIR/gpu_tests.txt, DIR/tiles69/ and DIR/tiles57/ (tiles.{md,json}) with their logs.
# What it decides: whether fp16x3 becomes the default (`defaults["TMA"]` in conv.py), once the
# judge confirms it (`bench_shards.py run ... --first 69_ ...` with the default changed).
#
# Experiment of 2026-12-05; fed docs/notes/2026-12-05-fp16x3-tma-gemm.md.
set -u
dir=${1:?usage: fp16x3_gpu.sh OUT_DIR [tests] [69] [57]}
shift
parts=${*:-tests 69 57}
mkdir -p "$dir"
source benchmarks/device/device_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$dir/device.txt"
for part in $parts; do
    case $part in
    tests)
        timeout 240 python -m pytest -q -m gpu tests/gpu/test_conv_tma_gpu.py \
            -p no:cacheprovider > "$dir/gpu_tests.txt" 2>&1
        tail -3 "$dir/gpu_tests.txt" ;;
    69)
        # 2 stages: with fp16 parts two programs of 4 warps fit an SM (2 x 98 KB, 2 x 32K
        # registers)
        timeout 300 python benchmarks/experiments/tma_tiles_gpu.py .carry/kernelbench/level1 \
            --only 69_ \
            --tiles '[[64, 128, 32, 4], [64, 128, 16, 4], [64, 64, 32, 4], [128, 128, 32, 8]]' \
            --stages 2 3 4 --tma 1 2 3 --out "$dir/tiles69" > "$dir/tiles69.log" 2>&1
        tail -3 "$dir/tiles69.log" ;;
    57)
        timeout 170 python benchmarks/experiments/tma_tiles_gpu.py .carry/kernelbench/level1 \
            --only 57_ 77_ --tiles '[[64, 64, 32, 4], [64, 128, 32, 4]]' --stages 3 4 --tma 1 2 3 \
            --out "$dir/tiles57" > "$dir/tiles57.log" 2>&1
        tail -3 "$dir/tiles57.log" ;;
    *) echo "unknown part $part (tests, 69 or 57)" >&2; exit 2 ;;
    esac
done
