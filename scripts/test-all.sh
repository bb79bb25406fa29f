#!/usr/bin/env bash
# Builds and runs the whole test suite three times: Release, ThreadSanitizer, ASan+UBSan.
# Usage: scripts/test-all.sh [release|tsan|asan ...]   (default: all three)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)
configs=("$@")
((${#configs[@]})) || configs=(release tsan asan)
for c in "${configs[@]}"; do
  case "$c" in
    release) dir=build-release; flags=(-DCMAKE_BUILD_TYPE=Release) ;;
    # TSan: clang, whose runtime is the one Debian ships hardened for it.
    tsan)    dir=build-tsan; flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTXPATH_SANITIZE=thread
                                    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
                                    -DTXPATH_BUILD_BENCH=OFF) ;;
    asan)    dir=build-asan; flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTXPATH_SANITIZE=address
                                    -DTXPATH_BUILD_BENCH=OFF) ;;
    *) echo "scripts/test-all.sh: unknown configuration '$c' (release, tsan, asan)" >&2; exit 2 ;;
  esac
  echo "=== $c: configure + build ($dir) ==="
  cmake -S . -B "$dir" "${flags[@]}" >/dev/null
  cmake --build "$dir" -j "$jobs"
  echo "=== $c: test ==="
  export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs"
done
echo "=== all test runs passed: ${configs[*]} ==="
