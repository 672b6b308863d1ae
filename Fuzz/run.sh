#!/usr/bin/env bash
# Runs the fuzz targets (Fuzz/Targets, libFuzzer with AddressSanitizer) against this checkout.
#   bash Fuzz/run.sh [--seconds N] [--seed S] [--no-etcd] [target ...]   every target (or those named) for N seconds each
# Each target starts from its committed corpus (Fuzz/Corpus/<target>: seeds, and the inputs of
# crashes found and fixed, kept as regressions) and a working corpus in .build/fuzz/<target>.
# A crash, a leak, a timeout (10 s per input) or an invariant violation stops the target, saves
# the input as .build/fuzz/<target>-crash-*, and fails the run. One line per target: executions,
# working corpus size. --seed fixes libFuzzer's random choices (the smoke run in CI uses one, so it
# explores what a run here explored; left out, each run explores anew). The etcd target is a binary
# of its own (strata-fuzz-etcd, which builds gRPC, NIO and BoringSSL: about 10 minutes more);
# --no-etcd leaves it out (the smoke run in CI).
set -euo pipefail
cd "$(dirname "$0")"
seconds=60
seed=()
targets=()
etcd=yes
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --seed) seed=(-seed="$2"); shift 2 ;;
    --no-etcd) etcd=no; shift ;;
    *) targets+=("$1"); shift ;;
  esac
done
if [ ${#targets[@]} -eq 0 ]; then
  targets=(key fields codable record entries tokens upgrade store files)
  [ "$etcd" = no ] || targets+=(etcd)
fi

# The binary that holds a target.
binary() { if [ "$1" = etcd ]; then echo strata-fuzz-etcd; else echo strata-fuzz; fi; }
for product in $(for target in "${targets[@]}"; do binary "$target"; done | sort -u); do
  swift build --product "$product" --sanitize=fuzzer --sanitize=address -Xswiftc -sanitize=fuzzer 2>&1 \
    | grep -v "Cannot export local symbol" | tail -3
done
mkdir -p .build/fuzz

# The Swift runtime's crash backtracer reads memory in ways ASan reports; libFuzzer reports crashes.
export SWIFT_BACKTRACE=enable=no
# Deep allocation stacks: a suppression names a frame (a global's once_slow) that can lie past the
# default 30 frames (the tokens target's seeded store was reported at frame 29 without it).
export ASAN_OPTIONS=detect_leaks=1:malloc_context_size=100
export LSAN_OPTIONS="suppressions=$PWD/../Tests/Sanitizers/leaks.supp:print_suppressions=0"

failed=()
for target in "${targets[@]}"; do
  work=.build/fuzz/$target
  mkdir -p "$work"
  log=.build/fuzz/$target.log
  if STRATA_FUZZ_TARGET=$target ".build/debug/$(binary "$target")" -max_total_time="$seconds" "${seed[@]}" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
       -artifact_prefix=".build/fuzz/$target-" "$work" "Corpus/$target" >"$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    echo "fuzz $target: ${runs} executions in ${seconds} s, corpus $(ls "$work" | wc -l) + $(ls "Corpus/$target" | wc -l) committed: no crash"
  else
    echo "fuzz $target: FAILED (log: Fuzz/$log)"
    grep -E "invariant violated|ERROR: |Fatal error|runtime failure|SUMMARY|Test unit written" "$log" | head -8 | sed 's/^/  /'
    failed+=("$target")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]}"
  exit 1
fi
