// SPDX-License-Identifier: MIT
// Rounds run elsewhere (BenchConfig::round_runner, run_bench_round): the round's text comes back
// whole, and anything else a worker might send is refused with one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench.hpp"
#include "txpath/error.hpp"

namespace txpath {
namespace {

BenchConfig tiny(uint64_t seed) {
  BenchConfig c;
  c.strategies = {"busylock", "rootlock", "mutex"};
  c.threads = {1, 2};
  c.duration_s = 0.02;
  c.device = "null";
  c.pin = false;
  c.repeat = 2;
  c.seed = seed;
  return c;
}

TEST(BenchWorkers, RoundsRunElsewhereAggregateAsInProcess) {
  BenchConfig c = tiny(7);
  std::vector<std::pair<int, int>> asked;
  c.round_runner = [&](int threads, int round) {
    asked.emplace_back(threads, round);
    BenchConfig here = c;
    here.round_runner = nullptr;
    return run_bench_round(here, threads, round);
  };
  const auto points = run_bench(c);
  EXPECT_EQ(asked, (std::vector<std::pair<int, int>>{{1, 0}, {1, 1}, {2, 0}, {2, 1}}));
  ASSERT_EQ(points.size(), 6u);
  for (const auto& p : points) {
    EXPECT_EQ(p.runs, 2) << p.strategy;
    EXPECT_TRUE(p.complete);
    EXPECT_TRUE(p.conserved);
    EXPECT_EQ(p.submitted, p.sent + p.dropped);
    EXPECT_GT(p.sent, 0u);
    ASSERT_EQ(p.mpps_samples.size(), 2u);
    EXPECT_EQ(p.per_queue.size(), 1u);
    EXPECT_EQ(p.lock, p.strategy == "mutex" ? "mutex" : "ticket");
    const bool every_round_sent = std::all_of(p.mpps_samples.begin(), p.mpps_samples.end(),
                                              [](double m) { return m > 0; });
    if (p.strategy == "busylock") {
      EXPECT_DOUBLE_EQ(p.vs_busylock_mpps, 1.0);
      // A window without packets (a preempted lock holder, on a loaded machine) has no ratio.
      if (every_round_sent) EXPECT_DOUBLE_EQ(p.vs_busylock_mpps_ci95.lo, 1.0) << "every round's ratio to itself is 1";
    }
  }
}

TEST(BenchWorkers, TheSeedGivesTheOrder) {
  const auto order = [](uint64_t seed) {
    std::vector<std::string> lines;
    (void)run_bench_round(tiny(seed), 2, 1, [&](const std::string& l) { lines.push_back(l); });
    return lines;
  };
  const auto a = order(42);
  EXPECT_EQ(a.size(), 3u);
  EXPECT_EQ(a, order(42)) << "the same seed, the same order";
  EXPECT_NE(a[0].find("[10/12] "), std::string::npos) << "counted as run_bench counts: " << a[0];
  bool differs = false;
  for (uint64_t seed = 1; seed < 20 && !differs; ++seed) differs = order(seed) != a;
  EXPECT_TRUE(differs) << "the order depends on the seed";
  EXPECT_NE(resolve_bench_config(tiny(0)).seed, 0u) << "a seed is picked and recorded";
  EXPECT_EQ(resolve_bench_config(tiny(9)).seed, 9u);
}

TEST(BenchWorkers, ARoundOutsideTheConfigurationIsRefused) {
  EXPECT_THROW(run_bench_round(tiny(1), 3, 0), ConfigError);
  EXPECT_THROW(run_bench_round(tiny(1), 1, 2), ConfigError);
}

// What a broken or hostile worker could send: each is one error line naming the round.
TEST(BenchWorkers, MalformedRoundTextIsOneLineError) {
  BenchConfig real = tiny(3);
  real.threads = {1};
  real.repeat = 1;
  const std::string good = run_bench_round(real, 1, 0);
  const auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const auto at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) s.replace(at, from.size(), to);
    return s;
  };
  const std::string row_of_busylock = good.substr(good.find("{\"park\""), good.find("},{\"park\"") + 1 - good.find("{\"park\""));
  const std::vector<std::string> garbage = {
      "",
      "not json\n\x1b[31m",
      std::string(17u << 20, '['),
      std::string(8u << 20, '['),  // under the size limit: refused by depth, without 8M values
      "{}",
      "{\"txpath_round\": 5}",
      "{\"txpath_round\": [1]}",
      replace("\"strategy\":\"busylock\"", "\"strategy\":\"nolock\""),
      replace("\"mpps\":", "\"mpps\":-1,\"x\":"),
      replace("\"sent\":", "\"sent\":\"many\",\"x\":"),
      replace("\"per_queue\":[", "\"per_queue\":[{},"),
      replace("\"lock\":\"", "\"lock\":\"" + std::string(5000, 'x')),
      replace("\"queues\":1", "\"queues\":4294967297"),
      replace("\"txpath_round\":[", "\"txpath_round\":[" + row_of_busylock + ","),
  };
  for (const std::string& text : garbage) {
    BenchConfig c = real;
    c.round_runner = [&](int, int) { return text; };
    try {
      (void)run_bench(c);
      ADD_FAILURE() << "accepted: " << text.substr(0, 200);
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_EQ(what.rfind("bench worker (threads 1, round 1): malformed output: ", 0), 0u) << what;
      EXPECT_LT(what.size(), 400u) << what;
    }
  }
}

// A round that fails after others finished (issue 31, class 3: a tc file that no longer builds
// when the next worker reads it) keeps what ran: BenchRoundFailed carries every finished run's
// point, marked incomplete, and names the round; a malformed round adds nothing of its own.
// Before, run_bench threw the round's error alone and the finished rounds were lost.
TEST(BenchWorkers, ALaterRoundThatFailsKeepsTheRoundsThatRan) {
  BenchConfig c = tiny(5);
  c.threads = {1};
  c.repeat = 3;
  BenchConfig here = c;
  const std::string good = run_bench_round(here, 1, 0);
  const std::string twice = good.substr(0, good.size() - 2) + "," +
                            good.substr(good.find('[') + 1, good.size() - 2 - good.find('[') - 1) + "]}";
  c.round_runner = [&](int threads, int round) -> std::string {
    if (round == 0) return run_bench_round(here, threads, round);
    if (round == 1) return twice;  // every row twice: malformed
    throw std::runtime_error("not reached");
  };
  try {
    (void)run_bench(c);
    ADD_FAILURE() << "a failed round was not reported";
  } catch (const BenchRoundFailed& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("round 2 at 1 thread(s) failed: bench worker (threads 1, round 2): malformed output: ", 0), 0u)
        << what;
    ASSERT_EQ(e.points.size(), 3u);
    for (const BenchPoint& p : e.points) {
      EXPECT_EQ(p.runs, 1) << p.strategy << ": only round 1's run, none of the malformed round's";
      EXPECT_FALSE(p.complete) << p.strategy;
      EXPECT_GT(p.sent, 0u) << p.strategy;
    }
  }
}

}  // namespace
}  // namespace txpath
