#!/usr/bin/env bash
# Configures and builds the sanitizer build into build-sanitize/ (or
# $ZERO_SANITIZE_BUILD_DIR): clang, AddressSanitizer + UndefinedBehavior-
# Sanitizer on all of our code, the libFuzzer targets, no CUDA (nothing here
# runs it, and nvcc does not take the sanitizer flags). docs/building.md.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ZERO_SANITIZE_BUILD_DIR:-$root/build-sanitize}"
jobs="${ZERO_JOBS:-2}"

if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DZERO_WERROR=ON -DZERO_ENABLE_CUDA=OFF \
    -DZERO_SANITIZE=address,undefined -DZERO_FUZZERS=ON \
    >"$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
fi
ninja -C "$build" -j"$jobs"
