// SPDX-License-Identifier: MIT
// Cost that grows with the input (issue 31, classes 11 and 12), and what must not change with it:
//  - tc -batch builds the trees once, not once per line, and still stops at the first failing
//    line with its own error, FILE:LINE, warnings and what the lines before it changed;
//  - a control request is bounded before it is parsed (a 16 MiB request of nested '[' took a
//    worker to 1.26 GB);
//  - the live document of a full htb tree (65535 classes) is written and read in linear time.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "support/tc_fixture.hpp"
#include "tc/control_request.hpp"
#include "tc/control_socket.hpp"
#include "tc/internal.hpp"
#include "tc/live_document.hpp"
#include "txpath/device.hpp"
#include "txpath/tc.hpp"
#include "txpath/txqueue.hpp"

using namespace std::chrono_literals;

namespace txpath::tc {
namespace {

class TcBatch : public test::TcFileFixture {
 protected:
  // Runs `lines` as a -batch file (with `options` before -batch); its exit status.
  int batch(const std::string& lines, const std::string& options = "") {
    batch_ = (dir_ / "cmds").string();
    std::ofstream(batch_) << lines;
    return tc(options + " -batch " + batch_);
  }
  void htb_root() {
    ASSERT_EQ(tc("link add dev d0"), 0);
    ASSERT_EQ(tc("qdisc add dev d0 root handle 1: htb default 1"), 0);
  }
  std::string batch_;
};

// Lines 1..n of a chain of htb classes, each below the one before: the 9th is one level too deep.
std::string chain(int n) {
  std::string s;
  for (int i = 1; i <= n; ++i)
    s += "class add dev d0 parent 1:" + (i == 1 ? std::string() : std::to_string(i - 1)) + " classid 1:" +
         std::to_string(i) + " htb rate 1mbit\n";
  return s;
}

// The number of trees built is what made a batch quadratic: each line built its device's whole
// tree (twice, with the warning's). A batch of n adds builds it a constant number of times, and
// one that fails near its end a logarithmic number (the search for the line at fault).
TEST_F(TcBatch, ManyClassAddsBuildTheTreeAFewTimesNotOncePerLine) {
  htb_root();
  std::string lines;
  for (int i = 1; i <= 2000; ++i) {
    char line[96];
    std::snprintf(line, sizeof line, "class add dev d0 parent 1: classid 1:%x htb rate 1mbit\n", i);
    lines += line;
  }
  uint64_t before = tree_builds();
  ASSERT_EQ(batch(lines), 0) << err_.str();
  EXPECT_LE(tree_builds() - before, 8u);
  EXPECT_EQ(Config::load(path_).classes("d0").size(), 2000u);

  // A failure at line 1990 of 2000: about log2(2000) builds to find it, plus a few.
  ASSERT_EQ(tc("qdisc del dev d0 root"), 0);
  ASSERT_EQ(tc("qdisc add dev d0 root handle 1: htb default 1"), 0);
  lines.clear();
  for (int i = 1; i < 1990; ++i) lines += "class add dev d0 parent 1: classid 1:" + std::to_string(i + 4000) + " htb rate 1mbit\n";
  lines += chain(9);
  before = tree_builds();
  ASSERT_EQ(batch(lines), 1);
  EXPECT_LE(tree_builds() - before, 40u);
  EXPECT_NE(err_.str().find("Command failed " + batch_ + ":1998\n"), std::string::npos) << err_.str();
}

// A failure only the whole tree shows (htb's 8 levels): the batch stops at its line with the
// kernel's words, and the lines before it are kept; -force goes on after it.
TEST_F(TcBatch, AFailureOnlyTheTreeShowsStopsTheBatchAtItsLine) {
  htb_root();
  const std::string lines = chain(10) + "class add dev d0 parent 1: classid 1:20 htb rate 2mbit\n";
  EXPECT_EQ(batch(lines), 1);
  EXPECT_EQ(err_.str(), "Error: sch_htb: tree is too deep. (max 8 levels)\nCommand failed " + batch_ + ":9\n");
  EXPECT_EQ(Config::load(path_).classes("d0").size(), 8u);
  EXPECT_EQ(batch(lines, "-force"), 1);
  // Lines 1..8 exist now, 9 is too deep again, 10 (its parent missing) becomes a root class, 11 works.
  EXPECT_NE(err_.str().find("Command failed " + batch_ + ":8\nError: sch_htb: tree is too deep. (max 8 levels)\n"
                            "Command failed " + batch_ + ":9\n"),
            std::string::npos)
      << err_.str();
  const auto classes = Config::load(path_).classes("d0");
  ASSERT_EQ(classes.size(), 10u);
  EXPECT_EQ(classes.back().classid, 0x10020u);
}

// A line after the failing one that would make the tree build again (deleting the class too deep)
// does not hide the failure: tc stops at the line that failed.
TEST_F(TcBatch, ALaterLineThatRepairsTheTreeDoesNotHideTheFailure) {
  htb_root();
  EXPECT_EQ(batch(chain(9) + "class del dev d0 classid 1:9\nclass add dev d0 parent 1: classid 1:30 htb rate 1mbit\n"), 1);
  EXPECT_EQ(err_.str(), "Error: sch_htb: tree is too deep. (max 8 levels)\nCommand failed " + batch_ + ":9\n");
  EXPECT_EQ(Config::load(path_).classes("d0").size(), 8u);
  EXPECT_EQ(file().find("1:30"), std::string::npos);
}

// Warnings are told in line order, before the failure that follows them; a show in the batch
// prints the state after the lines before it; a line's own error (its options) is tc's first.
TEST_F(TcBatch, WarningsShowsAndErrorsKeepTheirOrder) {
  htb_root();
  EXPECT_EQ(batch("class add dev d0 parent 1: classid 1:1 htb rate 10gbit\n"
                  "class add dev d0 parent 1: classid 1:2 htb rate 3mbit\n"
                  "class show dev d0\n"
                  "class add dev d0 parent 1: classid 1:3 htb rate 10gbit\n"
                  "class add dev d0 parent 1: classid 1:4 htb rate nonsense\n"
                  "class add dev d0 parent 1: classid 1:5 htb rate 10gbit\n"),
            1);
  EXPECT_EQ(err_.str(),
            "Warning: sch_htb: quantum of class 10001 is big. Consider r2q change.\n"
            "Warning: sch_htb: quantum of class 10003 is big. Consider r2q change.\n"
            "Illegal \"rate\"\nCommand failed " + batch_ + ":5\n");
  EXPECT_NE(out_.str().find("class htb 1:1 root"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("class htb 1:2 root"), std::string::npos) << out_.str();
  EXPECT_EQ(out_.str().find("1:3"), std::string::npos) << "the show ran before line 4: " << out_.str();
  EXPECT_EQ(Config::load(path_).classes("d0").size(), 3u);
}

// ---- control requests ----

TEST(ControlRequestBounds, AreCheckedBeforeParsing) {
  EXPECT_EQ(control_request_refusal(R"({"dev":"d0","config":"link add dev d0\n"})"), "");
  EXPECT_EQ(control_request_refusal("not json"), "");  // the parser says what is wrong
  std::string deep(kMaxControlRequestDepth, '[');
  EXPECT_EQ(control_request_refusal(deep + std::string(kMaxControlRequestDepth, ']')), "");
  EXPECT_EQ(control_request_refusal(deep + "["),
            "the request nests JSON arrays and objects more than 8 deep: it is not a txpath control request");
  std::string many = "[0";
  for (std::size_t i = 1; i < kMaxControlRequestValues + 10; ++i) many += ",0";
  EXPECT_EQ(control_request_refusal(many + "]"),
            "the request holds more than 1024 JSON values: it is not a txpath control request");
  EXPECT_EQ(control_request_refusal(std::string(kMaxControlRequestBytes + 1, ' ')),
            "the request takes 16777217 bytes, more than the limit of 16777216");
  // The largest request the wire carries, one long configuration, passes.
  const std::string config(kMaxControlRequestBytes - 64, 'x');
  EXPECT_EQ(control_request_refusal(R"({"dev":"d0","config":")" + config + "\"}"), "");
}

long max_rss_kib() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// The issue's request through the socket of a running queue: 16 MiB of '[' is refused with one
// line, in bounded memory (it took the worker from 7.5 MB to 1.26 GB and 6 s of CPU).
using TcControlRequest = test::TcFileFixture;

TEST_F(TcControlRequest, ADeeplyNestedOneIsRefusedInBoundedMemory) {
  ASSERT_EQ(tc("link add dev d0"), 0);
  ASSERT_EQ(tc("qdisc add dev d0 root handle 1: pfifo"), 0);
  const std::unique_ptr<Device> device = make_device("null");
  TxQueueConfig qc;
  qc.strategy = "busylock";
  auto tree = std::make_shared<Tree>();
  qc.root_qdisc = Config::load(path_).root_factory("d0", tree);
  const std::unique_ptr<TxQueue> txq = TxQueue::create(*device, qc);
  const LiveStats live(path_, "d0", *txq, tree);
  const long before = max_rss_kib();
  // Generous: the old parser took 6 s; the answer is expected at once.
  const ControlReply r = control_request(control_endpoint(path_, "d0"), std::string((16u << 20) - 64, '['), 60s);
  ASSERT_TRUE(r.answer) << r.why_not;
  EXPECT_NE(r.answer->find("nests JSON arrays and objects more than 8 deep"), std::string::npos) << *r.answer;
  // The peak grew by the request's copies (client, server), not by a document of 16M values; a
  // high-water mark, so only a rise is seen (an earlier test's peak hides nothing that matters).
  EXPECT_LT(max_rss_kib() - before, 256 * 1024) << "KiB";
}

// ---- the live document ----

// What the reader takes from a document: counters, xstats in order, kind, options; an entry
// given twice is the last; an entry that is not an object has zeros; bad values read as none.
TEST(LiveDocumentReader, ReadsWhatTheWriterWrites) {
  TreeCounters counters;
  TreeCounters::Entry q{0x10000, kRoot, false, {}, {{"a", -1}, {"b", 2}, {"a", 3}}, "htb", kRoot,
                        DumpAttrs().number("r2q", 10).word("ver", "3.17").flag("f", true).array("x", {1, 2})};
  q.stats.bytes = 18446744073709551615u;
  q.stats.qlen = 7;
  counters.entries.push_back(q);
  for (uint32_t k : {1u, 2u, 3u}) {  // the third is class 1:1 again
    const uint32_t minor = k == 3 ? 1 : k;
    TreeCounters::Entry c{0x10000 | minor, kRoot, true, {}, {{"lended", minor}}, "htb", 0x10000, {}};
    c.stats.packets = k * 10;
    counters.entries.push_back(c);
  }
  const std::optional<LiveEntries> doc = read_live_document(stats_document(counters, "d\"0"));
  ASSERT_TRUE(doc);
  EXPECT_FALSE(doc->error);
  EXPECT_TRUE(doc->has_qdiscs && doc->has_classes);
  ASSERT_EQ(doc->qdiscs.count("1:"), 1u);
  const LiveEntry& e = doc->qdiscs.at("1:");
  EXPECT_EQ(e.stats.bytes, 18446744073709551615u);
  EXPECT_EQ(e.stats.qlen, 7u);
  EXPECT_EQ(e.xstats, (Xstats{{"a", -1}, {"b", 2}, {"a", 3}}));
  EXPECT_EQ(e.kind, "htb");
  ASSERT_TRUE(e.options);
  EXPECT_EQ(*e.options, q.options);
  ASSERT_EQ(doc->classes.size(), 2u);
  EXPECT_EQ(doc->classes.at("1:1").stats.packets, 30u);
  EXPECT_EQ(doc->classes.at("1:2").stats.packets, 20u);
  EXPECT_FALSE(doc->classes.at("1:1").options);

  const auto odd = read_live_document(
      R"({"qdiscs":{"1:":5,"2:":{"bytes":-3,"packets":1.5,"drops":{"x":1},"qlen":4,"kind":7,)"
      R"("xstats":[["ok",1],["bad"],[1,2],["deep",[1]],"x",["u",18446744073709551615]]},)"
      R"("2:":{"bytes":9}},"classes":[]})");
  ASSERT_TRUE(odd);
  EXPECT_TRUE(odd->has_qdiscs);
  EXPECT_FALSE(odd->has_classes);
  EXPECT_EQ(odd->qdiscs.at("1:").stats.bytes, 0u);
  EXPECT_EQ(odd->qdiscs.at("2:").stats.bytes, 9u);  // the last "2:"
  EXPECT_EQ(odd->qdiscs.at("2:").stats.qlen, 0u);

  const auto first = read_live_document(R"({"qdiscs":{"2:":{"bytes":-3,"packets":1.5,"drops":{"x":1},)"
                                        R"("qlen":4,"kind":7,"xstats":[["ok",1],["bad"],[1,2],["deep",[1]],)"
                                        R"("x",["u",18446744073709551615]]}}})");
  ASSERT_TRUE(first);
  const LiveEntry& f = first->qdiscs.at("2:");
  EXPECT_EQ(f.stats.bytes, 0u);
  EXPECT_EQ(f.stats.packets, 0u);
  EXPECT_EQ(f.stats.drops, 0u);
  EXPECT_EQ(f.stats.qlen, 4u);
  EXPECT_FALSE(f.kind);
  EXPECT_EQ(f.xstats, (Xstats{{"ok", 1}, {"u", -1}}));
  EXPECT_EQ(read_live_document(R"({"error":"the queue did not answer"})")->error, "the queue did not answer");
  EXPECT_FALSE(read_live_document("[1]"));
  EXPECT_FALSE(read_live_document("{\"qdiscs\":{}"));
}

double thread_cpu_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// The least CPU time of 3 runs of f.
template <class F>
double least_of_3(F&& f) {
  double least = 1e9;
  for (int i = 0; i < 3; ++i) {
    const double start = thread_cpu_seconds();
    f();
    least = std::min(least, thread_cpu_seconds() - start);
  }
  return least;
}

// The issue's contract: the live document of a full htb tree (65535 classes) is built "well under
// 1 s" — it took 6.4 s, so tc -s and the exporter, which wait 2 s for it, gave up. Checked on both
// sides of the socket, each against that 1 s: the server's side (collect_counters and
// stats_document, what LiveStats does per request; 0.2 s in a release build) and the client's (tc
// -s class show reading that document and looking up all 65535 classes; 0.35 s, of which 0.13 s
// builds the file's tree to list it; before, a search of the document's keys per class).
// Measured in this thread's CPU time, so a loaded machine does not make it fail; skipped where
// the build is not optimised or is instrumented. Only the API that existed before is used, so
// the test runs, and fails, on the old code too.
TEST(LiveDocumentCost, AFullHtbTreeIsWrittenAndReadWellUnderASecond) {
#if defined(TXPATH_TSAN) || defined(TXPATH_ASAN) || !defined(NDEBUG)
  GTEST_SKIP() << "a bound on CPU time: checked in the release run";
#endif
  std::string text = "link add dev d0\nqdisc add dev d0 root handle 1: htb default 1\n";
  for (int i = 1; i <= 0xFFFF; ++i) {
    char line[96];
    std::snprintf(line, sizeof line, "class add dev d0 parent 1: classid 1:%x htb rate 10mbit\n", i);
    text += line;
  }
  Config cfg = Config::parse(text, "big.tc");
  const Tree tree = cfg.build("d0");
  // The least of 3 tries: a busy machine's page faults and cache misses inflate a try, never
  // shrink one.
  std::string doc;
  const double written = least_of_3([&] { doc = stats_document(collect_counters(tree.nodes), "d0"); });
  EXPECT_LT(written, 1.0) << "CPU seconds to write the document of 65535 classes";
  EXPECT_LT(doc.size(), (16u << 20)) << "the document fits the wire";

  Config::ShowOptions show;
  show.stats = true;
  std::string why_not;
  show.fetch_live = [&doc](const std::string&) { return Config::ShowOptions::LiveDocument{doc, ""}; };
  show.note = [&why_not](const std::string& line) { why_not = line; };
  std::ostringstream out;
  const double read = least_of_3([&] {
    out.str("");
    cfg.execute(std::vector<std::string>{"class", "show", "dev", "d0"}, out, show);
  });
  EXPECT_LT(read, 1.0) << "CPU seconds for tc -s class show to read it and show 65535 classes";
  EXPECT_EQ(why_not, "") << "every class's counters are the live document's";
  const std::string shown = out.str();
  std::size_t classes = 0;
  for (std::size_t at = shown.find("class htb "); at != std::string::npos; at = shown.find("class htb ", at + 1))
    ++classes;
  EXPECT_EQ(classes, 0xFFFFu);
}

}  // namespace
}  // namespace txpath::tc
