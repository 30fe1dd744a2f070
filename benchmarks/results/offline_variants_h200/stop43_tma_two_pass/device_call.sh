# On a lent H200, from the repository root with .whl and .carry/kernelbench carried:
# (The patch applies to 70b2b59: check out that commit first.)
#     bash benchmarks/results/offline_variants_h200/stop43_tma_two_pass/device_call.sh
# Applies two_pass.patch to the machine's copy of the tree, times the TMA GEMM's tiles and
# stages on 69 and 57 (tma_tiles_gpu.py), sets TMA_STAGES to the stage count with the least
# geomean time at the default tile (4 unless another is 3% faster), and judges seven of the
# convolutions the TMA GEMM takes. Results in $OUT/all.tgz.
P=benchmarks/results/offline_variants_h200/stop43_tma_two_pass/two_pass.patch
git apply "$P" 2>/dev/null || patch -p1 < "$P" || exit 1
source benchmarks/device_env.sh >/dev/null 2>&1
mkdir -p $OUT/r
export OMP_NUM_THREADS=1
timeout 150 python3 benchmarks/tma_tiles_gpu.py .carry/kernelbench/level1 --only 69_ 57_ --tiles '[[64,128,32,4],[128,128,32,8]]' --stages 2 3 4 --out $OUT/r/tiles > $OUT/r/tiles.log 2>&1
# the stage count with the least geomean time at the default tile (4: unchanged)
ST=$(python3 -c "
import json, math, sys
rows = json.load(open(sys.argv[1]))['rows']
best = {}
for st in (2, 3, 4):
    ts = [p['ms'] for r in rows for p in r['points'] if p['stages'] == st and p['ok']
          and p['params']['BLOCK_M'] == 64 and p['params']['num_warps'] == 4]
    if len(ts) == len(rows):
        best[st] = math.exp(sum(map(math.log, ts)) / len(ts))
st = min(best, key=best.get) if 4 in best else 4
print(st if 4 in best and best[st] < 0.97 * best[4] else 4)
" $OUT/r/tiles/tiles.json)
ST=${ST:-4}
echo "stages chosen: $ST" | tee $OUT/r/chosen.txt
sed -i "s/^TMA_STAGES = 4$/TMA_STAGES = $ST/" src/kernelevolve/llm/offline/conv_source.py
grep -n "^TMA_STAGES" src/kernelevolve/llm/offline/conv_source.py >> $OUT/r/chosen.txt
timeout 220 python3 benchmarks/bench_shards.py run .carry/kernelbench/level1 --target cuda --out $OUT/r/pj --first 69_ 57_ 62_ 80_ 65_ 63_ 77_ --stop 0 --procs 3 --rounds 2 --deadline-s 150 --env KERNELEVOLVE_SEARCH__WALL_S=40 > $OUT/r/judge.log 2>&1
cd $OUT && tar czf all.tgz r && rm -rf r
