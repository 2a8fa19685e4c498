#!/bin/bash
# Session 72, device call 1: tests, sanitizer on the row ops, row-values A/B, other ops, references.
set -u
cd "$(dirname "$0")/.."
R=/tmp/res; mkdir -p $R build/cuda
t0=$SECONDS
log() { echo "== $(date +%T) +$((SECONDS-t0))s $*" | tee -a $R/summary.txt; }
finish() { log done; tar czf $OUT/res.tgz -C /tmp res; cp $R/summary.txt $OUT/ 2>/dev/null; }
trap finish EXIT
tar -xJf .devrun/bin.tar.xz -C build/cuda || { log "untar failed"; exit 1; }
B=build/cuda/bin; ls -la $B >> $R/summary.txt
nvidia-smi > $R/nvidia-smi.txt 2>&1; head -12 $R/nvidia-smi.txt | tail -4 >> $R/summary.txt
log tests
timeout 150 scripts/gpu-check.sh --out $R tests; grep "^== " $R/tests.log >> $R/summary.txt
grep -B3 -A12 "ERROR\|FAILED\|fail" $R/tests.log | head -60 >> $R/summary.txt
log sanitizer
timeout 120 scripts/gpu-check.sh --out $R sanitizer test_norm test_softmax; grep "ERROR SUMMARY\|^== " $R/sanitizer.log >> $R/summary.txt
log ab
timeout 230 scripts/gpu-check.sh --out $R ab $B $B,ROOFTOP_ROW_VALUES=16 --quick --ops softmax,layernorm,rmsnorm --dtypes fp32,bf16 --seed 7
cat $R/ab/summary.txt >> $R/summary.txt
log references-rows
cp $R/ab/old1/report.json $R/report.json
timeout 60 scripts/gpu-check.sh --out $R references --ops softmax,layernorm,rmsnorm
mv $R/references.json $R/references-rows.json; mv $R/report.json $R/report-rows.json
log others
mkdir -p $R/others
timeout 110 scripts/gpu-check.sh --out $R/others roofline --quick --ops copy,triad,gemm,attention,transpose,spmv,stencil --dtypes fp32,bf16 --seed 7 > /dev/null
timeout 50 scripts/gpu-check.sh --out $R/others references --ops copy,triad,gemm,attention,transpose
python3 scripts/gpu_summary.py $R/others > /dev/null 2>&1
log summary
cp $R/report-rows.json $R/report.json; cp $R/references-rows.json $R/references.json
python3 scripts/gpu_summary.py $R > /dev/null 2>&1
tail -40 $R/summary.md >> $R/summary.txt; tail -30 $R/others/summary.md >> $R/summary.txt
cat $R/summary.txt
