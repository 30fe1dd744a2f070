source benchmarks/device_env.sh
mkdir -p $OUT/r
L1=.carry/kernelbench/level1/54_conv_standard_3D__square_input__square_kernel.py
L2=.carry/kernelbench/level2/57_Conv2d_ReLU_HardSwish.py
i=0
for spec in "$L1|{\"SUB_M\": 0}" "$L1|{\"SUB_M\": 8}" "$L1|{\"SUB_M\": 8, \"BLOCK_M\": 128}" "$L2|{\"SUB_M\": 0, \"BLOCK_M\": 64}" "$L2|{}"; do
  f=${spec%%|*}; p=${spec#*|}; i=$((i+1))
  echo "== $i $f $p" >> $OUT/r/ncu.txt
  timeout 150 ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats --section Occupancy --section InstructionStats --section ComputeWorkloadAnalysis --kernel-name regex:conv_fma_kernel --launch-skip 1 --launch-count 1 -o $OUT/r/n$i python3 benchmarks/results/offline_variants_h200/stop40_scripts/one.py $f "$p" > $OUT/r/n$i.log 2>&1
  ncu --import $OUT/r/n$i.ncu-rep >> $OUT/r/ncu.txt 2>&1
done
grep -E "^== |Duration|Registers Per|Achieved Occupancy|L1/TEX Cache Throughput|Executed Instructions  |Issue Slots Busy|Warp Cycles Per Issued|Compute \(SM\) Th|Shared Memory Configuration Size|Dynamic Shared" $OUT/r/ncu.txt
tail -2 $OUT/r/n1.log
rm -f $OUT/r/*.ncu-rep
cd $OUT && tar czf all.tgz r && rm -rf r
