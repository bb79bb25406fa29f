// SPDX-License-Identifier: MIT
// `txpath bench --json` (bench_json in bench/report.hpp) on synthetic points: the provenance at
// the top level, every BenchPoint field, keys left out where they do not apply, the round
// statistics, bytes that are not UTF-8, and a row's final tc statistics; tc's
// Config::show_stats_json and snapshot_counters, which make those.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "base/topology.hpp"
#include "bench/bench.hpp"
#include "bench/report.hpp"
#include "support/bench_statistics.hpp"
#include "txpath/device.hpp"
#include "txpath/pool.hpp"
#include "txpath/tc.hpp"
#include "txpath/txqueue.hpp"
#include "txpath/version.hpp"

namespace txpath {
namespace {

using Json = nlohmann::json;

BenchConfig config() {
  BenchConfig c;
  c.strategies = {"busylock", "nolock"};
  c.threads = {1, 2};
  c.queues = {1};
  c.device = "null";
  return c;
}

BenchPoint plain(std::string strategy) {
  BenchPoint p;
  p.strategy = std::move(strategy);
  p.lock = "ticket";
  p.threads = 2;
  p.mpps = 3;
  p.mpps_min = 2.5;
  p.mpps_max = 3.5;
  p.cpu_ns_per_pkt = 300;
  p.submitted = 100;
  p.sent = 90;
  p.dropped = 10;
  p.requeues = 4;
  p.doorbells = 45;
  p.fairness = 0.99;
  p.batch_mean = 2;
  p.lock_waits = 7;
  p.lock_wait_ns = 700;
  p.send_p50_ns = 50;
  p.send_p99_ns = 990;
  p.drained = true;
  p.conserved = true;
  p.runs = 3;
  p.per_queue = {{.submitted = 100, .sent = 90, .dropped = 10, .doorbells = 45, .batch_mean = 2, .conserved = true}};
  return p;
}

BenchProvenance provenance(std::vector<std::string> argv = {"txpath", "bench"}) {
  // 2026-12-03T20:47:55Z
  return {std::move(argv), std::chrono::system_clock::time_point(std::chrono::seconds(1796330875))};
}

Json document(const std::vector<BenchPoint>& points, const BenchConfig& cfg = config(),
              const BenchProvenance& prov = provenance()) {
  const std::string text = bench_json(cfg, points, prov);
  EXPECT_EQ(text.back(), '\n');
  return Json::parse(text);
}

TEST(BenchJson, ProvenanceAtTheTopLevel) {
  const Json j = document({plain("busylock")});
  const BuildInfo& b = build_info();
  EXPECT_FALSE(b.version.empty());
  EXPECT_EQ(j["txpath"]["version"], std::string(b.version));
  EXPECT_EQ(j["txpath"]["project_version"], std::string(b.project_version));
  EXPECT_EQ(j["txpath"]["git_describe"], std::string(b.git_describe));
  EXPECT_EQ(j["txpath"]["compiler"], std::string(b.compiler_id) + " " + std::string(b.compiler_version));
  EXPECT_EQ(j["txpath"]["build_type"], std::string(b.build_type));
  EXPECT_FALSE(b.compiler_id.empty());
  EXPECT_FALSE(b.build_type.empty());
  EXPECT_EQ(j["date"], "2026-12-03T20:47:55Z");
  EXPECT_EQ(utc_iso8601(provenance().started), "2026-12-03T20:47:55Z");
  EXPECT_EQ(j["host"]["hostname"], host_info().hostname);
  EXPECT_EQ(j["command_line"], Json::array({"txpath", "bench"}));
  EXPECT_FALSE(j.contains("command_line_hex")) << "every argument is UTF-8";
  struct utsname u {};
  ASSERT_EQ(::uname(&u), 0);
  EXPECT_EQ(j["host"]["kernel"], u.release);
  EXPECT_EQ(j["host"]["machine"], u.machine);
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  EXPECT_EQ(j["host"]["hostname"], host);
  const Topology& topo = topology();
  EXPECT_EQ(j["topology"]["cores"], topo.cores);
  EXPECT_EQ(j["topology"]["pus"], topo.pus);
  EXPECT_EQ(j["topology"]["numa_nodes"], topo.numa_nodes);
  EXPECT_EQ(j["topology"]["cpu_model"], topo.cpu_model);
  EXPECT_EQ(j["topology"]["cores_by_node"], Json(topo.cores_by_node));
  ASSERT_TRUE(j["topology"]["cpus"].is_array());
  EXPECT_FALSE(j["topology"]["cpus"].empty()) << "this process runs on some CPU";
  EXPECT_EQ(j["partial"], false);
}

// Each argument as put_text writes a name: U+FFFD for a byte that is not UTF-8, and the exact
// bytes of every argument, index for index, in command_line_hex.
TEST(BenchJson, CommandLineBytesThatAreNotUtf8) {
  const Json j = document({}, config(), provenance({"txpath", "--json", "/tmp/\xff.json", "\xc3\xa9"}));
  ASSERT_EQ(j["command_line"].size(), 4u);
  EXPECT_EQ(j["command_line"][2], "/tmp/\xef\xbf\xbd.json") << "U+FFFD in place of 0xff";
  EXPECT_EQ(j["command_line"][3], "\xc3\xa9") << "valid UTF-8 is kept";
  ASSERT_TRUE(j.contains("command_line_hex"));
  EXPECT_EQ(j["command_line_hex"],
            Json::array({"747870617468", "2d2d6a736f6e", "2f746d702fff2e6a736f6e", "c3a9"}));
}

TEST(BenchJson, EveryFieldOfAPoint) {
  BenchPoint p = plain("busylock");
  p.queues = 2;
  p.park = false;
  const Json r = document({p})["results"][0];
  EXPECT_EQ(r["strategy"], "busylock");
  EXPECT_EQ(r["lock"], "ticket");
  EXPECT_EQ(r["park"], "off");
  EXPECT_EQ(r["threads"], 2);
  EXPECT_EQ(r["queues"], 2);
  EXPECT_EQ(r["mpps"], 3.0);
  EXPECT_EQ(r["mpps_min"], 2.5);
  EXPECT_EQ(r["mpps_max"], 3.5);
  EXPECT_EQ(r["cpu_ns_per_pkt"], 300.0);
  EXPECT_EQ(r["submitted"], 100);
  EXPECT_EQ(r["sent"], 90);
  EXPECT_EQ(r["dropped"], 10);
  EXPECT_EQ(r["requeues"], 4);
  EXPECT_EQ(r["doorbells"], 45);
  EXPECT_EQ(r["fairness"], 0.99);
  EXPECT_EQ(r["batch_mean"], 2.0);
  EXPECT_EQ(r["lock_waits"], 7);
  EXPECT_EQ(r["lock_wait_ns"], 700);
  EXPECT_EQ(r["send_p50_ns"], 50.0);
  EXPECT_EQ(r["send_p99_ns"], 990.0);
  EXPECT_EQ(r["drained"], true);
  EXPECT_EQ(r["conserved"], true);
  EXPECT_EQ(r["runs"], 3);
  EXPECT_EQ(r["complete"], true);
  ASSERT_EQ(r["per_queue"].size(), 1u);
  EXPECT_EQ(r["per_queue"][0]["doorbells"], 45);
  EXPECT_EQ(r["per_queue"][0]["batch"], 2.0);
  EXPECT_EQ(r["mpps_samples"], Json::array());
  EXPECT_EQ(r["cpu_samples"], Json::array());
  EXPECT_EQ(r["noise_samples"], Json::array());
  EXPECT_EQ(r["unstable"], false);
}

// A key that does not apply is left out, never written as 0: the ratios without their reference
// row (vs_kernel_* under --device null), intervals, CVs and the rest that were not taken.
TEST(BenchJson, KeysThatDoNotApplyAreLeftOut) {
  const Json r = document({plain("nolock")})["results"][0];
  for (const char* key :
       {"vs_busylock_mpps", "vs_busylock_cpu", "vs_floor_cpu", "vs_kernel_mpps", "vs_kernel_cpu",
        "vs_busylock_mpps_ci95", "vs_busylock_cpu_ci95", "vs_floor_cpu_ci95", "vs_kernel_mpps_ci95",
        "vs_kernel_cpu_ci95", "mpps_cv", "cpu_cv", "unstable_reason", "noise", "advised_repeat",
        "sink", "output_error", "tc"})
    EXPECT_FALSE(r.contains(key)) << key;
  BenchPoint one = plain("nolock");
  one.mpps_samples = {3};
  one.cpu_samples = {300};
  const Json s = document({one})["results"][0];
  EXPECT_FALSE(s.contains("mpps_cv")) << "one round has no spread";
  EXPECT_FALSE(s.contains("cpu_cv"));
  EXPECT_EQ(s["mpps_samples"], Json::array({3.0}));
}

TEST(BenchJson, RoundStatisticsAndRatios) {
  const BenchPoint p = test::with_statistics(plain("nolock"));
  const Json r = document({p})["results"][0];
  EXPECT_EQ(r["vs_busylock_mpps"], 1.5);
  EXPECT_EQ(r["vs_busylock_cpu"], 0.75);
  EXPECT_EQ(r["vs_floor_cpu"], 4.0);
  EXPECT_EQ(r["vs_kernel_mpps"], 2.0);
  EXPECT_EQ(r["vs_kernel_cpu"], 0.5);
  EXPECT_EQ(r["mpps_samples"], Json::array({2.5, 3.0, 3.5}));
  EXPECT_EQ(r["cpu_samples"], Json::array({310.0, 300.0, 290.0}));
  ASSERT_EQ(r["noise_samples"].size(), 3u);
  EXPECT_EQ(r["noise_samples"][1], Json({{"steal_pct", 2.0}, {"other_cpu_pct", 5.0}}));
  EXPECT_EQ(r["mpps_cv"], 0.1667);
  EXPECT_EQ(r["cpu_cv"], 0.0333);
  EXPECT_EQ(r["vs_busylock_mpps_ci95"], Json::array({1.25, 1.75}));
  EXPECT_EQ(r["vs_busylock_cpu_ci95"], Json::array({0.5, 1.0}));
  EXPECT_EQ(r["vs_floor_cpu_ci95"], Json::array({3.0, 5.0}));
  EXPECT_EQ(r["vs_kernel_mpps_ci95"], Json::array({1.5, 2.5}));
  EXPECT_EQ(r["vs_kernel_cpu_ci95"], Json::array({0.25, 0.75}));
  EXPECT_EQ(r["unstable"], true);
  EXPECT_EQ(r["unstable_reason"], p.unstable_reason);
  EXPECT_EQ(r["noise"], Json({{"steal_pct", 2.0}, {"other_cpu_pct", 40.0}}));
  EXPECT_EQ(r["advised_repeat"], 9);
}

// config.kernel_row says whether a kernel row is among the results, not what was asked.
TEST(BenchJson, KernelRowTellsWhetherOneRan) {
  BenchConfig cfg = config();
  cfg.kernel_row = true;  // the default: asked for, but --device null has no kernel path
  EXPECT_EQ(document({plain("busylock")}, cfg)["config"]["kernel_row"], false);
  EXPECT_EQ(document({plain("busylock"), plain(kKernelStrategy)}, cfg)["config"]["kernel_row"], true);
}

TEST(BenchJson, NamesThatAreNotUtf8InConfigAndRows) {
  BenchConfig cfg = config();
  cfg.device = "pcap:/tmp/\xff.pcap";
  BenchPoint p = plain("busylock");
  p.unstable = true;
  p.unstable_reason = "odd \xfe";
  const Json j = document({p}, cfg);
  EXPECT_EQ(j["config"]["device_hex"], "706361703a2f746d702fff2e70636170");
  EXPECT_EQ(j["results"][0]["unstable_reason_hex"], "6f646420fe");
  EXPECT_FALSE(j["config"].contains("strategies_hex"));
}

TEST(BenchJson, TcStatisticsOfARow) {
  BenchPoint p = plain("busylock");
  p.tc_stats = R"({"qdiscs": [{"kind": "fq_codel", "handle": "1:", "packets": 5}], "classes": []})";
  const Json r = document({p})["results"][0];
  EXPECT_EQ(r["tc"]["qdiscs"][0]["packets"], 5);
  p.tc_stats = "{not json";
  EXPECT_TRUE(document({p})["results"][0]["tc"].contains("error")) << "never a broken document";
}

// ---- tc: a tree's final counters in `tc -s -j show`'s form ----------------------------------------

tc::Config htb_config() {
  return tc::Config::parse(
      "link add dev d0 txqueuelen 500\n"
      "qdisc add dev d0 root handle 1: htb default 10\n"
      "class add dev d0 parent 1: classid 1:1 htb rate 100mbit\n"
      "class add dev d0 parent 1:1 classid 1:10 htb rate 30mbit ceil 100mbit\n"
      "class add dev d0 parent 1:1 classid 1:20 htb rate 70mbit ceil 100mbit\n"
      "qdisc add dev d0 parent 1:10 handle 10: fq_codel\n");
}

// The counters a queue's tree had, shown as `txpath tc -s -j qdisc show` / `class show` show
// them, after the queue is gone: htb's class 1:10 (the default) carried the traffic.
TEST(TcShowStats, SnapshotOfAQueueShownAfterItIsGone) {
  const tc::Config cfg = htb_config();
  std::optional<tc::TreeCounters> counters;
  {
    Pool pool(PoolConfig{.packets = 1024});
    auto device = make_device("null");  // after the pool: destroyed first, it returns what it holds
    auto tree = std::make_shared<tc::Tree>();
    TxQueueConfig qc;
    qc.strategy = "busylock";
    qc.root_qdisc = cfg.root_factory("d0", tree);
    auto txq = TxQueue::create(*device, qc);
    {
      Pool::Cache cache(pool);
      for (int i = 0; i < 20; ++i) {
        Packet* p = cache.get();
        ASSERT_NE(p, nullptr);
        p->len = 100;
        txq->send(p);
      }
    }
    ASSERT_TRUE(txq->drain(std::chrono::seconds(5)));
    counters = tc::snapshot_counters(*txq, tree->nodes, std::chrono::milliseconds(1000));
  }
  ASSERT_TRUE(counters);
  const Json j = Json::parse(cfg.show_stats_json("d0", *counters));
  ASSERT_EQ(j["qdiscs"].size(), 2u);
  EXPECT_EQ(j["qdiscs"][0]["kind"], "htb");
  EXPECT_EQ(j["qdiscs"][0]["packets"], 20);
  EXPECT_EQ(j["qdiscs"][1]["kind"], "fq_codel");
  EXPECT_EQ(j["qdiscs"][1]["packets"], 20);
  EXPECT_TRUE(j["qdiscs"][1].contains("new_flow_count")) << "fq_codel's xstats, as tc -s -j puts them";
  ASSERT_EQ(j["classes"].size(), 3u);
  for (const Json& c : j["classes"]) {
    if (c["handle"] == "1:10") {
      EXPECT_EQ(c["packets"], 20);
      EXPECT_EQ(c["bytes"], 2000);
      EXPECT_TRUE(c.contains("tokens")) << "htb's class xstats";
    } else if (c["handle"] == "1:20") {
      EXPECT_EQ(c["packets"], 0);
    }
  }
  EXPECT_THROW(cfg.show_stats_json("nosuch", *counters), ConfigError);
}

// A queue built from a qdisc spec has no tree: its root alone, as the handle it is given.
TEST(TcShowStats, RootOfAQueueWithoutATree) {
  auto device = make_device("null");
  TxQueueConfig qc;
  qc.strategy = "busylock";
  qc.qdisc = "prio";
  auto txq = TxQueue::create(*device, qc);
  const auto counters = tc::snapshot_counters(*txq, {}, std::chrono::milliseconds(1000), 0x10000, tc::kRoot);
  ASSERT_TRUE(counters);
  ASSERT_GE(counters->entries.size(), 4u) << "prio and its three classes";
  EXPECT_EQ(counters->entries[0].handle, 0x10000u);
  EXPECT_FALSE(counters->entries[0].is_class);
  EXPECT_EQ(counters->entries[1].handle, 0x10001u);
  EXPECT_TRUE(counters->entries[1].is_class);
}

}  // namespace
}  // namespace txpath
