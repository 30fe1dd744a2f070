#!/bin/bash
# Issue #46 on a lent GPU: baselines at PyTorch's defaults and at fp32, the precision contract,
# the judge's memory, and the level-1 headline. Run from the repository root with `.whl` and
# `.carry` carried (benchmarks/device/DEVICE.md; `.carry/before` = `git archive <commit> src` of the
# tree to compare the judge's memory with), in back-to-back device calls:
#
#     bash benchmarks/experiments/baselines_gpu.sh "$OUT/r" tests memory start  # call 1 (~10 min)
#     bash benchmarks/experiments/baselines_gpu.sh "$OUT/r" wait                # calls 2.. (~9.5 min each)
#     bash benchmarks/experiments/baselines_gpu.sh "$OUT/r" collect             # last: merge, copy out
#
# tests: the GPU tests of the contract, the baselines and the convolutions' TF32 product;
# memory: benchmarks/probes/judge_memory_gpu.py on the six largest level-1 inputs, the tree before
# (.carry/before) and this one; start: `bench_shards.py run` over all of level 1 (one round,
# the default plan, three processes; the convolutions first: their rows are the ones the
# baselines' flags change) in the background, from a copy in /tmp (a later call
# carries the tree anew); wait: sleep while it runs, printing progress; collect: merge the
# shards that finished into DIR/l1 (bench.json, bench.md).
#
# Experiment of 2026-12-07 (issue #46); fed docs/results.md's H100 convolution rows
# (benchmarks/results/kernelbench_l1_conv_h100/, benchmarks/results/baselines_h100/).
set -u
dir=${1:?usage: baselines_gpu.sh OUT_DIR [tests] [memory] [start] [wait] [collect]}
shift
mkdir -p "$dir"
source benchmarks/device/device_env.sh
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$dir/device.txt"
work=${WORK:-/tmp/dev46}  # WORK: another directory for a second bench beside the first
for part in "$@"; do
    case $part in
    redteam)  # issue 47's red team, every case on the GPU (REDTEAM_S: its time limit)
        timeout ${REDTEAM_S:-500} python tests/adversarial/redteam47/run_redteam.py --target cuda \
            --jobs 4 --timeout 240 --out "$dir/redteam" > "$dir/redteam.log" 2>&1
        grep -c "pass " "$dir/redteam.log"; grep -E "HOLE|FALSE" "$dir/redteam.log" | cut -c1-300 ;;
    verdict)  # the timing-path cheats and honest kernels on the GPU
        timeout ${VERDICT_S:-300} python benchmarks/suites/verdict_gpu.py --kernelbench \
            .carry/kernelbench --out "$dir/verdict" > "$dir/verdict.log" 2>&1
        tail -30 "$dir/verdict.log" | cut -c1-300 ;;
    tests)
        timeout ${TESTS_S:-300} python -m pytest -q -m gpu tests/gpu/test_baselines_gpu.py \
            tests/gpu/test_conv_tma_gpu.py -p no:cacheprovider -s > "$dir/gpu_tests.txt" 2>&1
        grep -E "tf32 conv|passed|failed|Error" "$dir/gpu_tests.txt" | tail -12 ;;
    memory)
        timeout 200 env PYTHONPATH=/tmp/site:$PWD/.carry/before/src python \
            benchmarks/probes/judge_memory_gpu.py .carry/kernelbench/level1 --largest 5 \
            --label before --out "$dir/memory_before.json" > "$dir/memory_before.log" 2>&1
        timeout 200 python benchmarks/probes/judge_memory_gpu.py .carry/kernelbench/level1 \
            --largest 5 --label after --out "$dir/memory_after.json" > "$dir/memory_after.log" 2>&1
        tail -5 "$dir/memory_before.log" "$dir/memory_after.log" | cut -c1-400 ;;
    start)
        rm -rf "$work" && mkdir -p "$work" && cp -r "$PWD" "$work/repo"
        # PROBLEMS: a directory of problem files (default: all of level 1); DEADLINE_S: the
        # bench's own deadline (what finished by then is kept)
        (cd "$work/repo" && setsid nohup python benchmarks/suites/bench_shards.py run \
            "${PROBLEMS:-.carry/kernelbench/level1}" --target cuda --out "$work/l1" --procs "${PROCS:-3}" \
            --rounds 1 --first ${FIRST:-50_ $(seq -f '%g_' 54 87)} --deadline-s "${DEADLINE_S:-1500}" \
            --env KERNELEVOLVE_SEARCH__WALL_S=60 ${BENCH_ENV:-} > "$work/l1.log" 2>&1 &)
        # the card's memory in use, every second, while the bench runs (all processes on it)
        (setsid nohup bash -c "while sleep 1; do nvidia-smi --query-gpu=memory.used \
            --format=csv,noheader,nounits >> '$work/smi.log'; done" >/dev/null 2>&1 &)
        sleep 5; cat "$work/l1.log" ;;
    wait)
        end=${WAIT_UNTIL:-560}  # seconds since this script started: a call's 10 minutes
        while [ $SECONDS -lt $end ] && ! grep -q "^done" "$work/l1.log" 2>/dev/null; do
            sleep 20
        done
        for s in "$work"/l1/shard*/bench.log; do echo "$s: $(grep -c 'verified\|no verified' "$s")"; done
        tail -2 "$work/l1.log" ;;
    collect)
        python benchmarks/suites/bench_shards.py merge "$work/l1" --out "$dir/l1" --name \
            "${NAME:-../shared/kernelbench/level1}" > "$dir/merge.log" 2>&1
        cp "$work/l1.log" "$dir/" ; cp "$work"/l1/shard*/bench.log "$dir/l1/" 2>/dev/null
        sort -n "$work/smi.log" 2>/dev/null | tail -1 | sed 's/^/card peak MiB while the bench ran: /' \
            > "$dir/card_peak.txt"
        for i in 0 1 2; do cp "$work/l1/shard$i/bench.log" "$dir/l1/shard$i.log" 2>/dev/null; done
        head -30 "$dir/l1/bench.md" ;;
    *) echo "unknown part $part" >&2; exit 2 ;;
    esac
done
