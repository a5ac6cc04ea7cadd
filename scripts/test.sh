#!/usr/bin/env bash
# Sets up, builds and runs every test: the lit/FileCheck suites and the
# GoogleTest unit tests (run through lit, one lit test per test case).
# Ends with `N passed, N failed[, N skipped]`; exits non-zero on any failure.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ZERO_BUILD_DIR:-$root/build}"

bash "$root/scripts/setup.sh"
bash "$root/scripts/build.sh"

results="$build/test-results.xml"
rm -f "$results"
status=0
python3 /usr/lib/llvm-19/build/utils/lit/lit.py "$build/test" \
  --xunit-xml-output "$results" -sv "$@" || status=$?
python3 "$root/scripts/summarize_tests.py" "$results" || status=1
exit $status
