# Sourced by scripts/test-bundle.sh and scripts/test-wheel.sh: a minimal
# Debian root with none of our build dependencies (debootstrap's minbase,
# plus python3 and python3-venv for the wheel's venv), checks that print
# PASS/FAIL and a JUnit file of them, and the mounts a chroot needs.
#
# The caller sets chroot_dir and suite (the JUnit suite's name); the root is
# cached as a tar in $ZERO_BUNDLE_ROOT_CACHE, shared by both tests.

root_cache="${ZERO_BUNDLE_ROOT_CACHE:-/var/tmp/zero-minimal-root.tar}"
root_packages=python3,python3-venv

passed=0
failed=0
skipped=0
cases=()
check() { # check NAME COMMAND...: one named check
  local name="$1"
  shift
  if "$@"; then
    passed=$((passed + 1))
    echo "PASS: $name"
    cases+=("<testcase classname=\"$suite\" name=\"$name\"/>")
  else
    failed=$((failed + 1))
    echo "FAIL: $name"
    cases+=("<testcase classname=\"$suite\" name=\"$name\"><failure message=\"failed\"/></testcase>")
  fi
}
skip() { # skip NAME WHY: a check that cannot run here, counted and said
  skipped=$((skipped + 1))
  echo "SKIP: $1 ($2)"
  cases+=("<testcase classname=\"$suite\" name=\"$1\"><skipped message=\"$2\"/></testcase>")
}
# $1: a JUnit file of the checks, for scripts/summarize_tests.py (none if empty).
write_results() {
  [ -n "${1:-}" ] || return 0
  {
    echo '<?xml version="1.0" encoding="UTF-8"?>'
    echo "<testsuites><testsuite name=\"$suite\" tests=\"${#cases[@]}\" failures=\"$failed\" skipped=\"$skipped\">"
    printf '%s\n' "${cases[@]}"
    echo "</testsuite></testsuites>"
  } >"$1"
}
finish() { # finish RESULTS_FILE: the summary line and the exit status
  write_results "${1:-}"
  echo "$passed passed, $failed failed, $skipped skipped"
  [ $failed -eq 0 ]
}

unmount_root() {
  local mount
  for mount in host-site dev/shm proc sys; do
    mountpoint -q "$chroot_dir/$mount" 2>/dev/null && umount -l "$chroot_dir/$mount"
  done
  return 0
}

# debootstrap_root DIR LOG: a fresh minimal root in DIR (debootstrap
# installed first where it is missing); its output goes to LOG.
debootstrap_root() {
  local dir="$1" log="$2" mirror
  if ! command -v debootstrap >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
  fi
  mkdir -p "$dir"
  mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
  debootstrap --variant=minbase --include="$root_packages" bookworm "$dir" \
    "${mirror:-http://deb.debian.org/debian}" >"$log" 2>&1
}

# cache_root: makes $root_cache where there is none, written under a
# temporary name and renamed, so that an interrupted run leaves no partial
# root to unpack. scripts/test.sh --all runs it in the background while it
# builds, so that the bundle stage does not wait on the mirror.
cache_root() {
  [ -f "$root_cache" ] && return 0
  local dir status=0
  dir=$(mktemp -d /var/tmp/zero-minimal-root.XXXXXX)
  if debootstrap_root "$dir" "$dir.log"; then
    tar -C "$dir" -cf "$root_cache.partial" . && mv "$root_cache.partial" "$root_cache" || status=1
  else
    tail -n 20 "$dir.log"
    status=1
  fi
  rm -rf "$dir" "$dir.log" "$root_cache.partial"
  return $status
}

# make_root WORK_DIR: the root in $chroot_dir, from the cache or debootstrap.
# Returns 1 (after a failed check) where debootstrap fails.
make_root() {
  local work="$1"
  mkdir -p "$chroot_dir"
  if [ -f "$root_cache" ]; then
    tar -C "$chroot_dir" -xf "$root_cache"
    return 0
  fi
  if ! debootstrap_root "$chroot_dir" "$work/debootstrap.log"; then
    tail -n 20 "$work/debootstrap.log"
    echo "debootstrap failed"
    check "debootstrap makes a minimal Debian root" false
    return 1
  fi
  tar -C "$chroot_dir" -cf "$root_cache.partial" . && mv "$root_cache.partial" "$root_cache"
}

# The root holds none of what we build against.
bare_root() {
  ! find "$chroot_dir/usr" "$chroot_dir/lib" \
    \( -name 'libLLVM*' -o -name 'libMLIR*' -o -name 'libmpi*' -o -name 'libopen-pal*' \
    -o -name 'libopenblas*' -o -name 'libabsl*' -o -name 'mpirun' -o -name 'libcudart*' \) \
    2>/dev/null | grep -q .
}

mount_root() {
  mount -t proc proc "$chroot_dir/proc"
  mount -t sysfs sys "$chroot_dir/sys"
  mkdir -p "$chroot_dir/dev/shm"
  mount -t tmpfs shm "$chroot_dir/dev/shm"
}

# What runs inside gets a bare environment, plus this one's OpenBLAS
# settings (OPENBLAS_CORETYPE picks the kernels, and so the rounding): a
# comparison with the build tree is like for like.
root_env=(HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin)
while IFS= read -r setting; do root_env+=("$setting"); done < <(env | grep -E '^(OPENBLAS|OMP)_' || true)
