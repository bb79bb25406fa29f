// SPDX-License-Identifier: MIT
// device_kinds(): the list help texts show (txpath bench --help) is the list make_device() knows,
// in the same order as its errors name them.
#include <gtest/gtest.h>

#include <string>

#include "txpath/device.hpp"
#include "txpath/error.hpp"

using namespace txpath;

namespace {

// What make_device() throws for `spec`, or "" when it builds a device.
std::string error_of(const std::string& spec) {
  try {
    make_device(spec);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST(DeviceKinds, AreTheKindsTheRegistryNamesInItsErrors) {
  std::string names;
  for (const DeviceKind& k : device_kinds()) names += (names.empty() ? "" : ", ") + std::string(k.name);
  EXPECT_EQ(error_of("nosuchkind"), "device 'nosuchkind': unknown device kind 'nosuchkind' (known: " + names + ")");
}

TEST(DeviceKinds, EveryKindIsOneMakeDeviceKnowsAndItsSpecStartsWithIt) {
  ASSERT_FALSE(device_kinds().empty());
  for (const DeviceKind& k : device_kinds()) {
    EXPECT_EQ(error_of(std::string(k.name)).find("unknown device kind"), std::string::npos) << k.name;
    EXPECT_TRUE(k.spec.starts_with(k.name)) << k.spec;
    EXPECT_FALSE(k.what.empty()) << k.name;
  }
}
