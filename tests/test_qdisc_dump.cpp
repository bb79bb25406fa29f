// SPDX-License-Identifier: MIT
// The typed dump (txpath/qdisc_dump.hpp, Qdisc::dump()) and tc's printers over it (txpath/tc.hpp):
// the readers' zeros, every kind printed the same from its dump read back from JSON as from the
// qdisc itself, the generic printer for a kind tc/ does not know, and the live document carrying
// the running tree's options, which `tc qdisc show -s` prints.
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tc/internal.hpp"
#include "tc/qdisc_kinds.hpp"
#include "txpath/qdisc.hpp"
#include "txpath/tc.hpp"

using namespace txpath;

TEST(QdiscDump, ReadersGiveTheTypesZeroForAbsentOrOtherTypes) {
  DumpAttrs a;
  a.number("limit", 1000).signed_number("delay", -5).signed_number("positive", 7).flag("ecn", true);
  a.word("linklayer", "atm").array("priomap", {1, 2, 2}).number("limit", 5);
  EXPECT_EQ(a.number("limit"), 1000u);  // the first of a name
  EXPECT_EQ(a.number("delay"), 0u);     // a negative number is not a number
  EXPECT_EQ(a.number("positive"), 7u);  // a non-negative signed one is
  EXPECT_EQ(a.signed_number("delay"), -5);
  EXPECT_EQ(a.signed_number("limit"), 1000);
  EXPECT_TRUE(a.flag("ecn"));
  EXPECT_FALSE(a.flag("limit"));
  EXPECT_EQ(a.word("linklayer"), "atm");
  EXPECT_EQ(a.word("ecn"), "");
  EXPECT_EQ(std::vector<uint64_t>(a.array("priomap").begin(), a.array("priomap").end()),
            (std::vector<uint64_t>{1, 2, 2}));
  EXPECT_TRUE(a.array("limit").empty());
  EXPECT_EQ(a.number("absent"), 0u);
  EXPECT_FALSE(a.has("absent"));
  EXPECT_EQ(a.size(), 7u);
}

TEST(QdiscDump, DumpHasKindOptionsAndXstats) {
  const auto q = make_qdisc("fq_codel limit 500");
  const QdiscDump d = q->dump();
  EXPECT_EQ(d.kind, "fq_codel");
  EXPECT_EQ(d.options.number("limit"), 500u);
  EXPECT_EQ(d.options.number("flows"), 1024u);
  EXPECT_EQ(d.xstats, q->xstats());
  EXPECT_FALSE(d.xstats.empty());
}

// Every kind: the printers read only the dump, so the dump carried as JSON (the live document's
// form) prints what the qdisc itself prints, text and JSON, with and without -d.
TEST(QdiscDump, EveryKindPrintsTheSameFromItsDumpReadBack) {
  const QdiscEnv env{.txqueuelen = 100, .mtu = 1500, .clock = nullptr, .handle_major = 1, .tx_queues = 4};
  const std::vector<std::string> specs = {
      "pfifo limit 7", "bfifo limit 30k", "pfifo_head_drop", "pfifo_fast", "prio bands 4",
      "tbf rate 1mbit burst 10k latency 50ms peakrate 2mbit mtu 1600 overhead 4 linklayer atm",
      "htb default 10 r2q 5", "fq nopacing maxrate 1mbit", "fq_codel ce_threshold 2ms ecn",
      "codel ecn target 3ms", "red limit 1M avpkt 1500 min 100K max 300K ecn probability 0.1",
      "mq", "mqprio num_tc 2 map 0 1 queues 2@0 2@2 hw 0"};
  for (const std::string& spec : specs) {
    const auto q = make_qdisc(spec, env);
    const DumpAttrs back = tc::dump_attrs_from_json(nlohmann::ordered_json::parse(tc::dump_attrs_json(q->dump_options()).dump()));
    EXPECT_EQ(back, q->dump_options()) << spec;
    for (bool details : {false, true}) {
      EXPECT_EQ(tc::options_text(q->kind(), back, details), tc::options_text(*q, details)) << spec;
      EXPECT_EQ(tc::options_json(q->kind(), back, details), tc::options_json(*q, details)) << spec;
      EXPECT_TRUE(nlohmann::json::accept(tc::options_json(*q, details))) << spec;
    }
    const tc::QdiscKind& row = tc::qdisc_kind(q->kind());
    EXPECT_EQ(row.name, q->kind()) << spec;  // every kind make_qdisc builds has its row
    EXPECT_NE(row.make, nullptr) << spec;
    EXPECT_NE(row.text, nullptr) << spec;
    EXPECT_NE(row.json, nullptr) << spec;
  }
}

TEST(QdiscDump, ClassDumpsPrintAsTcDoes) {
  auto htb = make_qdisc("htb default 10");
  const std::vector<std::string_view> words = {"rate", "1mbit", "ceil", "2mbit", "prio", "3"};
  add_class(*htb, 0x10, 0, QdiscOptions(words, "class"), {});
  const DumpAttrs d = htb->class_ops()->class_dump(0x10);
  EXPECT_EQ(d.number("rate"), 125000u);
  EXPECT_EQ(d.number("ceil"), 250000u);
  EXPECT_EQ(d.number("prio"), 3u);
  EXPECT_EQ(d.number("level"), 0u);
  EXPECT_EQ(tc::class_options_text(*htb, 0x10), "prio 3 rate 1Mbit ceil 2Mbit burst 1600b cburst 1600b");
  EXPECT_TRUE(htb->class_ops()->class_dump(0x20).empty());  // no such class
  EXPECT_EQ(tc::class_options_text(*htb, 0x20), "");
  EXPECT_EQ(tc::class_options_json(*htb, 0x20), "{}");
  // Classes without options (prio's bands) print nothing.
  auto prio = make_qdisc("prio");
  EXPECT_EQ(tc::class_options_text(*prio, 1), "");
  EXPECT_EQ(tc::class_options_json(*prio, 1), "{}");
}

namespace {

// A kind tc/ has no printer for: a library user's own.
class Mine final : public Qdisc {
 public:
  std::string_view kind() const noexcept override { return "mine"; }
  DumpAttrs dump_options() const override {
    return DumpAttrs().number("limit", 3).flag("ecn", true).flag("off", false).word("mode", "fast").array("map", {1, 0}).signed_number("skew", -2);
  }
  Verdict enqueue(Packet* p, PacketList& to_free) noexcept override { return drop(p, to_free); }
  Packet* dequeue() noexcept override { return nullptr; }
  Packet* peek() noexcept override { return nullptr; }
  void reset(PacketList&) noexcept override {}
};

}  // namespace

TEST(QdiscDump, AKindWithoutPrintersGetsTheGenericOne) {
  const Mine q;
  EXPECT_EQ(tc::options_text(q), "limit 3 ecn mode fast map 1 0 skew -2");
  EXPECT_EQ(nlohmann::json::parse(tc::options_json(q)),
            nlohmann::json::parse(R"({"limit":3,"ecn":true,"off":false,"mode":"fast","map":[1,0],"skew":-2})"));
  EXPECT_EQ(tc::xstats_text(q, {{"x", 1}}), "");
}

// The live document carries each qdisc's typed options, and show prints the running tree's
// options, not the configuration's, when the two differ.
TEST(QdiscDump, LiveDocumentCarriesTheRunningTreesOptions) {
  tc::Config cfg;
  std::ostringstream sink;
  cfg.execute(tc::batch_words("link add dev eth0"), sink, {});
  cfg.execute(tc::batch_words("qdisc add dev eth0 root handle 1: pfifo limit 5"), sink, {});
  const auto running = make_qdisc("pfifo limit 9");
  const std::vector<tc::TreeNode> nodes = {{0x10000, tc::kRoot, running.get()}};
  const std::string doc = tc::stats_document(tc::collect_counters(nodes));
  const auto j = nlohmann::json::parse(doc);
  EXPECT_EQ(j["qdiscs"]["1:"]["options"]["limit"], 9) << doc;
  tc::Config::ShowOptions show;
  show.stats = true;
  show.fetch_live = [&](const std::string&) { return tc::Config::ShowOptions::LiveDocument{doc, ""}; };
  std::ostringstream out;
  cfg.execute(tc::batch_words("qdisc show dev eth0"), out, show);
  EXPECT_EQ(out.str().substr(0, out.str().find('\n')), "qdisc pfifo 1: root refcnt 2 limit 9p") << out.str();
  // Without a live document, the configuration's own tree.
  std::ostringstream idle;
  cfg.execute(tc::batch_words("qdisc show dev eth0"), idle, {});
  EXPECT_EQ(idle.str(), "qdisc pfifo 1: root refcnt 2 limit 5p\n");
}
