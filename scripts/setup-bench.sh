#!/usr/bin/env bash
# Installs what the benchmarks under bench/ need beyond scripts/setup.sh: Debian's
# PyTorch (python3-torch) for the /usr/bin/python3 interpreter, used by
# bench/runtime_vs_pytorch.py as the baseline. CI does not run this (the build and
# the tests never need PyTorch). Idempotent: returns at once when torch imports.
set -euo pipefail

if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "setup-bench: installing python3-torch"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends python3-torch >/dev/null
fi
/usr/bin/python3 -c 'import torch; print("setup-bench: torch", torch.__version__)'
