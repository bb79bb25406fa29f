// SPDX-License-Identifier: MIT
// The metrics of the live queues a user may read (`txpath exporter`), in the two Prometheus
// exposition formats: the classic text format (text/plain; version=0.0.4) and OpenMetrics 1.0.
//
// Source: the live-statistics endpoints in the user's own endpoint directory (tc::stats_directory():
// per effective uid, private; each served by a running txpath process, see stats_socket.hpp), read
// with the same client as `txpath tc -s` (tc::fetch_stats(): it accepts a document only from a
// server of our own uid or root). Nothing else is read: another user's queues are not exported.
//
// Series (one family per counter, labelled config, dev, handle, parent, kind: `config` is the
// configuration file's absolute path as the running process names it, so two processes on two
// files that name the same device never give one label set twice; a family's samples are
// contiguous, grouped by family, then queue, then entry; each family has # HELP and # TYPE):
//   txpath_{qdisc,class}_{packets,bytes,drops,overlimits,requeues}_total   counters
//   txpath_{qdisc,class}_backlog_bytes, txpath_{qdisc,class}_backlog_packets gauges
//   txpath_{qdisc,class}_xstat{...,name="NAME"}                           gauge (tc -s's xstats,
//                                                                           e.g. htb tokens, red marked)
//   txpath_exporter_endpoints{state="read"|"failed"}                       gauge
// The two formats differ only in how a counter's family is named (classic text: "..._total" in
// # HELP/# TYPE; OpenMetrics: the name without "_total", its samples "..._total") and in the
// "# EOF" line that ends OpenMetrics. Label values are escaped as both say (\\, \", \n).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "txpath/qdisc.hpp"

namespace txpath::metrics {

// One queue tree's counters, as one live endpoint served them.
struct QueueSnapshot {
  struct Entry {
    bool is_class = false;
    std::string handle;  // "1:" or "1:10" (tc's spelling)
    std::string parent;  // "root", "1:", "1:1"
    std::string kind;    // "htb" (a class: its qdisc's kind)
    QdiscStats stats;
    Xstats xstats;
  };
  std::string config;  // the configuration file's absolute path (the `config` label)
  std::string dev;
  std::vector<Entry> entries;
};

// The exposition formats, and their content types.
enum class Format { kPrometheusText, kOpenMetrics };
inline constexpr std::string_view kPrometheusTextType = "text/plain; version=0.0.4; charset=utf-8";
inline constexpr std::string_view kOpenMetricsType =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";
std::string_view content_type(Format format) noexcept;

// Content negotiation on an HTTP Accept header (several Accept headers joined with ","): OpenMetrics
// when the client asks for application/openmetrics-text (no version, or version=1.0.0) with a
// q-value above 0 and not below the best one it gives text/plain, text/* or */*; the classic text
// format otherwise (no header, "*/*", only text/plain, a malformed element: it is ignored).
Format negotiate_format(std::string_view accept);

// A label value escaped for the exposition: backslash, double quote and newline as \\ \" \n.
std::string escape_label_value(std::string_view value);

// The exposition of `queues` (and `failed` endpoints that could not be read) in `format`. A queue
// whose (config, dev) an earlier one in `queues` already had is left out (counted as failed), so
// no label set is ever given twice.
std::string render(std::span<const QueueSnapshot> queues, std::size_t failed = 0,
                   Format format = Format::kOpenMetrics);

// The snapshot in a live-statistics document (src/tc/live.cpp), or nullopt if it is not one (or is
// an {"error": ...} document). `fallback_dev`, `fallback_config`: the device and configuration when
// the document does not name them.
std::optional<QueueSnapshot> parse_stats_document(std::string_view json, const std::string& fallback_dev,
                                                  const std::string& fallback_config = {});

// Reads every live endpoint in this user's endpoint directory (none if it is missing): up to
// kParallelFetches at a time, all of them within `timeout` of the call (one that has not answered
// by then is given up), so a stalled endpoint, or many, cannot hold the scrape longer than
// `timeout`. *failed: how many endpoints answered with no usable document (or not in time).
// Throws ConfigError if the directory is not private.
inline constexpr std::size_t kParallelFetches = 8;
std::vector<QueueSnapshot> scrape_live_endpoints(std::chrono::milliseconds timeout, std::size_t* failed);

// The exporter's answer: render() of scrape_live_endpoints() (all endpoints within kScrapeTimeout).
inline constexpr std::chrono::milliseconds kScrapeTimeout{2000};
std::string live_metrics_text(Format format = Format::kOpenMetrics);

}  // namespace txpath::metrics
