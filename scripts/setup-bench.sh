#!/usr/bin/env bash
# Installs what the benchmarks under bench/ need beyond scripts/setup.sh:
#
# * Debian's PyTorch (python3-torch, 1.13) for the /usr/bin/python3
#   interpreter: bench/runtime_vs_pytorch.py's baseline (DDP and
#   ZeroRedundancyOptimizer), kept so that earlier results can be rerun;
# * a virtual environment, $ZERO_BENCH_VENV (default /opt/zero-bench-venv:
#   outside the work tree, so that no tool walking the checkout descends
#   into several GB of site-packages, and it outlives a fresh checkout), made
#   from /usr/bin/python3 with PyTorch 2.x and DeepSpeed from PyPI: today's
#   peers (DDP, FSDP2 `fully_shard`, DeepSpeed ZeRO-1/2/3 on CPU ranks),
#   `runtime_vs_pytorch.py --torch2-python $ZERO_BENCH_VENV/bin/python`.
#
# PyPI's only Linux x86_64 torch wheel is the CUDA one: it pulls the nvidia-*
# runtime wheels (several GB) although the benchmarks run on CPU ranks; no
# smaller wheel is on PyPI, and the PyTorch CPU index is not reachable here.
# DeepSpeed is a source distribution whose setup.py imports torch: it is
# built against the venv's torch (--no-build-isolation, or pip would fetch a
# second torch into a build environment) with DS_BUILD_OPS=0 (no C++/CUDA op
# is compiled ahead; the CPU path needs none).
#
# Last, two steps of FSDP2 and of DeepSpeed ZeRO-3 on 2 ranks show both run
# here; the first DeepSpeed run also compiles (once, cached under
# ~/.cache/torch_extensions) the shared-memory op its CPU accelerator loads.
#
# The versions are pinned so that a result in docs/benchmarks.md can be
# rerun; ZERO_BENCH_TORCH and ZERO_BENCH_DEEPSPEED override the pip
# requirement strings. CI does not run this (the build and the tests never
# need PyTorch). Idempotent: each part is skipped when it already imports at
# the pinned version. Prints the versions.
set -euo pipefail

VENV="${ZERO_BENCH_VENV:-/opt/zero-bench-venv}"
TORCH_REQ="${ZERO_BENCH_TORCH:-torch==2.15.0}"
DEEPSPEED_REQ="${ZERO_BENCH_DEEPSPEED:-deepspeed==0.19.8}"

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
apt_updated=0
apt_install() {
  if [ "$apt_updated" -eq 0 ]; then $SUDO apt-get update -qq; apt_updated=1; fi
  $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "setup-bench: installing python3-torch"
  apt_install python3-torch
fi
/usr/bin/python3 -c 'import torch; print("setup-bench: /usr/bin/python3: torch", torch.__version__)'

# True when the venv's pip already satisfies requirement $1.
have() {
  "$VENV/bin/python" - "$1" <<'EOF' 2>/dev/null
import sys
from importlib.metadata import version
from packaging.requirements import Requirement
req = Requirement(sys.argv[1])
sys.exit(0 if req.specifier.contains(version(req.name), prereleases=True) else 1)
EOF
}

if [ ! -x "$VENV/bin/python" ]; then
  /usr/bin/python3 -c 'import ensurepip' 2>/dev/null || apt_install python3-venv
  echo "setup-bench: creating $VENV"
  $SUDO /usr/bin/python3 -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
if ! "$VENV/bin/python" -c 'import packaging, setuptools, wheel' 2>/dev/null; then
  $SUDO "${PIP[@]}" install packaging setuptools wheel
fi
if ! have "$TORCH_REQ"; then
  echo "setup-bench: pip install $TORCH_REQ (with its nvidia-* wheels: several GB)"
  $SUDO "${PIP[@]}" install "$TORCH_REQ"
fi
if ! have "$DEEPSPEED_REQ"; then
  echo "setup-bench: pip install $DEEPSPEED_REQ (DS_BUILD_OPS=0)"
  # py-cpuinfo: the CPU accelerator reads the core count through it.
  $SUDO "${PIP[@]}" install py-cpuinfo
  $SUDO env DS_BUILD_OPS=0 DS_ACCELERATOR=cpu "${PIP[@]}" install \
    --no-build-isolation "$DEEPSPEED_REQ"
fi
DS_ACCELERATOR=cpu "$VENV/bin/python" - <<'EOF'
import sys
import warnings
warnings.filterwarnings("ignore")
import torch
import deepspeed
print("setup-bench: %s: torch %s, deepspeed %s (python %s)" % (
    sys.executable, torch.__version__, deepspeed.__version__, sys.version.split()[0]))
EOF
BENCH="$(cd "$(dirname "$0")/.." && pwd)/bench/torch_gpt2.py"
SMOKE="$(mktemp -d)"
trap 'rm -rf "$SMOKE"' EXIT
for mode in "fsdp2" "deepspeed --ds-stage 3"; do
  # shellcheck disable=SC2086
  if ! "$VENV/bin/python" "$BENCH" --mode $mode -n 2 --steps 2 \
       --metrics-json "$SMOKE/m.json" >"$SMOKE/log" 2>&1; then
    tail -20 "$SMOKE/log" >&2
    echo "setup-bench: bench/torch_gpt2.py --mode $mode failed" >&2
    exit 1
  fi
  echo "setup-bench: bench/torch_gpt2.py --mode $mode runs"
done
