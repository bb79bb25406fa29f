#!/usr/bin/env bash
# Builds and runs the whole test suite three times: Release, ThreadSanitizer, ASan+UBSan.
# Then runs every libFuzzer target (fuzz/*.cpp) for 10 s each (four targets: CI stays under 30 minutes on 2 cores; TXPATH_FUZZ_SECONDS overrides) under ASan+UBSan.
# The release run also counts the atomic operations per packet (ctest atomics.per_packet: a second
# copy of the library built with its atomics instrumented, tests/atomics/); the sanitizer runs skip it.
# Usage: scripts/test-all.sh [release|tsan|asan|fuzz ...]   (default: all four)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)
# Unity builds (several sources compiled as one): the four builds take ~30% less time on 2 cores.
unity=(-DCMAKE_UNITY_BUILD=ON)
configs=("$@")
((${#configs[@]})) || configs=(release tsan asan fuzz)
for c in "${configs[@]}"; do
  case "$c" in
    release) dir=build-release; flags=(-DCMAKE_BUILD_TYPE=Release) ;;
    # TSan: clang, whose runtime is the one Debian ships hardened for it.
    # The examples run as tests in the release and ASan builds, not here (CI time).
    tsan)    dir=build-tsan; flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTXPATH_SANITIZE=thread
                                    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
                                    -DTXPATH_BUILD_BENCH=OFF -DTXPATH_BUILD_EXAMPLES=OFF) ;;
    # ASan+UBSan: clang too; GCC took twice as long to build it (9 vs 4 min on 2 cores).
    asan)    dir=build-asan; flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTXPATH_SANITIZE=address
                                    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
                                    -DTXPATH_BUILD_BENCH=OFF) ;;
    # libFuzzer: clang, ASan+UBSan, only the fuzz targets.
    fuzz)    dir=build-fuzz; flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTXPATH_SANITIZE=address
                                    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
                                    -DTXPATH_BUILD_FUZZ=ON -DTXPATH_BUILD_TESTS=OFF
                                    -DTXPATH_BUILD_BENCH=OFF) ;;
    *) echo "scripts/test-all.sh: unknown configuration '$c' (release, tsan, asan, fuzz)" >&2; exit 2 ;;
  esac
  if [ "$c" = fuzz ]; then
    echo "=== fuzz: configure + build ($dir) ==="
    cmake -S . -B "$dir" "${flags[@]}" "${unity[@]}" >/dev/null
    cmake --build "$dir" -j "$jobs"
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    for src in fuzz/*.cpp; do
      name=$(basename "$src" .cpp)
      corpus="fuzz/corpus/${name#fuzz_}"
      work=$(mktemp -d)
      echo "=== fuzz: $name for ${TXPATH_FUZZ_SECONDS:-10} s ==="
      # New inputs go to the scratch directory; the committed corpus is only read.
      "$dir/$name" -max_total_time="${TXPATH_FUZZ_SECONDS:-10}" -max_len=4096 -print_final_stats=1 \
        "$work" "$corpus" 2>&1 | tail -n 15
      rc=${PIPESTATUS[0]}
      rm -rf "$work"
      if [ "$rc" -ne 0 ]; then echo "=== fuzz: $name FAILED (exit $rc) ==="; exit 1; fi
    done
    continue
  fi
  echo "=== $c: configure + build ($dir) ==="
  cmake -S . -B "$dir" "${flags[@]}" "${unity[@]}" >/dev/null
  cmake --build "$dir" -j "$jobs"
  echo "=== $c: test ==="
  export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs"
done
echo "=== all test runs passed: ${configs[*]} ==="
