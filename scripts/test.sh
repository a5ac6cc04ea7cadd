#!/usr/bin/env bash
# The README's test command. Two tiers:
#
#   scripts/test.sh          the default tier: sets up, builds the Release
#                            tree and runs every test of it through lit (the
#                            FileCheck suites, the GoogleTest unit tests one
#                            lit test per case, the end-to-end training runs,
#                            the fuzz regression inputs through the Release
#                            tools). Budget: 12 minutes after setup on 2 cores.
#   scripts/test.sh --all    the default tier, then what is slow: PyTorch and
#                            transformers (scripts/setup-torch.sh, 5.6 GB) and
#                            the importer's tests against PyTorch's own
#                            training (test/torch, lit --param torch=1), srun
#                            and sbatch on a single-node Slurm cluster
#                            (test/slurm, lit --param slurm=1), the clang
#                            ASan + UBSan build and its suite (the sanitizer
#                            tier: every unit and FileCheck test, and slices
#                            of the end-to-end matrices; the full matrices ran
#                            in the default tier), the libFuzzer targets for a
#                            bounded time (scripts/fuzz.sh), and the release
#                            bundle and the wheel, each tested in a minimal
#                            Debian root (scripts/test-bundle.sh,
#                            scripts/test-wheel.sh). CI (.ci/run) runs this;
#                            budget 45 minutes.
#
# Ends with `N passed, N failed, N skipped` over every stage it ran and exits
# non-zero on any failure. Each stage prints its wall time, so that the
# budgets above stay measured (README.md, docs/building.md "Test tiers").
#
#   ZERO_TORCH_STAGE=0      with --all: skips the PyTorch import stage (said in the output)
#   ZERO_SLURM_STAGE=0      with --all: skips the Slurm stage (said in the output)
#   ZERO_SANITIZER_STAGE=0  with --all: skips the sanitizer stage (said in the output)
#   ZERO_BUNDLE_STAGE=0     with --all: skips the release bundle's and the wheel's build and test
#   FUZZ_SECONDS=N          time per fuzzer (default 60)
#   ZERO_LIT_JOBS=N         tests lit runs at once in the Release suite
#                           (default 3: on 2 cores a third keeps them busy
#                           while the others wait on ranks and files; the
#                           sanitizer suite, busier, keeps lit's default)
#   other arguments go to every lit run (e.g. --filter dist)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ZERO_BUILD_DIR:-$root/build}"
sanitize_build="${ZERO_SANITIZE_BUILD_DIR:-$root/build-sanitize}"
lit=/usr/lib/llvm-19/build/utils/lit/lit.py
lit_jobs="${ZERO_LIT_JOBS:-3}"

all=0
lit_args=()
for arg in "$@"; do
  case $arg in
  --all) all=1 ;;
  -h | --help)
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
  *) lit_args+=("$arg") ;;
  esac
done

# stage NAME: marks the start of a stage; `stage_done` prints how long the
# last one took, in the form the README's budgets quote.
stage_name=""
stage_start=$SECONDS
timings=()
stage() {
  stage_name="$1"
  stage_start=$SECONDS
  echo "== $stage_name"
}
stage_done() {
  local seconds=$((SECONDS - stage_start))
  timings+=("$(printf '%-28s %4d s' "$stage_name" "$seconds")")
}

stage "setup"
bash "$root/scripts/setup.sh"
stage_done
tier_start=$SECONDS

# What the later stages of --all download, fetched while the Release build
# compiles (network and disk more than the cores): PyTorch and transformers
# (about 4 minutes on a fresh machine) and the bundle tests' minimal Debian
# root. Each stage waits for its download and prints its log.
torch_setup_pid=""
root_cache_pid=""
downloads="$build.downloads"
bundle_stage_runs() {
  [ "${ZERO_BUNDLE_STAGE:-1}" != 0 ] && [ "$(id -u)" -eq 0 ] &&
    { command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; }
}
# A run that ends early (a failed build under set -e) stops them too.
trap 'kill $torch_setup_pid $root_cache_pid 2>/dev/null || true' EXIT
if [ $all = 1 ]; then
  mkdir -p "$downloads"
  if [ "${ZERO_TORCH_STAGE:-1}" != 0 ]; then
    bash "$root/scripts/setup-torch.sh" >"$downloads/setup-torch.log" 2>&1 &
    torch_setup_pid=$!
  fi
  if bundle_stage_runs; then
    bash -c 'source "$1/scripts/lib/minimal-root.sh" && cache_root' _ "$root" \
      >"$downloads/minimal-root.log" 2>&1 &
    root_cache_pid=$!
  fi
fi
# wait_download PID LOG: the background job's exit status, its log printed.
wait_download() {
  local status=0
  wait "$1" || status=$?
  cat "$2"
  return $status
}

stage "release build"
bash "$root/scripts/build.sh"
stage_done

status=0
stage "release suite (lit)"
results="$build/test-results.xml"
rm -f "$results"
# With --all the torch and Slurm tests run in their own stages below, not as
# skips here.
torch_filter=()
if [ $all = 1 ]; then
  own_stages=slurm
  [ "${ZERO_TORCH_STAGE:-1}" != 0 ] && own_stages="torch|slurm"
  torch_filter=(--filter-out "^ZERO :: ($own_stages)/")
fi
python3 "$lit" "$build/test" -j "$lit_jobs" --xunit-xml-output "$results" -sv \
  ${torch_filter[@]+"${torch_filter[@]}"} ${lit_args[@]+"${lit_args[@]}"} || status=$?
stage_done
summary=(--label "tests=$results")
default_seconds=$((SECONDS - tier_start))

if [ $all = 1 ]; then
  if [ "${ZERO_TORCH_STAGE:-1}" != 0 ]; then
    stage "PyTorch import: setup-torch.sh, test/torch"
    torch_results="$build/torch-results.xml"
    rm -f "$torch_results"
    if wait_download "$torch_setup_pid" "$downloads/setup-torch.log"; then
      python3 "$lit" "$build/test/torch" --param torch=1 \
        --xunit-xml-output "$torch_results" -sv \
        ${lit_args[@]+"${lit_args[@]}"} || status=$?
    else
      status=1
    fi
    stage_done
    summary+=(--label "torch tests=$torch_results")
  else
    echo "== PyTorch import stage skipped (ZERO_TORCH_STAGE=0)"
  fi

  # srun and sbatch on a single-node Slurm cluster this machine runs
  # (test/slurm/start-slurm.sh installs and starts it; needs root).
  if [ "${ZERO_SLURM_STAGE:-1}" = 0 ]; then
    echo "== Slurm stage skipped (ZERO_SLURM_STAGE=0)"
  elif [ "$(id -u)" -ne 0 ]; then
    echo "== Slurm stage skipped: needs root (it starts slurmctld and slurmd)"
  else
    stage "Slurm: start-slurm.sh, test/slurm"
    slurm_results="$build/slurm-results.xml"
    rm -f "$slurm_results"
    if bash "$root/test/slurm/start-slurm.sh"; then
      python3 "$lit" "$build/test/slurm" --param slurm=1 \
        --xunit-xml-output "$slurm_results" -sv \
        ${lit_args[@]+"${lit_args[@]}"} || status=$?
    else
      status=1
    fi
    bash "$root/test/slurm/stop-slurm.sh" || status=1
    stage_done
    summary+=(--label "slurm tests=$slurm_results")
  fi

  if [ "${ZERO_SANITIZER_STAGE:-1}" != 0 ]; then
    stage "sanitizer build"
    ZERO_SANITIZE_BUILD_DIR="$sanitize_build" bash "$root/scripts/build-sanitize.sh"
    stage_done
    stage "sanitizer suite (lit)"
    sanitize_results="$sanitize_build/test-results.xml"
    reports="$sanitize_build/sanitizer-reports"
    rm -rf "$sanitize_results" "$reports"
    python3 "$lit" "$sanitize_build/test" --xunit-xml-output "$sanitize_results" \
      -sv ${lit_args[@]+"${lit_args[@]}"} || status=$?
    stage_done
    stage "fuzzers"
    ZERO_SANITIZE_BUILD_DIR="$sanitize_build" bash "$root/scripts/fuzz.sh" || status=$?
    stage_done
    summary+=(--label "sanitizer tests=$sanitize_results"
              --label "fuzzers=$sanitize_build/fuzz/fuzz-results.xml"
              --sanitizer-reports "$reports")
  else
    echo "== sanitizer stage skipped (ZERO_SANITIZER_STAGE=0)"
  fi

  # The release bundle, built and tested in a minimal Debian root where none
  # of our build dependencies are (needs nvcc, root and Debian's mirror).
  if [ "${ZERO_BUNDLE_STAGE:-1}" = 0 ]; then
    echo "== bundle stage skipped (ZERO_BUNDLE_STAGE=0)"
  elif ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
    echo "== bundle stage skipped: no nvcc (the bundle carries the CUDA backend)"
  elif [ "$(id -u)" -ne 0 ]; then
    echo "== bundle stage skipped: needs root (debootstrap, chroot)"
  else
    stage "bundle and wheel: scripts/wheel.sh, test-bundle.sh, test-wheel.sh"
    # A root that could not be cached is made again by the tests, which
    # report debootstrap's failure as a check.
    wait_download "$root_cache_pid" "$downloads/minimal-root.log" || true
    bundle_results="$root/build-bundle/bundle-results.xml"
    wheel_results="$root/build-bundle/wheel-results.xml"
    rm -f "$bundle_results" "$wheel_results"
    # wheel.sh builds the bundle first, then the wheel from the same tree.
    if bash "$root/scripts/wheel.sh"; then
      ZERO_BUNDLE_RESULTS="$bundle_results" bash "$root/scripts/test-bundle.sh" || status=$?
      ZERO_WHEEL_RESULTS="$wheel_results" bash "$root/scripts/test-wheel.sh" || status=$?
    else
      status=1
    fi
    stage_done
    summary+=(--label "bundle=$bundle_results" --label "wheel=$wheel_results")
  fi
else
  echo "== the default tier ends here; scripts/test.sh --all adds the sanitizer" \
    "build and suite, the fuzzers and the release bundle"
fi

echo "== wall time per stage"
printf '%s\n' "${timings[@]}"
echo "default tier after setup: $((default_seconds / 60)) min $((default_seconds % 60)) s (budget 12 min)"
python3 "$root/scripts/summarize_tests.py" "${summary[@]}" || status=1
exit $status
