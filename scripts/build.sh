#!/usr/bin/env bash
# Configures and builds the project into build/ (or $ZERO_BUILD_DIR) with the
# system's MLIR/LLVM 19. Warnings in our code are errors.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ZERO_BUILD_DIR:-$root/build}"
jobs="${ZERO_JOBS:-2}"

if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
    -DZERO_WERROR=ON >"$build.configure.log" 2>&1 || {
      cat "$build.configure.log"; exit 1; }
  grep -E "CUDA|MPI" "$build.configure.log" | sed 's/^-- /build: /' || true
fi
ninja -C "$build" -j"$jobs"
