// SPDX-License-Identifier: MIT
// A fixture for tests on a veth testbed: one of this process's own names (unique_testbed(Tag),
// net_test_util.hpp), up before each test and removed after it, and a sink on its peer end.
// Needs root: skipped with a message outside CI, failed in CI (TXPATH_REQUIRE_ROOT); a test
// body starts with `if (!up_) return;`.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>

#include "net/sink.hpp"
#include "net/testbed.hpp"
#include "net_test_util.hpp"

namespace txpath::test {

template <char Tag>
class VethTestbed : public ::testing::Test {
 protected:
  void SetUp() override {
    TXPATH_REQUIRE_ROOT();
    cfg_ = unique_testbed(Tag);
    info_ = testbed_up(cfg_);
    up_ = true;
  }
  void TearDown() override {
    if (up_) testbed_down(cfg_);
  }

  // A started sink on the peer end, in the testbed's namespace.
  std::unique_ptr<Sink> sink() {
    auto s = std::make_unique<Sink>(SinkConfig{.ifname = cfg_.peer_if, .netns = cfg_.netns});
    s->start();
    return s;
  }

  // Waits for `total` frames at `s` (quiet 2 s, at most 20 s) and expects each exactly once, in
  // order per sender; returns the sink's report for more checks.
  static SinkReport expect_once_in_order(const Sink& s, uint64_t total) {
    EXPECT_TRUE(s.wait_for(total, std::chrono::seconds(2), std::chrono::seconds(20)));
    const SinkReport r = s.report();
    EXPECT_EQ(r.received, total);
    EXPECT_EQ(r.lost, 0u);
    EXPECT_EQ(r.duplicated, 0u);
    EXPECT_EQ(r.out_of_order, 0u);
    return r;
  }

  TestbedConfig cfg_;
  TestbedInfo info_;
  bool up_ = false;
};

}  // namespace txpath::test
