#!/usr/bin/env bash
# Configures and builds the project into build/ (or $ZERO_BUILD_DIR) with the
# system's MLIR/LLVM 19. Warnings in our code are errors. The first build of
# a directory configures it: with GCC and Release unless ZERO_CC, ZERO_CXX
# and ZERO_BUILD_TYPE say otherwise, plus any ZERO_CMAKE_ARGS
# (scripts/build-sanitize.sh uses these). ZERO_TARGETS limits what is built
# (default: everything).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ZERO_BUILD_DIR:-$root/build}"
jobs="${ZERO_JOBS:-2}"
read -r -a extra <<<"${ZERO_CMAKE_ARGS:-}"

if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE="${ZERO_BUILD_TYPE:-Release}" \
    -DCMAKE_C_COMPILER="${ZERO_CC:-gcc}" -DCMAKE_CXX_COMPILER="${ZERO_CXX:-g++}" \
    -DZERO_WERROR=ON "${extra[@]}" >"$build.configure.log" 2>&1 || {
      cat "$build.configure.log"; exit 1; }
  grep -E "CUDA|MPI|Sanitizers|libFuzzer|Compiler cache" "$build.configure.log" | sed 's/^-- /build: /' || true
fi
read -r -a targets <<<"${ZERO_TARGETS:-}"
ninja -C "$build" -j"$jobs" "${targets[@]}"
