// SPDX-License-Identifier: MIT
// device_kinds(): the list help texts show (txpath bench --help) is the list make_device() knows,
// in the same order as its errors name them; each kind's typed capabilities (takes_queues,
// reaches_peer) agree with what make_net_device() builds from its spec. The real kinds need root
// or an interface this machine may lack: those that cannot be opened here are skipped, saying so.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "txpath/device.hpp"
#include "txpath/error.hpp"
#include "txpath/netdev.hpp"
#include "txpath/real_device.hpp"

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

// An Ethernet interface of this machine (ARPHRD_ETHER in /sys/class/net/IF/type), the first by
// name; "lo" (which afpacket refuses) when it has none. An afpacket device only opens its sockets
// on it: nothing is sent.
std::string ethernet_interface() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/sys/class/net", ec)) {
    std::ifstream type(entry.path() / "type");
    int arphrd = 0;
    if (type >> arphrd && arphrd == 1) names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names.empty() ? "lo" : names.front();
}

// A spec of `kind` that make_net_device() builds here when the system lets it (the real kinds:
// root, an Ethernet interface, libxdp); empty for a kind this test does not know yet.
std::string spec_of_kind(std::string_view kind) {
  const std::string pid = std::to_string(::getpid() % 100000);
  if (kind == "null" || kind == "nic" || kind == "fault") return std::string(kind);
  if (kind == "pcap") return "pcap:" + ::testing::TempDir() + "txpath_kinds_" + pid + ".pcap";
  if (kind == "tun") return "tun:txkind" + pid;  // at most 11 characters
  if (kind == "afpacket") return "afpacket:" + ethernet_interface();
  if (kind == "udp") return "udp:127.0.0.1:9";  // connecting a UDP socket sends nothing
  if (kind == "afxdp") return "afxdp:lo";  // never a real NIC's queue: an XSK may reconfigure it
  return {};
}

// `spec` with the option queues=N.
std::string spec_with_queue_count(const std::string& spec, uint32_t n) {
  return spec + (spec.find(':') == std::string::npos ? ":" : ",") + "queues=" + std::to_string(n);
}

// What make_net_device() made of a spec: a device; or a refusal of the spec (ConfigError); or a
// device this system cannot open (DeviceError: not root, not an Ethernet interface, no libxdp),
// which comes only once the spec's options have been read.
struct Built {
  std::unique_ptr<NetDevice> device;
  std::string refused;
  std::string cannot_open;
};

Built build_kind(const std::string& spec) {
  Built b;
  try {
    b.device = make_net_device(spec);
    // pcap: leave no file behind
    for (uint32_t q = 0; q < b.device->num_tx_queues(); ++q) abandon_output(b.device->tx_queue(q));
  } catch (const DeviceError& e) {
    b.cannot_open = e.what();
  } catch (const ConfigError& e) {
    b.refused = e.what();
  }
  return b;
}

std::vector<std::string> every_kind_name() {
  std::vector<std::string> names;
  for (const DeviceKind& k : device_kinds()) names.emplace_back(k.name);
  return names;
}

// One test per kind, so that a kind this machine cannot open skips alone.
class DeviceKindCapabilities : public ::testing::TestWithParam<std::string> {
 protected:
  const DeviceKind& kind() const { return *find_device_kind(GetParam()); }
};

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

TEST(DeviceKinds, FindDeviceKindReadsTheKindBeforeTheFirstColon) {
  for (const DeviceKind& k : device_kinds()) {
    EXPECT_EQ(find_device_kind(k.name), &k);
    EXPECT_EQ(find_device_kind(std::string(k.name) + ":x:y,queues=2"), &k);
  }
  for (const char* spec : {"", ":null", "nul", "null2", "nosuchkind:queues=2"})
    EXPECT_EQ(find_device_kind(spec), nullptr) << spec;
}

// The help text tells people what takes_queues tells programs.
TEST(DeviceKinds, TheHelpShowsQueuesForExactlyTheKindsThatTakeThem) {
  for (const DeviceKind& k : device_kinds())
    EXPECT_EQ(k.spec.find("queues=N") != std::string_view::npos, k.takes_queues) << k.spec;
}

TEST_P(DeviceKindCapabilities, QueuesTwoBuildsTwoTxQueuesExactlyForAKindThatTakesQueues) {
  const DeviceKind& k = kind();
  const std::string spec = spec_of_kind(k.name);
  ASSERT_FALSE(spec.empty()) << "a new kind: give spec_of_kind() a spec of " << k.name;
  {  // gone before queues=2 opens the same interface (tun: a single-queue one refuses that)
    const Built one = build_kind(spec_with_queue_count(spec, 1));
    EXPECT_EQ(one.refused, "") << "every kind takes queues=1";
    if (one.device) {
      EXPECT_EQ(one.device->num_tx_queues(), 1u);
    }
  }
  const Built two = build_kind(spec_with_queue_count(spec, 2));
  if (!k.takes_queues) {
    EXPECT_NE(two.refused, "") << spec << ",queues=2: " << (two.device ? "built" : two.cannot_open);
    return;
  }
  ASSERT_EQ(two.refused, "") << "takes_queues, yet queues=2 is refused";
  if (!two.device)
    GTEST_SKIP() << spec << " cannot be opened here (" << two.cannot_open
                 << "): queues=2 passed its spec, the count of TX queues is not checked";
  EXPECT_EQ(two.device->num_tx_queues(), 2u);
}

TEST_P(DeviceKindCapabilities, ReachesPeerExactlyWhenItSendsOnALinkOrToASocketsPeer) {
  const DeviceKind& k = kind();
  const std::string spec = spec_of_kind(k.name);
  ASSERT_FALSE(spec.empty()) << "a new kind: give spec_of_kind() a spec of " << k.name;
  const Built b = build_kind(spec);
  ASSERT_EQ(b.refused, "");
  if (!b.device) GTEST_SKIP() << spec << " cannot be opened here (" << b.cannot_open << ")";
  const Device& queue = b.device->tx_queue(0);
  EXPECT_EQ(!link_interface(queue).empty() || socket_peer(queue).has_value(), k.reaches_peer) << spec;
}

INSTANTIATE_TEST_SUITE_P(EveryKind, DeviceKindCapabilities, ::testing::ValuesIn(every_kind_name()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });
