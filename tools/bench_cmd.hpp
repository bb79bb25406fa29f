// SPDX-License-Identifier: MIT
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "txpath/bench.hpp"

namespace txpath::cli {

struct BenchOptions {
  std::string strategies = "all";
  std::string threads;  // empty: library default
  double duration = 0.5;
  std::string lock = "ticket";
  std::string park = "on";  // on | off | on,off
  std::string device = "nic";
  std::string qdisc = "pfifo_fast";
  std::string tc_config;  // --tc-config FILE
  std::string tc_dev;     // --tc-dev NAME
  std::size_t payload = 32;
  std::string json;
  std::string csv;
  std::string plot;
  int repeat = 3;
  int nodes = 0;
  bool pin = false;
  bool no_pin = false;
  bool quiet = false;
  std::string sink = "auto";
  bool no_kernel_row = false;
};

void add_bench_command(CLI::App& app, BenchOptions& options);
int run_bench_command(const BenchOptions& options);

}  // namespace txpath::cli
