// SPDX-License-Identifier: MIT
// `txpath sink IFNAME`: counts txpath frames arriving on an interface (sink.hpp) until
// --duration passes or SIGINT/SIGTERM arrives, then prints a per-sender table (and JSON).
// Signals: main() blocks SIGINT/SIGTERM before any thread exists (prepare_sink_signals), so every
// thread inherits the mask and the main thread alone takes them with sigtimedwait().
// Exit codes: 0 ok; 2 bad option or the interface/netns cannot be opened (one line).
#include <fmt/core.h>

#include <csignal>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "net_cmds.hpp"
#include "txpath/error.hpp"
#include "txpath/sink.hpp"

namespace txpath::cli {

namespace {

nlohmann::json to_json(const SinkOptions& o, const SinkReport& r, uint64_t cpu_ns) {
  nlohmann::json senders = nlohmann::json::array();
  for (const auto& s : r.senders) {
    senders.push_back({{"sender", s.sender}, {"received", s.received}, {"lost", s.lost},
                       {"duplicated", s.duplicated}, {"out_of_order", s.out_of_order},
                       {"max_seq", s.max_seq}, {"bytes", s.bytes}});
  }
  return {{"interface", o.ifname}, {"netns", o.netns}, {"seconds", r.seconds},
          {"frames", r.frames}, {"received", r.received}, {"lost", r.lost},
          {"duplicated", r.duplicated}, {"out_of_order", r.out_of_order}, {"other", r.other},
          {"socket_drops", r.socket_drops}, {"cpu_ns", cpu_ns}, {"senders", senders}};
}

void print_table(std::FILE* out, const SinkOptions& o, const SinkReport& r, uint64_t cpu_ns) {
  fmt::print(out, "sink {}{}: {:.3f} s, receive thread CPU {:.3f} s\n", o.ifname,
             o.netns.empty() ? "" : " (netns " + o.netns + ")", r.seconds, cpu_ns / 1e9);
  fmt::print(out, "{:>8} {:>14} {:>12} {:>12} {:>12} {:>14}\n", "sender", "received", "lost",
             "duplicated", "out_of_order", "max_seq");
  for (const auto& s : r.senders)
    fmt::print(out, "{:>8} {:>14} {:>12} {:>12} {:>12} {:>14}\n", s.sender, s.received, s.lost,
               s.duplicated, s.out_of_order, s.max_seq);
  fmt::print(out, "{:>8} {:>14} {:>12} {:>12} {:>12}\n", "total", r.received, r.lost,
             r.duplicated, r.out_of_order);
  fmt::print(out, "other frames: {}, socket drops: {}\n", r.other, r.socket_drops);
}

}  // namespace

void add_sink_command(CLI::App& app, SinkOptions& o) {
  CLI::App* sink = app.add_subcommand(
      "sink", "count txpath frames arriving on an interface (e.g. the testbed's peer end)");
  sink->add_option("IFNAME", o.ifname, "interface to receive on")->required();
  sink->add_option("--netns", o.netns, "named network namespace of the interface (ip netns)");
  sink->add_option("--duration", o.duration, "seconds to count (default: until SIGINT/SIGTERM)")
      ->check(CLI::NonNegativeNumber);
  sink->add_option("--json", o.json, "also write the counts as JSON to FILE ('-': stdout, the table then goes to stderr)");
  sink->add_option("--absorb-port", o.absorb_port,
                   "bind a UDP socket to this port so the receiver sends no ICMP unreachables (0: don't)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
}

void prepare_sink_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int run_sink_command(const SinkOptions& o) {
  SinkReport report;
  uint64_t cpu_ns = 0;
  try {
    if (!std::isfinite(o.duration)) throw ConfigError("--duration: not a finite number");
    if (!o.json.empty() && o.json != "-") {
      std::ofstream probe(o.json, std::ios::app);
      if (!probe) throw ConfigError("--json: cannot write \"" + o.json + "\"");
    }
    Sink sink(SinkConfig{.ifname = o.ifname, .netns = o.netns,
                         .absorb_port = static_cast<uint16_t>(o.absorb_port)});
    sink.start();
    std::FILE* info = o.json == "-" ? stderr : stdout;
    fmt::print(info, "txpath sink: counting on {}{}{}\n", o.ifname,
               o.netns.empty() ? "" : " in netns " + o.netns,
               o.duration > 0 ? fmt::format(" for {} s", o.duration) : " until SIGINT/SIGTERM");
    std::fflush(info);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    if (o.duration > 0) {
      timespec end{};
      clock_gettime(CLOCK_MONOTONIC, &end);
      const auto whole = static_cast<time_t>(o.duration);
      end.tv_sec += whole;
      end.tv_nsec += static_cast<long>((o.duration - static_cast<double>(whole)) * 1e9);
      if (end.tv_nsec >= 1000000000L) {
        end.tv_sec += 1;
        end.tv_nsec -= 1000000000L;
      }
      for (;;) {
        timespec now{};
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
          break;
        timespec left{end.tv_sec - now.tv_sec, end.tv_nsec - now.tv_nsec};
        if (left.tv_nsec < 0) {
          left.tv_sec -= 1;
          left.tv_nsec += 1000000000L;
        }
        const int sig = sigtimedwait(&set, nullptr, &left);
        if (sig > 0) break;  // SIGINT/SIGTERM: stop early
        if (errno != EINTR) break;  // EAGAIN: time is up
      }
    } else {
      int sig = 0;
      while (sigwait(&set, &sig) != 0) {
      }
    }
    report = sink.stop();
    cpu_ns = sink.cpu_ns();
  } catch (const ConfigError& e) {
    fmt::print(stderr, "txpath: error: {}\n", e.what());
    return 2;
  }
  if (o.json == "-") {
    print_table(stderr, o, report, cpu_ns);
    std::cout << to_json(o, report, cpu_ns).dump(2) << "\n";
    std::cout.flush();
    if (!std::cout) return 2;
  } else {
    print_table(stdout, o, report, cpu_ns);
    if (!o.json.empty()) {
      std::ofstream out(o.json, std::ios::trunc);
      out << to_json(o, report, cpu_ns).dump(2) << "\n";
      if (!out) {
        fmt::print(stderr, "txpath: error: --json: cannot write \"{}\"\n", o.json);
        return 2;
      }
    }
  }
  return 0;
}

}  // namespace txpath::cli
