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

}  // namespace txpath
