# Sourced by the CLI tests that need root for part of their checks (a veth testbed, a network
# namespace):  . "$(dirname "$0")/lib/common.bash"   (not a test itself: CMake adds only
# tests/cli/*.sh). It sets fail=0; tmp, a temporary directory removed on exit; id and x, numbers
# from the PID for names and addresses no concurrent run uses. On exit, when run as root, it
# first calls the test's root_cleanup function if the test defines one. lib_python3 runs python3
# with the modules of this directory importable (txframes.py: raw txpath frames).
fail=0
tmp=$(mktemp -d)
id=$(( $$ % 100000 ))
x=$(( $$ % 250 + 1 ))
lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

lib_python3() { PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$lib" python3 "$@"; }

common_cleanup() {
  if [ "$(id -u)" -eq 0 ] && declare -F root_cleanup >/dev/null; then root_cleanup; fi
  rm -rf "$tmp"
}
trap common_cleanup EXIT

# needs_root SKIP_LINE [PASSED_LINE]: without root, prints "SKIP: SKIP_LINE" (and PASSED_LINE if
# nothing has failed so far) and exits with $fail; when CI is set (CI runs as root) it fails.
needs_root() {
  [ "$(id -u)" -eq 0 ] && return 0
  if [ -n "${CI:-}" ]; then echo "FAIL: needs root (CI is set, so not skipped)"; exit 1; fi
  echo "SKIP: $1"
  [ "$fail" -eq 0 ] && [ -n "${2:-}" ] && echo "$2"
  exit "$fail"
}

# release_only WHAT: a comparison that checks text and statuses, not memory or threads, runs
# once, on the release build: under a sanitizer build (`txpath --version` names it) it prints
# "SKIP: WHAT ..." and exits 0. The unit tests and fuzzers cover the same code sanitized.
release_only() {
  if "$bin" --version 2>/dev/null | grep -q 'sanitizer'; then
    echo "SKIP: $1 runs on the release build only"
    exit 0
  fi
}

# not_under SANITIZER WHAT: skipped (exit 0, "SKIP: ...") in the build with that sanitizer
# (`thread` or `address`, as `txpath --version` names it); the other builds run it. For tests
# whose subject that sanitizer does not watch (single-threaded flag parsing under TSan; signals
# and threads, not memory, under ASan), to keep CI under its time limit.
not_under() {
  if "$bin" --version 2>/dev/null | grep -q "sanitizer $1"; then
    echo "SKIP: $2 does not run under the $1 sanitizer"
    exit 0
  fi
}

. "$lib/memcap.bash"  # memcap KIB

# bad ARGS...: `txpath ARGS` (the binary in $bin) must fail as bad usage: exit 2 and exactly one
# line on stderr, which is printed on stdout (out=$(bad ...) to look at it; a failure found in
# such a subshell is printed, and the caller's check of $out fails with it).
bad() {
  local err rc lines
  err=$("$bin" "$@" 2>&1 >/dev/null)
  rc=$?
  lines=$(printf '%s' "$err" | grep -c '')
  if [ "$rc" -ne 2 ] || [ "$lines" -ne 1 ]; then
    echo "FAIL: txpath $* -> exit $rc, $lines stderr line(s): $err"
    fail=1
  fi
  printf '%s\n' "$err"
}
