// SPDX-License-Identifier: MIT
// Tests of the htb qdisc (src/qdisc/htb.*): tc grammar and text for the qdisc and its classes
// (the tdc htb strings), errors (parse vs rejection), classification (classid, default class,
// direct queue), the class tree (leaf -> inner, delete, graft), and the shaping behaviour on a
// simulated clock: guaranteed rates split 3:7, lending to a lone borrower, ceil bounds over
// every window, priority and quantum shares of the excess, the watchdog; and a random-operation
// model test of the accounting invariant.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qdisc/fifo.hpp"
#include "qdisc/htb.hpp"
#include "tc/qdisc_spec.hpp"
#include "txpath/error.hpp"
#include "txpath/packet.hpp"
#include "support/test_child_qdisc.hpp"
#include "support/packet_arena.hpp"
#include "txpath/qdisc.hpp"
#include "txpath/tc.hpp"

namespace txpath {
namespace {

uint64_t g_now = 0;
uint64_t fake_clock() { return g_now; }

QdiscEnv env_for(uint16_t handle_major = 1, uint32_t txqueuelen = 1000) {
  QdiscEnv env;
  env.clock = &fake_clock;
  env.handle_major = handle_major;
  env.txqueuelen = txqueuelen;
  return env;
}

std::unique_ptr<HtbQdisc> make(const std::string& opts, const QdiscEnv& env = env_for()) {
  g_now = 0;
  std::unique_ptr<Qdisc> q = make_qdisc("htb " + opts, env);
  auto* h = dynamic_cast<HtbQdisc*>(q.get());
  if (!h) return nullptr;
  q.release();
  return std::unique_ptr<HtbQdisc>(h);
}

std::vector<std::string_view> split(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') ++i;
    const std::size_t b = i;
    while (i < s.size() && s[i] != ' ') ++i;
    if (i > b) out.push_back(s.substr(b, i - b));
  }
  return out;
}

// tc class add/change through the generic interface, as the tc layer does it.
template <class F>
void with_options(const std::string& opts, F&& f) {
  const std::vector<std::string_view> toks = split(opts);
  QdiscOptions o(std::span<const std::string_view>(toks), [&](const std::string& what, bool rejected) {
    const std::string msg = "class \"htb " + opts + "\": " + what;
    if (rejected) throw ConfigRejected(msg);
    throw ConfigError(msg);
  });
  f(o);
}

void add(Qdisc& q, uint16_t minor, uint16_t parent, const std::string& opts,
         const QdiscEnv& env = env_for()) {
  with_options(opts, [&](const QdiscOptions& o) { txpath::add_class(q, minor, parent, o, env); });
}

void change(Qdisc& q, uint16_t minor, const std::string& opts) {
  with_options(opts, [&](const QdiscOptions& o) { q.class_ops()->change_class(minor, o, env_for()); });
}

// "" if accepted, else "parse: msg" or "reject: msg".
template <class F>
std::string outcome(F&& f) {
  try {
    f();
  } catch (const ConfigRejected& e) {
    return std::string("reject: ") + e.what();
  } catch (const ConfigError& e) {
    return std::string("parse: ") + e.what();
  }
  return "";
}

bool starts_with(const std::string& s, std::string_view p) { return s.rfind(p, 0) == 0; }

// Test packets backed by local buffers, recycled through a free list.
class Packets : public test::PacketArena {
 public:
  using PacketArena::PacketArena;
  Packet* get(uint32_t len, uint32_t priority) {
    Packet* p = take(len);
    if (p) p->priority = priority;
    return p;
  }
  std::size_t available() const { return free_count(); }
};

// qdisc.hpp's invariant for htb: its qlen/backlog are the leaves' children's plus the direct
// queue's (no peeked packet in these checks).
void expect_sums(HtbQdisc& q) {
  uint64_t cq = q.direct_qlen(), cb = 0;
  for (const QdiscClassInfo& ci : q.classes()) {
    if (!ci.leaf) continue;
    Qdisc* c = q.child(ci.minor);
    ASSERT_NE(c, nullptr);
    cq += c->qlen();
    cb += c->backlog();
    EXPECT_EQ(q.class_stats(ci.minor).qlen, c->qlen());
  }
  EXPECT_EQ(q.qlen(), cq);
  EXPECT_GE(q.backlog(), cb);  // plus the direct queue's bytes
  EXPECT_EQ(q.stats().qlen, q.qlen());
}

int64_t xstat(const Xstats& x, std::string_view name) {
  for (const auto& [k, v] : x)
    if (k == name) return v;
  ADD_FAILURE() << "no xstat " << name;
  return -1;
}

// ---------------------------------------------------------------------------------------------
// Qdisc options

TEST(HtbSpec, QdiscDefaultsAndTcText) {
  auto q = make("");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->kind(), "htb");
  EXPECT_EQ(txpath::tc::options_text(*q), "r2q 10 default 0 direct_packets_stat 0 direct_qlen 1000");
  EXPECT_EQ(txpath::tc::options_json(*q),
            "{\"r2q\":10,\"default\":\"0\",\"direct_packets_stat\":0,\"direct_qlen\":1000}");
  EXPECT_FALSE(q->can_bypass());
  EXPECT_TRUE(q->classes().empty());

  // tdc 3906: default is hexadecimal.
  EXPECT_EQ(txpath::tc::options_text(*make("default 10")), "r2q 10 default 0x10 direct_packets_stat 0 direct_qlen 1000");
  EXPECT_EQ(make("default 10")->default_minor(), 0x10u);
  EXPECT_EQ(make("default 0x1f")->default_minor(), 0x1fu);
  EXPECT_EQ(txpath::tc::options_json(*make("default 10")),
            "{\"r2q\":10,\"default\":\"0x10\",\"direct_packets_stat\":0,\"direct_qlen\":1000}");
  EXPECT_EQ(txpath::tc::options_text(*make("r2q 5")), "r2q 5 default 0 direct_packets_stat 0 direct_qlen 1000");
  EXPECT_EQ(txpath::tc::options_text(*make("direct_qlen 1024")), "r2q 10 default 0 direct_packets_stat 0 direct_qlen 1024");
  EXPECT_EQ(txpath::tc::options_text(*make("", env_for(1, 77))), "r2q 10 default 0 direct_packets_stat 0 direct_qlen 77");
  // The kernel's default is the txqueuelen as it is, 1 included; -d adds the htb version.
  EXPECT_EQ(txpath::tc::options_text(*make("", env_for(1, 1))), "r2q 10 default 0 direct_packets_stat 0 direct_qlen 1");
  EXPECT_EQ(txpath::tc::options_text(*make(""), true), "r2q 10 default 0 direct_packets_stat 0 ver 3.17 direct_qlen 1000");
  EXPECT_EQ(txpath::tc::options_json(*make(""), true),
            "{\"r2q\":10,\"default\":\"0\",\"direct_packets_stat\":0,\"ver\":\"3.17\",\"direct_qlen\":1000}");
  EXPECT_EQ(txpath::tc::options_text(*make("r2q 1 direct_qlen 5 default ab")),
            "r2q 1 default 0xab direct_packets_stat 0 direct_qlen 5");
}

TEST(HtbSpec, QdiscErrorsAreOneLineParseOrReject) {
  auto err = [](const std::string& opts) {
    return outcome([&] { make_qdisc("htb " + opts, env_for()); });
  };
  for (const char* bad : {"foo", "default", "default xyz", "r2q", "r2q -1", "r2q 1.5",
                          "direct_qlen 10k", "r2q 99999999999", "help"}) {
    const std::string e = err(bad);
    EXPECT_TRUE(starts_with(e, "parse: qdisc \"htb")) << bad << " -> " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  EXPECT_TRUE(starts_with(err("offload"), "reject: ")) << err("offload");
  EXPECT_EQ(err("default 10 r2q 5 direct_qlen 3"), "");
  // As tc reads them: a later value overrides an earlier one, an option may be a prefix.
  EXPECT_EQ(make("default 10 default 11")->default_minor(), 0x11u);
  EXPECT_EQ(txpath::tc::options_text(*make("r2 7 def 12 di 3 deb 1")), "r2q 7 default 0x12 direct_packets_stat 0 direct_qlen 3");
  // tc's "unset" direct_qlen is the kernel's default, the device's txqueuelen; r2q is the
  // kernel's int, where below 1 is 1.
  EXPECT_EQ(txpath::tc::options_text(*make("direct_qlen 4294967295", env_for(1, 32))),
            "r2q 10 default 0 direct_packets_stat 0 direct_qlen 32");
  EXPECT_EQ(txpath::tc::options_text(*make("r2q 4294967295")), "r2q 1 default 0 direct_packets_stat 0 direct_qlen 1000");
  EXPECT_EQ(txpath::tc::options_text(*make("r2q 0")), "r2q 1 default 0 direct_packets_stat 0 direct_qlen 1000");
  EXPECT_EQ(txpath::tc::options_text(*make("r2q 2147483647")),
            "r2q 2147483647 default 0 direct_packets_stat 0 direct_qlen 1000");
  EXPECT_EQ(txpath::tc::options_text(*make("r2q 2147483648")), "r2q 1 default 0 direct_packets_stat 0 direct_qlen 1000");
}

// ---------------------------------------------------------------------------------------------
// Class options

TEST(HtbClassSpec, TdcClassStrings) {
  struct Case {
    const char* opts;
    const char* text;
  } cases[] = {
      {"rate 20kbit burst 1000", "prio 0 rate 20Kbit ceil 20Kbit burst 1000b cburst 1600b"},  // b924
      {"rate 20Kbit mpu 64", "prio 0 rate 20Kbit ceil 20Kbit burst 1600b cburst 1600b"},      // 4359
      {"rate 20Kbit prio 1", "prio 1 rate 20Kbit ceil 20Kbit burst 1600b cburst 1600b"},      // 9048
      {"rate 20Kbit ceil 10Kbit", "prio 0 rate 20Kbit ceil 10Kbit burst 1600b cburst 1600b"}, // 4994
      {"rate 20Kbit cburst 2000", "prio 0 rate 20Kbit ceil 20Kbit burst 1600b cburst 2000b"}, // 9523
      {"rate 20Kbit mtu 2048", "prio 0 rate 20Kbit ceil 20Kbit burst 2Kb cburst 2Kb"},        // 5353
      {"rate 20Kbit quantum 2048", "prio 0 rate 20Kbit ceil 20Kbit burst 1600b cburst 1600b"},// 346a
  };
  for (const Case& c : cases) {
    auto q = make("");
    add(*q, 1, 0, c.opts);
    EXPECT_EQ(txpath::tc::class_options_text(*q, 1), c.text) << c.opts;
    const auto cls = q->classes();
    ASSERT_EQ(cls.size(), 1u);
    EXPECT_EQ(cls[0].minor, 1);
    EXPECT_TRUE(cls[0].print_root);
    EXPECT_TRUE(cls[0].leaf);
    EXPECT_NE(q->child(1), nullptr);
    EXPECT_EQ(q->child(1)->kind(), "pfifo");
  }
  auto q = make("");
  add(*q, 1, 0, "rate 20kbit burst 1000");
  EXPECT_EQ(txpath::tc::class_options_json(*q, 1), "{\"prio\":0,\"rate\":2500,\"ceil\":2500,\"burst\":1000,\"cburst\":1600}");
  EXPECT_EQ(txpath::tc::class_options_text(*q, 2), "");
  EXPECT_EQ(txpath::tc::class_options_json(*q, 2), "{}");
}

TEST(HtbClassSpec, QuantumFromR2qClampedOrExplicit) {
  auto q = make("");
  add(*q, 1, 0, "rate 20kbit");                 // 2500 / 10 = 250 -> 1000
  add(*q, 2, 0, "rate 100mbit");                // 12.5e6 / 10 -> 200000
  add(*q, 3, 0, "rate 20mbit");                 // 2.5e6 / 10 = 250000 -> 200000
  add(*q, 4, 0, "rate 8mbit");                  // 1e6 / 10 = 100000
  add(*q, 5, 0, "rate 20kbit quantum 2048");
  add(*q, 6, 0, "rate 20kbit quantum 500");     // explicit: not clamped
  EXPECT_EQ(q->class_config(1)->quantum, 1000u);
  EXPECT_EQ(q->class_config(2)->quantum, 200000u);
  EXPECT_EQ(q->class_config(3)->quantum, 200000u);
  EXPECT_EQ(q->class_config(4)->quantum, 100000u);
  EXPECT_EQ(q->class_config(5)->quantum, 2048u);
  EXPECT_EQ(q->class_config(6)->quantum, 500u);
  auto q5 = make("r2q 5");
  add(*q5, 1, 0, "rate 8mbit");
  EXPECT_EQ(q5->class_config(1)->quantum, 200000u);
  add(*q5, 2, 0, "rate 4mbit");
  EXPECT_EQ(q5->class_config(2)->quantum, 100000u);
}

TEST(HtbClassSpec, ErrorsParseVersusReject) {
  auto q = make("");
  add(*q, 1, 0, "rate 10mbit");
  auto try_add = [&](uint16_t minor, uint16_t parent, const std::string& opts) {
    return outcome([&] { add(*q, minor, parent, opts); });
  };
  for (const char* bad : {"", "ceil 1mbit", "rate", "rate foo", "rate 0", "rate 1mbit rate 2mbit",
                          "rate 1mbit burst x", "rate 1mbit prio x", "rate 1mbit mpu 70000",
                          "rate 1mbit overhead -1", "rate 1mbit linklayer foo", "rate 1mbit bogus 1",
                          "rate 1mbit quantum", "rate 1mbit cburst 5gb"}) {
    const std::string e = try_add(2, 0, bad);
    EXPECT_TRUE(starts_with(e, "parse: ")) << "'" << bad << "' -> " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  // The kernel takes a priority above 7 as 7.
  EXPECT_EQ(try_add(3, 0, "rate 1mbit prio 8"), "");
  EXPECT_EQ(q->class_config(3)->prio, 7u);
  q->delete_class(3);
  EXPECT_TRUE(starts_with(try_add(1, 0, "rate 1mbit"), "reject: "));   // exists
  EXPECT_TRUE(starts_with(try_add(2, 9, "rate 1mbit"), "reject: "));   // no parent 1:9
  EXPECT_TRUE(starts_with(try_add(0, 0, "rate 1mbit"), "reject: "));   // 1:0 is the qdisc
  EXPECT_EQ(q->classes().size(), 1u);  // nothing half-added
  EXPECT_EQ(try_add(2, 1, "rate 1mbit linklayer atm overhead 10 mpu 64 prio 7 burst 10k/8"), "");
  // Change: the class must exist; options are re-parsed in full.
  EXPECT_TRUE(starts_with(outcome([&] { change(*q, 9, "rate 1mbit"); }), "reject: "));
  EXPECT_TRUE(starts_with(outcome([&] { change(*q, 2, "ceil 1mbit"); }), "parse: "));
  change(*q, 2, "rate 2mbit ceil 3mbit prio 3");
  // 1600 B at 3 Mbit is 4266.67 us: tc sends 4266 us as 66656 ticks and prints them as 1599 B.
  EXPECT_EQ(txpath::tc::class_options_text(*q, 2), "prio 3 rate 2Mbit ceil 3Mbit burst 1600b cburst 1599b");
  // Delete: not with children; not twice.
  EXPECT_THROW(q->delete_class(1), ConfigRejected);
  q->delete_class(2);
  EXPECT_THROW(q->delete_class(2), ConfigRejected);
  EXPECT_EQ(q->class_level(1), 0);  // a leaf again
}

TEST(HtbClassSpec, DepthAtMostEightLevels) {
  auto q = make("");
  add(*q, 1, 0, "rate 10mbit");
  uint16_t parent = 1;
  for (uint16_t m = 2; m <= 8; ++m) {
    add(*q, m, parent, "rate 1mbit");
    parent = m;
  }
  // 1:1 is level 7, 1:2 level 6 ... 1:7 level 1, 1:8 the leaf.
  EXPECT_EQ(q->class_level(1), 7);
  EXPECT_EQ(q->class_level(7), 1);
  EXPECT_EQ(q->class_level(8), 0);
  EXPECT_TRUE(starts_with(outcome([&] { add(*q, 9, 8, "rate 1mbit"); }), "reject: "));
  EXPECT_EQ(outcome([&] { add(*q, 9, 7, "rate 1mbit"); }), "");  // a sibling of 1:8 is fine
  const auto cls = q->classes();
  ASSERT_EQ(cls.size(), 9u);
  for (std::size_t i = 1; i < cls.size(); ++i) {  // parents before children
    const auto it = std::find_if(cls.begin(), cls.begin() + static_cast<std::ptrdiff_t>(i),
                                 [&](const QdiscClassInfo& c) { return c.minor == cls[i].parent_minor; });
    EXPECT_NE(it, cls.begin() + static_cast<std::ptrdiff_t>(i)) << "class " << cls[i].minor;
    EXPECT_FALSE(cls[i].print_root);
  }
  EXPECT_TRUE(cls[0].print_root);
  EXPECT_FALSE(cls[0].leaf);
}

TEST(HtbClassSpec, XstatsAndTheirText) {
  auto q = make("");
  add(*q, 1, 0, "rate 20kbit burst 1600 cburst 3200");
  const Xstats x = q->class_xstats(1);
  // 1600 B at 2500 B/s = 0.64 s = 640e6 ns = 10e6 ticks of 64 ns; cburst twice that.
  // tc ends a class's xstats with an empty line.
  EXPECT_EQ(txpath::tc::class_xstats_text(*q, x), " lended: 0 borrowed: 0 giants: 0\n tokens: 10000000 ctokens: 20000000\n\n");
  ASSERT_EQ(x.size(), 5u);
  EXPECT_EQ(x[0].first, "lended");
  EXPECT_EQ(x[1].first, "borrowed");
  EXPECT_EQ(x[2].first, "giants");
  EXPECT_EQ(x[3].first, "tokens");
  EXPECT_EQ(x[4].first, "ctokens");
  // Tokens are clamped to s32: 4000 B at 8 bit/s is 4e9 us, 6.25e10 ticks, which tc 6.1 wraps
  // to 32 bits (2370457856, still beyond 2^31).
  add(*q, 2, 0, "rate 8bit burst 4000");
  EXPECT_EQ(xstat(q->class_xstats(2), "tokens"), 2147483647);
  EXPECT_TRUE(q->class_xstats(3).empty());
}

TEST(HtbClassSpec, RunsWithTheQuantisedBucket) {
  auto q = make("");
  add(*q, 0x10, 0, "rate 3mbit");
  // The bucket the class runs with is what the kernel holds: the 66656 ticks tc sends for
  // 1600 B at 3 Mbit (src/tc/psched.hpp), not 1600 B exactly (66666 ticks).
  EXPECT_EQ(xstat(q->class_xstats(0x10), "tokens"), 66656);
  EXPECT_EQ(txpath::tc::class_options_text(*q, 0x10), "prio 0 rate 3Mbit ceil 3Mbit burst 1599b cburst 1599b");
  EXPECT_EQ(txpath::tc::class_options_text(*q, 0x10, true),
            "prio 0 quantum 37500 rate 3Mbit ceil 3Mbit linklayer ethernet burst 1599b/1 mpu 0b "
            "cburst 1599b/1 mpu 0b level 0");
  // An inner class prints no prio (and no quantum); overhead and linklayer are printed.
  add(*q, 0x11, 0x10, "rate 1mbit");
  add(*q, 0x12, 0, "rate 1mbit overhead 20 linklayer atm prio 2");
  EXPECT_EQ(txpath::tc::class_options_text(*q, 0x10), "rate 3Mbit ceil 3Mbit burst 1599b cburst 1599b");
  EXPECT_EQ(txpath::tc::class_options_text(*q, 0x12), "prio 2 rate 1Mbit overhead 20 ceil 1Mbit linklayer atm burst 1600b cburst 1600b");
  EXPECT_EQ(q->class_warning(0x12), "");
  add(*q, 0x13, 0, "rate 900mbit");
  EXPECT_EQ(q->class_warning(0x13), "Warning: sch_htb: quantum of class 10013 is big. Consider r2q change.");
  add(*q, 0x14, 0, "rate 8kbit");
  EXPECT_EQ(q->class_warning(0x14), "Warning: sch_htb: quantum of class 10014 is small. Consider r2q change.");
  add(*q, 0x15, 0, "rate 8kbit quantum 1500");
  EXPECT_EQ(q->class_warning(0x15), "");  // an explicit quantum is never clamped
}

TEST(HtbClassSpec, ListedInTheKernelsHashOrder) {
  auto q = make("");
  add(*q, 0x1, 0, "rate 100mbit");
  add(*q, 0x10, 0x1, "rate 3mbit");
  add(*q, 0x20, 0x1, "rate 9mbit");
  // 1:1 and 1:10 share bucket 1 of 4 (the newest first), 1:20 is in bucket 2.
  std::vector<uint16_t> order;
  for (const QdiscClassInfo& c : q->listed_classes()) order.push_back(c.minor);
  EXPECT_EQ(order, (std::vector<uint16_t>{0x10, 0x1, 0x20}));
}

// ---------------------------------------------------------------------------------------------
// Classification, direct queue, default class

TEST(Htb, ClassificationDirectAndDefault) {
  Packets pk(64);
  PacketList to_free;
  auto q = make("default 20 direct_qlen 2");
  add(*q, 1, 0, "rate 100mbit");
  add(*q, 0x10, 1, "rate 10mbit");
  add(*q, 0x20, 1, "rate 10mbit");
  auto count = [&](uint16_t minor) { return q->child(minor)->qlen(); };
  q->enqueue(pk.get(100, 0x10010), to_free);  // 1:10, a leaf
  EXPECT_EQ(count(0x10), 1u);
  q->enqueue(pk.get(100, 0x10001), to_free);  // 1:1 is inner -> default 1:20
  q->enqueue(pk.get(100, 0x20010), to_free);  // another qdisc's classid -> default
  q->enqueue(pk.get(100, 5), to_free);        // a plain priority -> default
  EXPECT_EQ(count(0x20), 3u);
  q->enqueue(pk.get(100, 0x10000), to_free);  // the qdisc's own handle -> direct
  EXPECT_EQ(q->direct_qlen(), 1u);
  EXPECT_EQ(q->direct_packets(), 1u);
  expect_sums(*q);

  // Without a (leaf) default class unclassified packets go direct; the direct queue tail-drops.
  q->delete_class(0x20);
  q->enqueue(pk.get(100, 5), to_free);
  EXPECT_EQ(q->direct_qlen(), 2u);
  EXPECT_EQ(to_free.size(), 3u);  // 1:20's purged packets, moved onto this enqueue's to_free
  EXPECT_EQ(q->enqueue(pk.get(100, 5), to_free), Verdict::drop);
  EXPECT_EQ(to_free.size(), 4u);
  EXPECT_EQ(q->stats().drops, 4u);  // 3 purged with 1:20, 1 tail drop
  EXPECT_EQ(q->direct_packets(), 2u);
  EXPECT_EQ(txpath::tc::options_text(*q), "r2q 10 default 0x20 direct_packets_stat 2 direct_qlen 2");
  // The direct queue goes first, unshaped.
  EXPECT_EQ(q->dequeue()->priority, 0x10000u);
  EXPECT_EQ(q->dequeue()->priority, 5u);
  EXPECT_EQ(q->dequeue()->priority, 0x10010u);
  EXPECT_EQ(q->dequeue(), nullptr);  // the default's packets were purged with its class
  EXPECT_EQ(q->qlen(), 0u);
  PacketList dropped;
  q->take_dequeue_drops(dropped);
  EXPECT_EQ(dropped.size(), 0u);  // already moved onto the later enqueue's to_free
  EXPECT_EQ(q->stats().drops, 4u);  // 1 tail drop + 3 purged with 1:20
  pk.put(to_free);
}

TEST(Htb, HandleMajorZeroUsesClassidsOfMajorZero) {
  Packets pk(8);
  PacketList to_free;
  auto q = make("", env_for(0));
  add(*q, 3, 0, "rate 1mbit", env_for(0));
  q->enqueue(pk.get(100, 3), to_free);  // 0:3
  EXPECT_EQ(q->child(3)->qlen(), 1u);
  q->enqueue(pk.get(100, 0), to_free);  // 0:0 = the qdisc -> direct
  EXPECT_EQ(q->direct_qlen(), 1u);
  q->enqueue(pk.get(100, 0x10003), to_free);  // not ours, no default -> direct
  EXPECT_EQ(q->direct_qlen(), 2u);
  expect_sums(*q);
}

// ---------------------------------------------------------------------------------------------
// Shaping on the simulated clock

// Drives an htb like a device that sends instantly: dequeue while it gives packets, else jump
// the clock to the watchdog. Saturated classes are topped up to `depth` queued packets.
struct Sim {
  explicit Sim(HtbQdisc& qd) : q(qd) {}
  HtbQdisc& q;
  Packets pk{4096};
  std::map<uint32_t, uint64_t> bytes;  // by priority (= classid)
  std::vector<uint32_t> saturated;
  uint32_t len = 1500;
  std::size_t depth = 8;
  PacketList to_free;
  std::function<void(const Packet&)> on_send;

  void top_up(uint32_t prio) {
    while (q.child(prio & 0xffff) && q.child(prio & 0xffff)->qlen() < depth) {
      Packet* p = pk.get(len, prio);
      ASSERT_NE(p, nullptr);
      ASSERT_EQ(q.enqueue(p, to_free), Verdict::success);
    }
  }
  void run_until(uint64_t end) {
    for (uint32_t c : saturated) top_up(c);
    while (g_now < end) {
      Packet* p = q.dequeue();
      if (p) {
        bytes[p->priority] += p->len;
        if (on_send) on_send(*p);
        const uint32_t prio = p->priority;
        pk.put(p);
        if (std::find(saturated.begin(), saturated.end(), prio) != saturated.end()) top_up(prio);
        continue;
      }
      const uint64_t w = q.watchdog_ns();
      ASSERT_GT(w, g_now) << "throttled htb without a future watchdog";
      ASSERT_LE(w, g_now + HtbQdisc::kMaxWatchdogAheadNs);
      g_now = std::min(w, end);
    }
  }
  double mbit(uint32_t prio, double seconds) { return bytes[prio] * 8.0 / seconds / 1e6; }
};

TEST(HtbShaping, GuaranteedRatesSplitThreeToSeven) {
  auto q = make("");
  add(*q, 1, 0, "rate 10mbit ceil 10mbit");
  add(*q, 0xa, 1, "rate 3mbit ceil 10mbit");
  add(*q, 0xb, 1, "rate 7mbit ceil 10mbit");
  Sim sim{*q};
  sim.saturated = {0x1000a, 0x1000b};
  sim.run_until(10'000'000'000ull);
  const double a = sim.mbit(0x1000a, 10), b = sim.mbit(0x1000b, 10);
  EXPECT_NEAR(a + b, 10.0, 0.1) << a << " + " << b;
  EXPECT_NEAR(a / (a + b), 0.3, 0.3 * 0.02) << a << " : " << b;
  EXPECT_NEAR(b / (a + b), 0.7, 0.7 * 0.02) << a << " : " << b;
  // Class statistics: leaves count their own packets, the parent the aggregate.
  EXPECT_EQ(q->class_stats(0xa).bytes, sim.bytes[0x1000a]);
  EXPECT_EQ(q->class_stats(1).bytes, sim.bytes[0x1000a] + sim.bytes[0x1000b]);
  EXPECT_EQ(q->stats().bytes, q->class_stats(1).bytes);
  EXPECT_GT(q->class_stats(1).packets, 0u);
  expect_sums(*q);
}

TEST(HtbShaping, IdleSiblingLendsToBorrower) {
  auto q = make("");
  add(*q, 1, 0, "rate 10mbit ceil 10mbit");
  add(*q, 0xa, 1, "rate 3mbit ceil 10mbit");
  add(*q, 0xb, 1, "rate 7mbit ceil 10mbit");
  Sim sim{*q};
  sim.saturated = {0x1000a};
  sim.run_until(10'000'000'000ull);
  EXPECT_NEAR(sim.mbit(0x1000a, 10), 10.0, 0.1);
  EXPECT_GT(xstat(q->class_xstats(0xa), "borrowed"), 0);
  EXPECT_GT(xstat(q->class_xstats(0xa), "lended"), 0);  // its own-rate packets
  EXPECT_GT(xstat(q->class_xstats(1), "lended"), 0);
  EXPECT_EQ(xstat(q->class_xstats(0xb), "lended"), 0);
  EXPECT_GT(q->class_stats(1).overlimits, 0u);  // the parent ran out of ceil tokens
  EXPECT_EQ(q->stats().overlimits, [&] {
    uint64_t s = 0;
    for (uint16_t m : {1, 0xa, 0xb}) s += q->class_stats(m).overlimits;
    return s;
  }());
  EXPECT_EQ(sim.bytes[0x1000b], 0u);
}

// Bytes a class sends in any window [t_i, t_j] <= ceil * (t_j - t_i) + cburst + one packet
// (a class may send while its ctokens are >= 0, which can take them one packet below zero).
TEST(HtbShaping, CeilNeverExceededInAnyWindow) {
  for (bool sibling_busy : {false, true}) {
    auto q = make("");
    add(*q, 1, 0, "rate 10mbit");
    add(*q, 0xc, 1, "rate 1mbit ceil 5mbit");
    add(*q, 0xd, 1, "rate 5mbit ceil 10mbit");
    Sim sim{*q};
    sim.saturated = {0x1000c};
    if (sibling_busy) sim.saturated.push_back(0x1000d);
    constexpr double kCeil = 625000.0;  // 5 mbit in bytes/s
    constexpr double kCburst = 1600.0;
    double sum = 0, min_start = 1e300, worst = -1e300;
    sim.on_send = [&](const Packet& p) {
      if (p.priority != 0x1000c) return;
      const double t = static_cast<double>(g_now) / 1e9;
      min_start = std::min(min_start, sum - kCeil * t);  // a window starting at this packet
      sum += p.len;
      worst = std::max(worst, (sum - kCeil * t) - min_start);
    };
    sim.run_until(5'000'000'000ull);
    EXPECT_LE(worst, kCburst + 1500.0 + 1e-6) << "sibling busy " << sibling_busy;
    EXPECT_GT(worst, 0.0);
    const double c = sim.mbit(0x1000c, 5);
    if (sibling_busy) {
      // Its 1 mbit plus a quantum share (12500 vs 62500 bytes) of the 4 mbit excess: between
      // its rate and its ceil.
      EXPECT_GE(c, 0.99);
      EXPECT_LE(c, 5.0 + 0.01);
      EXPECT_NEAR(c + sim.mbit(0x1000d, 5), 10.0, 0.1);
    } else {
      EXPECT_NEAR(c, 5.0, 0.05);  // its ceil, although the parent could give 10
    }
  }
}

// Classes 1:a and 1:b under 1:1, both kept busy for 10 s on the simulated clock: their Mbit/s.
std::pair<double, double> busy_siblings(HtbQdisc& q, const char* parent, const char* a, const char* b) {
  add(q, 1, 0, parent);
  add(q, 0xa, 1, a);
  add(q, 0xb, 1, b);
  Sim sim{q};
  sim.saturated = {0x1000a, 0x1000b};
  sim.run_until(10'000'000'000ull);
  return {sim.mbit(0x1000a, 10), sim.mbit(0x1000b, 10)};
}

TEST(HtbShaping, LowerPrioNumberGetsTheExcessFirst) {
  auto q = make("");
  const auto [a, b] = busy_siblings(*q, "rate 10mbit", "rate 1mbit ceil 10mbit prio 0", "rate 1mbit ceil 10mbit prio 1");
  EXPECT_NEAR(a, 9.0, 0.15);
  EXPECT_NEAR(b, 1.0, 0.05);
}

// Borrowers of one prio share the parent's excess in proportion to their quanta (DRR).
TEST(HtbShaping, ExcessSplitByQuantum) {
  auto q = make("");
  const auto [a, b] = busy_siblings(*q, "rate 10mbit", "rate 8kbit ceil 10mbit quantum 3000",
                                    "rate 8kbit ceil 10mbit quantum 1500");
  EXPECT_NEAR(a + b, 10.0, 0.1);
  EXPECT_NEAR(a / b, 2.0, 2.0 * 0.03) << a << " : " << b;
  EXPECT_GT(xstat(q->class_xstats(0xa), "borrowed"), xstat(q->class_xstats(0xb), "borrowed"));
}

// The same with guaranteed rates that are a large part of the traffic, the quanta from r2q
// (rate / 10: 25000 and 75000 bytes). A borrower whose own bucket refills leaves its parent's
// feed for its own row while its DRR turn is not over; the feed remembers it (the kernel's
// last_ptr_id) and gives it the rest of its turn when it is back. Rates 2 and 6 Mbit/s, 12 of
// excess split 1:3: 5 and 15, what the kernel's htb delivers on the same tree
// (scripts/qdisc_conform.py, "htb siblings borrow by quantum"). Before the feed remembered the
// class, the lower class id took most of the excess (13.5 and 6.5 Mbit/s).
TEST(HtbShaping, ExcessSplitByQuantumWithLargeGuarantees) {
  auto q = make("");
  const auto [a, b] = busy_siblings(*q, "rate 20mbit ceil 20mbit", "rate 2mbit ceil 20mbit", "rate 6mbit ceil 20mbit");
  EXPECT_NEAR(a + b, 20.0, 0.2);
  EXPECT_NEAR(a, 5.0, 5.0 * 0.03) << a << " : " << b;
  EXPECT_NEAR(b, 15.0, 15.0 * 0.03) << a << " : " << b;
}

TEST(HtbShaping, DefaultClassIsShapedDirectIsNot) {
  for (bool with_default : {true, false}) {
    auto q = make(with_default ? "default 20" : "");
    add(*q, 0x20, 0, "rate 1mbit");
    Packets pk(64);
    PacketList to_free;
    for (int i = 0; i < 20; ++i) q->enqueue(pk.get(1500, 7), to_free);  // unclassified
    int sent_now = 0;
    while (Packet* p = q->dequeue()) {
      ++sent_now;
      pk.put(p);
    }
    if (with_default) {
      EXPECT_EQ(sent_now, 2);  // the 1600-byte burst: one packet, then one more into the red
      // 12.8 ms of tokens - 2 x 12 ms (1500 B at 125000 B/s) = -11.2 ms.
      EXPECT_EQ(q->watchdog_ns(), 11'200'000u);
      EXPECT_EQ(q->direct_packets(), 0u);
    } else {
      EXPECT_EQ(sent_now, 20);
      EXPECT_EQ(q->direct_packets(), 20u);
      EXPECT_EQ(q->watchdog_ns(), 0u);
    }
    q->reset(to_free);
    pk.put(to_free);
  }
}

TEST(HtbShaping, WatchdogTimesAndOverlimits) {
  auto q = make("");
  add(*q, 1, 0, "rate 1mbit burst 1500 cburst 1500");
  Packets pk(8);
  PacketList to_free;
  for (int i = 0; i < 5; ++i) q->enqueue(pk.get(1500, 0x10001), to_free);
  // Full bucket (12 ms) -> 0 -> -12 ms: two packets at t = 0, then every 12 ms.
  ASSERT_NE(q->dequeue(), nullptr);
  ASSERT_NE(q->dequeue(), nullptr);
  EXPECT_EQ(q->dequeue(), nullptr);
  EXPECT_EQ(q->watchdog_ns(), 12'000'000u);
  EXPECT_EQ(q->stats().overlimits, 1u);
  EXPECT_EQ(q->class_stats(1).overlimits, 1u);
  g_now = 11'999'999;
  EXPECT_EQ(q->dequeue(), nullptr);
  g_now = 12'000'000;
  EXPECT_NE(q->dequeue(), nullptr);
  EXPECT_EQ(q->dequeue(), nullptr);
  EXPECT_EQ(q->watchdog_ns(), 24'000'000u);
  EXPECT_LT(xstat(q->class_xstats(1), "tokens"), 0);
  EXPECT_EQ(q->stats().overlimits, 2u);
  g_now = 24'000'000;
  Packet* peeked = q->peek();
  ASSERT_NE(peeked, nullptr);
  EXPECT_EQ(q->qlen(), 2u);  // the peeked packet still counts
  EXPECT_EQ(q->dequeue(), peeked);
  EXPECT_EQ(q->qlen(), 1u);
  EXPECT_EQ(q->stats().packets, 4u);
  EXPECT_EQ(q->peek(), nullptr);
  EXPECT_EQ(q->watchdog_ns(), 36'000'000u);
  q->reset(to_free);
  EXPECT_EQ(to_free.size(), 1u);
  EXPECT_EQ(q->qlen(), 0u);
  EXPECT_EQ(q->dequeue(), nullptr);
  EXPECT_EQ(q->watchdog_ns(), 0u);  // nothing held: no watchdog
}

TEST(HtbShaping, MpuOverheadAtmAndGiants) {
  auto cost_ticks = [](const std::string& opts, uint32_t len) {
    auto q = make("");
    add(*q, 1, 0, opts);
    Packets pk(2);
    PacketList to_free;
    const int64_t before = xstat(q->class_xstats(1), "tokens");
    q->enqueue(pk.get(len, 0x10001), to_free);
    EXPECT_NE(q->dequeue(), nullptr);
    return std::pair{before - xstat(q->class_xstats(1), "tokens"),
                     xstat(q->class_xstats(1), "giants")};
  };
  // 1 byte = 1 us at 1 MB/s; the bucket holds 1600 B = 1.6e6 ns; xstats show ticks (ns >> 6).
  auto ticks_of = [](int64_t cost_ns) { return (1'600'000 >> 6) - ((1'600'000 - cost_ns) >> 6); };
  EXPECT_EQ(cost_ticks("rate 8mbit", 100).first, ticks_of(100'000));
  EXPECT_EQ(cost_ticks("rate 8mbit mpu 64", 40).first, ticks_of(64'000));
  EXPECT_EQ(cost_ticks("rate 8mbit overhead 24", 100).first, ticks_of(124'000));
  EXPECT_EQ(cost_ticks("rate 8mbit linklayer atm", 100).first, ticks_of(159'000));  // 3 cells
  EXPECT_NE(ticks_of(100'000), ticks_of(124'000));
  EXPECT_EQ(cost_ticks("rate 8mbit", 1500).second, 0);
  EXPECT_EQ(cost_ticks("rate 8mbit mtu 1000", 1500).second, 1);
}

// ---------------------------------------------------------------------------------------------
// The class tree and accounting

TEST(Htb, LeafBecomesInnerAndBackWithAccounting) {
  auto q = make("");
  Packets pk(16);
  PacketList to_free;
  add(*q, 1, 0, "rate 1mbit");
  for (int i = 0; i < 3; ++i) q->enqueue(pk.get(100, 0x10001), to_free);
  EXPECT_EQ(q->qlen(), 3u);
  add(*q, 2, 1, "rate 1mbit");  // 1:1 becomes inner: its 3 packets are purged
  EXPECT_EQ(q->class_level(1), 7);
  EXPECT_EQ(q->child(1), nullptr);
  EXPECT_EQ(q->qlen(), 0u);
  EXPECT_EQ(q->backlog(), 0u);
  EXPECT_EQ(q->stats().drops, 3u);
  PacketList purged;
  q->take_dequeue_drops(purged);
  EXPECT_EQ(purged.size(), 3u);
  pk.put(purged);
  // A packet for the inner class has no leaf: direct (no default).
  q->enqueue(pk.get(100, 0x10001), to_free);
  EXPECT_EQ(q->direct_qlen(), 1u);
  q->enqueue(pk.get(100, 0x10002), to_free);
  EXPECT_EQ(q->child(2)->qlen(), 1u);
  PacketList gone;
  EXPECT_THROW(q->graft(1, nullptr, gone), ConfigRejected);
  EXPECT_THROW(q->graft(7, nullptr, gone), ConfigRejected);
  q->delete_class(2);  // the last child: 1:1 is a leaf again with a fresh pfifo
  EXPECT_EQ(q->class_level(1), 0);
  ASSERT_NE(q->child(1), nullptr);
  EXPECT_EQ(q->qlen(), 1u);  // the direct packet
  q->take_dequeue_drops(purged);
  EXPECT_EQ(purged.size(), 1u);
  pk.put(purged);
  q->enqueue(pk.get(100, 0x10001), to_free);
  EXPECT_EQ(q->child(1)->qlen(), 1u);
  expect_sums(*q);
  EXPECT_NE(q->dequeue(), nullptr);
  EXPECT_NE(q->dequeue(), nullptr);
  EXPECT_EQ(q->qlen(), 0u);
}

using AqmChild = test::TestChildQdisc;

TEST(Htb, GraftedChildDequeueDropsAreForwarded) {
  auto q = make("");
  Packets pk(16);
  PacketList to_free;
  add(*q, 1, 0, "rate 100mbit");
  auto owned = std::make_unique<AqmChild>();
  AqmChild& c = *owned;
  q->graft(1, std::move(owned), to_free);
  EXPECT_EQ(q->child(1), &c);
  for (int i = 0; i < 4; ++i) q->enqueue(pk.get(100, 0x10001), to_free);
  c.drop_on_dequeue = 2;
  Packet* p = q->dequeue();
  ASSERT_NE(p, nullptr);
  pk.put(p);
  EXPECT_EQ(q->qlen(), 1u);
  EXPECT_EQ(q->backlog(), 100u);
  PacketList drops;
  q->take_dequeue_drops(drops);
  EXPECT_EQ(drops.size(), 2u);
  EXPECT_EQ(c.stats().drops, 2u);
  // As Linux's qdisc_tree_reduce_backlog(): a child's drops are every ancestor's drops too, so
  // the root's count covers all of them (TxQueue's "dropped" is the root's).
  EXPECT_EQ(q->stats().drops, 2u);
  EXPECT_EQ(q->class_stats(1).drops, 2u);
  // Dropping all the rest inside dequeue leaves htb empty and idle.
  c.drop_on_dequeue = 5;
  EXPECT_EQ(q->dequeue(), nullptr);
  EXPECT_EQ(q->qlen(), 0u);
  EXPECT_EQ(q->watchdog_ns(), 0u);
  q->take_dequeue_drops(drops);
  EXPECT_EQ(drops.size(), 3u);
  pk.put(drops);
  // Graft back the default: the old child's packets go to to_free.
  q->enqueue(pk.get(100, 0x10001), to_free);
  q->graft(1, nullptr, to_free);
  EXPECT_EQ(to_free.size(), 1u);
  EXPECT_EQ(q->qlen(), 0u);
  EXPECT_EQ(q->child(1)->kind(), "pfifo");
}

// Random enqueue / dequeue (with clock jumps) / peek / add / delete / graft / reset: htb's
// counters always equal the children's sums plus the direct queue, and every packet is either
// queued, sent, or handed back (to_free, take_dequeue_drops) exactly once.
TEST(Htb, RandomOpsKeepInvariant) {
  constexpr std::size_t kOps = 20000;
  Packets pk(4096);
  auto q = make("default 3 direct_qlen 16", env_for(1, 12));
  std::mt19937 rng(4242);
  std::vector<uint16_t> live;
  auto add_random = [&](uint16_t minor) {
    uint16_t parent = 0;
    if (!live.empty() && rng() % 3) parent = live[rng() % live.size()];
    const std::string opts = "rate " + std::to_string(100 + rng() % 5000) + "kbit ceil " +
                             std::to_string(5000 + rng() % 5000) + "kbit prio " + std::to_string(rng() % 8) +
                             (rng() % 2 ? " burst 3000" : "");
    if (outcome([&] { add(*q, minor, parent, opts, env_for(1, 12)); }).empty()) live.push_back(minor);
  };
  for (uint16_t m = 1; m <= 6; ++m) add_random(m);
  uint64_t in = 0, out = 0, handed_back = 0;
  PacketList back;
  uint16_t next_minor = 7;
  for (std::size_t op = 0; op < kOps; ++op) {
    const unsigned r = rng() % 1000;
    if (r < 500) {
      Packet* p = pk.get(60 + rng() % 1400, 0);
      if (!p) continue;
      const unsigned k = rng() % 10;
      p->priority = k == 0 ? 0x10000 : k == 1 ? 5 : 0x10000u | (1 + rng() % (next_minor + 1));
      ++in;
      q->enqueue(p, back);
    } else if (r < 900) {
      if (rng() % 4 == 0) g_now += rng() % 20'000'000;
      Packet* peeked = rng() % 8 == 0 ? q->peek() : nullptr;
      Packet* p = q->dequeue();
      if (peeked) {
        ASSERT_EQ(p, peeked);
      }
      if (p) {
        ++out;
        pk.put(p);
      } else if (q->qlen() > 0) {
        ASSERT_GT(q->watchdog_ns(), g_now);
      }
    } else if (r < 940) {
      add_random(next_minor++);
      if (next_minor > 60) next_minor = 1;
    } else if (r < 970) {
      if (live.empty()) continue;
      const std::size_t i = rng() % live.size();
      if (outcome([&] { q->delete_class(live[i]); }).empty()) live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (r < 990) {
      if (live.empty()) continue;
      const uint16_t m = live[rng() % live.size()];
      std::unique_ptr<Qdisc> c = rng() % 2 ? make_qdisc("pfifo limit 3") : std::unique_ptr<Qdisc>(std::make_unique<AqmChild>());
      if (auto* a = dynamic_cast<AqmChild*>(c.get())) a->drop_on_dequeue = static_cast<int>(rng() % 3);
      if (q->class_level(m) == 0) q->graft(m, std::move(c), back);
    } else {
      q->reset(back);
    }
    q->take_dequeue_drops(back);
    handed_back += back.size();
    pk.put(back);
    ASSERT_EQ(in, out + handed_back + q->qlen()) << "op " << op;
    uint64_t cq = q->direct_qlen();
    for (const QdiscClassInfo& ci : q->classes())
      if (ci.leaf) cq += q->child(ci.minor)->qlen();
    ASSERT_EQ(q->qlen(), cq) << "op " << op;
  }
  EXPECT_GT(out, 1000u);
  EXPECT_GT(q->stats().drops, 0u);
  // Drain: everything still queued leaves eventually, following the watchdog.
  for (int guard = 0; q->qlen() > 0 && guard < 100000; ++guard) {
    if (Packet* p = q->dequeue()) {
      pk.put(p);
      continue;
    }
    PacketList d;
    q->take_dequeue_drops(d);
    pk.put(d);
    if (q->qlen() == 0) break;
    ASSERT_GT(q->watchdog_ns(), g_now);
    g_now = q->watchdog_ns();
  }
  EXPECT_EQ(q->qlen(), 0u);
  EXPECT_EQ(q->backlog(), 0u);
}

}  // namespace
}  // namespace txpath
