// SPDX-License-Identifier: MIT
// OpenMetrics (Prometheus text exposition) of the live queues a user may read: `txpath exporter`.
//
// Source: the live-statistics endpoints in the user's own endpoint directory (tc::stats_directory():
// per effective uid, private; each served by a running txpath process, see stats_socket.hpp), read
// with the same client as `txpath tc -s` (tc::fetch_stats(): it accepts a document only from a
// server of our own uid or root). Nothing else is read: another user's queues are not exported.
//
// Series (one family per counter, labelled dev, handle, parent, kind; OpenMetrics requires a
// family's samples to be contiguous, so the text is grouped by family, then queue, then entry):
//   txpath_{qdisc,class}_{packets,bytes,drops,overlimits,requeues}_total   counters
//   txpath_{qdisc,class}_backlog_bytes, txpath_{qdisc,class}_backlog_packets gauges
//   txpath_{qdisc,class}_xstat{...,name="NAME"}                           gauge (tc -s's xstats,
//                                                                           e.g. htb tokens, red marked)
//   txpath_exporter_endpoints{state="read"|"failed"}                       gauge
// Label values are escaped as OpenMetrics says (\\, \", \n); the body ends with "# EOF\n".
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
  std::string dev;
  std::vector<Entry> entries;
};

// The content type of render()'s text.
inline constexpr std::string_view kContentType =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

// A label value escaped for the exposition: backslash, double quote and newline as \\ \" \n.
std::string escape_label_value(std::string_view value);

// The exposition of `queues` (and `failed` endpoints that could not be read), "# EOF" last.
std::string render(std::span<const QueueSnapshot> queues, std::size_t failed = 0);

// The snapshot in a live-statistics document (src/tc/live.cpp), or nullopt if it is not one (or is
// an {"error": ...} document). `fallback_dev`: the device when the document does not name it.
std::optional<QueueSnapshot> parse_stats_document(std::string_view json, const std::string& fallback_dev);

// Reads every live endpoint in this user's endpoint directory (none if it is missing), each
// within `timeout`. *failed: how many endpoints answered with no usable document. Throws
// ConfigError if the directory is not private.
std::vector<QueueSnapshot> scrape_live_endpoints(std::chrono::milliseconds timeout, std::size_t* failed);

// The exporter's answer: render() of scrape_live_endpoints() (each endpoint within 2 s).
std::string live_metrics_text();

}  // namespace txpath::metrics
