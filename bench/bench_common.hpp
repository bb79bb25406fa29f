// SPDX-License-Identifier: MIT
// Shared helpers for the Google Benchmark micro-benchmarks in bench/ (not part of the test run).
#pragma once

#include <benchmark/benchmark.h>

#include "txpath/pool.hpp"

// DoNotOptimize: always pass a const reference (std::as_const(x)) for a value used afterwards.
// libbenchmark 1.7.1's non-const overload uses the asm constraint "+m,r", which GCC 12
// miscompiles under -fsanitize=address (the result is read back from a different stack slot
// than the one written), and TXPATH_SANITIZE=address builds compile these files too.
namespace txpath::bench {

// Every benchmark returns all of its packets: the pool must be full again once the benchmark's
// caches, qdiscs and devices are gone. A leak is reported as a benchmark error, not ignored.
inline void expect_pool_full(benchmark::State& state, const Pool& pool) {
  if (pool.free_count() != pool.capacity()) {
    state.SkipWithError("packets leaked: the pool is not full at the end of the benchmark");
  }
}

}  // namespace txpath::bench
