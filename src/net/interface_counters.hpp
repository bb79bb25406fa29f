// SPDX-License-Identifier: MIT
// An interface's own counters, as the kernel keeps them (/sys/class/net/IF/statistics/*): what
// the driver says it transmitted, received and dropped. The bench reads a testbed's before and
// after a run to check delivery against the kernel (testbed.hpp: null_nic_frames).
//
// Each counter is one sysfs read (the kernel asks the driver for its statistics each time), so
// the set is not one snapshot: read it when nothing is sending if the counters must agree.
// The interface is looked up in the network namespace sysfs was mounted in (the caller's, as a
// rule). Not a hot path; no atomics.
#pragma once

#include <cstdint>
#include <string_view>

namespace txpath {

struct InterfaceCounters {
  uint64_t rx_packets = 0;
  uint64_t rx_bytes = 0;
  uint64_t rx_dropped = 0;
  uint64_t rx_errors = 0;
  uint64_t tx_packets = 0;
  uint64_t tx_bytes = 0;
  uint64_t tx_dropped = 0;
  uint64_t tx_errors = 0;
};

// The counters of interface `ifname`. Throws DeviceError, one line naming the interface (quoted,
// escaped) and the cause: not an interface name, no such interface, or a counter that cannot be
// read or is not a number.
InterfaceCounters read_interface_counters(std::string_view ifname);

// One counter by its sysfs name (rx_dropped, tx_packets, ... any file of the statistics
// directory). Throws DeviceError as read_interface_counters(), also for a name that is not one.
uint64_t read_interface_counter(std::string_view ifname, std::string_view counter);

}  // namespace txpath
