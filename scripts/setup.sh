#!/usr/bin/env bash
# Installs every system dependency of the project with apt-get. Idempotent: when all
# packages are already present it returns without touching the network.
set -euo pipefail

PACKAGES=(
  # MLIR/LLVM 19: libmlir and the tools (mlir-tblgen is required to configure),
  # llvm-19-dev is not pulled in by libmlir-19-dev, llvm-19-tools brings FileCheck and lit.
  libmlir-19-dev mlir-19-tools llvm-19-dev llvm-19-tools
  # LLVM's CMake package names zstd's imported target (LLVMSupport links it);
  # Debian's llvm-19-dev does not depend on libzstd-dev, so name it here.
  libzstd-dev
  # Build tools; ccache keeps compiles across build trees and clones.
  cmake ninja-build g++ python3 clang-format ccache
  # Runtime dependencies.
  libopenmpi-dev openmpi-bin libabsl-dev nlohmann-json3-dev libopenblas-dev zlib1g-dev
  # ISA-L: the CRC-32 of checkpoint files (found through pkg-config).
  libisal-dev pkg-config
  # Highway: the vectorized update loops of the CPU kernels.
  libhwy-dev
  # The Python package: pybind11 and the interpreter's headers (the python3
  # on PATH may be another build of Python that ships its own).
  pybind11-dev python3-dev
  # Tests.
  libgtest-dev libgmock-dev
  # The sanitizer stage: clang with its ASan/UBSan/libFuzzer runtimes.
  clang-14 libclang-rt-14-dev
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages already installed"
else
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The reference safetensors reader, with which the tests check that
# zero-ckpt's files load in the ecosystem's own library (Debian does not
# package it). Without the registry those tests are reported unsupported.
if ! python3 -c "import safetensors" 2>/dev/null; then
  echo "setup: installing the safetensors Python package"
  python3 -m pip install --quiet --disable-pip-version-check safetensors \
    || echo "setup: warning: could not install safetensors; its tests will be skipped"
fi
# numpy for the Python package (zero.Trainer takes and returns numpy
# arrays), for the python3 on PATH. Without the registry the Python tests
# are reported unsupported.
if ! python3 -c "import numpy" 2>/dev/null; then
  echo "setup: installing the numpy Python package"
  python3 -m pip install --quiet --disable-pip-version-check numpy \
    || echo "setup: warning: could not install numpy; the Python tests will be skipped"
fi
# cudnn-frontend, the header-only C++ graph API of cuDNN (its wheel ships
# the headers in site-packages/include), for train.attention on cuDNN's fused
# SDPA in the CUDA backend (runtime/cuda/CudnnAttention.cpp). Only the
# headers are used at build time; libcudnn.so.9 is opened at run time.
# Without it the CUDA backend builds with its own attention kernel only.
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  purelib=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  if [ ! -f "$purelib/include/cudnn_frontend.h" ]; then
    echo "setup: installing the nvidia-cudnn-frontend headers"
    python3 -m pip install --quiet --disable-pip-version-check --no-deps \
      "nvidia-cudnn-frontend>=1.32,<2" \
      || echo "setup: warning: could not install nvidia-cudnn-frontend; CUDA attention keeps the built-in kernel"
  fi
fi
echo "setup: done"
