// SPDX-License-Identifier: MIT
// txpath tc's input side as Linux and tc answer it (issue 17): the kernel's order of checks for
// qdisc and class edits and what they leave in the configuration, tc's markers (0 as "not given",
// direct_qlen 4294967295, r2q as an int, prio above 7), tc's exit statuses and the first line it
// prints. tests/cli/tc_kernel_cmds.sh compares the same with the machine's tc; these run anywhere.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tc/internal.hpp"
#include "tc/tc_error.hpp"
#include "txpath/error.hpp"
#include "txpath/tc.hpp"

namespace txpath::tc {
namespace {

std::string exec(Config& cfg, const std::string& line) {
  std::ostringstream out;
  cfg.execute(batch_words(line), out, {});
  return out.str();
}

// The exit status and the line `txpath tc` prints for a command (0 and "" if it succeeds).
std::pair<int, std::string> outcome(Config& cfg, const std::string& line) {
  try {
    exec(cfg, line);
    return {0, ""};
  } catch (const ConfigError& e) {
    return {exit_status(e), error_line(e)};
  }
}

Config htb_device(uint32_t txqueuelen = 32) {
  Config cfg;
  exec(cfg, "link add dev d0 txqueuelen " + std::to_string(txqueuelen));
  exec(cfg, "qdisc add dev d0 root handle 1: htb");
  exec(cfg, "class add dev d0 parent 1: classid 1:1 htb rate 1mbit");
  exec(cfg, "class add dev d0 parent 1: classid 1:2 htb rate 1mbit");
  return cfg;
}

TEST(TcCommands, ReplaceWithAnotherKindAtTheSameHandleIsRefused) {
  Config cfg;
  exec(cfg, "link add dev d0");
  exec(cfg, "qdisc add dev d0 root handle 1: pfifo limit 5");
  const std::string before = cfg.serialize();
  EXPECT_EQ(outcome(cfg, "qdisc replace dev d0 root handle 1: bfifo"),
            std::make_pair(2, std::string("Error: Invalid qdisc name: must match existing qdisc.")));
  EXPECT_EQ(cfg.serialize(), before);
  // Without the handle (or with another) the new kind replaces the root, as in Linux.
  EXPECT_EQ(outcome(cfg, "qdisc replace dev d0 root handle 2: bfifo").first, 0);
  EXPECT_EQ(cfg.qdiscs("d0").at(0).kind, "bfifo");
  EXPECT_EQ(cfg.qdiscs("d0").at(0).handle, 0x20000u);
}

TEST(TcCommands, HtbHasNoChangeOperation) {
  Config cfg = htb_device();
  const std::string refused = "Error: Change operation not supported by specified qdisc.";
  EXPECT_EQ(outcome(cfg, "qdisc change dev d0 root handle 1: htb default 10"), std::make_pair(2, refused));
  EXPECT_EQ(outcome(cfg, "qdisc change dev d0 root htb"), std::make_pair(2, refused));
  EXPECT_EQ(outcome(cfg, "qdisc replace dev d0 root handle 1: htb default 10"), std::make_pair(2, refused));
  // No kind: tc sends no options, and nothing changes.
  EXPECT_EQ(outcome(cfg, "qdisc change dev d0 root").first, 0);
  EXPECT_EQ(cfg.classes("d0").size(), 2u);
}

TEST(TcCommands, ClassChangeIgnoresTheParentAndApplies) {
  Config cfg = htb_device();
  EXPECT_EQ(outcome(cfg, "class change dev d0 parent 1:2 classid 1:1 htb rate 5mbit").first, 0);
  EXPECT_EQ(outcome(cfg, "class replace dev d0 parent 1:9 classid 1:2 htb rate 3mbit").first, 0);
  const auto classes = cfg.classes("d0");
  ASSERT_EQ(classes.size(), 2u);
  EXPECT_EQ(classes[0].parent, 0x10000u);  // still a root class
  EXPECT_EQ(classes[0].options, (std::vector<std::string>{"rate", "5mbit"}));
  EXPECT_EQ(classes[1].options, (std::vector<std::string>{"rate", "3mbit"}));
}

TEST(TcCommands, AClassUnderAMissingParentIsARootClass) {
  Config cfg = htb_device();
  EXPECT_EQ(outcome(cfg, "class add dev d0 parent 1:7 classid 1:3 htb rate 1mbit").first, 0);
  EXPECT_EQ(outcome(cfg, "class add dev d0 classid 1:4 htb rate 1mbit").first, 0);
  for (const auto& c : cfg.classes("d0")) EXPECT_EQ(c.parent, 0x10000u) << format_handle(c.classid);
}

TEST(TcCommands, HtbPrioAboveSevenIsSeven) {
  Config cfg = htb_device();
  EXPECT_EQ(outcome(cfg, "class add dev d0 parent 1: classid 1:3 htb rate 1mbit prio 9").first, 0);
  EXPECT_NE(exec(cfg, "class show dev d0").find("class htb 1:3 root prio 7 "), std::string::npos)
      << exec(cfg, "class show dev d0");
}

TEST(TcCommands, HtbUnsetMarkers) {
  Config cfg;
  exec(cfg, "link add dev d0 txqueuelen 32");
  exec(cfg, "qdisc add dev d0 root handle 1: htb direct_qlen 4294967295 r2q 4294967295");
  EXPECT_NE(exec(cfg, "qdisc show dev d0").find("r2q 1 default 0 direct_packets_stat 0 direct_qlen 32"),
            std::string::npos)
      << exec(cfg, "qdisc show dev d0");
}

TEST(TcCommands, FifoLimitsTakeTcNumbers) {
  Config cfg;
  exec(cfg, "link add dev d0");
  exec(cfg, "qdisc add dev d0 root handle 1: pfifo limit 10kb");
  EXPECT_EQ(exec(cfg, "qdisc show dev d0"), "qdisc pfifo 1: root refcnt 2 limit 10240p\n");
  exec(cfg, "qdisc replace dev d0 root handle 1: pfifo limit 1e3");
  EXPECT_EQ(exec(cfg, "qdisc show dev d0"), "qdisc pfifo 1: root refcnt 2 limit 1000p\n");
  exec(cfg, "qdisc replace dev d0 root handle 1: pfifo limit 0x10");
  EXPECT_EQ(exec(cfg, "qdisc show dev d0"), "qdisc pfifo 1: root refcnt 2 limit 16p\n");
  EXPECT_EQ(outcome(cfg, "qdisc replace dev d0 root handle 1: pfifo limit abc"),
            std::make_pair(1, std::string("pfifo: Illegal value for \"limit\": \"abc\"")));
}

TEST(TcCommands, TbfsOneClassAnswersToEveryClassId) {
  Config cfg;
  exec(cfg, "link add dev d0");
  exec(cfg, "qdisc add dev d0 root handle 1: tbf rate 1mbit burst 10k latency 10ms");
  EXPECT_EQ(outcome(cfg, "qdisc add dev d0 parent 1:7 handle 2: pfifo").first, 0);
  EXPECT_EQ(cfg.qdiscs("d0").at(1).parent, 0x10001u);
  EXPECT_EQ(outcome(cfg, "qdisc add dev d0 parent 1:1 handle 3: pfifo"),
            std::make_pair(2, std::string("Error: NLM_F_REPLACE needed to override.")));
  EXPECT_EQ(outcome(cfg, "qdisc add dev d0 parent 1:3 pfifo"),
            std::make_pair(2, std::string("Error: Exclusivity flag on, cannot modify.")));
  EXPECT_EQ(outcome(cfg, "class add dev d0 parent 1: classid 1:1 htb rate 1mbit"),
            std::make_pair(2, std::string("RTNETLINK answers: File exists")));
  EXPECT_EQ(outcome(cfg, "class del dev d0 classid 1:1").first, 2);
  EXPECT_EQ(outcome(cfg, "qdisc del dev d0 parent 1:5").first, 0);
  EXPECT_EQ(cfg.qdiscs("d0").size(), 1u);
}

TEST(TcCommands, StatusesAndFirstLines) {
  Config cfg;
  exec(cfg, "link add dev d0");
  const std::pair<const char*, std::pair<int, std::string>> cases[] = {
      {"qdisc add dev d0 root pfifo limit", {255, "Command line is not complete. Try option \"help\""}},
      {"qdisc add dev d0 root pfifo_fast bands 3", {255, "qdisc 'pfifo_fast' does not support option parsing"}},
      {"qdisc add dev d0 root foo", {2, "Error: Specified qdisc kind is unknown."}},
      {"qdisc add dev d0 root", {2, "Error: Specified qdisc kind is unknown."}},
      {"qdisc add dev d0 root foo bar", {1, "Unknown qdisc \"foo\", hence option \"bar\" is unparsable"}},
      {"qdisc frob dev d0", {255, "Command \"frob\" is unknown, try \"tc qdisc help\"."}},
      {"frob", {255, "Object \"frob\" is unknown, try \"tc help\"."}},
      {"qdisc show dev d0 extra", {255, "What is \"extra\"? Try \"tc qdisc help\"."}},
      {"qdisc add root pfifo", {2, "RTNETLINK answers: No such device"}},
      {"qdisc del dev d0", {2, "Error: Failed to find qdisc with specified handle."}},
      {"qdisc add dev nosuch root pfifo", {1, "Cannot find device \"nosuch\""}},
      {"qdisc add dev d0 root tbf rate 1mbit burst 10k latency 0ms",
       {1, "tbf: either \"limit\" or \"latency\" is required."}},
      {"qdisc add dev d0 root tbf rate 1mbit burst 10k latency 10ms peakrate 1mbit mtu 1500",
       {2, "RTNETLINK answers: Invalid argument (peakrate 1Mbit is not above rate 1Mbit)"}},
      {"qdisc add dev d0 root tbf rate -1mbit burst 10k latency 10ms",
       {1, "tbf: illegal value for \"rate\": \"-1mbit\""}},
      {"class add dev d0 parent 1: classid 1:1 pfifo", {1, "Error: Qdisc \"pfifo\" is classless."}},
      {"qdisc help", {0, ""}},
      {"class show", {0, ""}},
  };
  // tc's line starts txpath's (which may add detail in parentheses after it).
  for (const auto& [line, want] : cases) {
    const auto [status, first] = outcome(cfg, line);
    EXPECT_EQ(status, want.first) << line;
    EXPECT_EQ(first.rfind(want.second, 0), 0u) << line << ": " << first;
    EXPECT_EQ(first.empty(), want.second.empty()) << line;
  }
  // handle 1:0 and 1:1 are handle 1:, as tc reads them.
  EXPECT_EQ(outcome(cfg, "qdisc add dev d0 root handle 1:1 pfifo").first, 0);
  EXPECT_EQ(cfg.qdiscs("d0").at(0).handle, 0x10000u);
  EXPECT_EQ(outcome(cfg, "qdisc del dev d0 handle 1:"),
            std::make_pair(2, std::string("Error: Classid cannot be zero.")));
  EXPECT_EQ(outcome(cfg, "qdisc add dev d0 root handle 2: pfifo"),
            std::make_pair(2, std::string("Error: NLM_F_REPLACE needed to override.")));
}

}  // namespace
}  // namespace txpath::tc
