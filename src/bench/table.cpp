// SPDX-License-Identifier: MIT
// The text table of `txpath bench` (src/bench/table.hpp). Not on any hot path.
#include "bench/table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string_view>
#include <vector>

#include "txpath/device.hpp"

namespace txpath {

namespace {

// `v` with `decimals` digits after the point ("-" when not finite).
std::string num(double v, int decimals) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// A ratio: two decimals (one from 10, none from 100: it keeps to its column), "-" when there is
// none (0).
std::string ratio(double v) { return v > 0 ? num(v, v < 10 ? 2 : v < 100 ? 1 : 0) : "-"; }

double pct(uint64_t part, uint64_t whole) {
  return whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0;
}

// `text` padded to `width` (left- or right-aligned); longer text is kept whole.
std::string pad(std::string_view text, std::size_t width, bool left) {
  std::string out;
  if (!left && text.size() < width) out.append(width - text.size(), ' ');
  out.append(text);
  if (left && text.size() < width) out.append(width - text.size(), ' ');
  return out;
}

// `text` cut to `width` characters, its end replaced by ".." when cut.
std::string cut(const std::string& text, std::size_t width) {
  return text.size() <= width ? text : text.substr(0, width - 2) + "..";
}

std::string rstrip(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// "busylock threads=4 queues=2 park=on": the row a note or an interval line is about.
std::string row_label(const std::string& strategy, int threads, uint32_t queues, bool park) {
  std::string out = strategy + " threads=" + std::to_string(threads);
  if (queues != 1) out += " queues=" + std::to_string(queues);
  return out + " park=" + park_name(park);
}

std::string row_label(const BenchPoint& p) { return row_label(p.strategy, p.threads, p.queues, p.park); }

// The check cell: "ok" or "FAIL" ("*": the point was stopped before all its rounds ran); the
// notes give the full text.
std::string short_check(const BenchPoint& p) {
  if (p.strategy == kLimitStrategy) return "-";  // measured, not a queue: nothing to conserve
  return std::string(p.conserved ? "ok" : "FAIL") + (p.complete ? "" : "*");
}

// Mpps with a one-character mark slot: "~" when the rounds disagree (BenchPoint::unstable).
std::string mpps_cell(const BenchPoint& p) {
  return num(p.mpps, p.mpps < 100 ? 3 : 2) + (p.unstable ? "~" : " ");
}

// An Mpps ratio with its mark slot: "!" when the row wins by dropping (wins_by_dropping()).
std::string marked_ratio(double v, const BenchPoint& p) {
  return ratio(v) + (v > 0 && wins_by_dropping(p) ? "!" : " ");
}

std::string ci_text(const Interval95& ci) {
  return ci.lo == 0 && ci.hi == 0 ? "-" : num(ci.lo, 2) + ".." + num(ci.hi, 2);
}

std::string microseconds(double ns) { return num(ns / 1000.0, ns < 1e6 ? 2 : 0); }

struct Column {
  std::string_view group;  // shown centred above its run of columns ("" for none)
  std::string_view name;   // with its unit
  std::size_t width;
  bool left;
  std::function<std::string(const BenchPoint&)> cell;
};

// The columns of a layout, in order. Names are the JSON's (README's) in short: "vs busylock /
// Mpps" is vs_busylock_mpps, "CPU / ns/pkt" is cpu_ns_per_pkt.
std::vector<Column> columns(const TableLayout& l) {
  std::vector<Column> c;
  const auto add = [&](bool when, Column col) {
    if (when) c.push_back(std::move(col));
  };
  const std::size_t name_width = l.wide ? 20 : 17;
  add(true, {"", "strategy", name_width, true, [=](const BenchPoint& p) {
               return l.wide ? p.strategy : cut(p.strategy, name_width);
             }});
  add(true, {"", "lock", 6, true, [=](const BenchPoint& p) { return l.wide ? p.lock : cut(p.lock, 6); }});
  add(true, {"", "park", 4, true, [](const BenchPoint& p) { return std::string(park_name(p.park)); }});
  add(true, {"", "threads", 7, false, [](const BenchPoint& p) { return std::to_string(p.threads); }});
  add(l.queues, {"", "txq", 3, false, [](const BenchPoint& p) { return std::to_string(p.queues); }});
  add(true, {"", "Mpps", 8, false, mpps_cell});
  add(l.wide, {"Mpps over rounds", "min..max", 13, false, [](const BenchPoint& p) {
                 return num(p.mpps_min, 2) + ".." + num(p.mpps_max, 2);
               }});
  add(l.wide, {"Mpps over rounds", "CV%", 5, false, [](const BenchPoint& p) { return num(100 * p.mpps_cv, 1); }});
  add(true, {"CPU", "ns/pkt", 6, false, [](const BenchPoint& p) { return num(p.cpu_ns_per_pkt, 0); }});
  add(true, {"vs busylock", "Mpps", 6, false,
             [](const BenchPoint& p) { return marked_ratio(p.vs_busylock_mpps, p); }});
  add(l.wide, {"vs busylock", "Mpps CI95", 11, false,
               [](const BenchPoint& p) { return ci_text(p.vs_busylock_mpps_ci95); }});
  add(true, {"vs busylock", "CPU", 5, false, [](const BenchPoint& p) { return ratio(p.vs_busylock_cpu); }});
  add(true, {"vs floor", "CPU", 8, false, [](const BenchPoint& p) { return ratio(p.vs_floor_cpu); }});
  add(l.kernel, {"vs kernel", "Mpps", 6, false,
                 [](const BenchPoint& p) { return marked_ratio(p.vs_kernel_mpps, p); }});
  add(l.kernel, {"vs kernel", "CPU", 5, false, [](const BenchPoint& p) { return ratio(p.vs_kernel_cpu); }});
  add(l.dpdk && (l.wide || !l.kernel),
      {"vs dpdk", "Mpps", 7, false, [](const BenchPoint& p) { return marked_ratio(p.vs_dpdk_mpps, p); }});
  add(l.limit && (l.wide || !(l.kernel && l.sink)),
      {"vs limit", "CPU", 8, false, [](const BenchPoint& p) { return ratio(p.vs_limit); }});
  add(true, {"", "drop%", 5, false, [](const BenchPoint& p) {
               return p.submitted ? num(pct(p.dropped, p.submitted), 1) : std::string("-");
             }});
  add(l.sink, {"", "lost%", 5, false, [](const BenchPoint& p) {
                 return p.sink_checked ? num(pct(p.sink_lost, p.sent), 1) : std::string("-");
               }});
  add(l.wide, {"", "fair", 5, false, [](const BenchPoint& p) { return num(p.fairness, 3); }});
  add(l.wide, {"", "batch", 6, false, [](const BenchPoint& p) { return num(p.batch_mean, 1); }});
  add(l.wide, {"", "waits/k", 7, false,
               [](const BenchPoint& p) { return num(1000.0 * static_cast<double>(p.lock_waits) /
                                                        std::max<double>(1, static_cast<double>(p.sent)), 1); }});
  add(l.wide, {"", "p50 us", 6, false, [](const BenchPoint& p) { return microseconds(p.send_p50_ns); }});
  add(true, {"", "p99 us", 6, false, [](const BenchPoint& p) { return microseconds(p.send_p99_ns); }});
  add(l.wide, {"", "requeues", 8, false, [](const BenchPoint& p) { return std::to_string(p.requeues); }});
  add(true, {"", "check", 5, true, [=](const BenchPoint& p) {
               return l.wide ? check_text(p, l.repeat) : short_check(p);
             }});
  return c;
}

// Joins cells with one space; the last column is not padded.
std::string join_line(const std::vector<Column>& cols, const std::function<std::string(const Column&)>& text) {
  std::string line;
  for (std::size_t i = 0; i < cols.size(); ++i) {
    if (i) line += ' ';
    line += pad(text(cols[i]), cols[i].width, cols[i].left);
  }
  return rstrip(std::move(line)) + "\n";
}

// The group line: each run of columns with the same group gets its label, centred over the run.
std::string group_line(const std::vector<Column>& cols) {
  std::string line;
  for (std::size_t i = 0; i < cols.size();) {
    std::size_t j = i, span = 0;
    for (; j < cols.size() && cols[j].group == cols[i].group; ++j) span += cols[j].width + (j > i ? 1 : 0);
    if (i) line += ' ';
    const std::string_view label = cols[i].group;
    const std::size_t before = label.size() < span ? (span - label.size() + 1) / 2 : 0;
    line += pad(std::string(before, ' ') + std::string(label), span, true);
    i = j;
  }
  return rstrip(std::move(line)) + "\n";
}

// `text` cut into lines of at most `width` characters at spaces (a longer word stands alone).
std::string wrap(const std::string& text, std::size_t width) {
  std::string out, line;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    start = end + 1;
    if (word.empty()) continue;
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line.clear();
    }
    if (!line.empty()) line += ' ';
    line += word;
  }
  return line.empty() ? out : out + line + "\n";
}

}  // namespace

double offered_loss_pct(const BenchPoint& p) {
  const uint64_t lost = p.dropped + (p.sink_checked ? p.sink_lost : 0);
  return pct(std::min(lost, p.submitted), p.submitted);
}

bool wins_by_dropping(const BenchPoint& p) { return offered_loss_pct(p) >= kDropMarkPct; }

std::string check_text(const BenchPoint& p, int repeat) {
  if (p.strategy == kLimitStrategy)
    return "- (measured, not a queue: " + std::to_string(p.runs) + " round(s) of two threads handing one line)";
  const std::string counts = std::to_string(p.sent) + " sent + " + std::to_string(p.dropped) + " dropped";
  std::string text = p.conserved ? "ok: " + std::to_string(p.submitted) + " = " + counts
                     : p.drained ? "FAIL: " + std::to_string(p.submitted) + " != " + counts
                                 : std::string("FAIL: packets still queued after drain");
  if (!p.complete)
    text += " (partial: " + std::to_string(p.runs) + " of " + std::to_string(repeat) + " round(s), stopped)";
  return text;
}

TableLayout table_layout(const BenchConfig& cfg, bool wide) {
  TableLayout l;
  l.wide = wide;
  l.repeat = cfg.repeat;
  l.queues = std::any_of(cfg.queues.begin(), cfg.queues.end(), [](uint32_t q) { return q != 1; });
  l.kernel = std::find(cfg.strategies.begin(), cfg.strategies.end(), kKernelStrategy) != cfg.strategies.end();
  l.dpdk = std::find(cfg.strategies.begin(), cfg.strategies.end(), kDpdkPeer) != cfg.strategies.end();
  l.limit = limit_measured(cfg);
  const DeviceKind* kind = find_device_kind(cfg.device);  // a sink counts what reaches a peer
  l.sink = kind != nullptr && kind->reaches_peer && cfg.sink != "none";
  return l;
}

std::string table_header(const TableLayout& layout) {
  const auto cols = columns(layout);
  return group_line(cols) + join_line(cols, [](const Column& c) { return std::string(c.name); });
}

std::string table_rows(const TableLayout& layout, std::span<const BenchPoint> points) {
  const auto cols = columns(layout);
  std::string out;
  for (const BenchPoint& p : points) out += join_line(cols, [&](const Column& c) { return c.cell(p); });
  return out;
}

std::string table_notes(const TableLayout& layout, std::span<const BenchPoint> points) {
  std::string out;
  const auto note = [&](std::string_view mark, const BenchPoint& p, const std::string& what) {
    std::string line = std::string(mark) + " " + row_label(p) + ": " + what;
    out += (layout.wide ? line : cut(line, kTableColumns)) + "\n";
  };
  std::string dropped;  // one paragraph for every "!" row
  for (const BenchPoint& p : points) {
    if (p.unstable)
      note("~", p, "unstable, the rounds disagree" + (p.unstable_reason.empty() ? "" : " (" + p.unstable_reason + ")"));
    if (wins_by_dropping(p)) {
      if (!dropped.empty()) dropped += ", ";
      dropped += row_label(p) + " " + num(offered_loss_pct(p), 1) + "%";
    }
    if (!p.conserved || !p.complete) note(p.complete ? "FAIL" : "*", p, check_text(p, layout.repeat));
  }
  int limit_threads = 0;  // one line per thread count that measured its limit
  for (const BenchPoint& p : points) {
    if (p.limit_line_ns <= 0 || p.threads == limit_threads) continue;
    limit_threads = p.threads;
    out += wrap("limit at " + std::to_string(p.threads) + " threads: a cache line handed between the first two senders' CPUs " +
                    num(p.limit_line_ns, 0) + " ns, a test-and-set lock " + num(p.limit_lock_ns, 0) +
                    " ns (the limit row; JSON limit_line_ns, limit_lock_ns; vs limit: a row's CPU per packet "
                    "over the line's)",
                layout.wide ? SIZE_MAX : kTableColumns);
  }
  if (!dropped.empty())
    out += wrap("! dropped or lost half of the offered packets or more (their Mpps ratios are no win): " + dropped,
                layout.wide ? SIZE_MAX : kTableColumns);
  return out;
}

std::string table_legend(const TableLayout& l) {
  const std::string kernel = l.kernel ? ", vs kernel" : "";
  std::string text =
      "Mpps: packets sent per second, median of the rounds (~: the rounds disagree, see the note). CPU ns/pkt: the "
      "process's CPU time per packet sent. vs busylock, vs floor" + kernel +
      ": Mpps and CPU per packet over that row's at the same threads" + (l.queues ? ", TX queues (txq)" : "") +
      " and park (JSON vs_busylock_mpps, vs_busylock_cpu, vs_floor_cpu" +
      (l.kernel ? ", vs_kernel_mpps, vs_kernel_cpu" : "") +
      "). floor: senders straight into the device, the harness's own limit" +
      (l.kernel ? "; kernel: a UDP socket per sender into the interface's own qdisc" : "") +
      (l.dpdk ? "; peer:dpdk: DPDK's rte_ring and TX loop on its driver for the device (vs dpdk, JSON vs_dpdk_mpps)"
              : "") +
      ". drop%: of the packets offered (submitted), dropped" +
      (l.sink ? "; lost%: of those sent, never seen at the sink" : "") +
      ". !: the row dropped or lost >= 50% of what it was offered, so its Mpps ratio is no win. "
      "park: lock waits park in the kernel (on) or yield (off). ";
  if (l.wide)
    text += "min..max, CV%: over the rounds; CI95: 95% confidence interval of the ratio, round by round; fair: Jain "
            "index over senders; batch: packets per doorbell; waits/k: contended lock acquisitions per 1000 "
            "packets. ";
  text += "p50/p99 us: sampled send() latency. check: submitted = sent + dropped (ok), in full with --wide and in "
          "the JSON.";
  std::string out(1, '\n');  // appended: GCC 12 warns (-Wrestrict) on "\n" + ...
  return out += wrap(text, kTableColumns);
}

std::string queue_table(const TableLayout& layout, std::span<const BenchPoint> points) {
  if (std::none_of(points.begin(), points.end(), [](const BenchPoint& p) { return p.queues != 1; })) return {};
  char line[512];
  std::string out = "\nPer TX queue (summed over rounds; batch: packets per doorbell):\n";
  std::snprintf(line, sizeof line, "%-17s %-4s %7s %4s %4s %11s %9s %7s  %s\n", "strategy", "park", "threads",
                "txq", "q", "sent", "dropped", "batch", "check");
  out += line;
  for (const BenchPoint& p : points) {
    for (std::size_t i = 0; p.queues != 1 && i < p.per_queue.size(); ++i) {
      const BenchQueuePoint& q = p.per_queue[i];
      const std::string counts = std::to_string(q.submitted) + (q.conserved ? " = " : " != ") +
                                 std::to_string(q.sent) + " sent + " + std::to_string(q.dropped) + " dropped";
      const std::string check = !layout.wide ? (q.conserved ? "ok" : "FAIL")
                                : q.conserved ? "ok: " + counts
                                              : "FAIL: " + counts + ", or left queued";
      std::snprintf(line, sizeof line, "%-17s %-4s %7d %4u %4zu %11llu %9llu %7.1f  %s\n",
                    cut(p.strategy, 17).c_str(), park_name(p.park), p.threads, p.queues, i,
                    static_cast<unsigned long long>(q.sent), static_cast<unsigned long long>(q.dropped),
                    q.batch_mean, check.c_str());
      out += rstrip(line);
    }
  }
  return out;
}

std::string sink_table(const TableLayout& layout, std::span<const BenchPoint> points) {
  if (std::none_of(points.begin(), points.end(), [](const BenchPoint& p) { return p.sink_checked; })) return {};
  char line[512];
  std::string out =
      "\nArrivals at the sink (summed over rounds; lost: sent, never received; sock_drop: of those, dropped at the\n"
      "sink's own socket; dup: arrived more than once; ooo: arrived after a later frame of the same sender):\n";
  std::snprintf(line, sizeof line, "%-17s %-4s %7s %11s %11s %11s %6s %11s %8s %8s  %s\n", "strategy", "park",
                "threads", "sent", "received", "lost", "lost%", "sock_drop", "dup", "ooo", "check");
  out += line;
  for (const BenchPoint& p : points) {
    if (!p.sink_checked) continue;
    const char* check = !p.delivered          ? (layout.wide ? "FAIL: duplicated or reordered frames" : "FAIL: dup/ooo")
                        : !p.sink_out_of_order ? (layout.wide ? "ok: no duplicate, in order per sender" : "ok")
                        : layout.wide ? "ok: no duplicate; the kernel path reordered some (reported)"
                                      : "ok, kernel ooo";
    std::snprintf(line, sizeof line, "%-17s %-4s %7d %11llu %11llu %11llu %6.2f %11llu %8llu %8llu  %s\n",
                  cut(p.strategy, 17).c_str(), park_name(p.park), p.threads,
                  static_cast<unsigned long long>(p.sent), static_cast<unsigned long long>(p.sink_received),
                  static_cast<unsigned long long>(p.sink_lost), pct(p.sink_lost, p.sent),
                  static_cast<unsigned long long>(p.sink_socket_drops),
                  static_cast<unsigned long long>(p.sink_duplicated),
                  static_cast<unsigned long long>(p.sink_out_of_order), check);
    out += line;
  }
  return out;
}

std::string interval_line(const BenchInterval& s) {
  std::string out(1, '[');  // appended piecewise: GCC 12 warns (-Wrestrict) on "[" + ...
  out += row_label(s.strategy, s.threads, s.queues, s.park);
  out += " round " + std::to_string(s.round + 1) + "] ";
  out += num(s.begin_s, 2) + "-" + num(s.end_s, 2) + " s  " + num(s.mpps, 3) + " Mpps  dropped ";
  out += std::to_string(s.dropped) + " (" + num(pct(s.dropped, s.sent + s.dropped), 1) + "%)";
  return out;
}

}  // namespace txpath
