// SPDX-License-Identifier: MIT
// `txpath offer` (src/bench/offer.hpp): the flow grammar and its errors, the kernel's TOS to
// priority mapping, and a schedule through both paths on a testbed of this process's own, counted
// by a sink: the same packets offered, all of them arriving in order when nothing is shaped, and
// txpath's tree counters in tc's JSON.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/offer.hpp"
#include "support/veth_fixture.hpp"
#include "txpath/error.hpp"
#include "txpath/tc.hpp"

namespace txpath::bench_detail {
namespace {

TEST(OfferFlow, ParsesEveryKey) {
  const OfferFlow f = parse_offer_flow("rate=10mbit,size=300,prio=1:10,tos=0x10,start=0.5,stop=2,queue=1");
  EXPECT_EQ(f.rate_bytes_per_s, 1250000u);
  EXPECT_EQ(f.frame_bytes, 300u);
  ASSERT_TRUE(f.priority.has_value());
  EXPECT_EQ(*f.priority, 0x10010u);
  EXPECT_EQ(f.tos, 0x10);
  EXPECT_DOUBLE_EQ(f.start_s, 0.5);
  EXPECT_DOUBLE_EQ(f.stop_s, 2.0);
  EXPECT_EQ(f.queue, 1u);
  const OfferFlow d = parse_offer_flow("rate=1kbit");
  EXPECT_EQ(d.frame_bytes, 1000u);
  EXPECT_FALSE(d.priority.has_value());
  EXPECT_EQ(parse_offer_flow("rate=1mbit,prio=7").priority.value_or(0), 7u);
}

TEST(OfferFlow, RefusesBadFlowsInOneLine) {
  for (const char* bad : {"", "size=100", "rate=0", "rate=fast", "rate=1mbit,size=57",
                          "rate=1mbit,size=1515", "rate=1mbit,tos=256", "rate=1mbit,prio=1:x",
                          "rate=1mbit,start=2,stop=1", "rate=1mbit,start=-1", "rate=1mbit,colour=red",
                          "rate=1mbit,,size=100", "rate=1mbit,stop=nan", "rate=1mbit\n,size=100"}) {
    try {
      parse_offer_flow(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_EQ(what.rfind("--flow ", 0), 0u) << what;
    }
  }
}

TEST(OfferFlow, TosMapsToThePriorityTheKernelGivesASocket) {
  EXPECT_EQ(tos_to_priority(0x00), 0u);  // best effort
  EXPECT_EQ(tos_to_priority(0x08), 2u);  // maximize throughput: bulk
  EXPECT_EQ(tos_to_priority(0x10), 6u);  // minimize delay: interactive
  EXPECT_EQ(tos_to_priority(0x18), 4u);  // both: interactive bulk
  EXPECT_EQ(tos_to_priority(0x04), 0u);  // reliability alone: best effort
  EXPECT_EQ(tos_to_priority(0x13), 6u);  // ECN bits do not count
  EXPECT_EQ(tos_to_priority(0xb8), 4u);  // DSCP EF: its low bits are 0x18
}

class OfferTest : public test::VethTestbed<'o'> {
 protected:
  std::string config_path() const { return "/tmp/txpath-offer-test-" + std::to_string(::getpid()) + ".tc"; }
  void TearDown() override {
    std::remove(config_path().c_str());
    VethTestbed::TearDown();
  }
  OfferConfig offer(OfferVia via) const {
    OfferConfig c;
    c.device = "afpacket:" + cfg_.host_if;
    c.via = via;
    c.duration_s = 0.5;
    c.flows = {parse_offer_flow("rate=8mbit,size=1000"), parse_offer_flow("rate=4mbit,size=500,tos=0x10,start=0.1")};
    return c;
  }
};

// 8 Mbit/s of 1000-byte frames for 0.5 s: 500 packets; 4 Mbit/s of 500-byte frames for 0.4 s: 400.
void expect_schedule(const OfferReport& r) {
  ASSERT_EQ(r.flows.size(), 2u);
  EXPECT_EQ(r.flows[0].offered, 500u);
  EXPECT_EQ(r.flows[1].offered, 400u);
  EXPECT_EQ(r.flows[0].bytes, 500u * 1000);
  EXPECT_EQ(r.flows[1].bytes, 400u * 500);
  for (const auto& f : r.flows) {
    EXPECT_EQ(f.accepted, f.offered);
    EXPECT_EQ(f.dropped, 0u);
  }
}

TEST_F(OfferTest, TheKernelPathSendsTheScheduleFromItsSockets) {
  if (!up_) return;
  auto s = sink();
  const OfferReport r = run_offer(offer(OfferVia::kernel));
  expect_schedule(r);
  EXPECT_TRUE(r.tc_stats_json.empty());
  const SinkReport got = expect_once_in_order(*s, 900);
  EXPECT_EQ(got.senders.size(), 2u);
}

TEST_F(OfferTest, TxpathSendsTheSameScheduleThroughItsTreeAndReportsItsCounters) {
  if (!up_) return;
  {
    std::ofstream f(config_path());
    f << "link add dev " << cfg_.host_if << "\nqdisc add dev " << cfg_.host_if
      << " root handle 1: pfifo limit 2000\n";
  }
  OfferConfig c = offer(OfferVia::txpath);
  c.tc_config = config_path();
  bool started = false;
  c.on_start = [&] { started = true; };
  auto s = sink();
  const OfferReport r = run_offer(c);
  EXPECT_TRUE(started);
  expect_schedule(r);
  expect_once_in_order(*s, 900);
  const auto j = nlohmann::json::parse(r.tc_stats_json);
  ASSERT_FALSE(j["qdiscs"].empty());
  EXPECT_EQ(j["qdiscs"][0]["kind"], "pfifo");
  EXPECT_EQ(j["qdiscs"][0]["drops"], 0);
  // Every packet the schedule sent was counted by the tree, the last ones perhaps still queued.
  EXPECT_EQ(j["qdiscs"][0]["packets"].get<uint64_t>() + j["qdiscs"][0]["qlen"].get<uint64_t>(), 900u);
}

// Several TX queues: each flow on its queue (queue=Q), each queue's flows from a sender of its
// own; mq's per-queue classes count exactly their flow's packets.
TEST_F(OfferTest, EachFlowGoesOutOnItsTxQueue) {
  if (!up_) return;
  testbed_down(cfg_);
  up_ = false;
  cfg_.queues = 2;
  info_ = testbed_up(cfg_);
  up_ = true;
  {
    std::ofstream f(config_path());
    f << "link add dev " << cfg_.host_if << " numtxqueues 2\nqdisc add dev " << cfg_.host_if
      << " root handle 1: mq\n";
  }
  OfferConfig c;
  c.device = "afpacket:" + cfg_.host_if;
  c.via = OfferVia::txpath;
  c.tc_config = config_path();
  c.duration_s = 0.5;
  c.flows = {parse_offer_flow("rate=8mbit,size=1000,queue=1"), parse_offer_flow("rate=4mbit,size=1000,queue=0")};
  auto s = sink();
  const OfferReport r = run_offer(c);
  ASSERT_EQ(r.flows.size(), 2u);
  EXPECT_EQ(r.flows[0].offered, 500u);
  EXPECT_EQ(r.flows[1].offered, 250u);
  expect_once_in_order(*s, 750);
  const auto j = nlohmann::json::parse(r.tc_stats_json);
  std::map<std::string, uint64_t> packets;
  for (const auto& cl : j["classes"]) packets[cl["handle"].get<std::string>()] = cl["packets"].get<uint64_t>();
  EXPECT_EQ(packets["1:1"], 250u) << r.tc_stats_json;  // TX queue 0
  EXPECT_EQ(packets["1:2"], 500u) << r.tc_stats_json;  // TX queue 1
}

TEST_F(OfferTest, TxpathNeedsATreeAndAFlow) {
  if (!up_) return;
  OfferConfig c = offer(OfferVia::txpath);
  EXPECT_THROW(run_offer(c), ConfigError);  // no --tc-config
  c.flows.clear();
  EXPECT_THROW(run_offer(c), ConfigError);
  c = offer(OfferVia::kernel);
  c.device = "null";
  EXPECT_THROW(run_offer(c), ConfigError);
}

}  // namespace
}  // namespace txpath::bench_detail
