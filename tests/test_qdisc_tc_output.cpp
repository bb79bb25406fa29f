// SPDX-License-Identifier: MIT
// The tc-facing output of the classless qdiscs, prio and tbf (include/txpath/qdisc.hpp): the
// options text as `tc qdisc show` prints it ("qdisc KIND 1: root refcnt 2 " + options()), the
// tc -j options object (options_json()), fq_codel's tc -s xstats (xstats(), format_xstats()), and
// tbf's one class (classes(), class_stats(), child(), graft()).
// The regexes below are this file's own statement of tc's output (docs/background.md, "Qdisc behaviour the code and tests copy").
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "qdisc/fifo.hpp"
#include "qdisc/fifo_nolock.hpp"
#include "qdisc/fq_codel.hpp"
#include "qdisc/tbf.hpp"
#include "txpath/error.hpp"
#include "txpath/packet.hpp"
#include "txpath/qdisc.hpp"
#include "txpath/tc.hpp"

namespace txpath {
namespace {

using nlohmann::json;

uint64_t g_now = 0;
uint64_t fake_clock() { return g_now; }

QdiscEnv fake_env() {
  QdiscEnv env;
  env.clock = &fake_clock;
  return env;
}

// What `tc qdisc show` prints for a root qdisc with handle 1:.
std::string show_line(const Qdisc& q) {
  return "qdisc " + std::string(q.kind()) + " 1: root refcnt 2 " + txpath::tc::options_text(q);
}

// Packets with no buffer (fq_codel's truesize is then len + sizeof(Packet)).
class Packets {
 public:
  explicit Packets(std::size_t n) : pkts_(n) {}
  Packet* with(std::size_t i, uint32_t len, uint32_t hash = 0) {
    pkts_[i] = Packet{};
    pkts_[i].len = len;
    pkts_[i].flow_hash = hash;
    return &pkts_[i];
  }
  Packet* at(std::size_t i) { return &pkts_[i]; }

 private:
  std::vector<Packet> pkts_;
};

std::set<std::string> keys_of(const json& j) {
  std::set<std::string> out;
  for (auto it = j.begin(); it != j.end(); ++it) out.insert(it.key());
  return out;
}

// ---- tc qdisc show text ----------------------------------------------------------------------

struct ShowCase {
  const char* spec;
  const char* pattern;  // ECMAScript regex, searched in show_line()
};

TEST(QdiscTcShow, OptionsTextMatchesTcPatterns) {
  const ShowCase cases[] = {
      // fifos
      {"bfifo", R"(^qdisc bfifo 1: root refcnt 2 limit 1514000b$)"},
      {"bfifo limit 3000b", R"(^qdisc bfifo 1: root .*limit 3000b$)"},
      {"pfifo", R"(^qdisc pfifo 1: root .*limit 1000p$)"},
      {"pfifo limit 3000", R"(qdisc pfifo 1: root .*limit 3000p)"},
      {"pfifo limit 30", R"(qdisc pfifo 1: root .*limit 30p$)"},
      {"pfifo_head_drop limit 5", R"(^qdisc pfifo_head_drop 1: root refcnt 2 limit 5p$)"},
      // pfifo_fast and prio share tc's printer
      {"pfifo_fast",
       R"(^qdisc pfifo_fast 1: root refcnt [0-9]+ bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1$)"},
      {"prio", R"(^qdisc prio 1: root refcnt 2 bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1$)"},
      {"prio bands 4 priomap 1 1 2 2 3 3 0 0 1 2 3 0 0 0 0 0",
       R"(qdisc prio 1: root .*bands 4 priomap 1 1 2 2 3 3 0 0 1 2 3 0 0 0 0 0$)"},
      {"prio bands 8 priomap 1 1 2 2 3 3 4 4 5 5 6 6 7 7 0 0",
       R"(qdisc prio 1: root .*bands 8 priomap 1 1 2 2 3 3 4 4 5 5 6 6 7 7 0 0$)"},
      // tbf
      {"tbf limit 1000 burst 1500 rate 10000",
       R"(^qdisc tbf 1: root refcnt [0-9]+ rate 10Kbit burst 1500b limit 1000b$)"},
      {"tbf limit 1000 burst 1500 rate 20000 mtu 2048",
       R"(^qdisc tbf 1: root refcnt [0-9]+ rate 20Kbit burst 1500b limit 1000b$)"},
      {"tbf limit 1000 burst 1500 rate 20000 mtu 1510 peakrate 30000",
       R"(^qdisc tbf 1: root refcnt [0-9]+ rate 20Kbit burst 1500b peakrate 30Kbit minburst 1509b limit 1000b$)"},
      {"tbf burst 1500 rate 20000 latency 100ms",
       R"(^qdisc tbf 1: root refcnt [0-9]+ rate 20Kbit burst 1500b lat 100ms$)"},
      {"tbf burst 1500 rate 20000 latency 200ms",
       R"(^qdisc tbf 1: root refcnt [0-9]+ rate 20Kbit burst 1500b lat 200ms$)"},
      {"tbf limit 1000 burst 1500 rate 20000 overhead 300",
       R"(^qdisc tbf 1: root refcnt [0-9]+ rate 20Kbit burst 1800b limit 1000b overhead 300$)"},
      {"tbf limit 1000 burst 1500 rate 20000 linklayer atm",
       R"(^qdisc tbf 1: root refcnt [0-9]+ rate 20Kbit burst 1696b limit 1000b linklayer atm$)"},
      {"tbf limit 1000 burst 1500 rate 20000 linklayer ethernet",
       R"(^qdisc tbf 1: root refcnt [0-9]+ rate 20Kbit burst 1500b limit 1000b$)"},
      // fq_codel
      {"fq_codel",
       R"(^qdisc fq_codel 1: root refcnt [0-9]+ limit 10240p flows 1024 quantum 1514 target 5ms interval 100ms memory_limit 32Mb ecn drop_batch 64$)"},
      {"fq_codel limit 1000",
       R"(limit 1000p flows 1024 quantum \d+ target 5ms interval 100ms memory_limit 32Mb ecn drop_batch 64$)"},
      {"fq_codel memory_limit 100000",
       R"(limit 10240p flows 1024 quantum.*target 5ms interval 100ms memory_limit 100000b ecn drop_batch 64$)"},
      {"fq_codel target 2000", R"(quantum 1514 target 2ms interval 100ms memory_limit 32Mb ecn)"},
      {"fq_codel interval 5000", R"(quantum 1514 target 5ms interval 5ms memory_limit 32Mb ecn)"},
      {"fq_codel quantum 9000", R"(flows 1024 quantum 9000 target 5ms interval 100ms)"},
      {"fq_codel noecn",
       R"(^qdisc fq_codel 1: root refcnt 2 limit 10240p flows 1024 quantum 1514 target 5ms interval 100ms memory_limit 32Mb drop_batch 64$)"},
      {"fq_codel ce_threshold 1024000",
       R"(quantum 1514 target 5ms ce_threshold 1.02s interval 100ms memory_limit 32Mb ecn drop_batch 64$)"},
      {"fq_codel drop_batch 100", R"(memory_limit 32Mb ecn drop_batch 100$)"},
      {"fq_codel limit 1000 flows 256 drop_batch 100",
       R"(limit 1000p flows 256 quantum \d+ target 5ms interval 100ms memory_limit 32Mb ecn drop_batch 100$)"},
  };
  for (const ShowCase& c : cases) {
    SCOPED_TRACE(c.spec);
    const auto q = make_qdisc(c.spec, fake_env());
    const std::string line = show_line(*q);
    EXPECT_TRUE(std::regex_search(line, std::regex(c.pattern))) << line << "\n  !~ " << c.pattern;
  }
}

TEST(QdiscTcShow, PatternsCanFail) {
  // The check above is not vacuous: a wrong number or a missing word does not match.
  const auto q = make_qdisc("tbf limit 1000 burst 1500 rate 20000 overhead 300");
  EXPECT_FALSE(std::regex_search(show_line(*q), std::regex(R"(burst 1500b limit 1000b)")));
  const auto f = make_qdisc("fq_codel noecn");
  EXPECT_FALSE(std::regex_search(show_line(*f), std::regex(R"( ecn )")));
}

// ---- tc -j options -----------------------------------------------------------------------------

TEST(QdiscTcJson, FifosPrintTheLimitAsANumber) {
  EXPECT_EQ(json::parse(txpath::tc::options_json(*make_qdisc("pfifo limit 3000"))), json({{"limit", 3000}}));
  EXPECT_EQ(json::parse(txpath::tc::options_json(*make_qdisc("pfifo"))), json({{"limit", 1000}}));
  EXPECT_EQ(json::parse(txpath::tc::options_json(*make_qdisc("bfifo limit 3000b"))), json({{"limit", 3000}}));
  EXPECT_EQ(json::parse(txpath::tc::options_json(*make_qdisc("bfifo limit 3kb"))), json({{"limit", 3072}}));
  EXPECT_EQ(json::parse(txpath::tc::options_json(*make_qdisc("bfifo"))), json({{"limit", 1000 * 1514}}));
  EXPECT_EQ(json::parse(txpath::tc::options_json(*make_qdisc("pfifo_head_drop limit 5"))),
            json({{"limit", 5}}));
}

TEST(QdiscTcJson, PfifoFastAndPrioPrintBandsPriomapMultiqueue) {
  const json expected_default = {{"bands", 3},
                                 {"priomap", {1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}},
                                 {"multiqueue", false}};
  EXPECT_EQ(json::parse(txpath::tc::options_json(*make_qdisc("pfifo_fast"))), expected_default);
  EXPECT_EQ(json::parse(txpath::tc::options_json(*make_qdisc("prio"))), expected_default);
  const json p16 = json::parse(
      txpath::tc::options_json(*make_qdisc("prio bands 16 priomap 15 14 13 12 11 10 9 8 7 6 5 4 3 2 1 0")));
  EXPECT_EQ(p16["bands"], 16);
  EXPECT_EQ(p16["priomap"], json({15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(p16["multiqueue"], false);
}

TEST(QdiscTcJson, LocklessTwinsPrintLikeTheLockedKinds) {
  for (const char* spec : {"pfifo_fast", "pfifo limit 7", "bfifo limit 30000"}) {
    SCOPED_TRACE(spec);
    const auto locked = make_qdisc(spec);
    const auto twin = NolockFifoQdisc::lockless_twin(*locked, 1514);
    EXPECT_EQ(txpath::tc::options_json(*twin), txpath::tc::options_json(*locked));
    EXPECT_TRUE(json::accept(txpath::tc::options_json(*twin)));
  }
}

TEST(QdiscTcJson, TbfPrintsRawNumbers) {
  // rate 10000 bit/s = 1250 bytes/s; limit below the burst -> "limit", no "lat".
  EXPECT_EQ(json::parse(txpath::tc::options_json(*make_qdisc("tbf limit 1000 burst 1500 rate 10000"))),
            json({{"rate", 1250}, {"burst", 1500}, {"limit", 1000}}));
  // latency 100ms -> limit 1750 -> lat 100 ms = 100000 usec.
  EXPECT_EQ(json::parse(txpath::tc::options_json(*make_qdisc("tbf burst 1500 rate 20000 latency 100ms"))),
            json({{"rate", 2500}, {"burst", 1500}, {"lat", 100000}}));
  // peakrate: minburst in the JSON, the peak rate itself only in the text (tc's PRINT_FP).
  const json peak = json::parse(
      txpath::tc::options_json(*make_qdisc("tbf limit 1000 burst 1500 rate 20000 mtu 1510 peakrate 30000")));
  EXPECT_EQ(keys_of(peak), (std::set<std::string>{"rate", "burst", "minburst", "limit"}));
  EXPECT_EQ(peak["minburst"], 1509);  // 1510 B at 30 kbit in ticks, back to bytes
  EXPECT_EQ(json::parse(
                txpath::tc::options_json(*make_qdisc("tbf limit 1000 burst 1500 rate 20000 overhead 300"))),
            json({{"rate", 2500}, {"burst", 1800}, {"limit", 1000}, {"overhead", 300}}));
  EXPECT_EQ(json::parse(
                txpath::tc::options_json(*make_qdisc("tbf limit 1000 burst 1500 rate 20000 linklayer atm"))),
            json({{"rate", 2500}, {"burst", 1696}, {"limit", 1000}, {"linklayer", "atm"}}));
}

TEST(QdiscTcJson, FqCodelDefaultsAreTheKernelsUsec) {
  // The exact text, in tc's key order (docs/background.md, "tc's JSON").
  EXPECT_EQ(txpath::tc::options_json(*make_qdisc("fq_codel")),
            R"({"limit":10240,"flows":1024,"quantum":1514,"target":4999,"interval":99999,)"
            R"("memory_limit":33554432,"ecn":true,"drop_batch":64})");
  const json noecn = json::parse(txpath::tc::options_json(*make_qdisc("fq_codel noecn")));
  EXPECT_FALSE(noecn.contains("ecn"));
  EXPECT_FALSE(noecn.contains("ce_threshold"));
  const json ce = json::parse(
      txpath::tc::options_json(*make_qdisc("fq_codel ce_threshold 1024000 memory_limit 100000 target 2000")));
  EXPECT_EQ(ce["ce_threshold"], 1024000);
  EXPECT_EQ(ce["memory_limit"], 100000);
  EXPECT_EQ(ce["target"], 1999);  // 2000 us -> 1953 CoDel units -> 1999 us
  EXPECT_EQ(ce["ecn"], true);
}

TEST(QdiscTcJson, EveryKindPrintsOneValidObject) {
  for (const char* spec :
       {"pfifo", "bfifo", "pfifo_head_drop", "pfifo_fast", "prio", "prio bands 2 priomap 1 0 0 0 1 1 0 0 1 1 1 1 1 1 1 1",
        "tbf rate 1mbit burst 10k latency 50ms", "tbf rate 1mbit burst 10k limit 1 peakrate 2mbit mtu 2000",
        "fq_codel", "fq_codel noecn ce_threshold 3ms"}) {
    SCOPED_TRACE(spec);
    const std::string text = txpath::tc::options_json(*make_qdisc(spec, fake_env()));
    json j;
    ASSERT_NO_THROW(j = json::parse(text)) << text;
    EXPECT_TRUE(j.is_object()) << text;
    EXPECT_FALSE(j.empty()) << text;
  }
}

// ---- fq_codel tc -s xstats ----------------------------------------------------------------------

std::vector<std::string> names_of(const Xstats& x) {
  std::vector<std::string> out;
  for (const auto& [k, v] : x) out.push_back(k);
  return out;
}

TEST(FqCodelTcXstats, IdleQdiscPrintsTheMandatoryFields) {
  const auto q = make_qdisc("fq_codel", fake_env());
  const Xstats x = q->xstats();
  EXPECT_EQ(names_of(x), (std::vector<std::string>{"maxpacket", "drop_overlimit", "new_flow_count",
                                                   "ecn_mark", "new_flows_len", "old_flows_len"}));
  for (const auto& [k, v] : x) EXPECT_EQ(v, 0) << k;
  EXPECT_EQ(txpath::tc::xstats_text(*q, x),
            "  maxpacket 0 drop_overlimit 0 new_flow_count 0 ecn_mark 0\n"
            "  new_flows_len 0 old_flows_len 0\n");
  EXPECT_EQ(txpath::tc::xstats_text(*q, {}), "");
}

TEST(FqCodelTcXstats, AfterTrafficShowsCountsAndMemory) {
  g_now = 1'000'000;
  const auto q = make_qdisc("fq_codel flows 2", fake_env());
  Packets pk(4);
  PacketList to_free;
  // Flow 0 (hash 0) gets two packets, flow 1 (hash 2^31 -> (2^31 * 2) >> 32 = 1) one.
  ASSERT_EQ(q->enqueue(pk.with(0, 1000, 0), to_free), Verdict::success);
  ASSERT_EQ(q->enqueue(pk.with(1, 1000, 0), to_free), Verdict::success);
  ASSERT_EQ(q->enqueue(pk.with(2, 700, 0x80000000u), to_free), Verdict::success);
  // The first dequeue serves flow 0 (deficit 1514 -> 514; it stays at the head of new flows).
  ASSERT_EQ(q->dequeue(), pk.at(0));
  ASSERT_TRUE(to_free.empty());

  const uint64_t truesize = 1000 + sizeof(Packet);
  const uint64_t used = truesize + (700 + sizeof(Packet));
  const Xstats x = q->xstats();
  EXPECT_EQ(names_of(x), (std::vector<std::string>{"maxpacket", "drop_overlimit", "new_flow_count",
                                                   "ecn_mark", "memory_used", "new_flows_len",
                                                   "old_flows_len"}));
  EXPECT_EQ(txpath::tc::xstats_text(*q, x),
            "  maxpacket 1000 drop_overlimit 0 new_flow_count 2 ecn_mark 0 memory_used " +
                std::to_string(used) + "\n  new_flows_len 2 old_flows_len 0\n");
  // The detail view agrees.
  const auto* fq = dynamic_cast<const FqCodelQdisc*>(q.get());
  ASSERT_NE(fq, nullptr);
  EXPECT_EQ(fq->detail_xstats().memory_used, used);

  // Drain: flow 0's quantum is spent after its second packet, so it moves to old flows.
  while (q->dequeue() != nullptr) {
  }
  EXPECT_EQ(txpath::tc::xstats_text(*q, q->xstats()),
            "  maxpacket 1000 drop_overlimit 0 new_flow_count 2 ecn_mark 0\n"
            "  new_flows_len 0 old_flows_len 0\n");
  q->reset(to_free);
}

TEST(FqCodelTcXstats, OverlimitAndOvermemoryDrops) {
  g_now = 5'000'000;
  // limit 2: the third packet of one flow overflows; the fat flow (the only one) loses packets
  // from its head until half its 3000 bytes are gone: two packets.
  const auto q = make_qdisc("fq_codel limit 2", fake_env());
  Packets pk(8);
  PacketList to_free;
  for (std::size_t i = 0; i < 3; ++i) (void)q->enqueue(pk.with(i, 1000, 7), to_free);
  EXPECT_EQ(to_free.size(), 2u);
  std::string text = txpath::tc::xstats_text(*q, q->xstats());
  EXPECT_TRUE(text.starts_with("  maxpacket 0 drop_overlimit 2 new_flow_count 1 ecn_mark 0 memory_used "))
      << text;
  EXPECT_EQ(text.find("drop_overmemory"), std::string::npos) << text;
  while (Packet* p = to_free.pop_front()) (void)p;
  q->reset(to_free);
  to_free = PacketList{};

  // memory_limit 1: every packet is over memory and is itself the victim.
  const auto m = make_qdisc("fq_codel memory_limit 1", fake_env());
  EXPECT_EQ(m->enqueue(pk.with(4, 100, 7), to_free), Verdict::drop);
  text = txpath::tc::xstats_text(*m, m->xstats());
  EXPECT_EQ(text,
            "  maxpacket 0 drop_overlimit 1 new_flow_count 1 ecn_mark 0 drop_overmemory 1\n"
            "  new_flows_len 1 old_flows_len 0\n");
  const Xstats x = m->xstats();
  EXPECT_EQ(names_of(x), (std::vector<std::string>{"maxpacket", "drop_overlimit", "new_flow_count",
                                                   "ecn_mark", "drop_overmemory", "new_flows_len",
                                                   "old_flows_len"}));
}

TEST(FqCodelTcXstats, FormatsOptionalFieldsInTcsOrder) {
  const auto q = make_qdisc("fq_codel");
  // Values from elsewhere (another process), in any order: printed in tc's order.
  const Xstats x = {{"old_flows_len", 4},   {"drop_overmemory", 2}, {"ce_mark", 3},
                    {"maxpacket", 1514},    {"memory_used", 10},    {"ecn_mark", 1},
                    {"new_flow_count", 9},  {"drop_overlimit", 5},  {"new_flows_len", 1}};
  EXPECT_EQ(txpath::tc::xstats_text(*q, x),
            "  maxpacket 1514 drop_overlimit 5 new_flow_count 9 ecn_mark 1 ce_mark 3 memory_used 10 "
            "drop_overmemory 2\n  new_flows_len 1 old_flows_len 4\n");
  // Zero optional fields are not printed.
  const Xstats z = {{"maxpacket", 1}, {"drop_overlimit", 0}, {"new_flow_count", 0},
                    {"ecn_mark", 0},  {"ce_mark", 0},        {"memory_used", 0},
                    {"new_flows_len", 0}, {"old_flows_len", 0}};
  EXPECT_EQ(txpath::tc::xstats_text(*q, z),
            "  maxpacket 1 drop_overlimit 0 new_flow_count 0 ecn_mark 0\n"
            "  new_flows_len 0 old_flows_len 0\n");
}

TEST(QdiscTcXstats, OtherKindsHaveNone) {
  for (const char* spec : {"pfifo", "bfifo", "pfifo_fast", "prio", "tbf rate 1mbit burst 10k limit 10k"}) {
    const auto q = make_qdisc(spec);
    EXPECT_TRUE(q->xstats().empty()) << spec;
    EXPECT_EQ(txpath::tc::xstats_text(*q, q->xstats()), "") << spec;
  }
}

// ---- tbf's class ---------------------------------------------------------------------------------

// The class operations of a classful qdisc (a failed test if it has none).
ClassOps& ops(Qdisc& q) {
  ClassOps* o = q.class_ops();
  if (!o) throw std::logic_error(std::string(q.kind()) + " has no class operations");
  return *o;
}

std::unique_ptr<Qdisc> make_tbf_at(const std::string& opts, uint64_t start) {
  g_now = start;
  return make_qdisc("tbf " + opts, fake_env());
}

TEST(TbfTcClass, OneLeafClassUnderTheQdisc) {
  const auto q = make_tbf_at("limit 1000 burst 1500 rate 10000", 0);
  const std::vector<QdiscClassInfo> cls = ops(*q).classes();
  ASSERT_EQ(cls.size(), 1u);
  EXPECT_EQ(cls[0].minor, 1);
  EXPECT_EQ(cls[0].parent_minor, 0);
  EXPECT_FALSE(cls[0].print_root);
  EXPECT_TRUE(cls[0].leaf);
  EXPECT_EQ(txpath::tc::class_options_text(*q, 1), "");
  // What tc class show prints from it for handle 1:.
  const std::string line = "class " + std::string(q->kind()) + " 1:" + std::to_string(cls[0].minor) +
                           " parent 1: " + txpath::tc::class_options_text(*q, 1);
  EXPECT_TRUE(std::regex_search(line, std::regex(R"(^class tbf 1:1 parent 1: $)"))) << line;

  // The default child is bfifo(limit).
  Qdisc* child = ops(*q).child(1);
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(child->kind(), "bfifo");
  EXPECT_EQ(txpath::tc::options_text(*child), "limit 1000b");
  EXPECT_EQ(ops(*q).child(0), nullptr);
  EXPECT_EQ(ops(*q).child(2), nullptr);
}

TEST(TbfTcClass, ClassStatsAreTheChilds) {
  // 1 mbit/s, burst 10 KiB: six 1500-byte packets leave at once, the seventh waits.
  const auto q = make_tbf_at("rate 1mbit burst 10240 limit 100k", 1'000'000'000);
  Packets pk(10);
  PacketList to_free;
  for (std::size_t i = 0; i < 8; ++i) ASSERT_EQ(q->enqueue(pk.with(i, 1500), to_free), Verdict::success);
  ASSERT_EQ(q->enqueue(pk.with(8, 11000), to_free), Verdict::drop);  // above max_size (burst)
  int sent = 0;
  while (q->dequeue() != nullptr) ++sent;
  EXPECT_EQ(sent, 6);
  const QdiscStats c = ops(*q).class_stats(1);
  EXPECT_EQ(c.packets, 6u);
  EXPECT_EQ(c.bytes, 6u * 1500);
  EXPECT_EQ(c.qlen, 2u);
  EXPECT_EQ(c.backlog, 3000u);
  EXPECT_EQ(c.drops, 0u);  // the oversized packet never reached the child
  const QdiscStats s = q->stats();
  EXPECT_EQ(s.qlen, 2u);
  EXPECT_EQ(s.backlog, 3000u);
  EXPECT_EQ(s.drops, 1u);
  EXPECT_EQ(s.packets, 6u);
  EXPECT_GE(s.overlimits, 1u);
  EXPECT_EQ(ops(*q).class_stats(2).packets, 0u);
  q->reset(to_free);
}

TEST(TbfTcClass, GraftReplacesTheChildAndKeepsTheAccounting) {
  const auto q = make_tbf_at("rate 1mbit burst 10240 limit 100k", 0);
  Packets pk(16);
  PacketList to_free;
  for (std::size_t i = 0; i < 3; ++i) ASSERT_EQ(q->enqueue(pk.with(i, 1000), to_free), Verdict::success);
  ASSERT_EQ(q->qlen(), 3u);

  // No such class.
  EXPECT_THROW(ops(*q).graft(2, make_qdisc("pfifo limit 1"), to_free), ConfigRejected);
  EXPECT_EQ(q->qlen(), 3u);

  // A pfifo limit 1: the old child's packets are purged (not drops), the new one takes over.
  ops(*q).graft(1, make_qdisc("pfifo limit 1"), to_free);
  EXPECT_EQ(to_free.size(), 3u);
  EXPECT_EQ(q->qlen(), 0u);
  EXPECT_EQ(q->backlog(), 0u);
  EXPECT_EQ(q->stats().drops, 0u);
  ASSERT_NE(ops(*q).child(1), nullptr);
  EXPECT_EQ(ops(*q).child(1)->kind(), "pfifo");
  EXPECT_EQ(txpath::tc::options_text(*q), "rate 1Mbit burst 10Kb lat 737ms");  // tbf's own options are unchanged
  to_free = PacketList{};

  ASSERT_EQ(q->enqueue(pk.with(3, 500), to_free), Verdict::success);
  EXPECT_EQ(q->enqueue(pk.with(4, 500), to_free), Verdict::drop);  // the child is full
  EXPECT_EQ(q->stats().drops, 1u);
  EXPECT_EQ(ops(*q).class_stats(1).drops, 1u);
  EXPECT_EQ(q->qlen(), 1u);
  EXPECT_EQ(q->backlog(), 500u);
  EXPECT_EQ(q->dequeue(), pk.at(3));
  EXPECT_EQ(q->qlen(), 0u);
  to_free = PacketList{};

  // A head-drop child answers "congestion": tbf counts a drop and its qlen stays the child's.
  ops(*q).graft(1, make_qdisc("pfifo_head_drop limit 2"), to_free);
  for (std::size_t i = 5; i < 7; ++i) ASSERT_EQ(q->enqueue(pk.with(i, 100), to_free), Verdict::success);
  EXPECT_EQ(q->enqueue(pk.with(7, 200), to_free), Verdict::congestion);
  EXPECT_EQ(q->qlen(), 2u);
  EXPECT_EQ(q->backlog(), 300u);
  EXPECT_EQ(q->stats().drops, 2u);
  ASSERT_EQ(to_free.size(), 1u);
  EXPECT_EQ(to_free.front(), pk.at(5));
  to_free = PacketList{};

  // nullptr: a fresh default bfifo(limit); the queued packets go to to_free.
  ops(*q).graft(1, nullptr, to_free);
  EXPECT_EQ(to_free.size(), 2u);
  EXPECT_EQ(q->qlen(), 0u);
  EXPECT_EQ(q->backlog(), 0u);
  EXPECT_EQ(ops(*q).child(1)->kind(), "bfifo");
  EXPECT_EQ(txpath::tc::options_text(*ops(*q).child(1)), "limit 100Kb");
}

TEST(TbfTcClass, FqCodelChildIsShapedAndAccounted) {
  g_now = 0;
  // rate 8 Mbit/s = 1 MB/s: 1000 bytes take 1 ms; burst 2000 bytes.
  const auto q = make_tbf_at("rate 8mbit burst 2000 limit 100k", 0);
  PacketList to_free;
  ops(*q).graft(1, make_qdisc("fq_codel", fake_env()), to_free);
  Packets pk(6);
  for (std::size_t i = 0; i < 5; ++i)
    ASSERT_EQ(q->enqueue(pk.with(i, 1000, static_cast<uint32_t>(i) << 28), to_free), Verdict::success);
  EXPECT_EQ(q->qlen(), 5u);
  EXPECT_EQ(q->backlog(), 5000u);
  // Two leave at once (the bucket holds 2000 bytes), then one per ms.
  EXPECT_NE(q->dequeue(), nullptr);
  EXPECT_NE(q->dequeue(), nullptr);
  EXPECT_EQ(q->dequeue(), nullptr);
  EXPECT_EQ(q->watchdog_ns(), 1'000'000u);
  // The child's peek holds one packet; tbf still counts it as queued.
  EXPECT_EQ(q->qlen(), 3u);
  EXPECT_EQ(ops(*q).child(1)->qlen(), 3u);
  g_now = 1'000'000;
  EXPECT_NE(q->dequeue(), nullptr);
  EXPECT_EQ(q->qlen(), 2u);
  EXPECT_EQ(q->backlog(), 2000u);
  EXPECT_EQ(q->stats().packets, 3u);
  EXPECT_EQ(ops(*q).class_stats(1).packets, 3u);
  // The fq_codel child's xstats are reachable through the class's qdisc.
  EXPECT_EQ(ops(*q).child(1)->xstats().front(), (std::pair<std::string, int64_t>{"maxpacket", 1000}));
  q->reset(to_free);
  EXPECT_EQ(q->qlen(), 0u);
  EXPECT_EQ(q->backlog(), 0u);
  EXPECT_EQ(to_free.size(), 2u);
}

// Classless qdiscs have no ClassOps (the kernel's NULL cl_ops); the tc-level entry points refuse
// them with tc's exit-2 error, and the classful ones reach their own.
TEST(QdiscClassOps, ClasslessQdiscsHaveNoneAndRefuseClassRequests) {
  for (const char* spec : {"pfifo", "bfifo", "pfifo_head_drop", "pfifo_fast", "fq_codel", "fq"}) {
    const auto q = make_qdisc(spec, fake_env());
    EXPECT_EQ(q->class_ops(), nullptr) << spec;
    PacketList to_free;
    try {
      graft(*q, 1, nullptr, to_free);
      ADD_FAILURE() << spec << ": graft accepted";
    } catch (const ConfigRejected& e) {
      EXPECT_EQ(std::string(e.what()),
                "qdisc " + std::string(q->kind()) + " has no class 1 to attach a qdisc to");
    }
  }
  for (const char* spec : {"prio", "tbf rate 1mbit burst 10k limit 10k", "htb"}) {
    const auto q = make_qdisc(spec, fake_env());
    ASSERT_NE(q->class_ops(), nullptr) << spec;
    EXPECT_EQ(static_cast<const Qdisc&>(*q).class_ops(), q->class_ops());
  }
  // Fixed classes: the ClassOps defaults refuse add/change/delete, naming the qdisc's kind.
  const auto prio = make_qdisc("prio", fake_env());
  EXPECT_THROW(
      {
        try {
          ops(*prio).delete_class(1);
        } catch (const ConfigRejected& e) {
          EXPECT_EQ(std::string(e.what()), "qdisc prio does not support deleting classes");
          throw;
        }
      },
      ConfigRejected);
}

}  // namespace
}  // namespace txpath
