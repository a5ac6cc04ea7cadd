#!/usr/bin/env bash
# Tests the self-contained wheel where none of our build dependencies are:
# the minimal Debian root of scripts/test-bundle.sh (debootstrap's minbase
# with python3 and python3-venv; no LLVM, Open MPI, OpenBLAS, Abseil or
# CUDA), a fresh venv in it, `pip install` of the wheel (numpy from a
# wheelhouse filled here, so the root needs no network), then inside it:
#   - `python -m zero.run -n 2 train.py` trains GPT-2 mini (stage 3, two
#     ranks through the wheel's own mpirun): the same losses and sample as
#     the build tree's package, bit for bit;
#   - the console entry points: zero-opt on a lit test's input prints what
#     the build tree's prints; zero-run -n 2 trains gpt2-tiny with the build
#     tree's losses; zero-ckpt verifies its checkpoint; zero-env names
#     what CUDA libraries it did not find, and --backend cuda says so;
#   - where this machine's python3 has torch: zero.from_torch on a small
#     module, trained as torch.optim.SGD trains it (torch from this
#     machine's site-packages, mounted read-only: a 5 GB install is not
#     repeated in the root); then zero-env finds CUDA's libraries in torch's
#     nvidia-* wheels and --backend cuda loads the backend (and finds no GPU).
# Needs root (debootstrap, chroot, mounts), Debian's mirror and the package
# registry (numpy), and the build tree (scripts/build.sh) to compare with.
#
#   scripts/test-wheel.sh [dist/zero_compiler-*.whl]  (default: the newest)
# Prints `N passed, N failed, N skipped` of its checks (the torch ones are
# skipped, and counted so, without torch); exits 1 on any failure.
set -uo pipefail
root_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
wheel="${1:-$(ls -t "$root_dir"/dist/zero_compiler-*.whl 2>/dev/null | head -1)}"
build="${ZERO_BUILD_DIR:-$root_dir/build}"
work="${ZERO_WHEEL_TEST_DIR:-/var/tmp/zero-wheel-test}"
chroot_dir="$work/root"

if [ -z "$wheel" ] || [ ! -f "$wheel" ]; then
  echo "test-wheel: no wheel (make one with scripts/wheel.sh)" >&2
  exit 2
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "test-wheel: needs root (debootstrap, chroot)" >&2
  exit 2
fi
if [ ! -x "$build/bin/zero-opt" ] || ! ls "$build"/python/zero/_zero.*.so >/dev/null 2>&1; then
  echo "test-wheel: $build has no zero-opt or Python package (scripts/build.sh builds them)" >&2
  exit 2
fi

suite=wheel
# shellcheck source=scripts/lib/minimal-root.sh
source "$root_dir/scripts/lib/minimal-root.sh"
trap unmount_root EXIT
unmount_root
rm -rf "$work"
mkdir -p "$work/host"

start=$SECONDS
if ! make_root "$work"; then
  finish "${ZERO_WHEEL_RESULTS:-}"
  exit 1
fi
echo "test-wheel: minimal Debian root in $((SECONDS - start)) s"
check "the root has no LLVM, MLIR, Open MPI, OpenBLAS, Abseil or CUDA" bare_root

bytes=$(stat -c %s "$wheel")
echo "test-wheel: $(basename "$wheel"): $bytes bytes ($(( (bytes + 1048575) / 1048576 )) MiB)"
check "the wheel is under 60 MiB" test "$bytes" -lt $((60 * 1048576))

# What the scripts read: the example training script, its corpus, the
# models and a lit test's input.
mkdir -p "$chroot_dir/work/examples/python" "$chroot_dir/work/examples/gpt2/data" "$chroot_dir/wheelhouse"
cp "$root_dir"/examples/python/*.py "$chroot_dir/work/examples/python/"
cp "$root_dir"/examples/gpt2/data/* "$chroot_dir/work/examples/gpt2/data/"
cp "$root_dir"/examples/gpt2-tiny.mlir "$root_dir/test/passes/zero-offload.mlir" "$chroot_dir/work/"
cp "$wheel" "$chroot_dir/wheelhouse/"
python3 -m pip download --quiet --only-binary=:all: --dest "$chroot_dir/wheelhouse" numpy \
  >"$work/download.log" 2>&1 || cat "$work/download.log"
mount_root
inside() { chroot "$chroot_dir" /usr/bin/env -i "${root_env[@]}" "$@"; }

# --- pip install into a fresh venv -------------------------------------------------
inside python3 -m venv /venv >"$work/install.log" 2>&1 &&
  inside /venv/bin/pip install --no-index --find-links /wheelhouse \
    "/wheelhouse/$(basename "$wheel")" >>"$work/install.log" 2>&1
status=$?
tail -n 3 "$work/install.log"
check "pip install of the wheel into a fresh venv inside the root" test $status -eq 0
entry_points() {
  local tool
  for tool in zero-opt zero-run zero-ckpt gpt2_train zero-env; do
    [ -x "$chroot_dir/venv/bin/$tool" ] || { echo "no /venv/bin/$tool"; return 1; }
  done
}
check "the venv has the console entry points" entry_points

# --- GPT-2 mini through python -m zero.run, inside and in the build tree ----------
train_args=(-n 2 examples/python/train.py --size mini --stage 3 --steps 4 --warmup 2
  --eval-every 0 --eval-batches 1 --checkpoint-every 0 --sample-tokens 24 --out run)
inside sh -c "cd /work && /venv/bin/python -m zero.run ${train_args[*]}" >"$work/train-inside.log" 2>&1
status=$?
cat "$work/train-inside.log"
check "python -m zero.run -n 2 train.py (GPT-2 mini, stage 3) inside the root" test $status -eq 0
cp -r "$root_dir/examples" "$work/host/"
(cd "$work/host" && PYTHONPATH="$build/python" python3 -m zero.run "${train_args[@]}") \
  >"$work/train-tree.log" 2>&1
check "the same script with the build tree's package" test $? -eq 0
# Everything but the throughput line.
same_training() {
  grep -q "train loss" "$work/train-inside.log" &&
    diff <(grep -v "last step" "$work/train-inside.log") <(grep -v "last step" "$work/train-tree.log")
}
check "the same losses and sample, bit for bit" same_training

# --- The console entry points -------------------------------------------------------
pipeline='builtin.module(zero-pipeline{stage=3 lower-to-runtime=1 offload=optimizer+params})'
inside sh -c "cd /work && /venv/bin/zero-opt zero-offload.mlir --pass-pipeline='$pipeline'" \
  >"$work/opt-inside.mlir" 2>"$work/opt-inside.err"
status=$?
cat "$work/opt-inside.err"
check "zero-opt (the entry point) on a lit test's input" test $status -eq 0
(cd "$root_dir/test/passes" && "$build/bin/zero-opt" zero-offload.mlir --pass-pipeline="$pipeline") \
  >"$work/opt-tree.mlir"
check "zero-opt prints what the build tree's prints" cmp "$work/opt-inside.mlir" "$work/opt-tree.mlir"

run_args=(-n 2 --stage 3 --steps 3 --deterministic --quiet)
inside /venv/bin/zero-run /work/gpt2-tiny.mlir "${run_args[@]}" --metrics-json /work/metrics.json \
  --checkpoint-dir /work/ckpt >"$work/run-inside.log" 2>&1 &&
  inside /venv/bin/zero-ckpt verify /work/ckpt >>"$work/run-inside.log" 2>&1
status=$?
cat "$work/run-inside.log"
check "zero-run -n 2 (the entry point) trains gpt2-tiny; zero-ckpt verifies its checkpoint" test $status -eq 0
"$build/bin/zero-run" "$root_dir/examples/gpt2-tiny.mlir" "${run_args[@]}" \
  --metrics-json "$work/metrics.json" >"$work/run-tree.log" 2>&1
losses() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["losses"])' "$1"; }
same_losses() {
  local a b
  a=$(losses "$chroot_dir/work/metrics.json") && b=$(losses "$work/metrics.json") || return 1
  echo "test-wheel: zero-run losses inside $a, build tree $b"
  [ "$a" = "$b" ]
}
check "zero-run's losses equal the build tree's, bit for bit" same_losses

inside /venv/bin/zero-env --print >"$work/env.log" 2>&1
inside /venv/bin/zero-run /work/gpt2-tiny.mlir --stage 1 --backend cuda >>"$work/env.log" 2>&1
status=$?
cat "$work/env.log"
no_cuda() {
  [ $status -eq 1 ] && grep -q "zero-env: libcudart.so.13: not found" "$work/env.log" &&
    grep -q "cannot load the CUDA backend: libcudart.so.13" "$work/env.log"
}
check "zero-env and --backend cuda say which CUDA library is missing" no_cuda

# --- zero.from_torch, with this machine's torch ------------------------------------
site=$(python3 -c 'import sysconfig, torch; print(sysconfig.get_paths()["purelib"])' 2>/dev/null)
if [ -z "$site" ]; then
  why="this machine's python3 has no torch (scripts/setup-torch.sh)"
  skip "zero.from_torch trains a torch module as torch.optim.SGD does" "$why"
  skip "CUDA's libraries found in PyTorch's nvidia-* wheels; the CUDA backend loads" "$why"
else
  mkdir -p "$chroot_dir/host-site"
  mount --bind -o ro "$site" "$chroot_dir/host-site"
  mount -o remount,ro,bind "$chroot_dir/host-site"
  # After the venv's own site-packages: the wheel's zero and numpy win.
  echo /host-site >"$(echo "$chroot_dir"/venv/lib/python3*/site-packages)/host-site.pth"
  cp "$root_dir/test/wheel/check_from_torch.py" "$chroot_dir/work/"
  inside /venv/bin/python /work/check_from_torch.py >"$work/torch.log" 2>&1
  status=$?
  cat "$work/torch.log"
  check "zero.from_torch trains a torch module as torch.optim.SGD does" test $status -eq 0
  # torch's nvidia-* wheels are now the venv's: the entry points find CUDA
  # there (through this venv's python, which is not on the root's PATH),
  # the backend loads, and finds no GPU.
  inside /venv/bin/zero-env --print >"$work/env-torch.log" 2>&1
  inside /venv/bin/zero-run /work/gpt2-tiny.mlir --stage 1 --backend cuda >>"$work/env-torch.log" 2>&1
  status=$?
  cat "$work/env-torch.log"
  cuda_from_wheels() {
    [ $status -eq 1 ] && grep -q "zero-env: libcudart.so.13: /host-site/nvidia/" "$work/env-torch.log" &&
      grep -q "zero-env: libnccl.so.2: /host-site/nvidia/" "$work/env-torch.log" &&
      grep -q "no CUDA device is visible" "$work/env-torch.log"
  }
  check "CUDA's libraries found in PyTorch's nvidia-* wheels; the CUDA backend loads" cuda_from_wheels
fi

echo "test-wheel: $((SECONDS - start)) s in all"
finish "${ZERO_WHEEL_RESULTS:-}"
