#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# On a GPU machine, from a CUDA build made elsewhere (ROOFTOP_PRESET=cuda scripts/run.sh build,
# then build/cuda/bin copied over): the tests, compute-sanitizer, the roofline harness and
# PyTorch's timings of the same shapes, and a summary of the GPU targets.
#
#   scripts/gpu-check.sh [--bin DIR] [--out DIR] STEP [args...]
#
#   tests [binaries...]        every test binary, pass/fail -> tests.log (each stopped after
#                              GPU_CHECK_TEST_TIMEOUT seconds, default 300: FAIL); those named
#                              only -> tests-<names>.log, recorded apart from the whole step's
#   sanitizer [binaries...]    the same under compute-sanitizer -> sanitizer.log (memcheck;
#                              SANITIZER_TOOL=racecheck: shared-memory races -> sanitizer-racecheck.log)
#   roofline [rooftop args...] the harness -> report.json, report.csv, roofline.svg
#   references [--ops a,b]     PyTorch on the report's shapes -> references.json (on the GPU: it
#                              fails where PyTorch sees none, rather than time the CPU)
#   summary                    ceilings, rooftop beside PyTorch, targets -> summary.md
#   all                        tests, roofline, references, sanitizer, summary (tens of minutes:
#                              the sanitizer is slow, so it comes after the measurements)
#   profile REGEX [rooftop args]  Nsight Compute on two launches of the kernels whose mangled
#                              names match REGEX (e.g. SoftmaxRegisterRows) in `rooftop --quick
#                              ARGS`, the GPU's clocks left as they are -> profile.txt
#   ab OLD NEW [rooftop args]  the harness from two binary folders (two builds to compare) run
#                              old, new, new, old with the same args -> ab/, and each result's
#                              best time per build and old / new time -> ab/summary.txt; a side
#                              may add environment settings after commas, to compare two
#                              choices of one build (e.g. build/cuda/bin,ROOFTOP_ROW_VALUES=16)
#
# --bin: the binaries (default build/cuda/bin). --out: the results (default
# docs/results/<gpu-name>, e.g. docs/results/nvidia-h100-80gb-hbm3). Relative paths are taken
# from the repository's root. Each step records its
# outcome in <out>/status.txt, which the summary shows; the exit status is 1 where a step of
# this call failed (summary: a target not met or not measured). Steps are separate so each fits a
# time-limited session; run them in this order. PYTHON names the Python with PyTorch (default
# python3). Nothing here changes the GPU's settings.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/cuda/bin
out=
python="${PYTHON:-python3}"
while [ $# -gt 0 ]; do
  case "$1" in
    --bin|--out)
      [ $# -ge 2 ] || { echo "gpu-check: $1 needs a folder" >&2; exit 2; }
      if [ "$1" = --bin ]; then bin=$2; else out=$2; fi
      shift 2 ;;
    *) break ;;
  esac
done
step="${1:-}"
[ $# -gt 0 ] && shift
case "$step" in
  tests|sanitizer|roofline|references|summary|all|profile|ab) ;;
  *) sed -n '3,34p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
if [ -z "$out" ]; then
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 || true)
  [ -n "$gpu" ] || { echo "gpu-check: nvidia-smi finds no GPU; pass --out DIR to run anyway" >&2; exit 1; }
  out="docs/results/$(echo "$gpu" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9]\{1,\}/-/g; s/^-//; s/-$//')"
fi
mkdir -p "$out"
[ -f "$out/nvidia-smi.txt" ] || nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || true

# status KEY TEXT: replaces KEY's line in status.txt (a TEXT of FAIL... fails this call).
failed_steps=0
status() {
  case "$2" in FAIL*) failed_steps=$((failed_steps + 1)) ;; esac
  touch "$out/status.txt"
  { awk -v key="$1: " 'index($0, key) != 1' "$out/status.txt"; echo "$1: $2"; } > "$out/status.txt.new"
  mv "$out/status.txt.new" "$out/status.txt"
  echo "[gpu-check] $1: $2" >&2
}

test_binaries() {
  if [ $# -gt 0 ]; then for t in "$@"; do echo "$bin/$(basename "$t")"; done; return; fi
  ls "$bin"/test_* 2>/dev/null || true
}

# run_step_tests NAME [wrapper...] -- [binaries...]: run_tests for the step NAME, into NAME.log.
# Binaries named (a rerun of some) go under the key "NAME (their names)" into
# NAME-<names>.log, so that they do not replace the record of the whole step's run.
run_step_tests() {
  local name=$1 args=("${@:2}") names=() t
  local i=0
  while [ "${args[$i]}" != "--" ]; do i=$((i + 1)); done
  for t in "${args[@]:$((i + 1))}"; do names+=("$(basename "$t")"); done
  if [ ${#names[@]} -eq 0 ]; then
    run_tests "$name" "$out/$name.log" "${args[@]}"
  else
    local joined="${names[*]}"
    run_tests "$name ($joined)" "$out/$name-${joined// /-}.log" "${args[@]}"
  fi
}

# run_tests NAME LOG [wrapper...] -- [binaries...]: each binary under the wrapper; one status line.
run_tests() {
  local name=$1 log=$2 wrapper=() failed=() count=0
  shift 2
  while [ "$1" != "--" ]; do wrapper+=("$1"); shift; done
  shift
  : > "$log"
  local binaries=()
  mapfile -t binaries < <(test_binaries "$@")
  if [ ${#binaries[@]} -eq 0 ]; then
    status "$name" "FAIL: no test binaries in $bin"
    return
  fi
  for t in "${binaries[@]}"; do
    count=$((count + 1))
    echo "[gpu-check] $name: $(basename "$t")" >&2
    local start=$SECONDS rc=0
    # A binary that hangs (or a sanitizer run too slow for the slot) fails alone, not the step.
    if [ -x "$t" ]; then
      timeout "${GPU_CHECK_TEST_TIMEOUT:-300}" "${wrapper[@]}" "$t" >> "$log" 2>&1 || rc=$?
    else
      echo "no such binary: $t" >> "$log"
      rc=127
    fi
    echo "== $(basename "$t"): exit $rc in $((SECONDS - start)) s" >> "$log"
    if [ $rc -eq 124 ]; then
      failed+=("$(basename "$t") (stopped after ${GPU_CHECK_TEST_TIMEOUT:-300} s)")
    elif [ $rc -ne 0 ]; then
      failed+=("$(basename "$t") (exit $rc)")
    fi
  done
  if [ ${#failed[@]} -eq 0 ]; then
    status "$name" "PASS, $count binaries ($log)"
  else
    status "$name" "FAIL: ${failed[*]} of $count ($log)"
  fi
}

do_step() {
  case "$1" in
    tests) shift; run_step_tests tests -- "$@" ;;
    sanitizer)
      shift
      command -v compute-sanitizer >/dev/null || { status sanitizer "FAIL: compute-sanitizer not found"; return; }
      local tool="${SANITIZER_TOOL:-memcheck}" name=sanitizer
      [ "$tool" = memcheck ] || name="sanitizer-$tool"
      run_step_tests "$name" compute-sanitizer --tool "$tool" --error-exitcode 99 -- "$@" ;;
    roofline)
      shift
      local rc=0
      "$bin/rooftop" --out "$out" "$@" 2>&1 | tee "$out/roofline.log" || rc=$?
      [ $rc -eq 0 ] && status roofline "PASS ($out/report.json)" || status roofline "FAIL: rooftop exit $rc ($out/roofline.log)" ;;
    references)
      shift
      local rc=0
      "$python" scripts/gpu_references.py --device cuda "$out/report.json" "$out/references.json" "$@" 2>&1 | tee "$out/references.log" || rc=$?
      [ $rc -eq 0 ] && status references "PASS ($out/references.json)" || status references "FAIL: exit $rc ($out/references.log)" ;;
    summary) "$python" scripts/gpu_summary.py "$out" || failed_steps=$((failed_steps + 1)) ;;
    profile)
      shift
      [ $# -ge 1 ] || { echo "gpu-check: profile REGEX [rooftop args]" >&2; exit 2; }
      command -v ncu >/dev/null || { status profile "FAIL: ncu not found"; return; }
      local regex=$1 rc=0
      shift
      # --clock-control none: ncu's default locks the clocks at base while it profiles.
      ncu --clock-control none --kernel-name-base mangled --kernel-name "regex:$regex" --launch-skip 2 --launch-count 2 \
        --section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats --section WarpStateStats \
        "$bin/rooftop" --quick --out "$out/profile" "$@" > "$out/profile.txt" 2>&1 || rc=$?
      [ $rc -eq 0 ] && status profile "PASS ($out/profile.txt)" || status profile "FAIL: ncu exit $rc ($out/profile.txt)" ;;
    ab)
      shift
      [ $# -ge 2 ] || { echo "gpu-check: ab OLD_BIN_DIR NEW_BIN_DIR [rooftop args]" >&2; exit 2; }
      local old=$1 new=$2 rc=0 run side dir settings s
      shift 2
      # Settings after a folder are NAME=VALUE (env would run any other word as the program).
      for side in "$old" "$new"; do
        [ "${side%%,*}" = "$side" ] && continue
        IFS=, read -ra settings <<< "${side#*,}"
        for s in "${settings[@]}"; do
          case "$s" in *=*) ;; *) echo "gpu-check: ab: '$s' is not a NAME=VALUE setting" >&2; exit 2 ;; esac
        done
      done
      mkdir -p "$out/ab"
      # Alternated, so that a drift of the machine (clocks, temperature) falls on both builds.
      for run in old1 new1 new2 old2; do
        side=$old
        [ "${run%?}" = new ] && side=$new
        dir=${side%%,*} settings=()
        [ "$dir" = "$side" ] || IFS=, read -ra settings <<< "${side#*,}"
        rm -rf "${out:?}/ab/$run"  # a run that dies before writing must not leave an earlier call's report
        echo "[gpu-check] ab: $run (${settings[*]:-} $dir/rooftop)" >&2
        env "${settings[@]}" "$dir/rooftop" --out "$out/ab/$run" "$@" > "$out/ab/$run.log" 2>&1 || rc=$?
      done
      "$python" - "$out/ab" > "$out/ab/summary.txt" <<'PY' || rc=$?
import csv, os, sys
d = sys.argv[1]
best = {}  # (op, dtype, shape) -> build -> (seconds, GB/s, GFLOP/s)
for run in ("old1", "new1", "new2", "old2"):
    path = os.path.join(d, run, "report.csv")
    if not os.path.exists(path):
        print(f"{run}: no report.csv (see {run}.log)")
        continue
    for r in csv.DictReader(open(path)):
        key, build = (r["op"], r["dtype"], r["shape"]), run[:-1]
        t = (float(r["seconds_min"]), float(r["gbs"]), float(r["gflops"]))
        if t[0] < best.setdefault(key, {}).get(build, (float("inf"),))[0]:
            best[key][build] = t
print(f"{'op':16s} {'dtype':5s} {'shape':22s} {'old us':>10s} {'new us':>10s} {'GB/s old':>9s} {'new':>9s} {'GFLOP/s old':>12s} {'new':>12s} {'old/new':>8s}")
for (op, dt, shape), b in best.items():
    if "old" in b and "new" in b:
        o, n = b["old"], b["new"]
        print(f"{op:16s} {dt:5s} {shape:22s} {o[0] * 1e6:10.1f} {n[0] * 1e6:10.1f} {o[1]:9.1f} {n[1]:9.1f} {o[2]:12.1f} {n[2]:12.1f} {o[0] / n[0]:7.2f}x")
PY
      cat "$out/ab/summary.txt"
      [ $rc -eq 0 ] && status ab "PASS ($out/ab/summary.txt)" || status ab "FAIL: exit $rc ($out/ab/*.log)" ;;
  esac
}

if [ "$step" = all ]; then
  for s in tests roofline references sanitizer summary; do do_step "$s"; done
else
  do_step "$step" "$@"
fi
echo "[gpu-check] results in $out" >&2
[ "$failed_steps" -eq 0 ]
