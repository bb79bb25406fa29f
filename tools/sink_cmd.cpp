// SPDX-License-Identifier: MIT
// `txpath sink IFNAME`: counts txpath frames arriving on an interface (sink.hpp) until
// --duration passes or SIGINT/SIGTERM arrives, then prints a per-sender table (and JSON).
// Signals: main() blocks SIGINT/SIGTERM before any thread exists (prepare_sink_signals), so every
// thread inherits the mask and the main thread alone takes them with sigtimedwait().
// Exit codes: 0 ok; 2 bad option, the interface/netns cannot be opened or --json cannot be
// created (one line, user text quoted and escaped: core/text.hpp); 1 --json could not be
// written at the end (one line naming the file, after the table).
#include <fmt/core.h>

#include <charconv>
#include <csignal>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/file.hpp"
#include "core/text.hpp"
#include "net/sink.hpp"
#include "bench_cmd.hpp"
#include "net_cmds.hpp"
#include "txpath/error.hpp"

namespace txpath::cli {

namespace {

nlohmann::json to_json(const SinkOptions& o, const SinkReport& r, uint64_t cpu_ns) {
  nlohmann::json senders = nlohmann::json::array();
  for (const auto& s : r.senders) {
    senders.push_back({{"sender", s.sender}, {"received", s.received}, {"lost", s.lost},
                       {"duplicated", s.duplicated}, {"out_of_order", s.out_of_order},
                       {"out_of_window", s.out_of_window}, {"resyncs", s.resyncs},
                       {"max_seq", s.max_seq}, {"bytes", s.bytes}});
  }
  nlohmann::json timelines = nlohmann::json::array();
  for (const auto& t : r.timelines) {
    nlohmann::json windows = nlohmann::json::array(), curve = nlohmann::json::array();
    for (const auto& w : t.windows) windows.push_back({w.bytes, w.frames});
    for (const auto& a : t.curve) curve.push_back({a.t_ns, a.bytes});
    timelines.push_back({{"sender", t.sender}, {"origin_ns", t.origin_ns}, {"late", t.late},
                         {"windows", windows}, {"curve", curve}});
  }
  return {{"interface", o.ifname}, {"netns", o.netns}, {"seconds", r.seconds},
          {"frames", r.frames}, {"received", r.received}, {"lost", r.lost},
          {"duplicated", r.duplicated}, {"out_of_order", r.out_of_order},
          {"out_of_window", r.out_of_window}, {"resyncs", r.resyncs}, {"foreign", r.foreign},
          {"other", r.other}, {"socket_drops", r.socket_drops}, {"state_bytes", r.state_bytes},
          {"cpu_ns", cpu_ns}, {"senders", senders}, {"window_ns", r.window_ns},
          {"timelines", timelines}};
}

void print_table(std::FILE* out, const SinkOptions& o, const SinkReport& r, uint64_t cpu_ns) {
  fmt::print(out, "sink {}{}: {:.3f} s, receive thread CPU {:.3f} s\n", o.ifname,
             o.netns.empty() ? "" : " (netns " + o.netns + ")", r.seconds, cpu_ns / 1e9);
  fmt::print(out, "{:>8} {:>14} {:>12} {:>12} {:>12} {:>13} {:>14}\n", "sender", "received",
             "lost", "duplicated", "out_of_order", "out_of_window", "max_seq");
  for (const auto& s : r.senders)
    fmt::print(out, "{:>8} {:>14} {:>12} {:>12} {:>12} {:>13} {:>14}\n", s.sender, s.received,
               s.lost, s.duplicated, s.out_of_order, s.out_of_window, s.max_seq);
  fmt::print(out, "{:>8} {:>14} {:>12} {:>12} {:>12} {:>13}\n", "total", r.received, r.lost,
             r.duplicated, r.out_of_order, r.out_of_window);
  fmt::print(out, "other frames: {}, foreign frames (sender id >= {}): {}, socket drops: {}\n",
             r.other, kSinkMaxSenders, r.foreign, r.socket_drops);
  if (r.resyncs != 0)
    fmt::print(out, "resyncs: {} (a sender's numbers jumped {} or more ahead; not counted lost)\n",
               r.resyncs, kSinkMaxGap);
}

// --duration: seconds, a plain decimal number (an exponent is allowed, hex is not), 0 to 1e9.
double parse_duration(const std::string& text) {
  double v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v, std::chars_format::general);
  if (text.empty() || ec != std::errc{} || ptr != end || !std::isfinite(v) || v < 0 || v > 1e9)
    throw ConfigError("--duration: " + txpath::quoted(text) +
                      " is not a number of seconds in 0..1e9");
  return v;
}

// An unsigned decimal number in 0..max for option `name`.
uint64_t parse_count(const std::string& name, const std::string& text, uint64_t max) {
  uint64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc{} || ptr != end || v > max)
    throw ConfigError(name + ": " + txpath::quoted(text) + " is not a whole number in 0.." +
                      std::to_string(max));
  return v;
}

uint16_t parse_port(const std::string& text) {
  unsigned v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc{} || ptr != end || v > 65535)
    throw ConfigError("--absorb-port: " + txpath::quoted(text) +
                      " is not a port number in 0..65535");
  return static_cast<uint16_t>(v);
}

}  // namespace

void add_sink_command(CLI::App& app, SinkOptions& o) {
  CLI::App* sink = app.add_subcommand(
      "sink", "count txpath frames arriving on an interface (e.g. the testbed's peer end)");
  sink->add_option("IFNAME", o.ifname, "interface to receive on")->required();
  sink->add_option("--netns", o.netns, "named network namespace of the interface (ip netns)");
  sink->add_option("--duration", o.duration,
                   "seconds to count, 0..1e9 (default 0: until SIGINT/SIGTERM)");
  sink->add_option("--json", o.json, "also write the counts as JSON to FILE ('-': stdout, the table then goes to stderr)");
  sink->add_option("--absorb-port", o.absorb_port,
                   "bind a UDP socket to this port so the receiver sends no ICMP unreachables (0: don't)")
      ->capture_default_str();
  sink->add_option("--window-ms", o.window_ms,
                   "also count each sender's bytes in windows of this many ms, 0..3600000 (JSON "
                   "'timelines'; senders 0..63; default 0: none)");
  sink->add_option("--curve", o.curve,
                   "also record the arrival time of each sender's first N frames, 0..16384 (JSON "
                   "'timelines'; default 0: none)");
}

void prepare_sink_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

namespace {

// Returns after `duration` seconds (0: never) or at SIGINT/SIGTERM, whichever comes first.
void wait_for_end(double duration) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  if (duration <= 0) {
    int sig = 0;
    while (sigwait(&set, &sig) != 0) {
    }
    return;
  }
  timespec end{};
  clock_gettime(CLOCK_MONOTONIC, &end);
  const auto whole = static_cast<time_t>(duration);
  end.tv_sec += whole;
  end.tv_nsec += static_cast<long>((duration - static_cast<double>(whole)) * 1e9);
  if (end.tv_nsec >= 1000000000L) {
    end.tv_sec += 1;
    end.tv_nsec -= 1000000000L;
  }
  for (;;) {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec > end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
      return;
    timespec left{end.tv_sec - now.tv_sec, end.tv_nsec - now.tv_nsec};
    if (left.tv_nsec < 0) {
      left.tv_sec -= 1;
      left.tv_nsec += 1000000000L;
    }
    const int sig = sigtimedwait(&set, nullptr, &left);
    if (sig > 0) return;        // SIGINT/SIGTERM: stop early
    if (errno != EINTR) return;  // EAGAIN: time is up
  }
}

}  // namespace

int run_sink_command(const SinkOptions& o) {
  SinkReport report;
  uint64_t cpu_ns = 0;
  double duration = 0;
  std::unique_ptr<OutputFile> json;  // opened before counting: a bad path fails at once
  try {
    duration = parse_duration(o.duration);
    const uint16_t port = parse_port(o.absorb_port);
    if (!o.json.empty() && o.json != "-") json = std::make_unique<OutputFile>(o.json, "--json");
    const SinkTimelineConfig timeline{
        .window_ns = parse_count("--window-ms", o.window_ms, 3600000) * 1000000,
        .curve_points = static_cast<uint32_t>(parse_count("--curve", o.curve, kSinkMaxCurvePoints))};
    Sink sink(SinkConfig{.ifname = o.ifname, .netns = o.netns, .absorb_port = port,
                         .timeline = timeline});
    sink.start();
    std::FILE* info = o.json == "-" ? stderr : stdout;
    fmt::print(info, "txpath sink: counting on {}{}{}\n", o.ifname,
               o.netns.empty() ? "" : " in netns " + o.netns,
               duration > 0 ? fmt::format(" for {} s", duration) : " until SIGINT/SIGTERM");
    std::fflush(info);
    wait_for_end(duration);
    report = sink.stop();
    cpu_ns = sink.cpu_ns();
  } catch (const ConfigError& e) {
    fmt::print(stderr, "txpath: error: {}\n", e.what());
    return 2;
  } catch (const FileError& e) {
    fmt::print(stderr, "txpath: error: {}\n", e.what());
    return 2;
  }
  print_table(o.json == "-" ? stderr : stdout, o, report, cpu_ns);
  std::fflush(stdout);
  return write_json_document(o.json, json.get(), to_json(o, report, cpu_ns).dump(2) + "\n");
}

}  // namespace txpath::cli
