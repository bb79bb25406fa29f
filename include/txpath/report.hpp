// SPDX-License-Identifier: MIT
// Report output for `txpath bench` results: CSV for spreadsheets and scripts, and a
// self-contained SVG line chart (Mpps versus sender threads, one line per strategy).
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "txpath/bench.hpp"

namespace txpath {

// Writes a header line, then one row per point, in this column order:
//   strategy,lock,park,threads,queues,mpps,mpps_min,mpps_max,cpu_ns_per_pkt,submitted,sent,dropped,
//   requeues,fairness,batch_mean,lock_waits,lock_wait_ns,send_p50_ns,send_p99_ns,
//   vs_busylock_mpps,vs_busylock_cpu,vs_floor_cpu,conserved,vs_kernel_mpps,vs_kernel_cpu,sink_received,
//   sink_lost,sink_duplicated,sink_out_of_order,sink_socket_drops,delivered,runs,complete,partial
// (the sink columns are empty when no sink counted the point). runs and complete are the point's
// (BenchPoint::runs, complete); partial is the same on every row: true when the bench was
// stopped by a signal, so that the rows are those that ran, not every point asked for (an
// interrupted bench with no finished row writes the header only).
// Lines end in '\n'. Text fields that contain a comma, a double quote, CR or LF are quoted as in
// RFC 4180 (wrapped in double quotes, inner quotes doubled). Doubles are written in the shortest
// form that reads back to the same value (locale-independent; NaN as an empty field, infinities
// as inf / -inf); booleans as true / false, except park, which is on / off (as --park takes it).
void write_csv(std::ostream& out, const std::vector<BenchPoint>& points, bool partial = false);

// The column names write_csv() writes, in order.
const std::vector<std::string_view>& csv_columns();

// A self-contained SVG 1.1 document (no scripts, no external fonts or CSS) of two panels that
// share the x axis, sender threads (log2 when the thread counts span more than a factor of 8,
// else linear): Mpps on top and CPU ns per packet below (y linear from 0), one polyline per
// series in each, a legend, `title` at the top and `provenance` (e.g. "txpath v1.2 · 2026-12-03
// 21:00 UTC · host box"; nothing when empty) at the bottom. Each series has its own colour, dash
// pattern and marker shape. Error bars: the 95% confidence interval of the mean of the point's
// per-round samples (BenchPoint::mpps_samples, cpu_samples) when it has two or more, else (Mpps
// only) the min–max whisker where it differs from the median. A point that dropped or lost half
// of its offered load or more (wins_by_dropping(), txpath/bench_table.hpp) has a hollow marker,
// labelled with the share dropped in the Mpps panel. A series is a strategy, split by lock kind
// ("name (lock)") when one strategy appears with several locks and by park policy
// ("name (park off)", "name (lock, park off)") when it appears with both, and by TX queue count
// ("name (2 TX queues)", between lock and park) when it appears with several. Every text is
// XML-escaped.
// Points whose Mpps is not finite are left out; with nothing to plot the chart says "no data".
// (`txpath bench` marks a chart of a bench stopped by a signal in its title: "[partial: ...]".)
std::string render_svg(const std::vector<BenchPoint>& points, std::string_view title,
                       std::string_view provenance = {});

}  // namespace txpath
