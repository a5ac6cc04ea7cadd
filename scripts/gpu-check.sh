#!/usr/bin/env bash
# The one command to run on a GPU machine that has none of our build
# dependencies (docs/building.md, "Running on a GPU machine without our
# build dependencies"):
#
#   scripts/gpu-check.sh [dist/zero-*.tar.xz | BUNDLE_DIR]   (default: the
#                                                            newest dist/ archive)
#   scripts/gpu-check.sh --build-tree build                   (a build tree)
#
# Unpacks the bundle, prints the GPU, the driver and the CUDA libraries
# bin/zero-env found, then runs, in order, each part timed and bounded by its
# own time limit, and reported even when an earlier part failed:
#   1. kernel-tests   the CUDA kernels against the CPU kernels (ZeroCudaKernelTests)
#   2. sim-tests      stream/event semantics (ZeroRuntimeSimTests; needs no
#                     GPU, so it also runs in a dry run)
#   3. e2e            --backend cuda against the CPU backend per step,
#                     --cuda-graph against eager, host-staged on N = 2,
#                     memory and traffic against the report (check_cuda_backend.py)
#   4. bench-adamw    zero-bench-adamw (fused AdamW GB/s)
#   5. gpu-gpt2       bench/gpu_gpt2.sh (GPT-2 124M/355M step time, MFU, memory)
# Without a GPU (or without CUDA's libraries) the four GPU parts are reported
# as skipped with the reason: the dry run CI makes (test/tools/gpu-check-dry.test).
#
# Writes to $OUT (default ./gpu-check-out), at most 8 files: summary.md (the
# parts and the benchmark tables) and one log per part. Exits 1 when a part
# failed, 0 otherwise (skips included). The parts' limits add up to 23.5
# minutes, so the whole check ends inside 25 on one H100.
set -uo pipefail

out="${OUT:-$PWD/gpu-check-out}"
mkdir -p "$out"
summary="$out/summary.md"
# Work files stay out of $OUT, which holds at most 8 files.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
started=$SECONDS

# --- The bundle (or a build tree) -------------------------------------------
where="${1:-}"
root=""
env_cmd=()
if [ "$where" = "--build-tree" ]; then
  build="$(cd "${2:?--build-tree needs a directory}" && pwd)"
  src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  tools="$build/bin"
  tests="$build/test/unit"
  kernel_tests="$tests/cuda/ZeroCudaKernelTests"
  sim_tests="$tests/runtime/ZeroRuntimeSimTests"
  share="$src"
  bench_root="$build"
  origin="build tree $build"
else
  if [ -z "$where" ]; then
    here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
    # Beside the script: dist/ of a checkout, or a bundle's own bin/.
    if [ -x "$here/zero-env" ]; then
      where="$(cd "$here/.." && pwd)"
    else
      where=$(ls -t "$here"/../dist/zero-*-linux-x86_64.tar.xz "$PWD"/dist/zero-*-linux-x86_64.tar.xz 2>/dev/null | head -1)
    fi
  fi
  if [ -z "$where" ]; then
    echo "gpu-check: no bundle given and none in dist/ (make one with scripts/bundle.sh)" >&2
    exit 2
  fi
  if [ -f "$where" ]; then
    unpack="${ZERO_UNPACK_DIR:-/tmp/zero-gpu-check}"
    rm -rf "$unpack" && mkdir -p "$unpack"
    if ! tar -C "$unpack" -xJf "$where"; then
      echo "gpu-check: cannot unpack $where" >&2
      exit 2
    fi
    root=$(ls -d "$unpack"/zero-*/ | head -1)
    root="${root%/}"
  else
    root="$(cd "$where" && pwd)"
  fi
  if [ ! -x "$root/bin/zero-env" ]; then
    echo "gpu-check: $root is not a release bundle (no bin/zero-env)" >&2
    exit 2
  fi
  env_cmd=("$root/bin/zero-env")
  tools="$root/bin"
  kernel_tests="$root/libexec/zero/ZeroCudaKernelTests"
  sim_tests="$root/libexec/zero/ZeroRuntimeSimTests"
  share="$root/share/zero"
  bench_root="$root"
  origin="bundle $(cat "$root/VERSION" 2>/dev/null) at $root"
fi

# --- What this machine has ---------------------------------------------------
{
  echo "# GPU check"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- from: $origin"
  echo "- host: $(uname -srm), $(nproc) cores"
} >"$summary"
gpus=""
if command -v nvidia-smi >/dev/null; then
  gpus=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null)
fi
if [ -n "$gpus" ]; then
  echo "- GPU: $gpus" | sed '2,$s/^/       /' >>"$summary"
else
  echo "- GPU: none (nvidia-smi $(command -v nvidia-smi >/dev/null && echo 'lists none' || echo 'not found'))" >>"$summary"
fi
if [ ${#env_cmd[@]} -gt 0 ]; then
  found=$("${env_cmd[@]}" --print)
  sed 's/^zero-env: /- /' <<<"$found" >>"$summary"
  cuda_missing=$(grep -c 'not found$' <<<"$found")
else
  cuda_missing=0
fi
echo >>"$summary"
cat "$summary"

skip_reason=""
if [ -z "$gpus" ]; then
  skip_reason="no GPU on this machine"
elif [ "$cuda_missing" -gt 0 ]; then
  skip_reason="CUDA 13 libraries missing (see above)"
fi

# --- The parts ---------------------------------------------------------------
failures=0
declare -a rows
# part NAME LIMIT_SECONDS COMMAND...: runs COMMAND under `timeout`, its output
# in $out/NAME.log, and records status and seconds; `cpu_part` runs one that
# needs no GPU (the simulated streams), also in a dry run.
part() { run_part gpu "$@"; }
cpu_part() { run_part cpu "$@"; }
run_part() {
  local needs="$1" name="$2" limit="$3"
  shift 3
  local log="$out/$name.log"
  if [ "$needs" = gpu ] && [ -n "$skip_reason" ]; then
    echo "skipped: $skip_reason" >"$log"
    rows+=("| $name | skipped: $skip_reason | - |")
    echo "gpu-check: $name: skipped ($skip_reason)"
    return
  fi
  local start=$SECONDS status
  timeout --kill-after=30 "$limit" "${env_cmd[@]}" "$@" >"$log" 2>&1
  status=$?
  local seconds=$((SECONDS - start)) result
  case $status in
    0) result="passed" ;;
    124 | 137) result="FAILED: over its ${limit} s limit"; failures=$((failures + 1)) ;;
    *) result="FAILED: exit $status"; failures=$((failures + 1)) ;;
  esac
  rows+=("| $name | $result | $seconds |")
  echo "gpu-check: $name: $result in $seconds s (log: $log)"
  [ $status -eq 0 ] || tail -n 30 "$log"
}

part kernel-tests 240 "$kernel_tests" --gtest_brief=1
cpu_part sim-tests 120 env ZERO_SRC_ROOT="$share" "$sim_tests" --gtest_brief=1
part e2e 540 env ZERO_RUN="$tools/zero-run" python3 "$share/test/e2e/check_cuda_backend.py" \
  --src-root "$share" --workdir "$scratch/e2e"
part bench-adamw 90 "$tools/zero-bench-adamw"
# gpu_gpt2.sh keeps one log per run; they are folded into one file below.
part gpu-gpt2 420 env OUT="$scratch/gpt2-runs" bash "$share/bench/gpu_gpt2.sh" "$bench_root"
if [ -d "$scratch/gpt2-runs" ]; then
  for log in "$scratch"/gpt2-runs/*.log; do
    echo "=== $(basename "$log")"
    cat "$log"
  done >"$out/gpu-gpt2-runs.log" 2>/dev/null
fi

{
  echo "## Parts"
  echo
  echo "| part | result | seconds |"
  echo "|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Total: $((SECONDS - started)) s."
  for name in bench-adamw gpu-gpt2; do
    if grep -q '^|' "$out/$name.log" 2>/dev/null; then
      echo
      echo "## $name"
      echo
      grep -E '^(\||#)' "$out/$name.log"
    fi
  done
} >>"$summary"
echo "gpu-check: summary in $summary ($failures failed)"
[ $failures -eq 0 ]
