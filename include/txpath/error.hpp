// SPDX-License-Identifier: MIT
#pragma once

#include <stdexcept>
#include <string>

namespace txpath {

// Thrown for invalid configuration (unknown qdisc/strategy/lock/device, bad option value).
// what() is one line suitable for printing as-is.
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& what) : std::runtime_error(what) {}
};

// A request that parsed but that the qdisc refuses (tc: the kernel's netlink rejection, "Error:"
// / "RTNETLINK answers", exit 2), e.g. prio bands 1, a duplicate handle, deleting a class that
// still has children. Plain ConfigError is then a parse error (tc exits 1).
class ConfigRejected : public ConfigError {
 public:
  explicit ConfigRejected(const std::string& what) : ConfigError(what) {}
};

// Thrown when a real device or the testbed cannot be set up: a missing interface, missing
// permission (not root / no CAP_NET_RAW or CAP_NET_ADMIN), a kernel that refuses a socket option.
// what() is one line naming the device and the cause; the CLI exits 2 for it, as for ConfigError.
class DeviceError : public ConfigError {
 public:
  explicit DeviceError(const std::string& what) : ConfigError(what) {}
};

// Thrown for a call the API forbids where it is made, e.g. TxQueue::inspect_qdisc() or
// edit_qdisc() from inside their own callback (which would wait for itself). what() is one line.
class UsageError : public std::logic_error {
 public:
  explicit UsageError(const std::string& what) : std::logic_error(what) {}
};

}  // namespace txpath
