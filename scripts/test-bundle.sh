#!/usr/bin/env bash
# Tests the release bundle where none of our build dependencies are: a
# minimal Debian root made with debootstrap (no LLVM, no Open MPI, no
# OpenBLAS, no Abseil inside), the bundle unpacked into it, and, inside it
# with chroot:
#   - zero-run examples/gpt2-tiny.mlir -n 2 --stage 3 (CPU backend, two ranks
#     through the bundle's relocated mpirun): losses and final state equal to
#     the build tree's bit for bit (--deterministic);
#   - zero-opt on an example: output equal to the build tree's;
#   - --backend cuda: refused with what is missing (no CUDA in the root);
#   - the GPU check's dry run: every GPU part skipped with its reason.
# Needs root (debootstrap, chroot, mounts) and Debian's package mirror. Takes
# about 3 minutes with the root cached in $ZERO_BUNDLE_ROOT_CACHE, about 6
# without (docs/building.md).
#
#   scripts/test-bundle.sh [dist/zero-*.tar.xz]   (default: the newest in dist/)
# Prints `N passed, N failed, N skipped` of its checks; exits 1 on any failure.
set -uo pipefail
root_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
archive="${1:-$(ls -t "$root_dir"/dist/zero-*-linux-x86_64.tar.xz 2>/dev/null | head -1)}"
build="${ZERO_BUILD_DIR:-$root_dir/build}"
work="${ZERO_BUNDLE_TEST_DIR:-/var/tmp/zero-bundle-test}"
chroot_dir="$work/root"

if [ -z "$archive" ] || [ ! -f "$archive" ]; then
  echo "test-bundle: no bundle (make one with scripts/bundle.sh)" >&2
  exit 2
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "test-bundle: needs root (debootstrap, chroot)" >&2
  exit 2
fi
for tool in zero-run zero-opt zero-ckpt; do
  if [ ! -x "$build/bin/$tool" ]; then
    echo "test-bundle: $build/bin/$tool is missing (scripts/build.sh builds it)" >&2
    exit 2
  fi
done

suite=bundle
# shellcheck source=scripts/lib/minimal-root.sh
source "$root_dir/scripts/lib/minimal-root.sh"
trap unmount_root EXIT
unmount_root
rm -rf "$work"
mkdir -p "$work"

# --- The minimal root ------------------------------------------------------------
start=$SECONDS
if ! make_root "$work"; then
  finish "${ZERO_BUNDLE_RESULTS:-}"
  exit 1
fi
echo "test-bundle: minimal Debian root in $((SECONDS - start)) s"
check "the root has no LLVM, MLIR, Open MPI, OpenBLAS, Abseil or CUDA" bare_root

mkdir -p "$chroot_dir/opt" "$chroot_dir/work"
tar -C "$chroot_dir/opt" -xJf "$archive"
bundle=$(cd "$chroot_dir/opt" && ls -d zero-*/ | head -1)
bundle="/opt/${bundle%/}"
mount_root
inside() { chroot "$chroot_dir" /usr/bin/env -i "${root_env[@]}" "$bundle/bin/zero-env" "$@"; }

# --- GPT-2 on two ranks, stage 3, in the root and in the build tree --------------
example="$bundle/share/zero/examples/gpt2-tiny.mlir"
run_args=(-n 2 --stage 3 --steps 3 --deterministic --quiet)
inside zero-run "$example" "${run_args[@]}" --metrics-json /work/metrics.json \
  --save-state /work/state.safetensors >"$work/run-inside.log" 2>&1
status=$?
cat "$work/run-inside.log"
check "zero-run gpt2-tiny -n 2 --stage 3 runs inside the root" test $status -eq 0
"$build/bin/zero-run" "$root_dir/examples/gpt2-tiny.mlir" "${run_args[@]}" \
  --metrics-json "$work/metrics.json" --save-state "$work/state.safetensors" >"$work/run-tree.log" 2>&1
check "zero-run gpt2-tiny in the build tree" test $? -eq 0
losses() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["losses"])' "$1"; }
same_losses() {
  local a b
  a=$(losses "$chroot_dir/work/metrics.json") && b=$(losses "$work/metrics.json") || return 1
  echo "test-bundle: losses inside $a, build tree $b"
  [ "$a" = "$b" ]
}
check "the same losses, bit for bit" same_losses
check "the same final state, bit for bit" cmp "$chroot_dir/work/state.safetensors" "$work/state.safetensors"

# --- A checkpoint, verified and resumed inside the root -------------------------------
inside zero-run "$example" -n 2 --stage 3 --steps 2 --deterministic --quiet \
  --checkpoint-dir /work/ckpt >"$work/ckpt.log" 2>&1 &&
  inside zero-ckpt verify /work/ckpt >>"$work/ckpt.log" 2>&1 &&
  inside zero-run "$example" -n 2 --stage 3 --steps 3 --deterministic --quiet \
    --resume /work/ckpt --save-state /work/resumed.safetensors >>"$work/ckpt.log" 2>&1
status=$?
cat "$work/ckpt.log"
check "a checkpoint saved, verified by zero-ckpt and resumed inside the root" test $status -eq 0
check "the resumed run ends in the same state, bit for bit" \
  cmp "$chroot_dir/work/resumed.safetensors" "$work/state.safetensors"

# --- zero-opt ------------------------------------------------------------------------
inside zero-opt "$bundle/share/zero/examples/mlp.mlir" --zero-pipeline='stage=3 ranks=4' \
  >"$work/opt-inside.mlir" 2>"$work/opt-inside.err"
check "zero-opt runs inside the root" test $? -eq 0
"$build/bin/zero-opt" "$root_dir/examples/mlp.mlir" --zero-pipeline='stage=3 ranks=4' >"$work/opt-tree.mlir"
check "zero-opt prints what the build tree's prints" cmp "$work/opt-inside.mlir" "$work/opt-tree.mlir"

# --- No CUDA in the root -----------------------------------------------------------
inside zero-run "$bundle/share/zero/examples/mlp.mlir" --stage 1 --backend cuda >"$work/cuda.log" 2>&1
status=$?
cat "$work/cuda.log"
refused() { [ $status -eq 1 ] && grep -q "cannot load the CUDA backend: libcudart.so.13" "$work/cuda.log"; }
check "--backend cuda says what is missing" refused

# --- The GPU check's dry run -----------------------------------------------------
chroot "$chroot_dir" /usr/bin/env -i "${root_env[@]}" OUT=/work/gpu-check \
  bash "$bundle/bin/zero-gpu-check" >"$work/gpu-check.log" 2>&1
status=$?
cat "$work/gpu-check.log"
# Every part the script lists as needing a GPU must report its skip.
gpu_parts=$(grep -cE '^  "[a-z0-9-]+ +[0-9]+ +[0-9]+ +gpu"$' "$root_dir/scripts/gpu-check.sh")
dry() {
  [ $status -eq 0 ] && [ "$gpu_parts" -ge 1 ] &&
    [ "$(grep -c ': skipped: no GPU on this machine' "$work/gpu-check.log")" -eq "$gpu_parts" ] &&
    grep -q 'sim-tests: passed' "$work/gpu-check.log" &&
    [ "$(ls "$chroot_dir/work/gpu-check" | wc -l)" -le 8 ]
}
check "the GPU check dry-runs: its $gpu_parts GPU parts skipped, the simulated streams pass, at most 8 files" dry

echo "test-bundle: $((SECONDS - start)) s in all"
finish "${ZERO_BUNDLE_RESULTS:-}"
