#!/bin/bash
# Session 72, device call 2: weight/bias runs + row-values default against call 1's build.
set -u
cd "$(dirname "$0")/.."
R=/tmp/res; mkdir -p $R /tmp/old /tmp/new
t0=$SECONDS
log() { echo "== $(date +%T) +$((SECONDS-t0))s $*" | tee -a $R/summary.txt; }
finish() { log done; tar czf $OUT/res.tgz -C /tmp res; cp $R/summary.txt $OUT/ 2>/dev/null; }
trap finish EXIT
tar -xJf .devrun/bin.tar.xz -C /tmp/old && tar -xJf .devrun/new.tar.xz -C /tmp/new || { log "untar failed"; exit 1; }
O=/tmp/old/bin N=/tmp/new/bin; ls -la $N >> $R/summary.txt
nvidia-smi > $R/nvidia-smi.txt 2>&1
log tests
timeout 60 scripts/gpu-check.sh --bin $N --out $R tests test_norm test_softmax; grep "^== \|test cases" $R/tests.log >> $R/summary.txt
log sanitizer
timeout 60 scripts/gpu-check.sh --bin $N --out $R sanitizer test_norm; grep "ERROR SUMMARY\|^== " $R/sanitizer.log >> $R/summary.txt
log ab
timeout 140 scripts/gpu-check.sh --out $R ab $O,ROOFTOP_ROW_VALUES=16 $N,ROOFTOP_ROW_VALUES=16 --quick --ops layernorm,rmsnorm --dtypes fp32,bf16 --seed 7
cat $R/ab/summary.txt >> $R/summary.txt
log rows
mkdir -p $R/rows
timeout 100 scripts/gpu-check.sh --bin $N --out $R/rows roofline --quick --ops softmax,layernorm,rmsnorm --dtypes fp32,bf16,fp16 --seed 11 > /dev/null
timeout 45 scripts/gpu-check.sh --out $R/rows references --ops softmax,layernorm,rmsnorm
python3 scripts/gpu_summary.py $R/rows > /dev/null 2>&1
log others
mkdir -p $R/others
timeout 110 scripts/gpu-check.sh --bin $N --out $R/others roofline --quick --ops dot,sum,relu,gelu,gelu_erf,silu,bias_gelu,dropout,embedding,chain_unfused,chain_fused --dtypes fp32,bf16 --seed 11 > /dev/null
timeout 40 scripts/gpu-check.sh --out $R/others references
python3 scripts/gpu_summary.py $R/others > /dev/null 2>&1
log summary
grep "^- \[\|^| " $R/rows/summary.md >> $R/summary.txt; grep "^| \|^- \[" $R/others/summary.md >> $R/summary.txt
grep -i "fusion\|chain" $R/others/roofline.log | tail -5 >> $R/summary.txt
cat $R/summary.txt
