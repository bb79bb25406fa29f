// SPDX-License-Identifier: MIT
// The bench's text table (bench/table.hpp) on synthetic points, and what the bench tells
// its caller while it runs (ETA, interval slices, rows as they finish: src/bench/live.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench.hpp"
#include "bench/live.hpp"
#include "bench/table.hpp"
#include "txpath/error.hpp"

namespace txpath {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The ratios to busylock (Mpps, CPU), to the floor (CPU) and to the kernel row (Mpps as busylock's).
void set_ratios(BenchPoint& p, double mpps, double cpu, double floor, double kernel_cpu) {
  p.vs_busylock_mpps = p.vs_kernel_mpps = mpps;
  p.vs_busylock_cpu = cpu;
  p.vs_floor_cpu = floor;
  p.vs_kernel_cpu = kernel_cpu;
}

// A point with every figure filled in; `loss` percent of its offered packets dropped.
BenchPoint point(const std::string& strategy, int threads, double loss_pct = 0) {
  BenchPoint p;
  p.strategy = strategy;
  p.lock = "ticket";
  p.threads = threads;
  p.mpps = 12.345;
  p.mpps_min = 11.5;
  p.mpps_max = 13.25;
  p.cpu_ns_per_pkt = 81;
  p.submitted = 1000;
  p.dropped = static_cast<uint64_t>(std::lround(loss_pct * 10));
  p.sent = p.submitted - p.dropped;
  p.fairness = 0.987;
  p.batch_mean = 12.5;
  p.lock_waits = 42;
  p.send_p50_ns = 150;
  p.send_p99_ns = 2500;
  set_ratios(p, 1.81, 0.9, 1.5, 0.75);
  p.conserved = true;
  p.drained = true;
  p.runs = 3;
  return p;
}

TableLayout every_column_layout(bool wide) {
  return {.wide = wide, .queues = true, .kernel = true, .sink = true, .limit = true, .dpdk = true, .repeat = 3};
}

std::string whole_table(const TableLayout& l, const std::vector<BenchPoint>& v) {
  return table_header(l) + table_rows(l, v) + table_notes(l, v) + queue_table(l, v) + sink_table(l, v) +
         table_legend(l);
}

// Points as wide as they get: long names, large figures, every mark, a failed and a stopped one.
std::vector<BenchPoint> extreme_points() {
  BenchPoint big = point("peer:a_strategy_with_a_very_long_name", 4096, 98.5);
  big.lock = "a_long_lock_kind";
  big.queues = 64;
  big.per_queue.resize(2);
  constexpr uint64_t kMany = 99'999'999'999;  // the counts' widest: 100 s at 1000 Mpps
  big.per_queue[0] = {.submitted = kMany, .sent = kMany / 2, .dropped = kMany / 3};
  big.sink_socket_drops = kMany;
  big.sink_duplicated = big.sink_out_of_order = 99'999'999;
  big.delivered = false;
  big.mpps = 987.654;
  big.cpu_ns_per_pkt = 1234567;
  set_ratios(big, 123.45, 99.99, 999.99, 99.99);
  big.send_p99_ns = 12345678;
  big.sink_checked = true;
  big.sink_lost = 12;
  big.sink_received = kMany;
  big.unstable = true;
  big.unstable_reason = "bimodal: 1.4 vs 9.1 Mpps";
  BenchPoint failed = point("busylock", 2);
  failed.conserved = false;
  failed.complete = false;
  failed.runs = 1;
  return {big, failed, point("kernel", 1)};
}

TEST(BenchTable, DefaultFitsTheColumnsWithEveryOptionalColumnAndLongNames) {
  const TableLayout l = every_column_layout(false);
  const auto v = extreme_points();
  const std::string text = whole_table(l, v);
  for (const auto& line : lines_of(text)) EXPECT_LE(line.size(), kTableColumns) << line;
  EXPECT_EQ(lines_of(table_rows(l, v)).size(), v.size()) << "one line per row";
  const std::string header = table_header(l);
  for (const char* h : {"Mpps", "ns/pkt", "CPU", "vs busylock", "vs floor", "vs kernel", "drop%", "lost%",
                        "p99 us", "txq", "threads", "check"})
    EXPECT_NE(header.find(h), std::string::npos) << h;
  EXPECT_EQ(text.find("min..max"), std::string::npos) << "a --wide column";
  EXPECT_EQ(text.find("p50 us"), std::string::npos) << "a --wide column";
}

// The limit row and the vs limit column: in the narrow table beside the kernel's columns (not
// beside both them and lost%: --wide has it then), within the width; the row checks nothing.
TEST(BenchTable, TheLimitRowAndItsColumn) {
  BenchPoint limit = point(kLimitStrategy, 2);
  limit.lock = "tas";
  limit.submitted = limit.sent = limit.dropped = 0;
  limit.cpu_ns_per_pkt = limit.limit_line_ns = 180;
  limit.vs_limit = 1;
  set_ratios(limit, 0, 0, 0, 0);
  BenchPoint busylock = point("busylock", 2);
  busylock.vs_limit = 7.25;
  busylock.limit_line_ns = 180;
  const std::vector<BenchPoint> v = {extreme_points()[0], busylock, limit};
  TableLayout l{.queues = true, .kernel = true, .limit = true, .repeat = 3};
  const std::string text = whole_table(l, v);
  for (const auto& line : lines_of(text)) EXPECT_LE(line.size(), kTableColumns) << line;
  EXPECT_NE(table_header(l).find("vs limit"), std::string::npos);
  const auto rows = lines_of(table_rows(l, v));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_NE(rows[1].find(" 7.25 "), std::string::npos) << rows[1];
  EXPECT_EQ(rows[2].substr(rows[2].size() - 2), " -") << "the check of no queue: " << rows[2];
  EXPECT_EQ(rows[2].find("ok"), std::string::npos) << rows[2];
  EXPECT_NE(text.find("limit at 2 threads: a cache line handed between the first two senders' CPUs 180 ns"),
            std::string::npos) << text;
  l.sink = true;
  EXPECT_EQ(table_header(l).find("vs limit"), std::string::npos) << "narrow, beside kernel and lost%";
  l.wide = true;
  EXPECT_NE(table_header(l).find("vs limit"), std::string::npos);
  EXPECT_EQ(table_header(TableLayout{.repeat = 1}).find("vs limit"), std::string::npos) << "one thread, unpinned";
}

// The vs dpdk column: with peer:dpdk, in the narrow table where there are no kernel columns (null),
// within the width beside vs limit; --wide always.
TEST(BenchTable, TheVsDpdkColumn) {
  BenchPoint dpdk = point(kDpdkPeer, 2);
  dpdk.vs_dpdk_mpps = 1;
  BenchPoint busylock = point("busylock", 2);
  busylock.vs_dpdk_mpps = 0.42;
  const std::vector<BenchPoint> v = {extreme_points()[0], busylock, dpdk};
  TableLayout l{.queues = true, .limit = true, .dpdk = true, .repeat = 3};
  for (const auto& line : lines_of(whole_table(l, v))) EXPECT_LE(line.size(), kTableColumns) << line;
  EXPECT_NE(table_header(l).find("vs dpdk"), std::string::npos);
  EXPECT_NE(lines_of(table_rows(l, v))[1].find(" 0.42 "), std::string::npos) << table_rows(l, v);
  l.kernel = true;
  EXPECT_EQ(table_header(l).find("vs dpdk"), std::string::npos) << "narrow, beside the kernel's columns";
  l.wide = true;
  EXPECT_NE(table_header(l).find("vs dpdk"), std::string::npos);
}

TEST(BenchTable, OptionalColumnsFollowTheLayout) {
  const TableLayout plain{.repeat = 1};
  const std::string header = table_header(plain);
  for (const char* h : {"vs kernel", "lost%", "txq"}) EXPECT_EQ(header.find(h), std::string::npos) << h;
  BenchConfig cfg;
  cfg.strategies = {"busylock", "kernel"};
  cfg.queues = {1, 2};
  cfg.device = "afpacket:txp0";
  const TableLayout real = table_layout(cfg, false);
  EXPECT_TRUE(real.kernel && real.queues && real.sink && !real.wide);
  cfg.sink = "none";
  EXPECT_FALSE(table_layout(cfg, true).sink);
  cfg.device = "null";
  cfg.sink = "auto";
  cfg.strategies = {"busylock"};
  cfg.queues = {1};
  const TableLayout null = table_layout(cfg, true);
  EXPECT_TRUE(!null.kernel && !null.queues && !null.sink && null.wide);
}

TEST(BenchTable, WideShowsEveryColumnAndTheFullCheck) {
  const TableLayout wide = every_column_layout(true);
  const std::vector<BenchPoint> v = {point("busylock", 1, 10)};
  const std::string text = table_header(wide) + table_rows(wide, v);
  for (const char* h : {"min..max", "CV%", "Mpps CI95", "fair", "batch", "waits/k", "p50 us", "p99 us", "requeues"})
    EXPECT_NE(text.find(h), std::string::npos) << h;
  EXPECT_NE(text.find("ok: 1000 = 900 sent + 100 dropped"), std::string::npos) << text;
  EXPECT_NE(text.find("11.50..13.25"), std::string::npos) << text;
  const std::string narrow = table_rows(every_column_layout(false), v);
  EXPECT_EQ(narrow.find("ok: "), std::string::npos) << narrow;
  EXPECT_EQ(narrow.substr(narrow.size() - 4), " ok\n") << "the short check cell: " << narrow;
  // p50 and p99 in the same unit: 150 ns and 2500 ns are 0.15 and 2.50 us.
  EXPECT_NE(text.find(" 0.15 "), std::string::npos) << text;
  EXPECT_NE(text.find(" 2.50 "), std::string::npos) << text;
}

TEST(BenchTable, RatioWonByDroppingIsMarkedAndNoted) {
  const TableLayout l = every_column_layout(false);
  const std::vector<BenchPoint> v = {point("peer:mutex_deque", 2, 98.5), point("busylock", 2, 49)};
  const auto rows = lines_of(table_rows(l, v));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(std::count(rows[0].begin(), rows[0].end(), '!'), 2) << "vs busylock and vs kernel Mpps: " << rows[0];
  EXPECT_NE(rows[0].find("1.81!"), std::string::npos) << rows[0];
  EXPECT_NE(rows[0].find("98.5"), std::string::npos) << "drop% beside the ratios: " << rows[0];
  EXPECT_EQ(rows[1].find('!'), std::string::npos) << "49% is below the mark: " << rows[1];
  std::string notes = table_notes(l, v);  // one paragraph, wrapped at the table's width
  for (const auto& line : lines_of(notes)) EXPECT_LE(line.size(), kTableColumns);
  std::replace(notes.begin(), notes.end(), '\n', ' ');
  EXPECT_EQ(notes,
            "! dropped or lost half of the offered packets or more (their Mpps ratios are no win): "
            "peer:mutex_deque threads=2 park=on 98.5% ");
  std::string legend = table_legend(l);
  std::replace(legend.begin(), legend.end(), '\n', ' ');
  EXPECT_NE(legend.find("!: the row dropped or lost >= 50% of what it was offered"), std::string::npos) << legend;

  // Loss at the sink counts as not carried too.
  BenchPoint lost = point("drainer", 2);
  lost.sink_checked = true;
  lost.sink_lost = 600;
  EXPECT_TRUE(wins_by_dropping(lost));
  EXPECT_DOUBLE_EQ(offered_loss_pct(lost), 60.0);
  EXPECT_NE(table_rows(l, {&lost, 1}).find(" 60.0 "), std::string::npos) << "lost%: of those sent";
  lost.sink_checked = false;
  EXPECT_FALSE(wins_by_dropping(lost)) << "no sink: its counts are not loss";
  BenchPoint nothing = point("floor", 1);
  nothing.submitted = nothing.sent = nothing.dropped = 0;
  EXPECT_FALSE(wins_by_dropping(nothing));
}

TEST(BenchTable, UnstableRowsAreMarkedWithTheirReason) {
  const TableLayout l = every_column_layout(false);
  BenchPoint shaky = point("busylock", 2);
  shaky.unstable = true;
  shaky.unstable_reason = "cv 23%";
  const std::vector<BenchPoint> v = {shaky, point("rootlock", 2)};
  const auto rows = lines_of(table_rows(l, v));
  EXPECT_NE(rows[0].find("12.345~"), std::string::npos) << rows[0];
  EXPECT_EQ(rows[1].find('~'), std::string::npos) << rows[1];
  const auto notes = lines_of(table_notes(l, v));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "~ busylock threads=2 park=on: unstable, the rounds disagree (cv 23%)");
  EXPECT_EQ(table_notes(l, {v.data() + 1, 1}), "") << "no mark, no note";
}

TEST(BenchTable, FailedAndStoppedRowsAreShortInTheTableAndWholeInTheNotes) {
  const TableLayout l = every_column_layout(false);
  const auto v = extreme_points();
  const auto rows = lines_of(table_rows(l, v));
  EXPECT_EQ(rows[1].substr(rows[1].size() - 6), " FAIL*") << rows[1];
  const std::string notes = table_notes(l, v);
  EXPECT_NE(notes.find("* busylock threads=2 park=on: FAIL: 1000 != 1000 sent + 0 dropped (partial: 1 of 3 "
                       "round(s), stopped)"),
            std::string::npos)
      << notes;
}

TEST(BenchTable, GroupLabelsSitOverTheirColumns) {
  const auto header = lines_of(table_header(every_column_layout(false)));
  ASSERT_EQ(header.size(), 2u);
  // "vs busylock" sits over the Mpps and CPU columns after ns/pkt, inside their span.
  const std::size_t group = header[0].find("vs busylock");
  const std::size_t mpps = header[1].find("Mpps", header[1].find("ns/pkt"));
  const std::size_t cpu_end = header[1].find("CPU", mpps) + 3;
  ASSERT_NE(group, std::string::npos);
  EXPECT_GE(group, mpps - 2) << header[0] << "\n" << header[1];
  EXPECT_LE(group + 11, cpu_end + 1) << header[0] << "\n" << header[1];
  EXPECT_NE(header[0].find("vs floor"), std::string::npos);
  EXPECT_LT(header[0].find("vs busylock"), header[0].find("vs floor"));
  EXPECT_LT(header[0].find("vs floor"), header[0].find("vs kernel"));
}

TEST(BenchTable, IntervalLineNamesTheRunAndTheSlice) {
  BenchInterval s;
  s.strategy = "busylock";
  s.threads = 4;
  s.queues = 2;
  s.park = false;
  s.round = 1;
  s.begin_s = 0.5;
  s.end_s = 1.0;
  s.sent = 1'000'000;
  s.dropped = 250'000;
  s.mpps = 2.0;
  EXPECT_EQ(interval_line(s),
            "[busylock threads=4 queues=2 park=off round 2] 0.50-1.00 s  2.000 Mpps  dropped 250000 (20.0%)");
}

TEST(BenchLive, EtaTextAndEstimate) {
  using bench_detail::eta_seconds;
  using bench_detail::eta_text;
  EXPECT_EQ(eta_text(42), "0:42");
  EXPECT_EQ(eta_text(62.4), "1:02");
  EXPECT_EQ(eta_text(3723), "1:02:03");
  EXPECT_EQ(eta_text(-5), "0:00");
  EXPECT_EQ(eta_text(std::nan("")), "0:00");
  EXPECT_DOUBLE_EQ(eta_seconds(0, 0, 10, 0.5), 5.0) << "before any run: the plan";
  EXPECT_DOUBLE_EQ(eta_seconds(4, 2, 10, 0.5), 16.0) << "the mean so far times the runs left";
  EXPECT_DOUBLE_EQ(eta_seconds(4, 10, 10, 0.5), 0.0);
  BenchConfig cfg;
  cfg.duration_s = 0.5;  // 0.55 s a run with its warm-up
  EXPECT_EQ(bench_detail::eta_note(cfg, 0, 0, 5), "") << "2.75 s planned: short, no ETA";
  EXPECT_EQ(bench_detail::eta_note(cfg, 0, 0, 6), " ETA 0:03");
  EXPECT_EQ(bench_detail::eta_note(cfg, 30, 3, 6), " ETA 0:30");
}

// A real (short) bench on the null device: interval slices cover each run's window in order,
// and each thread count's rows reach on_points once, final, before run_bench returns.
TEST(BenchLive, IntervalSlicesAndRowsAsTheyFinish) {
  BenchConfig cfg;
  cfg.device = "null";
  cfg.strategies = {"busylock", "rootlock"};
  cfg.threads = {1, 2};
  cfg.duration_s = 0.05;
  cfg.repeat = 2;
  cfg.interval_s = 0.02;
  std::vector<BenchInterval> slices;
  cfg.on_interval = [&](const BenchInterval& s) { slices.push_back(s); };
  std::vector<std::vector<BenchPoint>> groups;
  cfg.on_points = [&](std::span<const BenchPoint> done) { groups.emplace_back(done.begin(), done.end()); };
  const auto points = run_bench(cfg);
  ASSERT_EQ(points.size(), 4u);
  ASSERT_EQ(groups.size(), 2u) << "one call per thread count";
  for (std::size_t g = 0; g < 2; ++g) {
    ASSERT_EQ(groups[g].size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(groups[g][i].strategy, points[2 * g + i].strategy);
      EXPECT_EQ(groups[g][i].threads, points[2 * g + i].threads);
      EXPECT_EQ(groups[g][i].vs_busylock_mpps, points[2 * g + i].vs_busylock_mpps) << "final ratios";
      EXPECT_EQ(groups[g][i].runs, 2);
    }
  }
  // 8 runs of 3 slices each (0.02, 0.04, 0.05 s), contiguous within a run.
  ASSERT_EQ(slices.size(), 8u * 3u);
  for (std::size_t i = 0; i < slices.size(); ++i) {
    const BenchInterval& s = slices[i];
    EXPECT_TRUE(s.strategy == "busylock" || s.strategy == "rootlock");
    EXPECT_EQ(s.threads, i < 12 ? 1 : 2);
    EXPECT_EQ(s.round, static_cast<int>(i / 6 % 2));
    EXPECT_EQ(s.begin_s, i % 3 == 0 ? 0.0 : slices[i - 1].end_s);
    EXPECT_GT(s.end_s, s.begin_s);
    EXPECT_GE(s.mpps, 0.0);
  }
  cfg.interval_s = -1;
  EXPECT_THROW(resolve_bench_config(cfg), ConfigError);
  cfg.interval_s = INFINITY;
  EXPECT_THROW(resolve_bench_config(cfg), ConfigError);
}

}  // namespace
}  // namespace txpath
