#!/usr/bin/env bash
# Configures and builds the sanitizer build into build-sanitize/ (or
# $ZERO_SANITIZE_BUILD_DIR): clang, AddressSanitizer + UndefinedBehavior-
# Sanitizer on all of our code, the libFuzzer targets, no CUDA (nothing here
# runs it, and nvcc does not take the sanitizer flags). docs/building.md.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ZERO_BUILD_DIR="${ZERO_SANITIZE_BUILD_DIR:-$root/build-sanitize}" \
  ZERO_CC=clang-14 ZERO_CXX=clang++-14 ZERO_BUILD_TYPE=RelWithDebInfo \
  ZERO_CMAKE_ARGS="-DZERO_ENABLE_CUDA=OFF -DZERO_SANITIZE=address,undefined -DZERO_FUZZERS=ON" \
  exec bash "$root/scripts/build.sh"
