// SPDX-License-Identifier: MIT
// Bench configurations for the tests of the bench engine (test_bench.cpp, test_traffic.cpp): a
// small unpinned run on the null device, and the check that a configuration is refused with one
// line.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "bench/bench.hpp"
#include "txpath/error.hpp"

namespace txpath::test {

// An unpinned bench of these strategies and thread counts on the null device.
inline BenchConfig null_bench(std::vector<std::string> strategies, std::vector<int> threads,
                              double duration_s, int repeat) {
  BenchConfig c;
  c.strategies = std::move(strategies);
  c.threads = std::move(threads);
  c.duration_s = duration_s;
  c.device = "null";
  c.pin = false;
  c.repeat = repeat;
  return c;
}

// resolve_bench_config(c) must refuse c with one line that contains `needle`.
inline void expect_error(const BenchConfig& c, const std::string& needle) {
  try {
    resolve_bench_config(c);
    ADD_FAILURE() << "accepted a config that should fail with: " << needle;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
}

}  // namespace txpath::test
