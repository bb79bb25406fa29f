// SPDX-License-Identifier: MIT
// ConfiguredDevice<Config>: what the devices built from one configuration of real_devices.hpp
// (afpacket, afxdp, udp) have in common: the configuration itself, kind() (Config::kKind) and
// describe(), the --device spec the configuration reads as, made once at construction (the
// configuration never changes afterwards, so neither does the spec).
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "device/polled_device.hpp"

namespace txpath {

template <class Config>
class ConfiguredDevice : public PolledDevice {
 public:
  std::string_view kind() const noexcept final { return Config::kKind; }
  std::string describe() const final { return spec_; }
  const Config& config() const noexcept { return cfg_; }

 protected:
  // `spec`: the configuration as a --device spec.
  ConfiguredDevice(const Config& config, std::string spec)
      : PolledDevice(1500), cfg_(config), spec_(std::move(spec)) {}

  const Config cfg_;
  const std::string spec_;  // describe(), and the name in every error
};

}  // namespace txpath
