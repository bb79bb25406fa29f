// SPDX-License-Identifier: MIT
// The psched tick model (src/tc/psched.hpp) and what tc prints through it: the values are the
// machine's tc (iproute2 6.1) over Linux 6.18, as scripts/tc_kernel_diff.py compares them.
#include <gtest/gtest.h>

#include <string>

#include "tc/psched.hpp"

namespace txpath {
namespace {

TEST(TcPsched, HtbDefaultBurstAtThreeMegabit) {
  // 1600 B at 375000 B/s = 4266.67 us -> 4266 us -> 66656.25 -> 66656 ticks; back: 4265 us,
  // 1599.375 -> 1599 B.
  EXPECT_EQ(tc::tc_xmittime_ticks(375000, 1600), 66656u);
  EXPECT_EQ(tc::tc_ticks_to_usec(66656), 4265u);
  EXPECT_EQ(tc::tc_xmitsize(375000, 66656), 1599u);
}

TEST(TcPsched, TbfBurstComesBackAs65500) {
  // The kernel times tbf's 64 KiB at 2 Gbit exactly (262144 ns = 4096 ticks); tc reads 4096 ticks
  // as 262 whole us and prints 250e6 * 262e-6 = 65500 B.
  EXPECT_EQ(tc::kernel_l2t_ns(250'000'000, 65536), 262144u);
  EXPECT_EQ(tc::ns_to_ticks(262144), 4096u);
  EXPECT_EQ(tc::tc_xmitsize(250'000'000, 4096), 65500u);
}

TEST(TcPsched, KernelRoundsDownTcWrapsAt32Bits) {
  EXPECT_EQ(tc::kernel_l2t_ns(3, 1), 333333333u);  // mult/shift: never above the exact time
  EXPECT_EQ(tc::kernel_l2t_ns(0, 1500), 0u);
  // 1 GiB at 1 B/s is 2^30 * 1e6 us: 0 in 32 bits, so tc 6.1 sends a bucket of 0 ticks.
  EXPECT_EQ(tc::tc_xmittime_ticks(1, uint64_t{1} << 30), 0u);
  // 4000 B at 1 B/s: 4e9 us fits; 6.25e10 ticks does not and wraps.
  EXPECT_EQ(tc::tc_xmittime_ticks(1, 4000), 2370457856u);
  EXPECT_EQ(tc::tc_xmittime_ticks(0, 4000), 0u);
}

}  // namespace
}  // namespace txpath
