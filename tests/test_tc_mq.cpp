// SPDX-License-Identifier: MIT
// txpath tc on multi-queue devices: link add ... numtxqueues N, the default root (mq 0:), mq and
// mqprio (software mode), grafting onto their classes, tc's text and JSON as Linux 6.18 with tc
// (iproute2 6.1) prints them — the order of the children included — and refusals with their exit
// statuses; the factory MultiQueueTx takes (Config::multiqueue) and the counters LiveStats serves
// for it (merge_queue_counters), without a running MultiQueueTx.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "qdisc/mq.hpp"
#include "support/packet_arena.hpp"
#include "tc/internal.hpp"
#include "txpath/error.hpp"
#include "txpath/tc.hpp"

namespace txpath::tc {
namespace {

std::string exec(Config& cfg, const std::string& line, Config::ShowOptions show = {}) {
  std::ostringstream out;
  cfg.execute(batch_words(line), out, show);
  return out.str();
}

// The exit status tc gives `line` (0 when it succeeds), and its one-line message in *what.
int status_of(Config& cfg, const std::string& line, std::string* what = nullptr) {
  try {
    exec(cfg, line);
    return 0;
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    if (what) *what = e.what();
    return exit_status(e);
  }
}

Config with_queues(uint32_t queues, const std::string& dev = "eth0") {
  Config cfg;
  exec(cfg, "link add dev " + dev + " txqueuelen 32 numtxqueues " + std::to_string(queues));
  return cfg;
}

// "qdisc KIND HANDLE parent P" of each listed qdisc, in order (options and counters left out).
std::vector<std::string> listed(const std::string& show) {
  std::vector<std::string> out;
  const std::regex head(R"(^qdisc (\S+) (\S+) (root|parent \S+))");
  std::istringstream in(show);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, head)) out.push_back(m[1].str() + " " + m[2].str() + " " + m[3].str());
  }
  return out;
}

const std::string kFast = "bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1\n";

TEST(TcMqLink, NumTxQueuesIsKeptAndWrittenOnlyWhenNotOne) {
  Config cfg;
  exec(cfg, "link add dev a");
  exec(cfg, "link add b numtxqueues 4 type dummy");  // ip's word order
  exec(cfg, "link add dev c numtxqueues 1");
  EXPECT_EQ(cfg.device("a")->tx_queues, 1u);
  EXPECT_EQ(cfg.device("b")->tx_queues, 4u);
  const std::string text = cfg.serialize();
  EXPECT_NE(text.find("link add dev a txqueuelen 1000 mtu 1500\n"), std::string::npos) << text;
  EXPECT_NE(text.find("link add dev b txqueuelen 1000 mtu 1500 numtxqueues 4\n"), std::string::npos);
  EXPECT_NE(text.find("link add dev c txqueuelen 1000 mtu 1500\n"), std::string::npos);
  EXPECT_EQ(Config::parse(text).serialize(), text);
  EXPECT_EQ(exec(cfg, "link show dev b"), "b: txqueuelen 1000 mtu 1500 numtxqueues 4\n");
}

TEST(TcMqLink, RefusesQueueCountsOutOfRange) {
  Config cfg;
  std::string what;
  EXPECT_EQ(status_of(cfg, "link add dev x numtxqueues 0", &what), 2);
  EXPECT_NE(what.find("Invalid number of transmit queues"), std::string::npos) << what;
  EXPECT_EQ(status_of(cfg, "link add dev x numtxqueues 4097"), 2);
  EXPECT_EQ(status_of(cfg, "link add dev x numtxqueues abc", &what), 255);
  EXPECT_EQ(what, "argument \"abc\" is wrong: Invalid \"numtxqueues\" value");
  EXPECT_EQ(status_of(cfg, "link add dev x numtxqueues 4096"), 0);
  EXPECT_EQ(status_of(cfg, "link set dev x numtxqueues 8"), 2);  // fixed once added
  EXPECT_EQ(cfg.device("x")->tx_queues, 4096u);
}

// XPS in the file: `link set dev D txqueue Q xps_cpus MASK` (sysfs's hex mask), kept per queue,
// written back after the device's line, shown by link show, handed to the bench by multiqueue().
TEST(TcMqLink, XpsCpusArePerQueueAndWrittenBack) {
  Config cfg = with_queues(4);
  exec(cfg, "link set dev eth0 txqueue 1 xps_cpus 3");
  exec(cfg, "link set dev eth0 txqueue 3 xps_cpus 1,00000000");
  using V = std::vector<unsigned>;
  const auto& xps = cfg.device("eth0")->xps_cpus;
  ASSERT_EQ(xps.size(), 4u);
  EXPECT_EQ(xps[1], (V{0, 1}));
  EXPECT_EQ(xps[3], V{32});
  EXPECT_TRUE(xps[0].empty());
  const std::string text = cfg.serialize();
  EXPECT_NE(text.find("numtxqueues 4\nlink set dev eth0 txqueue 1 xps_cpus 3\n"
                      "link set dev eth0 txqueue 3 xps_cpus 1,00000000\n"), std::string::npos) << text;
  EXPECT_EQ(Config::parse(text).serialize(), text);
  EXPECT_EQ(exec(cfg, "link show dev eth0"),
            "eth0: txqueuelen 32 mtu 1500 numtxqueues 4\n    tx-1 xps_cpus 3\n"
            "    tx-3 xps_cpus 1,00000000\n");
  EXPECT_EQ(cfg.multiqueue("eth0", nullptr).xps_cpus, xps);
  exec(cfg, "link set dev eth0 txqueue 1 xps_cpus 0");  // cleared
  EXPECT_EQ(cfg.serialize().find("txqueue 1"), std::string::npos);
  std::string what;
  EXPECT_EQ(status_of(cfg, "link set dev eth0 txqueue 4 xps_cpus 1", &what), 2);
  EXPECT_NE(what.find("no TX queue 4"), std::string::npos) << what;
  EXPECT_EQ(status_of(cfg, "link set dev eth0 txqueue 0 xps_cpus 1g"), 255);
  EXPECT_EQ(status_of(cfg, "link set dev eth0 xps_cpus 1"), 255);
  EXPECT_EQ(status_of(cfg, "link set dev eth0 txqueue 0"), 255);
}

TEST(TcMq, DefaultRootOfAMultiQueueDeviceIsMqZero) {
  Config cfg = with_queues(4);
  EXPECT_EQ(exec(cfg, "qdisc show dev eth0"),
            "qdisc mq 0: root \n"
            "qdisc pfifo_fast 0: parent :4 " + kFast + "qdisc pfifo_fast 0: parent :3 " + kFast +
                "qdisc pfifo_fast 0: parent :2 " + kFast + "qdisc pfifo_fast 0: parent :1 " + kFast);
  EXPECT_EQ(exec(cfg, "class show dev eth0"),
            "class mq :1 root \nclass mq :2 root \nclass mq :3 root \nclass mq :4 root \n");
  Config::ShowOptions json;
  json.json = true;
  const auto j = nlohmann::ordered_json::parse(exec(cfg, "qdisc show dev eth0", json));
  ASSERT_EQ(j.size(), 5u);
  EXPECT_EQ(j[0].dump(), R"({"kind":"mq","handle":"0:","root":true,"options":{}})");
  EXPECT_EQ(j[1]["parent"], ":4");
  EXPECT_FALSE(j[1].contains("refcnt"));
  std::string what;
  EXPECT_EQ(status_of(cfg, "qdisc del dev eth0 root", &what), 2);
  EXPECT_EQ(what, "Cannot delete qdisc with handle of zero.");
}

TEST(TcMq, AddShowsOneDefaultChildPerQueueAndClasses) {
  Config cfg = with_queues(4);
  exec(cfg, "qdisc add dev eth0 root handle 1: mq");
  EXPECT_EQ(exec(cfg, "qdisc show dev eth0"),
            "qdisc mq 1: root \n"
            "qdisc pfifo_fast 0: parent 1:4 " + kFast + "qdisc pfifo_fast 0: parent 1:3 " + kFast +
                "qdisc pfifo_fast 0: parent 1:2 " + kFast + "qdisc pfifo_fast 0: parent 1:1 " + kFast);
  Config::ShowOptions stats;
  stats.stats = true;
  const std::string s = exec(cfg, "qdisc show dev eth0", stats);
  EXPECT_EQ(s.substr(0, s.find("qdisc pfifo_fast")),
            "qdisc mq 1: root \n Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n"
            " backlog 0b 0p requeues 0\n");
  EXPECT_EQ(exec(cfg, "class show dev eth0"),
            "class mq 1:1 root \nclass mq 1:2 root \nclass mq 1:3 root \nclass mq 1:4 root \n");
  // Replacing mq by itself changes nothing; the root's handle is kept.
  EXPECT_EQ(status_of(cfg, "qdisc replace dev eth0 root mq"), 0);
  EXPECT_EQ(listed(exec(cfg, "qdisc show dev eth0"))[0], "mq 1: root");
}

// The order Linux 6.18 lists these in (checked on an ifb device with 16 TX queues): the root,
// then its qdisc hash's buckets in turn, the newest qdisc first within a bucket.
TEST(TcMq, ChildrenAreListedInTheKernelsHashOrder) {
  Config cfg = with_queues(16);
  exec(cfg, "qdisc add dev eth0 root handle 7: mq");
  for (const char* g : {"3 51", "5 53", "1 49", "8 56", "c 60", "10 64", "2 50", "4 1234", "6 ffee", "7 8001"}) {
    const std::string a(g);
    const std::string cls = a.substr(0, a.find(' ')), handle = a.substr(a.find(' ') + 1);
    exec(cfg, "qdisc add dev eth0 parent 7:" + cls + " handle " + handle + ": pfifo");
  }
  const std::vector<std::string> want = {
      "mq 7: root",           "pfifo 8001: parent 7:7", "pfifo_fast 0: parent 7:f",
      "pfifo_fast 0: parent 7:e", "pfifo_fast 0: parent 7:d", "pfifo_fast 0: parent 7:b",
      "pfifo_fast 0: parent 7:a", "pfifo_fast 0: parent 7:9", "pfifo 56: parent 7:8",
      "pfifo 1234: parent 7:4", "pfifo 49: parent 7:1",   "pfifo 60: parent 7:c",
      "pfifo 64: parent 7:10",  "pfifo 51: parent 7:3",   "pfifo ffee: parent 7:6",
      "pfifo 53: parent 7:5",   "pfifo 50: parent 7:2"};
  EXPECT_EQ(listed(exec(cfg, "qdisc show dev eth0")), want);
  // The file keeps the creation order, so the listing survives a reload.
  Config again = Config::parse(cfg.serialize());
  EXPECT_EQ(listed(exec(again, "qdisc show dev eth0")), want);
  const std::string classes = exec(cfg, "class show dev eth0");
  EXPECT_NE(classes.find("class mq 7:1 root leaf 49: \n"), std::string::npos) << classes;
  EXPECT_NE(classes.find("class mq 7:9 root \n"), std::string::npos);
  EXPECT_NE(classes.find("class mq 7:10 root leaf 64: \n"), std::string::npos);
}

TEST(TcMq, GraftReplaceAndDeleteAtAQueue) {
  Config cfg = with_queues(4);
  exec(cfg, "qdisc add dev eth0 root handle 1: mq");
  exec(cfg, "qdisc add dev eth0 parent 1:3 handle 30: fq_codel");
  exec(cfg, "qdisc add dev eth0 parent 1:2 handle 20: pfifo");  // over the default child
  EXPECT_EQ(status_of(cfg, "qdisc add dev eth0 parent 1:2 handle 21: pfifo"), 2);  // taken
  EXPECT_EQ(status_of(cfg, "qdisc replace dev eth0 parent 1:2 handle 21: bfifo"), 0);
  exec(cfg, "qdisc change dev eth0 parent 1:2 handle 21: bfifo limit 1000");
  auto l = listed(exec(cfg, "qdisc show dev eth0"));
  // Hash buckets: 0: the defaults (newest queue first), 2: 30:, 4: 21:.
  EXPECT_EQ(l, (std::vector<std::string>{"mq 1: root", "pfifo_fast 0: parent 1:4",
                                          "pfifo_fast 0: parent 1:1", "fq_codel 30: parent 1:3",
                                          "bfifo 21: parent 1:2"}));
  EXPECT_NE(exec(cfg, "qdisc show dev eth0").find("qdisc bfifo 21: parent 1:2 limit 1000b"), std::string::npos);
  // Deleting a grafted child gives the queue its default back (Linux leaves noop: see docs).
  EXPECT_EQ(status_of(cfg, "qdisc del dev eth0 parent 1:3"), 0);
  l = listed(exec(cfg, "qdisc show dev eth0"));
  EXPECT_EQ(l.size(), 5u);
  EXPECT_NE(std::find(l.begin(), l.end(), "pfifo_fast 0: parent 1:3"), l.end());
  // Deleting the mq root takes its children with it and brings back mq 0:.
  EXPECT_EQ(status_of(cfg, "qdisc del dev eth0 root handle 1: mq"), 0);
  EXPECT_EQ(listed(exec(cfg, "qdisc show dev eth0"))[0], "mq 0: root");
  EXPECT_TRUE(cfg.qdiscs("eth0").empty());
}

TEST(TcMq, RefusalsAndTheirExitStatuses) {
  Config cfg = with_queues(4);
  std::string what;
  exec(cfg, "link add dev one");
  EXPECT_EQ(status_of(cfg, "qdisc add dev one root handle 1: mq", &what), 2);  // single queue
  EXPECT_NE(what.find("Operation not supported"), std::string::npos) << what;
  EXPECT_EQ(status_of(cfg, "qdisc add dev eth0 root handle 1: mq foo", &what), 1);
  EXPECT_NE(what.find("Unknown qdisc \"mq\", hence option \"foo\" is unparsable"), std::string::npos);
  exec(cfg, "qdisc add dev eth0 root handle 1: mq");
  EXPECT_EQ(status_of(cfg, "qdisc add dev eth0 root handle 1: mq"), 2);  // duplicate
  EXPECT_EQ(status_of(cfg, "qdisc add dev eth0 parent 1:2 handle 20: mq", &what), 2);  // not root
  EXPECT_NE(what.find("Operation not supported"), std::string::npos);
  for (const char* cls : {"1:5", "1:0", "1:ffff"}) {
    EXPECT_EQ(status_of(cfg, std::string("qdisc add dev eth0 parent ") + cls + " handle 25: pfifo", &what), 2);
    EXPECT_EQ(what, "Specified class not found.");
  }
  EXPECT_EQ(status_of(cfg, "qdisc del dev eth0 parent 1:3", &what), 2);
  EXPECT_EQ(what, "Cannot delete qdisc with handle of zero.");
  EXPECT_EQ(status_of(cfg, "qdisc replace dev eth0 parent 1:fff1 handle 1: mq"), 2);
  EXPECT_EQ(listed(exec(cfg, "qdisc show dev eth0")).size(), 5u);  // unchanged
}

TEST(TcMq, NonMqRootOnAMultiQueueDeviceIsHeldByEveryQueue) {
  Config cfg = with_queues(4);
  exec(cfg, "qdisc replace dev eth0 root handle 1: pfifo");
  EXPECT_EQ(exec(cfg, "qdisc show dev eth0"), "qdisc pfifo 1: root refcnt 5 limit 32p\n");
  EXPECT_EQ(exec(cfg, "class show dev eth0"), "");
  std::string what;
  EXPECT_EQ(status_of(cfg, "qdisc add dev eth0 root handle 2: mq"), 2);
}

TEST(TcMqprio, SoftwareModeShowsItsMappingAndClasses) {
  Config cfg = with_queues(8);
  exec(cfg, "qdisc add dev eth0 root handle 1: mqprio num_tc 3 map 0 0 1 1 2 2 0 0 queues 2@0 2@2 4@4 hw 0");
  const std::string show = exec(cfg, "qdisc show dev eth0");
  EXPECT_EQ(show.substr(0, show.find("qdisc pfifo_fast")),
            "qdisc mqprio 1: root tc 3 map 0 0 1 1 2 2 0 0 0 0 0 0 0 0 0 0 \n"
            "             queues:(0:1) (2:3) (4:7) \n"
            "             mode:dcb\n"
            "             shaper:dcb\n");
  EXPECT_EQ(listed(show).size(), 9u);
  EXPECT_EQ(exec(cfg, "class show dev eth0"),
            "class mqprio 1:ffe0 root \nclass mqprio 1:ffe1 root \nclass mqprio 1:ffe2 root \n"
            "class mqprio 1:1 parent 1:ffe0 \nclass mqprio 1:2 parent 1:ffe0 \n"
            "class mqprio 1:3 parent 1:ffe1 \nclass mqprio 1:4 parent 1:ffe1 \n"
            "class mqprio 1:5 parent 1:ffe2 \nclass mqprio 1:6 parent 1:ffe2 \n"
            "class mqprio 1:7 parent 1:ffe2 \nclass mqprio 1:8 parent 1:ffe2 \n");
  Config::ShowOptions json;
  json.json = true;
  const auto j = nlohmann::ordered_json::parse(exec(cfg, "qdisc show dev eth0", json));
  EXPECT_EQ(j[0]["options"].dump(),
            R"({"tc":3,"map":[0,0,1,1,2,2,0,0,0,0,0,0,0,0,0,0],"queues":[[0,1],[2,3],[4,7]],"mode":"dcb","shaper":"dcb"})");
  // mqprio has no change operation: the mapping stays until the qdisc is replaced by another.
  std::string what;
  EXPECT_EQ(status_of(cfg, "qdisc change dev eth0 root handle 1: mqprio num_tc 1 map 0 queues 8@0 hw 0", &what), 2);
  EXPECT_EQ(what, "Change operation not supported by specified qdisc.");
  EXPECT_EQ(status_of(cfg, "qdisc replace dev eth0 root handle 1: mqprio num_tc 1 map 0 queues 8@0 hw 0"), 2);
  // A queue outside every class's range has no parent class.
  exec(cfg, "qdisc replace dev eth0 root handle 2: mqprio num_tc 2 map 0 1 queues 2@0 2@2 hw 0");
  EXPECT_NE(exec(cfg, "class show dev eth0").find("class mqprio 2:5 parent none \n"), std::string::npos);
  exec(cfg, "qdisc add dev eth0 parent 2:5 handle 50: pfifo");
  EXPECT_NE(exec(cfg, "qdisc show dev eth0").find("qdisc pfifo 50: parent 2:5 limit 32p"), std::string::npos);
}

TEST(TcMqprio, KernelChecksAndTcParseErrors) {
  Config cfg = with_queues(8);
  const std::string pre = "qdisc add dev eth0 root handle 1: mqprio ";
  struct Case {
    const char* options;
    int status;
    const char* message;
  };
  const Case cases[] = {
      {"num_tc 2 map 0 1 queues 4@0 4@4", 2, "Device does not support hardware offload"},
      {"num_tc 17 hw 0", 2, "Number of traffic classes is outside valid range"},
      {"num_tc 2 map 0 2 hw 0", 2, "Invalid traffic class in priority to traffic class mapping"},
      {"num_tc 2 map 0 1 queues 2@0 hw 0", 2, "No queues for TC 1"},
      {"num_tc 2 map 0 1 queues 4@0 4@3 hw 0", 2, "TC 0 queues 4@0 overlap with TC 1 queues 4@3"},
      {"num_tc 2 map 0 1 queues 4@0 4@5 hw 0", 2, "Queues 4:5 for TC 1 exceed the 8 TX queues available"},
      {"num_tc 2 map 0 1 queues 4@0 4@4 mode channel hw 0", 2,
       "mqprio TCA_OPTIONS can only contain netlink attributes in hardware mode"},
      {"num_tc 2 queues 1@0 1@1 1@2 hw 0", 1,
       "queues count/offset pair count 3 can not be higher than given num_tc 2"},
      {"num_tc x", 1, "Illegal \"num_tc\""},
      {"hw 0 mode channel", 1, "unknown argument \"mode\""},
  };
  for (const Case& c : cases) {
    std::string what;
    EXPECT_EQ(status_of(cfg, pre + c.options, &what), c.status) << c.options;
    EXPECT_NE(what.find(c.message), std::string::npos) << c.options << ": " << what;
  }
  EXPECT_TRUE(cfg.qdiscs("eth0").empty());
  exec(cfg, "link add dev one");
  EXPECT_EQ(status_of(cfg, "qdisc add dev one root mqprio num_tc 1 map 0 queues 1@0 hw 0"), 2);
}

// Config::multiqueue: what MultiQueueTx needs, and the trees it leaves for LiveStats.
TEST(TcMqSetup, FactoryHandsEachQueueItsChild) {
  Config cfg = with_queues(4);
  exec(cfg, "qdisc add dev eth0 root handle 1: mqprio num_tc 2 map 0 1 1 1 queues 1@0 3@1 hw 0");
  exec(cfg, "qdisc add dev eth0 parent 1:3 handle 30: prio");
  exec(cfg, "qdisc add dev eth0 parent 30:1 handle 31: pfifo limit 7");
  auto trees = std::make_shared<QueueTrees>();
  const Config::MultiQueueSetup setup = cfg.multiqueue("eth0", trees);
  EXPECT_EQ(setup.tx_queues, 4u);
  EXPECT_EQ(setup.traffic_classes.num_tc, 2u);
  EXPECT_EQ(setup.traffic_classes.prio_tc[1], 1u);
  EXPECT_EQ(setup.traffic_classes.tc_queues[1].offset, 1u);
  EXPECT_EQ(setup.traffic_classes.tc_queues[1].count, 3u);
  EXPECT_EQ(trees->root_kind, "mqprio");
  EXPECT_EQ(trees->root_handle, 0x10000u);
  std::vector<std::unique_ptr<Qdisc>> roots;
  for (uint32_t i = 0; i < 4; ++i) roots.push_back(setup.queue_qdisc(i, QdiscEnv{}));
  EXPECT_EQ(roots[0]->kind(), "pfifo_fast");
  EXPECT_EQ(roots[2]->kind(), "prio");
  ASSERT_EQ(trees->queues[2].nodes.size(), 2u);  // prio 30: and pfifo 31: below it
  EXPECT_EQ(trees->queues[2].nodes[0].qdisc, roots[2].get());
  EXPECT_EQ(trees->queues[2].nodes[1].handle, 0x310000u);
  EXPECT_EQ(txpath::tc::options_text(*trees->queues[2].nodes[1].qdisc), "limit 7p");
  ASSERT_EQ(trees->queues[1].nodes.size(), 1u);
  EXPECT_EQ(trees->queues[1].nodes[0].parent, 0x10002u);
  EXPECT_THROW(setup.queue_qdisc(4, QdiscEnv{}), ConfigError);
  EXPECT_THROW(cfg.multiqueue("nope", nullptr), ConfigError);
}

TEST(TcMqSetup, OtherRootsAreCopiedPerQueueAndSingleQueueDevicesHaveNoClasses) {
  Config cfg = with_queues(3);
  exec(cfg, "qdisc add dev eth0 root handle 1: prio");
  exec(cfg, "link add dev one");
  auto trees = std::make_shared<QueueTrees>();
  const auto setup = cfg.multiqueue("eth0", trees);
  EXPECT_EQ(setup.traffic_classes.num_tc, 0u);
  auto a = setup.queue_qdisc(0, QdiscEnv{});
  auto b = setup.queue_qdisc(1, QdiscEnv{});
  EXPECT_EQ(a->kind(), "prio");
  EXPECT_NE(a.get(), b.get());
  EXPECT_EQ(trees->queues[1].nodes[0].qdisc, b.get());
  const auto single = cfg.multiqueue("one", nullptr);
  EXPECT_EQ(single.tx_queues, 1u);
  EXPECT_EQ(single.queue_qdisc(0, QdiscEnv{})->kind(), "pfifo_fast");
  // An unconfigured multi-queue device: queue i runs mq 0:'s default child.
  Config plain = with_queues(2);
  const auto dflt = plain.multiqueue("eth0", nullptr);
  EXPECT_EQ(dflt.queue_qdisc(1, QdiscEnv{})->kind(), "pfifo_fast");
}

// The live document of a multi-queue device, as LiveStats builds it from each queue's counters:
// the mq root shows the sum of its children, each class its queue's child.
TEST(TcMqSetup, LiveCountersOfTheQueuesAddUpAtTheRoot) {
  Config cfg = with_queues(3);
  exec(cfg, "qdisc add dev eth0 root handle 1: mq");
  exec(cfg, "qdisc add dev eth0 parent 1:2 handle 20: pfifo");
  auto trees = std::make_shared<QueueTrees>();
  const auto setup = cfg.multiqueue("eth0", trees);
  std::vector<std::unique_ptr<Qdisc>> roots;
  for (uint32_t i = 0; i < 3; ++i) roots.push_back(setup.queue_qdisc(i, QdiscEnv{}));
  test::PacketArena packets(8);
  PacketList none;
  const uint32_t per_queue[3] = {1, 3, 2};
  for (uint32_t q = 0; q < 3; ++q)
    for (uint32_t k = 0; k < per_queue[q]; ++k) {
      ASSERT_EQ(roots[q]->enqueue(packets.take(100 + q), none), Verdict::success);
      if (k == 0) packets.put(roots[q]->dequeue());  // one sent per queue, the rest stay queued
    }
  std::vector<TreeCounters> counters;
  for (uint32_t q = 0; q < 3; ++q) counters.push_back(collect_counters(trees->queues[q].nodes));
  const std::string doc = stats_document(merge_queue_counters(*trees, counters));
  Config::ShowOptions show;
  show.stats = true;
  show.fetch_live = [&](const std::string&) { return Config::ShowOptions::LiveDocument{doc, ""}; };
  const std::string text = exec(cfg, "qdisc show dev eth0", show);
  EXPECT_EQ(text.substr(0, text.find("qdisc pfifo")),
            "qdisc mq 1: root \n Sent 303 bytes 3 pkt (dropped 0, overlimits 0 requeues 0) \n"
            " backlog 304b 3p requeues 0\n")
      << text;
  EXPECT_NE(text.find("qdisc pfifo 20: parent 1:2 limit 32p\n Sent 101 bytes 1 pkt (dropped 0, "
                      "overlimits 0 requeues 0) \n backlog 202b 2p requeues 0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("qdisc pfifo_fast 0: parent 1:3 " + kFast + " Sent 102 bytes 1 pkt"), std::string::npos);
  const std::string classes = exec(cfg, "class show dev eth0", show);
  EXPECT_NE(classes.find("class mq 1:1 root \n Sent 100 bytes 1 pkt (dropped 0, overlimits 0 requeues 0) \n"
                         " backlog 0b 0p requeues 0\n"),
            std::string::npos)
      << classes;
  for (auto& r : roots) r->reset(none);
}

TEST(TcMqSetup, MqprioTrafficClassCountersAreTheSumOfTheirQueues) {
  QueueTrees trees;
  trees.root_kind = "mqprio";
  trees.root_handle = 0x10000;
  trees.traffic_classes.num_tc = 2;
  trees.traffic_classes.tc_queues[0] = {0, 1};
  trees.traffic_classes.tc_queues[1] = {1, 2};
  std::vector<TreeCounters> queues(3);
  for (uint32_t q = 0; q < 3; ++q) {
    TreeCounters::Entry top{0, 0x10001u + q, false, {}, {}};
    top.stats.packets = 10u * (q + 1);
    queues[q].entries.push_back(top);
  }
  const auto doc = nlohmann::json::parse(stats_document(merge_queue_counters(trees, queues)));
  EXPECT_EQ(doc["qdiscs"]["1:"]["packets"], 60);
  EXPECT_EQ(doc["classes"]["1:ffe0"]["packets"], 10);
  EXPECT_EQ(doc["classes"]["1:ffe1"]["packets"], 50);
  EXPECT_EQ(doc["classes"]["1:3"]["packets"], 30);
  EXPECT_EQ(doc["qdiscs"]["0:@1:2"]["packets"], 20);
}

TEST(TcMqQdisc, OneTxQueueRunningAnMqRootSpreadsByTxQueue) {
  QdiscEnv env;
  env.tx_queues = 2;
  MqQdisc mq(2, TrafficClasses{}, env);
  test::PacketArena packets(4);
  PacketList none;
  Packet* a = packets.take(100);
  a->tx_queue = 1;
  Packet* b = packets.take(200);
  ASSERT_EQ(mq.enqueue(a, none), Verdict::success);
  ASSERT_EQ(mq.enqueue(b, none), Verdict::success);
  EXPECT_EQ(mq.qlen(), 2u);
  EXPECT_EQ(mq.backlog(), 300u);
  EXPECT_EQ(mq.child(2)->qlen(), 1u);
  EXPECT_EQ(mq.class_stats(1).backlog, 200u);
  EXPECT_EQ(mq.dequeue(), b);
  EXPECT_EQ(mq.dequeue(), a);
  EXPECT_EQ(mq.dequeue(), nullptr);
  EXPECT_EQ(mq.children_stats().packets, 2u);
  EXPECT_EQ(mq.qlen(), 0u);
}

}  // namespace
}  // namespace txpath::tc
