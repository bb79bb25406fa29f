// SPDX-License-Identifier: MIT
// How many TX queues a device may have, and mqprio's mapping of priorities to traffic classes
// to ranges of those queues (tc-mqprio(8)). Both the device (NetDevice::set_traffic_classes)
// and the mq/mqprio qdisc read it, so it sits below both.
#pragma once

#include <array>
#include <cstdint>

namespace txpath {

// The most TX queues a device may have (the kernel allows 4096 through netlink for most kinds).
inline constexpr uint32_t kMaxTxQueues = 4096;

// mqprio's mapping (tc-mqprio(8)): priority (low 4 bits) -> traffic class -> a range of queues.
struct TrafficClasses {
  uint32_t num_tc = 0;               // 0: none (every queue serves every priority)
  std::array<uint8_t, 16> prio_tc{};  // priority -> class
  struct Range {
    uint32_t offset = 0;
    uint32_t count = 0;
  };
  std::array<Range, 16> tc_queues{};  // class -> its queues [offset, offset + count)
};

}  // namespace txpath
