#!/usr/bin/env bash
# Builds the relocatable release bundle: dist/zero-VERSION-linux-x86_64.tar.xz
# (docs/building.md, "Running on a GPU machine without our build
# dependencies"). Release, CUDA for sm_80 and sm_90, LLVM and MLIR linked
# statically; every shared library the programs need that a bare x86-64
# Linux with an NVIDIA driver lacks travels in lib/, Open MPI's runtime in
# openmpi/ (relocated through OPAL_PREFIX by bin/zero-env). CUDA's own
# libraries do not travel: bin/zero-env finds them on the target.
#
#   scripts/bundle.sh            build-bundle/ and dist/
# Fails if the archive is larger than ZERO_BUNDLE_MAX_MIB (default 60).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ZERO_BUNDLE_BUILD_DIR:-$root/build-bundle}"
dist="$root/dist"
max_mib="${ZERO_BUNDLE_MAX_MIB:-60}"

bash "$root/scripts/setup.sh"
need=()
for pkg in libzstd-dev xz-utils; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "bundle: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "bundle: the bundle carries the CUDA backend, and no nvcc was found" >&2
  exit 1
fi

ZERO_BUILD_DIR="$build" ZERO_BUILD_TYPE=Release \
  ZERO_TARGETS="zero-run zero-opt zero-ckpt gpt2_train zero-bench-adamw ZeroCudaBackend ZeroCudaKernelTests ZeroRuntimeSimTests" \
  ZERO_CMAKE_ARGS="-DZERO_STATIC_LLVM=ON -DCMAKE_CUDA_ARCHITECTURES=80;90" \
  bash "$root/scripts/build.sh"
if ! grep -q "^ZERO_HAS_CUDA:INTERNAL=ON\|CUDA.*found: building" "$build.configure.log"; then
  echo "bundle: $build was configured without CUDA" >&2
  exit 1
fi

version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
commit=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
name="zero-$version-linux-x86_64"
stage="$dist/$name"
rm -rf "$stage" "$dist/$name.tar.xz"
mkdir -p "$stage"/{bin,lib/fallback,libexec/zero,share/zero}

# Programs, the CUDA backend module, the GPU test binaries.
for tool in zero-run zero-opt zero-ckpt gpt2_train zero-bench-adamw; do
  install -m 755 "$build/bin/$tool" "$stage/bin/"
done
install -m 755 "$build/lib/libZeroCudaBackend.so" "$stage/lib/"
install -m 755 "$build/test/unit/cuda/ZeroCudaKernelTests" \
  "$build/test/unit/runtime/ZeroRuntimeSimTests" "$stage/libexec/zero/"
install -m 755 "$root/scripts/bundle/zero-env" "$stage/bin/"
install -m 755 "$root/scripts/gpu-check.sh" "$stage/bin/zero-gpu-check"
echo "$version ($commit)" >"$stage/VERSION"

# What the checks and benchmarks read: examples, the corpus, the e2e
# scripts and the GPT-2 benchmark.
mkdir -p "$stage/share/zero/examples/gpt2/data" "$stage/share/zero/test/e2e" "$stage/share/zero/bench"
cp "$root"/examples/*.mlir "$root/examples/gen_gpt2.py" "$stage/share/zero/examples/"
cp "$root"/examples/gpt2/data/* "$stage/share/zero/examples/gpt2/data/"
cp "$root"/test/e2e/*.py "$stage/share/zero/test/e2e/"
cp -r "$root"/test/e2e/inputs "$stage/share/zero/test/e2e/" 2>/dev/null || true
cp "$root/bench/gpu_gpt2.sh" "$stage/share/zero/bench/"

# Open MPI's runtime, laid out as under /usr so that OPAL_PREFIX relocates
# every directory it derives from the prefix.
mpi="$stage/openmpi"
mpilib_rel=lib/x86_64-linux-gnu/openmpi/lib
mkdir -p "$mpi/bin" "$mpi/$mpilib_rel" "$mpi/share" "$mpi/etc"
install -m 755 /usr/bin/orterun /usr/bin/orted "$mpi/bin/"
ln -s orterun "$mpi/bin/mpirun"
# Open MPI's libraries and MCA components, except those that need an
# InfiniBand, UCX, libfabric, PSM or CUDA stack (or Java, or Fortran): ranks
# on one node talk over shared memory, and those stacks are large.
heavy_re='libucp|libucs|libuct|libfabric|libibverbs|libpsm|librdmacm|libcuda|libnuma|libjvm|libgfortran'
portable() {
  local deps
  deps=$(ldd "$1" 2>/dev/null) || return 1
  ! grep -qE "$heavy_re|not found" <<<"$deps"
}
for library in /usr/lib/x86_64-linux-gnu/openmpi/lib/*.so*; do
  case "$(basename "$library")" in libmpi_java* | libmpi_mpifh* | libmpi_usempi*) continue ;; esac
  if [ -L "$library" ] || portable "$library"; then
    cp -a "$library" "$mpi/$mpilib_rel/"
  fi
done
cp -a /usr/share/openmpi "$mpi/share/"
cp /etc/openmpi/openmpi-mca-params.conf /etc/openmpi/openmpi-default-hostfile "$mpi/etc/"
mkdir -p "$mpi/$mpilib_rel/openmpi3"

# Shared libraries: everything ldd names except the C library's own, the
# NVIDIA driver's and CUDA's (found on the target), and GCC's C++ runtime,
# which goes to lib/fallback (zero-env uses it only where the system has
# none).
system_re='^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libresolv|libutil)\.so'
cuda_re='^(libcuda|libcudart|libcublas|libcublasLt|libnccl|libnvidia-.*)\.so'
copy_dependencies() {
  local object="$1"
  { ldd "$object" 2>/dev/null || true; } | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' |
    while read -r soname path; do
      if [[ "$soname" =~ $system_re || "$soname" =~ $cuda_re ]]; then continue; fi
      if [[ "$soname" =~ ^(libstdc\+\+|libgcc_s)\.so ]]; then
        [ -e "$stage/lib/fallback/$soname" ] || cp -L "$path" "$stage/lib/fallback/$soname"
        continue
      fi
      [ -e "$stage/lib/$soname" ] || [ -e "$mpi/$mpilib_rel/$soname" ] ||
        cp -L "$path" "$stage/lib/$soname"
    done
}
for component in /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so; do
  portable "$component" && cp -a "$component" "$mpi/$mpilib_rel/openmpi3/"
done
# PMIx, under Open MPI, has components of its own.
mkdir -p "$stage/lib/pmix"
cp -a /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix/*.so "$stage/lib/pmix/"
# Symbolic links whose library stayed behind.
find "$mpi/$mpilib_rel" -xtype l -delete
for object in "$stage"/bin/zero-run "$stage"/bin/zero-opt "$stage"/bin/zero-ckpt "$stage"/bin/gpt2_train \
  "$stage"/bin/zero-bench-adamw "$stage"/lib/libZeroCudaBackend.so \
  "$stage"/libexec/zero/* "$mpi"/bin/orterun "$mpi"/bin/orted \
  "$mpi/$mpilib_rel"/*.so* "$mpi/$mpilib_rel"/openmpi3/*.so "$stage"/lib/pmix/*.so; do
  copy_dependencies "$object"
done
# OpenBLAS is loaded as libblas/libopenblas through Debian's alternatives;
# the soname the programs ask for is what ldd resolved above.

tar -C "$dist" -cJf "$dist/$name.tar.xz" "$name"
bytes=$(stat -c %s "$dist/$name.tar.xz")
mib=$(( (bytes + 1048575) / 1048576 ))
echo "bundle: $dist/$name.tar.xz: $bytes bytes ($mib MiB; limit $max_mib MiB)"
echo "bundle: unpacked $(du -sh "$stage" | cut -f1); lib/: $(ls "$stage/lib" | wc -l) libraries, Open MPI components: $(ls "$mpi/$mpilib_rel/openmpi3" | wc -l)"
if [ "$mib" -gt "$max_mib" ]; then
  echo "bundle: larger than $max_mib MiB" >&2
  exit 1
fi
