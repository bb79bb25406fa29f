// SPDX-License-Identifier: MIT
// The sink's timeline (src/net/sink_timeline.hpp) alone: windows from the first frame's time,
// the curve of first arrivals, its bounds against hostile senders and times; and through a real
// sink on a testbed (SinkTest in test_sink.cpp has the socket's setup; this one is smaller).
#include <gtest/gtest.h>

#include <cstdint>

#include "net/sink.hpp"
#include "net/sink_timeline.hpp"

namespace txpath::net {
namespace {

constexpr uint64_t kMs = 1000000;

TEST(SinkTimeline, WindowsStartAtTheFirstFrameOfAnySender) {
  SinkTimeline t({.window_ns = 100 * kMs, .curve_points = 0});
  t.count(1, 5000 * kMs, 100);        // origin: sender 1's frame
  t.count(0, 5050 * kMs, 200);        // window 0 of sender 0
  t.count(0, 5100 * kMs, 300);        // window 1 (the boundary belongs to the next window)
  t.count(1, 5350 * kMs, 400);        // window 3
  const auto r = t.report();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].sender, 0u);
  EXPECT_EQ(r[0].origin_ns, 5000 * kMs);
  ASSERT_EQ(r[0].windows.size(), 2u);
  EXPECT_EQ(r[0].windows[0].bytes, 200u);
  EXPECT_EQ(r[0].windows[1].bytes, 300u);
  EXPECT_EQ(r[0].windows[1].frames, 1u);
  ASSERT_EQ(r[1].windows.size(), 4u);
  EXPECT_EQ(r[1].windows[0].bytes, 100u);
  EXPECT_EQ(r[1].windows[1].bytes, 0u);
  EXPECT_EQ(r[1].windows[3].bytes, 400u);
  EXPECT_TRUE(r[0].curve.empty());
}

TEST(SinkTimeline, CurveKeepsTheFirstArrivalsOnly) {
  SinkTimeline t({.window_ns = 0, .curve_points = 3});
  for (uint64_t i = 0; i < 10; ++i) t.count(2, 1000 + i * 10, 60 + i);
  const auto r = t.report();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(r[0].windows.empty());
  ASSERT_EQ(r[0].curve.size(), 3u);
  EXPECT_EQ(r[0].curve[0].t_ns, 0u);
  EXPECT_EQ(r[0].curve[2].t_ns, 20u);
  EXPECT_EQ(r[0].curve[2].bytes, 62u);
}

TEST(SinkTimeline, HostileSendersAndTimesStayBounded) {
  SinkTimeline t({.window_ns = 1, .curve_points = 1u << 30});  // cut to kSinkMaxCurvePoints
  t.count(0, 1000, 10);
  t.count(0, 10, 10);                         // before the origin: window 0
  t.count(0, UINT64_MAX, 10);                 // far past the last window: late
  t.count(kSinkTimelineSenders, 2000, 10);    // not a timeline sender: ignored
  t.count(UINT32_MAX, 2000, 10);
  for (uint32_t i = 0; i < kSinkMaxCurvePoints + 5; ++i) t.count(1, 1000, 1);
  const auto r = t.report();
  ASSERT_EQ(r.size(), 2u);
  ASSERT_EQ(r[0].windows.size(), 1u);
  EXPECT_EQ(r[0].windows[0].frames, 2u);
  EXPECT_EQ(r[0].late, 1u);
  EXPECT_EQ(r[1].curve.size(), kSinkMaxCurvePoints);
  EXPECT_LE(r[0].windows.capacity(), kSinkMaxWindows);
}

TEST(SinkTimeline, ClearStartsANewOriginAndDisabledCountsNothing) {
  SinkTimeline t({.window_ns = 10, .curve_points = 1});
  t.count(0, 100, 1);
  t.clear();
  EXPECT_TRUE(t.report().empty());
  t.count(0, 500, 7);
  const auto r = t.report();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].origin_ns, 500u);
  EXPECT_EQ(r[0].windows[0].bytes, 7u);
  SinkTimeline off({});
  EXPECT_FALSE(off.enabled());
  off.count(0, 1, 1);
  EXPECT_TRUE(off.report().empty());
}

}  // namespace
}  // namespace txpath::net
