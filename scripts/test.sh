#!/usr/bin/env bash
# Sets up, builds and runs every test: the lit/FileCheck suites and the
# GoogleTest unit tests (run through lit, one lit test per test case), then
# the sanitizer stage: the same suite built with clang under ASan + UBSan
# (scripts/build-sanitize.sh) and the libFuzzer targets for a bounded time
# (scripts/fuzz.sh), then the release bundle (scripts/bundle.sh) tested in a
# minimal Debian root (scripts/test-bundle.sh). Ends with
# `N passed, N failed[, N skipped]` over every stage; exits non-zero on any
# failure.
#
#   ZERO_SANITIZER_STAGE=0  skips the sanitizer stage (said in the output)
#   ZERO_BUNDLE_STAGE=0     skips the release bundle's build and test
#   FUZZ_SECONDS=N          time per fuzzer (default 60)
#   extra arguments go to both lit runs (e.g. --filter dist)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ZERO_BUILD_DIR:-$root/build}"
sanitize_build="${ZERO_SANITIZE_BUILD_DIR:-$root/build-sanitize}"
lit=/usr/lib/llvm-19/build/utils/lit/lit.py

bash "$root/scripts/setup.sh"
bash "$root/scripts/build.sh"

results="$build/test-results.xml"
rm -f "$results"
status=0
python3 "$lit" "$build/test" --xunit-xml-output "$results" -sv "$@" || status=$?

summary=(--label "tests=$results")
if [ "${ZERO_SANITIZER_STAGE:-1}" != 0 ]; then
  echo "== sanitizer stage: ASan + UBSan build, the suite, the fuzzers"
  ZERO_SANITIZE_BUILD_DIR="$sanitize_build" bash "$root/scripts/build-sanitize.sh"
  sanitize_results="$sanitize_build/test-results.xml"
  reports="$sanitize_build/sanitizer-reports"
  rm -rf "$sanitize_results" "$reports"
  python3 "$lit" "$sanitize_build/test" --xunit-xml-output "$sanitize_results" \
    -sv "$@" || status=$?
  ZERO_SANITIZE_BUILD_DIR="$sanitize_build" bash "$root/scripts/fuzz.sh" || status=$?
  summary+=(--label "sanitizer tests=$sanitize_results"
            --label "fuzzers=$sanitize_build/fuzz/fuzz-results.xml"
            --sanitizer-reports "$reports")
else
  echo "== sanitizer stage skipped (ZERO_SANITIZER_STAGE=0)"
fi

# The release bundle, built and tested in a minimal Debian root where none of
# our build dependencies are (needs nvcc, root and Debian's mirror).
if [ "${ZERO_BUNDLE_STAGE:-1}" = 0 ]; then
  echo "== bundle stage skipped (ZERO_BUNDLE_STAGE=0)"
elif ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "== bundle stage skipped: no nvcc (the bundle carries the CUDA backend)"
elif [ "$(id -u)" -ne 0 ]; then
  echo "== bundle stage skipped: needs root (debootstrap, chroot)"
else
  echo "== bundle stage: scripts/bundle.sh, scripts/test-bundle.sh"
  bundle_results="$root/build-bundle/bundle-results.xml"
  rm -f "$bundle_results"
  if bash "$root/scripts/bundle.sh"; then
    ZERO_BUNDLE_RESULTS="$bundle_results" bash "$root/scripts/test-bundle.sh" || status=$?
  else
    status=1
  fi
  summary+=(--label "bundle=$bundle_results")
fi
python3 "$root/scripts/summarize_tests.py" "${summary[@]}" || status=1
exit $status
