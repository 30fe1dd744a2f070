#!/bin/bash
# fp16x3 (the TMA GEMM's `TMA = 2`) on a lent GPU, in one device call (under 10 minutes): its
# GPU tests, then each TMA problem's tiles and stages with both of the kernel's products, every
# point checked against float64 by the harness's comparison. Run from the repository root with
# `.whl` and `.carry/kernelbench` carried (benchmarks/DEVICE.md):
#
#     bash benchmarks/fp16x3_gpu.sh "$OUT/r"
#
# Writes DIR/gpu_tests.txt and DIR/tiles/tiles.{md,json}. What it decides: whether fp16x3
# becomes the default (`defaults["TMA"]` in conv.py), after the judge confirms it
# (`bench_shards.py run ... --first 69_ ...` with the default changed).
set -u
dir=${1:?usage: fp16x3_gpu.sh OUT_DIR}
mkdir -p "$dir"
source benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$dir/device.txt"
timeout 150 python -m pytest -q -m gpu tests/gpu/test_conv_tma_gpu.py -p no:cacheprovider \
    > "$dir/gpu_tests.txt" 2>&1
tail -3 "$dir/gpu_tests.txt"
# 69 first (the one level-1 problem slower than eager), then a 64 x 64-tile one (57) and 77;
# 2 stages: with fp16 parts two programs of 4 warps fit an SM (2 x 96 KB, 2 x 32K registers)
timeout 400 python benchmarks/tma_tiles_gpu.py .carry/kernelbench/level1 --only 69_ 57_ 77_ \
    --tiles '[[64, 128, 32, 4], [64, 128, 16, 4], [64, 64, 32, 4], [128, 128, 32, 8]]' \
    --stages 2 3 4 --tma 1 2 --out "$dir/tiles" > "$dir/tiles.log" 2>&1
tail -5 "$dir/tiles.log"
