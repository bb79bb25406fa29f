// SPDX-License-Identifier: MIT
// Dynamic queue limits: the enqueue/completion bookkeeping and the limit's growth, decay and
// clamping. Time is passed in explicitly, so nothing here depends on the clock.
#include <gtest/gtest.h>

#include <cstdint>

#include "txpath/dql.hpp"

using txpath::Dql;

TEST(Dql, StartsAtMinLimitAndFirstPacketMayGo) {
  Dql d;
  EXPECT_EQ(d.limit(), 0u);
  EXPECT_EQ(d.avail(), 0);  // not negative: the first packet may always be queued
  EXPECT_EQ(d.inflight(), 0u);
}

TEST(Dql, AvailAfterQueued) {
  Dql d(Dql::Config{.min_limit = 1000});
  EXPECT_EQ(d.avail(), 1000);
  d.queued(300);
  EXPECT_EQ(d.avail(), 700);
  EXPECT_EQ(d.inflight(), 300u);
  d.queued(900);
  EXPECT_EQ(d.avail(), -200);  // over the limit
  EXPECT_EQ(d.inflight(), 1200u);
}

TEST(Dql, LimitGrowsWhenStarved) {
  Dql d;
  uint64_t now = 1000;
  d.queued(1500);
  EXPECT_LT(d.avail(), 0);
  // Went over the limit, then everything completed: the hardware starved.
  d.completed(1500, now += 100);
  EXPECT_EQ(d.limit(), 1500u);
  EXPECT_EQ(d.inflight(), 0u);
  EXPECT_EQ(d.avail(), 1500);

  // Over the limit again and drained again: grows again.
  d.queued(1500);
  d.queued(1500);
  d.queued(1500);
  EXPECT_LT(d.avail(), 0);
  d.completed(4500, now += 100);
  EXPECT_GT(d.limit(), 1500u);
  EXPECT_EQ(d.avail(), static_cast<int64_t>(d.limit()));
}

TEST(Dql, NoGrowthWhileUnderLimit) {
  Dql d(Dql::Config{.min_limit = 10000});
  uint64_t now = 1000;
  for (int i = 0; i < 100; ++i) {
    d.queued(1000);
    d.completed(1000, now += 100);
  }
  EXPECT_EQ(d.limit(), 10000u);
}

TEST(Dql, ShrinksAfterHoldTimeWithSlack) {
  const uint64_t hold = 10'000;
  Dql d(Dql::Config{.slack_hold_time_ns = hold});
  uint64_t now = 1'000'000;
  // Grow the limit with a starved interval: over the limit (0), then everything completed.
  d.queued(100'000);
  d.completed(100'000, now);
  ASSERT_EQ(d.limit(), 100'000u);
  // The next completion still counts as starved (the previous interval was over the limit and
  // all of it has completed), so the limit grows once more.
  d.queued(10'000);
  d.queued(1000);
  d.completed(1000, now);
  const uint64_t grown = d.limit();
  ASSERT_GT(grown, 100'000u);
  const uint64_t start = now;

  // Now keep the queue busy with only ~10000 bytes in flight: most of the limit is slack.
  bool shrank = false;
  for (int i = 0; i < 1000 && !shrank; ++i) {
    d.queued(1000);
    d.completed(1000, now += 500);
    if (now <= start + hold) {
      ASSERT_EQ(d.limit(), grown) << "lowered before the hold time at step " << i;
    } else if (d.limit() < grown) {
      shrank = true;
    }
  }
  EXPECT_TRUE(shrank);
  // The slack measured was ~ limit - 2 * per-interval completion; what stays covers the load.
  EXPECT_LE(d.limit(), 10'000u);
}

TEST(Dql, ClampsToMinAndMax) {
  Dql d(Dql::Config{.min_limit = 2000, .max_limit = 5000, .slack_hold_time_ns = 1000});
  EXPECT_EQ(d.limit(), 2000u);
  uint64_t now = 1'000'000;
  d.queued(100'000);
  d.completed(100'000, now += 10);
  EXPECT_EQ(d.limit(), 5000u);  // starvation wanted far more

  // Lots of slack for long enough: would drop to ~0, clamped at min.
  d.queued(3000);
  for (int i = 0; i < 200; ++i) {
    d.queued(100);
    d.completed(100, now += 100);
    ASSERT_GE(d.limit(), 2000u);
    ASSERT_LE(d.limit(), 5000u);
  }
  EXPECT_EQ(d.limit(), 2000u);
}

TEST(Dql, InvertedRangePinsAtMin) {
  Dql d(Dql::Config{.min_limit = 3000, .max_limit = 1000});
  d.queued(50'000);
  d.completed(50'000, 5);
  EXPECT_EQ(d.limit(), 3000u);
}

TEST(Dql, OverCompletionIsClamped) {
  Dql d;
  d.queued(100);
  d.completed(1000, 1);  // more than was queued: a caller bug, tolerated
  EXPECT_EQ(d.inflight(), 0u);
  EXPECT_GE(d.avail(), 0);
}

TEST(Dql, Reset) {
  Dql d(Dql::Config{.min_limit = 100});
  d.queued(5000);
  d.completed(5000, 10);
  ASSERT_GT(d.limit(), 100u);
  d.reset();
  EXPECT_EQ(d.limit(), 100u);
  EXPECT_EQ(d.avail(), 100);
  EXPECT_EQ(d.inflight(), 0u);
}
