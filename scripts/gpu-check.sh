#!/usr/bin/env bash
# The one command to run on a GPU machine that has none of our build
# dependencies (docs/building.md, "Running on a GPU machine without our
# build dependencies"):
#
#   scripts/gpu-check.sh [dist/zero-*.tar.xz | BUNDLE_DIR]   (default: the
#                                                            newest dist/ archive)
#   scripts/gpu-check.sh --build-tree build                   (a build tree)
#   scripts/gpu-check.sh --budget                             (the budget, nothing run)
#
# Finishes inside one deadline, 540 s by default ($ZERO_GPU_CHECK_SECONDS),
# counted from the script's start, so unpacking included: GPU machines are
# lent for minutes, and a check that overruns its lease returns nothing. It
# unpacks the bundle, prints the GPU, the driver and the CUDA libraries
# bin/zero-env found, then runs the parts in order of value, each timed,
# bounded by its own limit (`timeout --kill-after`) and reported even when an
# earlier part failed:
#
#   part             limit  min  what
#   kernel-tests        45   15  every CUDA kernel against its CPU kernel
#                                (ZeroCudaKernelTests)
#   kernel-memcheck     40   20  the same under compute-sanitizer's memcheck:
#                                an access outside an allocation fails it,
#                                even one whose result was right
#   e2e-n1              40   20  zero-run --backend cuda against the CPU backend
#                                per step, stages 0-3, N = 1, on GPT-2 tiny and
#                                mini; memory and traffic against the report
#   e2e-host-staged     40   20  the same on --backend cuda-host-staged, N = 2
#                                sharing the GPU; stages 0-3 bitwise equal
#   e2e-graph           35   15  --cuda-graph against eager, bitwise
#   bench-adamw         20   10  zero-bench-adamw (fused AdamW GB/s)
#   gpu-gpt2           105   45  bench/gpu_gpt2.sh, short: GPT-2 124M bf16 stage
#                                0 eager and --cuda-graph, stage 3 (step time,
#                                MFU, state and arena against the plan), mini's
#                                host overhead with and without --cuda-graph
#   gpu-profile         40   20  gpt2_train --profile --profile-table: GPT-2
#                                124M bf16, stage 0, 4 steps, every instruction
#                                timed by CUDA events beside the machine model's
#                                prediction (the GPU's preset); the trace and
#                                the table into $OUT, the table's head into
#                                the summary; attention fused on cuDNN where
#                                it loads (--attention auto: the log's
#                                `attention:` line says)
#   e2e-mesh            40   20  --backend cuda-host-staged, N = 4 sharing the
#                                GPU on a 2x2 mesh, stage 3: hybrid, and full
#                                2-D with hpZ, int8 qwZ and int4 qgZ, against
#                                the CPU backend; per-axis traffic against the
#                                report (GPT-2 tiny)
#   e2e-offload         35   15  --offload optimizer[+params] on tiny and mini
#   sim-tests           30   10  stream/event semantics (ZeroRuntimeSimTests; no
#                                GPU needed, so it also runs in a dry run; CI
#                                runs it anyway, hence last)
#
# 470 s of limits, plus 5 s of kill grace for each of the 11 parts, 10 s for
# unpacking and 5 s kept for the summary: 540 s of the 540 s deadline
# (--budget prints this sum and exits 2 above 540 s, as every run does).
# Each part gets min(its limit, the time left less its kill grace and the
# summary's reserve); a part that would get less than its minimum is not
# started but reported "skipped: out of time" with the seconds left, and a
# later part with a smaller minimum may still run. Without a GPU (or without
# CUDA's libraries) the ten GPU parts are reported skipped with the reason:
# the dry run CI makes (test/tools/gpu-check-dry.test), where sim-tests runs.
#
# ZERO_GPU_CHECK_PARTS="NAME ..." runs only those parts (a rerun).
#
# Writes to $OUT (default ./gpu-check-out) at most 7 files: summary.md (the
# parts and the benchmark tables, rewritten after every part, so that it
# holds what finished even if the check is killed from outside), one log per
# kind of part (the e2e parts sharing e2e.log, the kernel parts
# kernel-tests.log, the benchmarks and the profile bench.log), and
# gpu-profile's gpt2-124m-profile.md and gpt2-124m-trace.json: 7 files, one
# left for the caller's console log. Exits 1 when a part failed or was
# cut off, 2 when it could not start, 0 otherwise (skips included).
set -uo pipefail

usage="usage: gpu-check.sh [ARCHIVE | BUNDLE_DIR] | --build-tree DIR | --budget"
case "${1:-}" in
-h | --help)
  echo "$usage"
  exit 0
  ;;
--build-tree) max_args=2 ;;
--budget | "") max_args=1 ;;
-*)
  echo "gpu-check: unknown option '$1'; $usage" >&2
  exit 2
  ;;
*) max_args=1 ;;
esac
if [ $# -gt "$max_args" ]; then
  echo "gpu-check: unexpected argument '${*:$((max_args + 1)):1}'; $usage" >&2
  exit 2
fi

# --- The budget -----------------------------------------------------------------
# Measured on the first GPU checks (one H200, 2026-11-27; docs/benchmarks.md):
# kernel-tests 5-6 s, under memcheck about 15 s; e2e-n1 11-16 s,
# e2e-host-staged 13-19 s, e2e-graph 3-7 s, bench-adamw 1 s, gpu-gpt2 62-74 s,
# e2e-mesh 4-5 s, e2e-offload 6-14 s, sim-tests 9-10 s (the whole check
# 134-145 s). The limits leave two to three times that, so that a slower
# machine still finishes; a part that overruns is cut off, and the time left
# goes to the parts after it.
designed_deadline=540
deadline="${ZERO_GPU_CHECK_SECONDS:-$designed_deadline}"
unpack_allowance=10
reserve=5
grace=5
# The header's table and docs/building.md repeat these.
#      name            limit  minimum  needs
parts=(
  "kernel-tests        45     15       gpu"
  "kernel-memcheck     40     20       gpu"
  "e2e-n1              40     20       gpu"
  "e2e-host-staged     40     20       gpu"
  "e2e-graph           35     15       gpu"
  "bench-adamw         20     10       gpu"
  "gpu-gpt2            105    45       gpu"
  "gpu-profile         40     20       gpu"
  "e2e-mesh            40     20       gpu"
  "e2e-offload         35     15       gpu"
  "sim-tests           30     10       cpu"
)
if ! [[ $deadline =~ ^[0-9]+$ ]]; then
  echo "gpu-check: ZERO_GPU_CHECK_SECONDS must be a number of seconds, got '$deadline'" >&2
  exit 2
fi
limits=0
for entry in "${parts[@]}"; do
  read -r _ limit _ _ <<<"$entry"
  limits=$((limits + limit))
done
budget=$((limits + ${#parts[@]} * grace + unpack_allowance + reserve))
# Machine-read by test/tools/gpu-check-dry.test: keep "budget: N s of the D s".
budget_line="gpu-check: budget: $budget s of the $designed_deadline s deadline (parts $limits s, kill grace ${#parts[@]} x $grace s, unpacking $unpack_allowance s, summary $reserve s)"
echo "$budget_line"
if [ "$budget" -gt "$designed_deadline" ]; then
  echo "gpu-check: the parts' limits exceed the $designed_deadline s deadline; shorten them" >&2
  exit 2
fi
if [ "${1:-}" = "--budget" ]; then
  exit 0
fi
# ZERO_GPU_CHECK_PARTS="e2e-graph gpu-gpt2": only those parts, the others
# reported as not selected (a rerun in the device time a full check leaves).
selected="${ZERO_GPU_CHECK_PARTS:-}"
for name in $selected; do
  if ! printf '%s\n' "${parts[@]}" | grep -q "^$name "; then
    echo "gpu-check: ZERO_GPU_CHECK_PARTS: no part '$name' (the parts: $(printf '%s\n' "${parts[@]}" | cut -d' ' -f1 | xargs))" >&2
    exit 2
  fi
done
if [ "$deadline" != "$designed_deadline" ]; then
  echo "gpu-check: deadline $deadline s (ZERO_GPU_CHECK_SECONDS)"
fi

out="${OUT:-$PWD/gpu-check-out}"
mkdir -p "$out"
summary="$out/summary.md"
# Work files stay out of $OUT, which holds at most 8 files.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# --- The bundle (or a build tree) -------------------------------------------
where="${1:-}"
root=""
env_cmd=()
unpacked=""
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
    unpacked="$where in $SECONDS s"
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
# The e2e checks need only Python's standard library; the GPU machines'
# python3 is PyTorch's venv, which need not be on PATH.
python=$(command -v python3 || command -v /opt/torch/.venv/bin/python3 || echo python3)
# CUDA's memory checker, where the toolkit is installed (kernel-memcheck).
sanitizer=$(command -v compute-sanitizer || ls "${CUDA_HOME:-/nonexistent}/bin/compute-sanitizer" /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)

# --- What this machine has ---------------------------------------------------
head_md="$scratch/head.md"
{
  echo "# GPU check"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- from: $origin"
  [ -n "$unpacked" ] && echo "- unpacked: $unpacked"
  echo "- deadline: $deadline s; ${budget_line#gpu-check: }"
  echo "- host: $(uname -srm), $(nproc) cores"
} >"$head_md"
gpus=""
if command -v nvidia-smi >/dev/null; then
  gpus=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null)
fi
if [ -n "$gpus" ]; then
  echo "- GPU: $gpus" | sed '2,$s/^/       /' >>"$head_md"
else
  echo "- GPU: none (nvidia-smi $(command -v nvidia-smi >/dev/null && echo 'lists none' || echo 'not found'))" >>"$head_md"
fi
if [ ${#env_cmd[@]} -gt 0 ]; then
  found=$("${env_cmd[@]}" --print)
  sed 's/^zero-env: /- /' <<<"$found" >>"$head_md"
  cuda_missing=$(grep -c 'not found$' <<<"$found")
else
  cuda_missing=0
fi
echo >>"$head_md"
cat "$head_md"

# The machine model the profile is held against: the preset of this GPU.
case "$gpus" in
*H200*) profile_machine=h200-nvlink-8 ;;
*A100*80GB*) profile_machine=a100-80gb-nvlink-8 ;;
*A100*) profile_machine=a100-40gb-nvlink-8 ;;
*H100*NVL* | *H100*96*) profile_machine=h100-96gb-nvlink-8 ;;
*) profile_machine=h100-nvlink-8 ;;
esac

skip_reason=""
if [ -z "$gpus" ]; then
  skip_reason="no GPU on this machine"
elif [ "$cuda_missing" -gt 0 ]; then
  skip_reason="CUDA 13 libraries missing (see above)"
fi

# --- The summary -------------------------------------------------------------
failures=0
rows=()
write_summary() {
  {
    cat "$head_md"
    echo "## Parts"
    echo
    echo "| part | result | seconds |"
    echo "|---|---|---|"
    printf '%s\n' "${rows[@]}"
    echo
    echo "Total: $SECONDS s of the $deadline s deadline."
    # The benchmarks' own tables, from their output alone (not the run
    # logs folded in after it).
    for name in bench-adamw gpu-gpt2; do
      if grep -q '^|' "$scratch/$name.out" 2>/dev/null; then
        echo
        echo "## $name"
        echo
        grep -E '^(\||#)' "$scratch/$name.out"
      fi
    done
    # The profile's summary and kernel families (the whole table and the
    # trace are files of their own).
    if [ -s "$out/gpt2-124m-profile.md" ]; then
      echo
      echo "## gpu-profile ($profile_machine)"
      echo
      sed -n '3,/^## By stream/p' "$out/gpt2-124m-profile.md" | sed '$d'
    fi
  } >"$summary"
}

# --- The parts ---------------------------------------------------------------
# command_of NAME: the part's command into `command`, its log file into `log`.
command_of() {
  # shellcheck disable=SC2054 # the comma joins the models of one flag
  local e2e=(env PYTHONUNBUFFERED=1 ZERO_RUN="$tools/zero-run" "$python"
    "$share/test/e2e/check_cuda_backend.py" --src-root "$share"
    --models gpt2-tiny,gpt2-mini)
  log="$out/$1.log"
  case $1 in
  kernel-tests) command=("$kernel_tests" --gtest_brief=1) ;;
  # --error-exitcode: memcheck's findings fail the part even where the
  # kernel's results were right. --report-api-errors no: NCCL probes for
  # kernel images of other architectures and handles the errors (24 of them
  # on the first run); our own CUDA calls are checked by the tests.
  kernel-memcheck)
    command=("$sanitizer" --tool memcheck --report-api-errors no --error-exitcode 1 --target-processes all
      "$kernel_tests" --gtest_brief=1)
    ;;
  e2e-n1) command=("${e2e[@]}" --parts n1 --workdir "$scratch/e2e-n1") ;;
  e2e-host-staged) command=("${e2e[@]}" --parts host-staged --workdir "$scratch/e2e-host-staged") ;;
  e2e-graph) command=("${e2e[@]}" --parts graph --workdir "$scratch/e2e-graph") ;;
  e2e-offload) command=("${e2e[@]}" --parts offload --workdir "$scratch/e2e-offload") ;;
  # Four ranks a run: the tiny model only.
  e2e-mesh) command=("${e2e[@]}" --parts mesh --models gpt2-tiny --workdir "$scratch/e2e-mesh") ;;
  bench-adamw) command=("$tools/zero-bench-adamw") ;;
  # The short benchmark: 124M only (355M and N = 4 are bench/gpu_gpt2.sh's
  # full run), a per-run limit so that one stuck run leaves the others time.
  gpu-gpt2)
    command=(env OUT="$scratch/gpt2-runs" SIZES=124M STAGES="0 3" STEPS=8
      STAGED_SIZES= MINI_STEPS=100 RUN_TIMEOUT=60 bash "$share/bench/gpu_gpt2.sh" "$bench_root")
    ;;
  gpu-profile)
    command=("$bench_root/bin/gpt2_train" --size 124M --stage 0 --precision bf16
      --backend cuda --steps 4 --log-every 0
      --profile "$out/gpt2-124m-trace.json"
      --profile-table "$out/gpt2-124m-profile.md"
      --profile-machine "$profile_machine")
    ;;
  sim-tests) command=(env ZERO_SRC_ROOT="$share" "$sim_tests" --gtest_brief=1) ;;
  *)
    echo "gpu-check: no command for part $1" >&2
    exit 2
    ;;
  esac
  case $1 in
  e2e-*) log="$out/e2e.log" ;;
  kernel-*) log="$out/kernel-tests.log" ;;
  bench-adamw | gpu-gpt2 | gpu-profile) log="$out/bench.log" ;;
  esac
}

# run_part NAME LIMIT MINIMUM NEEDS: runs the part under `timeout`, given
# min(LIMIT, the time left), its output appended to its log; records its
# result and seconds and rewrites the summary.
run_part() {
  local name="$1" limit="$2" minimum="$3" needs="$4"
  local command log reason="" given
  command_of "$name"
  local left=$((deadline - SECONDS))
  local available=$((left - reserve - grace))
  if [ -n "$selected" ] && [[ " $selected " != *" $name "* ]]; then
    reason="not in ZERO_GPU_CHECK_PARTS"
  elif [ "$needs" = gpu ] && [ -n "$skip_reason" ]; then
    reason="$skip_reason"
  elif [ "$name" = kernel-memcheck ] && [ -z "$sanitizer" ]; then
    reason="compute-sanitizer not found (on PATH, in \$CUDA_HOME/bin or /usr/local/cuda/bin)"
  elif [ "$available" -lt "$minimum" ]; then
    reason="out of time ($((left > 0 ? left : 0)) s left of the $deadline s deadline; it needs $((minimum + grace + reserve)) s)"
  fi
  if [ -n "$reason" ]; then
    echo "=== $name: skipped: $reason" >>"$log"
    rows+=("| $name | skipped: $reason | - |")
    echo "gpu-check: $name: skipped: $reason"
    write_summary
    return
  fi
  given=$limit
  if [ "$available" -lt "$limit" ]; then
    given=$available
    echo "gpu-check: $name: given $given s of its $limit s limit ($left s left of the $deadline s deadline)"
  fi
  echo "=== $name (limit $given s): ${command[*]}" >>"$log"
  local start=$SECONDS status
  timeout --kill-after="$grace" "$given" "${env_cmd[@]}" "${command[@]}" >"$scratch/part.log" 2>&1
  status=$?
  cat "$scratch/part.log" >>"$log"
  cp "$scratch/part.log" "$scratch/$name.out"
  local seconds=$((SECONDS - start)) result skipped
  # A GPU test that skips verified nothing: ZeroCudaKernelTests skips every
  # test where cudart sees no device (a driver it cannot load, say) and the
  # NCCL ones in a build without NCCL, and exits 0 either way.
  skipped=$(sed -nE 's/^\[  SKIPPED \] ([0-9]+) tests?.*/\1/p' "$scratch/part.log" | head -1)
  case $status in
  0)
    if [ -n "$skipped" ]; then
      result="FAILED: $skipped tests skipped (see the log for why)"
    else
      result="passed"
    fi
    ;;
  124 | 137)
    if [ "$given" -lt "$limit" ]; then
      result="FAILED: cut off by the deadline after $given s (its limit: $limit s)"
    else
      result="FAILED: over its $limit s limit"
    fi
    ;;
  *) result="FAILED: exit $status" ;;
  esac
  [ "$result" = passed ] || failures=$((failures + 1))
  rows+=("| $name | $result | $seconds |")
  echo "gpu-check: $name: $result in $seconds s (log: $log)"
  [ "$result" = passed ] || tail -n 30 "$scratch/part.log"
  write_summary
}

for entry in "${parts[@]}"; do
  read -r name limit minimum needs <<<"$entry"
  run_part "$name" "$limit" "$minimum" "$needs"
  # gpu_gpt2.sh keeps one log per run; they go into its part's log.
  if [ "$name" = gpu-gpt2 ] && [ -d "$scratch/gpt2-runs" ]; then
    for run_log in "$scratch"/gpt2-runs/*.log; do
      echo "=== $(basename "$run_log")"
      cat "$run_log"
    done >>"$out/bench.log" 2>/dev/null
  fi
done

write_summary
echo "gpu-check: summary in $summary ($failures failed, $SECONDS s of the $deadline s deadline)"
[ $failures -eq 0 ]
