source benchmarks/device_env.sh
mkdir -p $OUT/r
S='[{"params": {}}, {"params": {}, "maxnreg": 128}, {"params": {"SUB_M": 8}}, {"params": {"SUB_M": 8}, "maxnreg": 128}, {"params": {"SUB_M": 8}, "maxnreg": 96}, {"params": {"SUB_M": 16}, "maxnreg": 128}, {"params": {"SUB_M": 8, "BLOCK_M": 128}, "maxnreg": 168}, {"params": {"SUB_M": 8, "BLOCK_M": 128}, "maxnreg": 128}]'
for f in level1/54_ level1/59_ level2/48_; do
  echo "== $f" >> $OUT/r/nreg.txt
  timeout 150 python3 benchmarks/results/offline_variants_h200/stop40_scripts/nreg.py .carry/kernelbench/$f*.py "$S" >> $OUT/r/nreg.txt 2>&1
done
T='[{"params": {}}, {"params": {}, "maxnreg": 168}, {"params": {}, "maxnreg": 128}, {"params": {"BLOCK_M": 64}}, {"params": {"BLOCK_M": 64}, "maxnreg": 128}, {"params": {"BLOCK_M": 64}, "maxnreg": 96}]'
for f in level2/57_ level2/87_ level2/90_ level2/7_ level1/72_; do
  echo "== $f" >> $OUT/r/nreg.txt
  timeout 100 python3 benchmarks/results/offline_variants_h200/stop40_scripts/nreg.py .carry/kernelbench/$f*.py "$T" >> $OUT/r/nreg.txt 2>&1
done
grep -v Warning $OUT/r/nreg.txt | cut -c1-200
cd $OUT && tar czf all.tgz r && rm -rf r
