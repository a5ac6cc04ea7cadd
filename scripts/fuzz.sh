#!/usr/bin/env bash
# Runs the libFuzzer targets of a sanitizer build for a bounded time each:
#   zero-fuzz-mlir        bytes -> parser, verifier, train-autodiff,
#                         zero-pipeline + lowering at stages 0-3
#   zero-fuzz-tensorfile  bytes -> safetensors, npy and npz readers
# Seeds: every .mlir under test/ and examples/, and the io test fixtures.
# Both run at once, each on a core, for FUZZ_SECONDS each.
# The corpus grows under $build/fuzz/corpus-* across runs; a crash, a sanitizer
# report, a timeout or an out-of-memory leaves its input in
# $build/fuzz/artifacts and fails the run. Writes a JUnit file (one test case
# per fuzzer) for scripts/summarize_tests.py.
#
#   scripts/fuzz.sh [BUILD_DIR]    (default build-sanitize; FUZZ_SECONDS=60)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-${ZERO_SANITIZE_BUILD_DIR:-$root/build-sanitize}}"
seconds="${FUZZ_SECONDS:-60}"
work="$build/fuzz"
rm -rf "$work/artifacts"
mkdir -p "$work/artifacts"
results="$work/fuzz-results.xml"

# The same runtime options as the lit suite, except that reports go to the
# fuzzer's own stderr (it saves the input that caused them).
export ASAN_OPTIONS="allow_user_poisoning=0:detect_leaks=1:check_initialization_order=1"
export UBSAN_OPTIONS="print_stacktrace=1"
export LSAN_OPTIONS="suppressions=$root/test/sanitizers/lsan.supp:print_suppressions=0"
if [ -x /usr/lib/llvm-19/bin/llvm-symbolizer ]; then
  export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-19/bin/llvm-symbolizer
fi

seed_mlir() {
  local corpus="$1"
  find "$root/test" "$root/examples" -name '*.mlir' -size -64k | while read -r f; do
    cp "$f" "$corpus/seed-$(echo "$f" | md5sum | cut -c1-12).mlir"
  done
}
seed_tensorfile() {
  local corpus="$1"
  local fixtures="$build/test/unit/io/fixtures"
  if [ -d "$fixtures" ]; then
    find "$fixtures" -type f \( -name '*.npy' -o -name '*.npz' -o -name '*.safetensors' \) \
      -size -64k -exec cp {} "$corpus/" \;
  fi
  cp "$root"/test/fuzz/inputs/tensorfile/* "$corpus/" 2>/dev/null || true
}

# Each fuzzer runs on its own core, both at once (the time per fuzzer is the
# same as one after the other, the stage half as long); a fuzzer's summary
# and its JUnit case go to files that are read once both have ended.
run_fuzzer() {
  local name="$1" seeder="$2"
  local binary="$build/bin/$name" corpus="$work/corpus-$name"
  local log="$work/$name.log" case_file="$work/$name.case" summary="$work/$name.summary"
  if [ ! -x "$binary" ]; then
    echo "fuzz: $binary is missing (configure with -DZERO_FUZZERS=ON)" >"$summary"
    echo "<testcase classname=\"fuzz\" name=\"$name\"><failure message=\"missing\"/></testcase>" >"$case_file"
    return 1
  fi
  mkdir -p "$corpus"
  "$seeder" "$corpus"
  local start=$SECONDS
  "$binary" "$corpus" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 \
    -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/$name-" >"$log" 2>&1
  local status=$?
  local runs
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo 0)
  local size
  size=$(find "$corpus" -type f | wc -l)
  {
    echo "fuzz: $name: $runs executions in $((SECONDS - start)) s, corpus $size inputs, exit $status"
    if [ $status -ne 0 ]; then
      echo "fuzz: $name FAILED; the end of its log ($log):"
      tail -n 60 "$log"
      ls "$work/artifacts" | grep "^$name-" | sed 's/^/fuzz:   artifact /'
    fi
  } >"$summary"
  if [ $status -ne 0 ]; then
    echo "<testcase classname=\"fuzz\" name=\"$name\"><failure message=\"exit $status, see $log\"/></testcase>" >"$case_file"
    return 1
  fi
  echo "<testcase classname=\"fuzz\" name=\"$name\"/>" >"$case_file"
}

fuzzers=(zero-fuzz-mlir:seed_mlir zero-fuzz-tensorfile:seed_tensorfile)
pids=()
for fuzzer in "${fuzzers[@]}"; do
  rm -f "$work/${fuzzer%%:*}".{case,summary}
  run_fuzzer "${fuzzer%%:*}" "${fuzzer#*:}" &
  pids+=($!)
done
failures=0
for pid in "${pids[@]}"; do
  wait "$pid" || failures=$((failures + 1))
done
cases=()
for fuzzer in "${fuzzers[@]}"; do
  name="${fuzzer%%:*}"
  cat "$work/$name.summary" 2>/dev/null || echo "fuzz: $name left no summary"
  if [ -f "$work/$name.case" ]; then
    cases+=("$(cat "$work/$name.case")")
  else
    cases+=("<testcase classname=\"fuzz\" name=\"$name\"><failure message=\"no result\"/></testcase>")
  fi
done

{
  echo '<?xml version="1.0" encoding="UTF-8"?>'
  echo "<testsuites><testsuite name=\"fuzz\" tests=\"${#cases[@]}\" failures=\"$failures\">"
  printf '%s\n' "${cases[@]}"
  echo "</testsuite></testsuites>"
} >"$results"
[ $failures -eq 0 ]
