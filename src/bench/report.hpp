// SPDX-License-Identifier: MIT
// Report output for `txpath bench` results: JSON (everything, with provenance), CSV for
// spreadsheets and scripts, and a self-contained SVG line chart (Mpps versus sender threads, one
// line per strategy).
#pragma once

#include <chrono>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "bench/bench.hpp"

namespace txpath {

// What the JSON records about the run besides its configuration and rows.
struct BenchProvenance {
  std::vector<std::string> command_line;          // argv as given, each argument's exact bytes
  std::chrono::system_clock::time_point started;  // when the bench started
};

// The machine, as the JSON's "host" records it (uname, gethostname; empty where unknown).
struct HostInfo {
  std::string hostname;
  std::string kernel_release;  // uname -r
  std::string kernel_version;  // uname -v
  std::string machine;         // uname -m
};
HostInfo host_info();

// `t` as the JSON's "date" writes it: UTC, ISO 8601, to the second ("2026-12-03T20:47:55Z").
std::string utc_iso8601(std::chrono::system_clock::time_point t);

// The `txpath bench --json` document (2-space indented, '\n' at the end). Top level:
//   "partial"       true when a signal stopped the bench (results: the rows that ran)
//   "txpath"        the build (txpath/version.hpp): {"version", "project_version",
//                   "git_describe", "compiler" ("GNU 12.2.0"), "build_type", "sanitize" (only in
//                   a sanitizer build)}; "version" is what `txpath --version` prints
//   "date"          provenance.started, UTC, ISO 8601 to the second ("2026-12-03T20:47:55Z")
//   "command_line"  provenance.command_line, one string per argument
//   "host"          {"hostname", "kernel" (uname's release), "kernel_version", "machine"}
//   "topology"      {"cores", "pus" (hardware threads), "numa_nodes", "cpu_model",
//                   "cores_by_node" (per node, the first CPU of each core), "cpus" (the CPUs
//                   this process may run on)}
//   "config"        the resolved BenchConfig: "strategies" (the rows asked for, the kernel row
//                   included when the device has one), "threads", "queues", "xps", "duration_s",
//                   "payload", "txqueuelen", "repeat", "pin", "nodes", "park", "burst", "lock",
//                   "device", "qdisc", "sink", "tc_config" and "tc_dev" (with --tc-config);
//                   "kernel_row": whether a kernel row is among the results
//   "results"       one object per BenchPoint, in order, with every field under its own name:
//                   "strategy", "lock", "park" ("on"/"off"), "threads", "queues", "per_queue"
//                   ([{"queue", "submitted", "sent", "dropped", "doorbells", "batch",
//                   "conserved"}]), "mpps", "mpps_min", "mpps_max", "cpu_ns_per_pkt",
//                   "submitted", "sent", "dropped", "requeues", "doorbells", "fairness",
//                   "batch_mean", "lock_waits", "lock_wait_ns", "send_p50_ns", "send_p99_ns",
//                   "drained", "conserved", "runs", "complete"; the per-round statistics
//                   "mpps_samples", "cpu_samples" (numbers, round order), "noise_samples"
//                   ([{"steal_pct", "other_cpu_pct"}]), "unstable" (bool); and, only where they
//                   apply (a key that does not apply is left out, never written as 0):
//                     "vs_busylock_mpps", "vs_busylock_cpu"  a busylock row in the group
//                     "vs_floor_cpu"                         a floor row in the group
//                     "vs_kernel_mpps", "vs_kernel_cpu"      a kernel row in the group
//                     "*_ci95" for each of those five        [lo, hi], when there is an interval
//                     "mpps_cv", "cpu_cv"                    two rounds or more
//                     "unstable_reason"                      the row is unstable
//                     "noise"                                {"steal_pct", "other_cpu_pct"}: the
//                                                            worst round, when noise was measured
//                     "advised_repeat"                       when advised (> 0)
//                     "sink"                                 {"received", "lost", "duplicated",
//                                                            "out_of_order", "socket_drops",
//                                                            "delivered"}: a sink counted the row
//                     "output_error"                         a device output failed
//                     "tc"                                   BenchPoint::tc_stats: the row has a
//                                                            txpath qdisc tree
// Text that is not UTF-8 (a device spec, an argument) is written as run_bench's comment in
// bench/bench.hpp says: U+FFFD for each bad byte plus a sibling NAME_hex with the exact bytes;
// for a list ("command_line", "strategies") NAME_hex is a list of every element's bytes in hex,
// index for index, present when any element needs it.
std::string bench_json(const BenchConfig& config, const std::vector<BenchPoint>& points,
                       const BenchProvenance& provenance, bool partial = false);

// Writes a header line, then one row per point, in this column order:
//   strategy,lock,park,threads,queues,mpps,mpps_min,mpps_max,cpu_ns_per_pkt,submitted,sent,dropped,
//   requeues,fairness,batch_mean,lock_waits,lock_wait_ns,send_p50_ns,send_p99_ns,
//   vs_busylock_mpps,vs_busylock_cpu,vs_floor_cpu,conserved,vs_kernel_mpps,vs_kernel_cpu,sink_received,
//   sink_lost,sink_duplicated,sink_out_of_order,sink_socket_drops,delivered,runs,complete,
//   mpps_cv,cpu_cv,vs_busylock_mpps_ci95_lo,vs_busylock_mpps_ci95_hi,vs_busylock_cpu_ci95_lo,
//   vs_busylock_cpu_ci95_hi,vs_floor_cpu_ci95_lo,vs_floor_cpu_ci95_hi,vs_kernel_mpps_ci95_lo,
//   vs_kernel_mpps_ci95_hi,vs_kernel_cpu_ci95_lo,vs_kernel_cpu_ci95_hi,unstable,unstable_reason,
//   noise_steal_pct,noise_other_cpu_pct,advised_repeat,partial
// A cell is empty where its column does not apply: the sink columns when no sink counted the
// point; vs_busylock_* without a busylock row at the same threads, queues and park (the ratio
// is 0), vs_floor_cpu without a floor row, vs_kernel_* without a kernel row (e.g. --device
// null); each *_ci95 pair when there is no interval (lo == hi == 0); mpps_cv / cpu_cv with fewer
// than two rounds' samples; noise_* when no noise was measured (noise_samples empty);
// advised_repeat when none was advised (0). unstable_reason is empty for a stable row. The
// statistics columns are BenchPoint's (noise_*: BenchPoint::noise, the worst round); the
// per-round samples are in the JSON only. runs and complete are the point's
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
// of its offered load or more (wins_by_dropping(), bench/table.hpp) has a hollow marker,
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
