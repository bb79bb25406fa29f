// SPDX-License-Identifier: MIT
// The tc model's table of qdisc kinds (src/tc/qdisc_kinds.hpp): every kind make_qdisc() builds
// has its row, and a kind it does not know gets the unknown row, never another kind's.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "tc/qdisc_kinds.hpp"
#include "txpath/error.hpp"
#include "txpath/qdisc.hpp"

using namespace txpath;
using txpath::tc::ClassModel;
using txpath::tc::qdisc_kind;

TEST(QdiscKinds, EveryKindMakeQdiscKnowsHasARow) {
  // make_qdisc's error for an unknown kind lists the known ones: "(known: a, b, ...)".
  std::string known;
  try {
    (void)make_qdisc("no_such_kind");
    FAIL() << "an unknown kind was built";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    const auto at = what.find("(known: ");
    ASSERT_NE(at, std::string::npos) << what;
    known = what.substr(at + 8, what.rfind(')') - at - 8);
  }
  std::istringstream words(known);
  int rows = 0;
  for (std::string kind; std::getline(words, kind, ',');) {
    while (!kind.empty() && kind.front() == ' ') kind.erase(0, 1);
    EXPECT_EQ(qdisc_kind(kind).name, kind) << "no row for " << kind;
    ++rows;
  }
  EXPECT_GE(rows, 10) << known;
}

TEST(QdiscKinds, AnUnknownKindGetsTheUnknownRow) {
  const auto& k = qdisc_kind("hfsc");
  EXPECT_EQ(k.name, "");
  EXPECT_EQ(k.classes, ClassModel::none_found);
  EXPECT_TRUE(k.change_op);
  EXPECT_EQ(k.merge, nullptr);
  EXPECT_FALSE(k.multiqueue_root);
  EXPECT_EQ(qdisc_kind("").name, "");
}

TEST(QdiscKinds, RowsSayWhatTheKernelDoes) {
  EXPECT_EQ(qdisc_kind("htb").classes, ClassModel::explicit_);
  EXPECT_FALSE(qdisc_kind("htb").change_op);
  EXPECT_EQ(qdisc_kind("tbf").classes, ClassModel::one_for_any);
  EXPECT_EQ(qdisc_kind("prio").classes, ClassModel::per_band);
  EXPECT_TRUE(qdisc_kind("mq").multiqueue_root);
  EXPECT_TRUE(qdisc_kind("mqprio").multiqueue_root);
  EXPECT_FALSE(qdisc_kind("mqprio").change_op);
  EXPECT_EQ(qdisc_kind("pfifo_fast").classes, ClassModel::classless);
  ASSERT_NE(qdisc_kind("fq").merge, nullptr);
  EXPECT_EQ(qdisc_kind("fq").merge->count("horizon_cap"), 1u);
  EXPECT_EQ(qdisc_kind("fq").merge->at("nopacing").group, "pacing");
  // codel's options are a subset of fq_codel's: one merge table for both.
  EXPECT_EQ(qdisc_kind("codel").merge, &tc::kCodelMerge);
  EXPECT_EQ(qdisc_kind("fq_codel").merge, &tc::kCodelMerge);
  ASSERT_EQ(qdisc_kind("fq_codel").fixed_on_change.size(), 1u);
  EXPECT_EQ(qdisc_kind("fq_codel").fixed_on_change[0], "flows");
}
