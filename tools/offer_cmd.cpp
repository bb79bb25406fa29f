// SPDX-License-Identifier: MIT
// `txpath offer`: sends a fixed schedule of flows (bench/offer.hpp) and prints what each flow was
// offered and what the path took; --json adds the tc counters of txpath's tree at the end.
// Exit codes: 0 ok; 2 a bad option, flow or configuration, or a device that cannot be set up (one
// line, user text quoted and escaped); 1 the path failed while sending, or --json could not be
// written.
#include "offer_cmd.hpp"

#include <fmt/core.h>

#include <charconv>
#include <cmath>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "bench/offer.hpp"
#include "bench_cmd.hpp"
#include "core/file.hpp"
#include "core/text.hpp"
#include "txpath/error.hpp"

namespace txpath::cli {

void add_offer_command(CLI::App& app, OfferOptions& o) {
  CLI::App* c = app.add_subcommand(
      "offer", "send a fixed schedule of flows through the kernel's qdisc or txpath's (root)");
  c->add_option("--device", o.device, "afpacket:IF, the host end of a testbed")->required();
  c->add_option("--via", o.via, "kernel (UDP sockets into the interface's qdisc) or txpath")
      ->capture_default_str();
  c->add_option("--strategy", o.strategy, "txpath's strategy")->capture_default_str();
  c->add_option("--tc-config", o.tc_config, "txpath: the tc configuration whose tree runs");
  c->add_option("--tc-dev", o.tc_dev, "txpath: its device (default: its only one)");
  c->add_option("--flow", o.flows,
                "a flow: rate=RATE[,size=BYTES][,prio=N|MAJ:MIN][,tos=N][,start=S][,stop=S]"
                "[,queue=Q] (repeatable; flow i is the sink's sender i)")
      ->required();
  c->add_option("--duration", o.duration, "seconds of schedule, (0, 3600]")->capture_default_str();
  c->add_option("--json", o.json, "also write the report as JSON to FILE ('-': stdout)");
}

namespace {

nlohmann::json to_json(const OfferOptions& o, const bench_detail::OfferReport& r) {
  nlohmann::json flows = nlohmann::json::array();
  for (const auto& f : r.flows)
    flows.push_back({{"offered", f.offered}, {"accepted", f.accepted}, {"dropped", f.dropped},
                     {"bytes", f.bytes}});
  nlohmann::json j = {{"via", o.via}, {"device", o.device}, {"seconds", r.seconds},
                      {"max_late_ns", r.max_late_ns}, {"flows", flows}};
  if (!r.tc_stats_json.empty()) j["tc"] = nlohmann::json::parse(r.tc_stats_json);
  return j;
}

double parse_offer_duration(const std::string& text) {
  double v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc{} || ptr != end || !std::isfinite(v))
    throw ConfigError("--duration: " + txpath::quoted(text) + " is not a number of seconds");
  return v;
}

}  // namespace

int run_offer_command(const OfferOptions& o) {
  bench_detail::OfferConfig cfg;
  std::unique_ptr<OutputFile> json;
  bench_detail::OfferReport report;
  try {
    if (o.via != "kernel" && o.via != "txpath")
      throw ConfigError("--via: expected kernel or txpath, not " + txpath::quoted(o.via));
    cfg.via = o.via == "kernel" ? bench_detail::OfferVia::kernel : bench_detail::OfferVia::txpath;
    cfg.device = o.device;
    cfg.strategy = o.strategy;
    cfg.tc_config = o.tc_config;
    cfg.tc_dev = o.tc_dev;
    cfg.duration_s = parse_offer_duration(o.duration);
    for (const auto& f : o.flows) cfg.flows.push_back(bench_detail::parse_offer_flow(f));
    if (!o.json.empty() && o.json != "-") json = std::make_unique<OutputFile>(o.json, "--json");
  } catch (const ConfigError& e) {
    fmt::print(stderr, "txpath: error: {}\n", e.what());
    return 2;
  } catch (const FileError& e) {
    fmt::print(stderr, "txpath: error: {}\n", e.what());
    return 2;
  }
  std::FILE* info = o.json == "-" ? stderr : stdout;
  cfg.on_start = [info] {
    fmt::print(info, "txpath offer: schedule starts\n");  // scripts time live changes from it
    std::fflush(info);
  };
  try {
    report = bench_detail::run_offer(cfg);
  } catch (const ConfigError& e) {
    fmt::print(stderr, "txpath: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "txpath: error: {}\n", one_line(e.what()));
    return 1;
  }
  fmt::print(info, "offer via {} on {}: {:.3f} s, latest send {:.3f} ms after due\n", o.via,
             escape_user_text(o.device), report.seconds, static_cast<double>(report.max_late_ns) / 1e6);
  fmt::print(info, "{:>5} {:>12} {:>12} {:>12} {:>14}\n", "flow", "offered", "accepted", "dropped", "bytes");
  for (std::size_t i = 0; i < report.flows.size(); ++i) {
    const auto& f = report.flows[i];
    fmt::print(info, "{:>5} {:>12} {:>12} {:>12} {:>14}\n", i, f.offered, f.accepted, f.dropped, f.bytes);
  }
  std::fflush(info);
  return write_json_document(o.json, json.get(), to_json(o, report).dump(2) + "\n");
}

}  // namespace txpath::cli
