// SPDX-License-Identifier: MIT
// The text table `txpath bench` prints: a row per point, 120 columns wide by default (every
// column with `wide`), with units in the headers, the drop and sink-loss figures beside the
// ratios, and marks for rows a reader must not take at face value (unstable rounds, a ratio won
// by dropping most of the offered load). Rows can be printed as their points become final
// (BenchConfig::on_points): the layout is fixed from the configuration before the first row.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "bench/bench.hpp"

namespace txpath {

// The default table's width: every line of the header, the rows and the notes fits it.
inline constexpr std::size_t kTableColumns = 120;
// A row that dropped (or lost at the sink) this share of what it was offered, in percent or
// more, has its Mpps ratios marked: it "wins" by not carrying the load.
inline constexpr double kDropMarkPct = 50.0;

// Which columns the table has.
struct TableLayout {
  bool wide = false;    // every column (the min..max range, CV, CI, fairness, batch, waits, p50,
                        // requeues) and the full check text
  bool queues = false;  // a txq column: some point runs on several TX queues
  bool kernel = false;  // vs kernel columns: the kernel row runs
  bool sink = false;    // a lost% column: arrivals may be counted (a real device, --sink not none)
  bool limit = false;   // a vs limit column: 2+ pinned senders, where the limit row is measured
                        // (left out of the narrow table beside both kernel and lost% columns)
  bool dpdk = false;    // a vs dpdk column: peer:dpdk runs (left out of the narrow table beside
                        // the kernel's columns)
  int repeat = 1;       // rounds asked for (a stopped row says how many ran)
};

// The layout for a resolved configuration (resolve_bench_config()).
TableLayout table_layout(const BenchConfig& resolved, bool wide);

// The two header lines (column groups, then column names with their units).
std::string table_header(const TableLayout& layout);
// One line per point.
std::string table_rows(const TableLayout& layout, std::span<const BenchPoint> points);
// The notes that explain the rows' marks, one line each ("~ unstable", "! dropped", failed and
// stopped rows' checks in full); empty when no row has a mark.
std::string table_notes(const TableLayout& layout, std::span<const BenchPoint> points);
// What the columns mean (after the tables).
std::string table_legend(const TableLayout& layout);
// The per-TX-queue table (points on several TX queues; empty when there are none).
std::string queue_table(const TableLayout& layout, std::span<const BenchPoint> points);
// The sink's arrivals table (points a sink counted; empty when there are none).
std::string sink_table(const TableLayout& layout, std::span<const BenchPoint> points);
// One interval report (BenchConfig::on_interval), as a line for people.
std::string interval_line(const BenchInterval& slice);

// Percent of the offered packets (submitted) that were dropped or, with a sink, lost on the way.
double offered_loss_pct(const BenchPoint& p);
// offered_loss_pct(p) >= kDropMarkPct.
bool wins_by_dropping(const BenchPoint& p);
// The conservation check in full ("ok: 10 = 9 sent + 1 dropped", "FAIL: ...", and
// " (partial: 1 of 3 round(s), stopped)" for a stopped point).
std::string check_text(const BenchPoint& p, int repeat);

}  // namespace txpath
