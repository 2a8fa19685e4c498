#!/bin/bash
# Session 72, device call 3: compute-sanitizer over the test binaries not yet checked on a GPU.
set -u
cd "$(dirname "$0")/.."
R=/tmp/res; mkdir -p $R /tmp/old /tmp/new
t0=$SECONDS
log() { echo "== $(date +%T) +$((SECONDS-t0))s $*" | tee -a $R/summary.txt; }
finish() { log done; tar czf $OUT/res.tgz -C /tmp res; cp $R/summary.txt $OUT/ 2>/dev/null; }
trap finish EXIT
tar -xJf .devrun/bin.tar.xz -C /tmp/old && tar -xJf .devrun/new.tar.xz -C /tmp/new || { log "untar failed"; exit 1; }
cp /tmp/new/bin/* /tmp/old/bin/; B=/tmp/old/bin
check() {  # tool seconds binary...
  local tool=$1 limit=$2; shift 2
  for t in "$@"; do
    local s=$SECONDS rc=0
    [ $((SECONDS - t0)) -gt 225 ] && { echo "$tool $t: skipped (time)" | tee -a $R/summary.txt; continue; }
    timeout $limit compute-sanitizer --tool $tool --error-exitcode 99 $B/$t > $R/$tool-$t.log 2>&1 || rc=$?
    echo "$tool $t: exit $rc in $((SECONDS - s)) s; $(grep -h 'ERROR SUMMARY\|RACECHECK SUMMARY\|test cases:' $R/$tool-$t.log | tr -s ' ' | tr '\n' ' ')" | tee -a $R/summary.txt
  done
}
log memcheck
check memcheck 22 test_types test_reduce test_stream test_transpose test_stencil test_spmv test_activation test_gemm test_dropout test_embedding
log racecheck
check racecheck 20 test_norm test_softmax test_reduce
