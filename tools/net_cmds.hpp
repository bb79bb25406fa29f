// SPDX-License-Identifier: MIT
// `txpath testbed up|down|show` and `txpath sink`: the veth testbed and the frame counter on its
// far end (see src/net/testbed.hpp and sink.hpp).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "net/testbed.hpp"

namespace txpath::cli {

struct TestbedOptions {
  TestbedConfig config;
  CLI::App* up = nullptr;
  CLI::App* down = nullptr;
  CLI::App* show = nullptr;
};

struct SinkOptions {
  std::string ifname;
  std::string netns;
  std::string duration = "0";  // seconds; 0: until SIGINT/SIGTERM (parsed by run_sink_command)
  std::string json;
  std::string absorb_port = "9000";
  std::string window_ms = "0";  // the timeline's window (SinkTimelineConfig); 0: none
  std::string curve = "0";      // the timeline's first arrivals per sender; 0: none
};

void add_testbed_command(CLI::App& app, TestbedOptions& options);
int run_testbed_command(const TestbedOptions& options);

void add_sink_command(CLI::App& app, SinkOptions& options);
// Call before any thread is started: blocks SIGINT/SIGTERM so that the sink can sigwait for them.
void prepare_sink_signals();
int run_sink_command(const SinkOptions& options);

}  // namespace txpath::cli
