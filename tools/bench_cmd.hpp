// SPDX-License-Identifier: MIT
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "bench/bench.hpp"

namespace txpath {
class OutputFile;  // core/file.hpp
}

namespace txpath::cli {

struct BenchOptions {
  std::string strategies = "all";
  std::string threads;  // empty: library default
  std::string queues;   // --queues LIST; empty: the device spec's own count (1)
  std::string xps = "auto";  // --xps auto | off | CPU:Q[+Q...],...
  double duration = 0.3;  // the default run (132 runs on 2 cores) fits 60 s: docs/bench.md
  std::string lock = "ticket";
  std::string park = "on";  // on | off | on,off
  std::string device = "nic";
  std::string qdisc = "pfifo_fast";
  std::string tc_config;  // --tc-config FILE
  std::string tc_dev;     // --tc-dev NAME
  std::string metrics;    // --metrics HOST:PORT: an exporter of this user's live queues meanwhile
  std::size_t payload = 32;
  int burst = 1;  // --burst N: packets per send call (1..1024)
  uint64_t sndbuf = txpath::kDefaultSndbuf;  // --sndbuf BYTES: each sender's send budget (0: none)
  std::string json;
  std::string csv;
  std::string plot;
  int repeat = 3;
  int nodes = 0;
  bool pin = false;
  bool no_pin = false;
  bool quiet = false;
  bool wide = false;    // --wide: every column of the table
  double interval = 0;  // --interval S: a line per S seconds of each run (0: none)
  std::string sink = "auto";
  bool no_kernel_row = false;
  std::vector<std::string> command_line;  // argv as given, recorded in --json (main() sets it)
  uint64_t seed = 0;         // --seed N: the order of rows in each round (0: a random one)
  bool in_process = false;   // --in-process: every round in this process (no workers)
  std::string worker;        // hidden --worker THREADS:ROUND: run that round, print its text
  std::vector<std::string> args;  // the command line after the program name (workers re-run it)
  double rate = 0;             // --rate PPS (all senders); 0: flat out
  double rate_per_sender = 0;  // --rate-per-sender PPS
  uint32_t flows = 1;          // --flows N per sender
  std::string source;          // --source pcap:FILE
  double replay_speed = 0;     // --replay-speed X; 0: flat out
};

void add_bench_command(CLI::App& app, BenchOptions& options);
// Runs the bench and prints its table, then writes --json/--csv/--plot. Returns the exit status
// (tools/main.cpp): 0; 1 a check failed or an output could not be written (after the table);
// 2 bad usage or configuration (before anything runs); 130/143 stopped by SIGINT/SIGTERM. A
// worker process that failed: 1 (killed, or malformed output: one error line), or the status
// of a worker that printed its own error line.
int run_bench_command(const BenchOptions& options);

// An error message as one safe terminal line: as is when it is printable ASCII of at most 400 bytes
// (every message that quotes its user text with txpath::quoted() is); otherwise (a message that
// echoed user text raw, CLI11's own messages) escaped and cut as a whole by escape_user_text().
std::string one_line(std::string_view message);

// A command's --json document, after its table: "-" writes it to stdout (1 if stdout failed);
// else into `file` (opened before the run; nullptr: no --json) and commits it, a failure one line
// on stderr (1). 0 when written.
int write_json_document(const std::string& json_option, OutputFile* file, const std::string& text);

}  // namespace txpath::cli
