#!/usr/bin/env bash
# Builds the self-contained wheel of the Python package:
# dist/zero_compiler-VERSION-cpXY-cpXY-manylinux_2_N_x86_64.whl
# (docs/python.md, "Installing").
#
# It is the release bundle (scripts/bundle.sh: LLVM and MLIR linked
# statically, CUDA for sm_80 and sm_90) with the extension module built in
# the same tree, laid out as a Python package:
#   zero/*.py, zero/_zero.*.so      the package
#   zero/_bundle/bin/               zero-opt, zero-run, zero-ckpt, gpt2_train,
#                                   zero-env (console entry points run them)
#   zero/_bundle/lib/               the shared libraries a bare x86-64 Linux
#                                   lacks, and the CUDA backend
#   zero/_bundle/openmpi/           Open MPI's runtime, mpirun included
# A wheel holds no symbolic links: each is replaced by the file it names.
# Every ELF file gets a RUNPATH into lib/ and Open MPI's lib/ (patchelf), so
# that the extension module loads in any interpreter without
# LD_LIBRARY_PATH. CUDA's libraries do not travel: zero-env finds them
# (PyTorch's nvidia-* wheels count). The platform tag is manylinux_2_N for
# the newest glibc symbol version any file needs; the interpreter tag is
# that of the python3 it was built for.
#
#   scripts/wheel.sh     build-bundle/, dist/
# Fails if the wheel is larger than ZERO_WHEEL_MAX_MIB (default 60).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ZERO_BUNDLE_BUILD_DIR:-$root/build-bundle}"
dist="$root/dist"
max_mib="${ZERO_WHEEL_MAX_MIB:-60}"

bash "$root/scripts/bundle.sh"
need=()
for pkg in patchelf; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "wheel: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if ! python3 -c 'import wheel' 2>/dev/null; then
  echo "wheel: installing the wheel package (wheel pack writes the archive and its RECORD)"
  python3 -m pip install --quiet "wheel>=0.40"
fi

ZERO_BUILD_DIR="$build" ZERO_TARGETS=ZeroPython bash "$root/scripts/build.sh"
module=$(ls "$build"/python/zero/_zero.*.so 2>/dev/null | head -1)
if [ -z "$module" ]; then
  echo "wheel: $build has no extension module (see $build.configure.log: Python package)" >&2
  exit 1
fi

version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
bundle="$dist/zero-$version-linux-x86_64"
stage="$build/wheel/zero_compiler-$version"
package="$stage/zero"
rm -rf "$build/wheel"
mkdir -p "$package/_bundle/bin"

cp "$root"/python/zero/*.py "$package/"
install -m 755 "$module" "$package/"
for tool in zero-opt zero-run zero-ckpt gpt2_train zero-env; do
  install -m 755 "$bundle/bin/$tool" "$package/_bundle/bin/"
done
# -L: a wheel has no symbolic links, so each becomes a copy of the file it
# names; then only the name the loader asks for (the SONAME) is kept.
cp -rL "$bundle/lib" "$bundle/openmpi" "$bundle/VERSION" "$package/_bundle/"
is_elf() { [ "$(head -c 4 "$1" | tr -d '\0')" = $'\x7fELF' ]; }
while IFS= read -r -d '' file; do
  is_elf "$file" || continue
  soname=$(objdump -p "$file" | awk '$1 == "SONAME" {print $2}')
  [ -n "$soname" ] && [ "$soname" != "$(basename "$file")" ] || continue
  if [ -e "$(dirname "$file")/$soname" ]; then
    rm "$file"
  else
    mv "$file" "$(dirname "$file")/$soname"
  fi
done < <(find "$package/_bundle/lib" "$package/_bundle/openmpi" -maxdepth 5 -name 'lib*.so*' -type f -print0)

# RUNPATHs: each ELF file finds lib/ and Open MPI's lib/ relative to itself.
bundle_dir="$package/_bundle"
mpilib="$bundle_dir/openmpi/lib/x86_64-linux-gnu/openmpi/lib"
glibc_minor=17
newest=""
while IFS= read -r -d '' file; do
  is_elf "$file" || continue
  here=$(dirname "$file")
  case "$file" in */lib/fallback/*) ;; *)
    patchelf --set-rpath "\$ORIGIN/$(realpath --relative-to="$here" "$bundle_dir/lib"):\$ORIGIN/$(realpath --relative-to="$here" "$mpilib")" "$file"
    ;;
  esac
  needed=$({ objdump -T "$file" 2>/dev/null || true; } | { grep -o 'GLIBC_2\.[0-9]*' || true; } |
    sed 's/GLIBC_2\.//' | sort -n | tail -1)
  if [ -n "$needed" ] && [ "$needed" -gt "$glibc_minor" ]; then newest="$file"; fi
  if [ -n "$needed" ] && [ "$needed" -gt "$glibc_minor" ]; then glibc_minor=$needed; fi
done < <(find "$package" -type f -print0)

echo "wheel: glibc 2.$glibc_minor is the newest any file needs (${newest#"$package/"})"
python_tag=$(python3 -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
platform="manylinux_2_${glibc_minor}_x86_64"
info="$stage/zero_compiler-$version.dist-info"
mkdir -p "$info"
python3 - "$root/pyproject.toml" "$info/METADATA" <<'PY'
import sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
lines = ["Metadata-Version: 2.1", f"Name: {project['name']}",
         f"Version: {project['version']}", f"Summary: {project['description']}",
         f"Requires-Python: {project['requires-python']}"]
lines += [f"Requires-Dist: {dependency}" for dependency in project["dependencies"]]
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
PY
cat >"$info/WHEEL" <<WHEEL
Wheel-Version: 1.0
Generator: zero scripts/wheel.sh
Root-Is-Purelib: false
Tag: $python_tag-$python_tag-$platform
WHEEL
{
  echo "[console_scripts]"
  echo "zero-opt = zero._bundle:zero_opt"
  echo "zero-run = zero._bundle:zero_run"
  echo "zero-ckpt = zero._bundle:zero_ckpt"
  echo "gpt2_train = zero._bundle:gpt2_train"
  echo "zero-env = zero._bundle:zero_env"
} >"$info/entry_points.txt"

rm -f "$dist"/zero_compiler-"$version"-*.whl
python3 -m wheel pack "$stage" --dest-dir "$dist" >/dev/null
wheel_file=$(ls "$dist"/zero_compiler-"$version"-*.whl)
bytes=$(stat -c %s "$wheel_file")
mib=$(( (bytes + 1048575) / 1048576 ))
echo "wheel: $wheel_file: $bytes bytes ($mib MiB; limit $max_mib MiB)"
echo "wheel: installed $(du -sh "$package" | cut -f1); _bundle/lib: $(ls "$bundle_dir/lib" | wc -l) entries"
if [ "$mib" -gt "$max_mib" ]; then
  echo "wheel: larger than $max_mib MiB" >&2
  exit 1
fi
