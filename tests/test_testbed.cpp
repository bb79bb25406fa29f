// SPDX-License-Identifier: MIT
// The veth testbed (testbed.hpp): up/down/replace, the peer end inside its netns, the root qdisc
// of the host end, static neighbours, the state file that find_testbed() reads, and validation.
// Tests that touch the kernel need root (skipped without it unless CI is set).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>

#include "support/net_test_util.hpp"
#include "txpath/error.hpp"
#include "txpath/testbed.hpp"

using namespace txpath;
using txpath::test::sh;

namespace {

std::string read_first_word(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  in >> s;
  return s;
}

std::string mac_text(const std::array<uint8_t, 6>& m) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
                m[5]);
  return buf;
}

class TestbedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TXPATH_REQUIRE_ROOT();
    config_ = test::unique_testbed('b');
  }
  void TearDown() override {
    if (::geteuid() != 0) return;
    // Whatever a test left, even after a failure.
    sh("ip link del dev " + config_.host_if);
    sh("ip netns del " + config_.netns);
    ::unlink(("/run/txpath/testbed/" + config_.host_if).c_str());
  }
  TestbedConfig config_;
};

void expect_config_error(const TestbedConfig& c, const std::string& needle) {
  try {
    testbed_up(c);
    ADD_FAILURE() << "no ConfigError for " << needle;
  } catch (const DeviceError& e) {
    ADD_FAILURE() << "DeviceError instead of ConfigError: " << e.what();
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_NE(what.find(needle), std::string::npos) << what;
  }
}

}  // namespace

TEST(TestbedConfigCheck, BadNamesAndAddressesAreConfigErrors) {
  // Validation happens before anything runs: no root needed.
  TestbedConfig c;
  c.host_if = "this-name-is-too-long";
  expect_config_error(c, "this-name-is-too-long");
  c = {};
  c.peer_if = "bad name";
  expect_config_error(c, "bad name");
  c = {};
  c.host_if = "";
  expect_config_error(c, "host interface");
  c = {};
  c.netns = "../etc";
  expect_config_error(c, "../etc");
  c = {};
  c.host_addr = "10.77.0.300/24";
  expect_config_error(c, "10.77.0.300/24");
  c = {};
  c.peer_addr = "10.77.0.2";
  expect_config_error(c, "10.77.0.2");
  c = {};
  c.peer_addr = "10.77.0.2/33";
  expect_config_error(c, "10.77.0.2/33");
  c = {};
  c.peer_addr = c.host_addr;
  expect_config_error(c, "same");
  c = {};
  c.mtu = 10;
  expect_config_error(c, "mtu");
  c = {};
  c.qdisc = " ";
  expect_config_error(c, "qdisc");
}

TEST(TestbedConfigCheck, FindTestbedOfUnknownOrInvalidNameIsEmpty) {
  EXPECT_FALSE(find_testbed("txpnosuchif").has_value());
  EXPECT_FALSE(find_testbed("../../etc/passwd").has_value());
  EXPECT_FALSE(find_testbed("").has_value());
}

TEST_F(TestbedTest, UpCreatesBothEndsWithPeerInNetns) {
  const TestbedInfo info = testbed_up(config_);
  const std::string host_sys = "/sys/class/net/" + config_.host_if;
  ASSERT_TRUE(test::file_exists(host_sys));
  EXPECT_FALSE(test::file_exists("/sys/class/net/" + config_.peer_if))
      << "the peer end must not be in the caller's netns";
  EXPECT_TRUE(test::file_exists("/run/netns/" + config_.netns));
  const auto peer = sh("ip -n " + config_.netns + " -o link show dev " + config_.peer_if);
  ASSERT_EQ(peer.status, 0) << peer.out;
  EXPECT_NE(peer.out.find("state UP"), std::string::npos) << peer.out;
  EXPECT_NE(peer.out.find("link/ether " + mac_text(info.peer_mac)), std::string::npos) << peer.out;
  EXPECT_EQ(read_first_word(host_sys + "/address"), mac_text(info.host_mac));
  EXPECT_EQ(read_first_word(host_sys + "/operstate"), "up");

  const auto tc = sh("tc qdisc show dev " + config_.host_if + " root");
  EXPECT_NE(tc.out.find("pfifo_fast"), std::string::npos) << tc.out;
  const auto host_addr = sh("ip -o -4 addr show dev " + config_.host_if);
  EXPECT_NE(host_addr.out.find(config_.host_addr), std::string::npos) << host_addr.out;
  const auto peer_addr = sh("ip -n " + config_.netns + " -o -4 addr show dev " + config_.peer_if);
  EXPECT_NE(peer_addr.out.find(config_.peer_addr), std::string::npos) << peer_addr.out;

  // Static neighbours both ways.
  const std::string peer_ip = config_.peer_addr.substr(0, config_.peer_addr.find('/'));
  const std::string host_ip = config_.host_addr.substr(0, config_.host_addr.find('/'));
  const auto n1 = sh("ip neigh show dev " + config_.host_if + " " + peer_ip);
  EXPECT_NE(n1.out.find(mac_text(info.peer_mac)), std::string::npos) << n1.out;
  EXPECT_NE(n1.out.find("PERMANENT"), std::string::npos) << n1.out;
  const auto n2 = sh("ip -n " + config_.netns + " neigh show dev " + config_.peer_if + " " + host_ip);
  EXPECT_NE(n2.out.find(mac_text(info.host_mac)), std::string::npos) << n2.out;
  EXPECT_NE(n2.out.find("PERMANENT"), std::string::npos) << n2.out;

  // IPv6 off on both ends.
  EXPECT_EQ(read_first_word("/proc/sys/net/ipv6/conf/" + config_.host_if + "/disable_ipv6"), "1");
  const auto v6 = sh("ip netns exec " + config_.netns + " cat /proc/sys/net/ipv6/conf/" +
                     config_.peer_if + "/disable_ipv6");
  EXPECT_EQ(v6.out, "1\n");

  const auto found = find_testbed(config_.host_if);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->host_mac, info.host_mac);
  EXPECT_EQ(found->peer_mac, info.peer_mac);
  EXPECT_EQ(found->config.peer_if, config_.peer_if);
  EXPECT_EQ(found->config.netns, config_.netns);
  EXPECT_EQ(found->config.qdisc, "pfifo_fast");
  EXPECT_EQ(found->host_ip, info.host_ip);
  EXPECT_EQ(found->peer_ip, info.peer_ip);
  EXPECT_EQ(info.host_ip & 0xff, 1u);
  EXPECT_EQ(info.peer_ip & 0xff, 2u);
}

TEST_F(TestbedTest, UpTwiceReplaces) {
  testbed_up(config_);
  TestbedConfig second = config_;
  second.qdisc = "pfifo limit 77";
  second.mtu = 9000;
  const TestbedInfo info = testbed_up(second);
  const auto tc = sh("tc qdisc show dev " + config_.host_if + " root");
  EXPECT_NE(tc.out.find("pfifo"), std::string::npos) << tc.out;
  EXPECT_NE(tc.out.find("limit 77"), std::string::npos) << tc.out;
  EXPECT_EQ(read_first_word("/sys/class/net/" + config_.host_if + "/mtu"), "9000");
  const auto peer = sh("ip -n " + config_.netns + " -o link show dev " + config_.peer_if);
  EXPECT_NE(peer.out.find("mtu 9000"), std::string::npos) << peer.out;
  const auto found = find_testbed(config_.host_if);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->config.qdisc, "pfifo limit 77");
  EXPECT_EQ(found->config.mtu, 9000u);
  EXPECT_EQ(found->peer_mac, info.peer_mac);
}

TEST_F(TestbedTest, NoqueueLeavesTheVethDefault) {
  config_.qdisc = "noqueue";
  testbed_up(config_);
  const auto tc = sh("tc qdisc show dev " + config_.host_if + " root");
  EXPECT_NE(tc.out.find("noqueue"), std::string::npos) << tc.out;
  EXPECT_EQ(tc.out.find("pfifo"), std::string::npos) << tc.out;
}

TEST_F(TestbedTest, DownRemovesEverythingAndIsFalseTheSecondTime) {
  testbed_up(config_);
  ASSERT_TRUE(find_testbed(config_.host_if).has_value());
  EXPECT_TRUE(testbed_down(config_));
  EXPECT_FALSE(test::file_exists("/sys/class/net/" + config_.host_if));
  EXPECT_FALSE(test::file_exists("/run/netns/" + config_.netns));
  EXPECT_FALSE(test::file_exists("/run/txpath/testbed/" + config_.host_if));
  EXPECT_FALSE(find_testbed(config_.host_if).has_value());
  EXPECT_FALSE(testbed_down(config_));
}

TEST_F(TestbedTest, FindTestbedIsEmptyOnceTheLinkIsGone) {
  testbed_up(config_);
  ASSERT_EQ(sh("ip link del dev " + config_.host_if).status, 0);
  EXPECT_FALSE(find_testbed(config_.host_if).has_value()) << "state file left, link gone";
}

TEST_F(TestbedTest, RefusesToReplaceAnInterfaceThatIsNotAVeth) {
  // A persistent TUN interface (dummy and bridge need modules that may not be there).
  const auto made = sh("ip tuntap add dev " + config_.host_if + " mode tun");
  ASSERT_EQ(made.status, 0) << made.out;
  try {
    testbed_up(config_);
    ADD_FAILURE() << "testbed_up replaced a TUN interface";
  } catch (const DeviceError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_NE(what.find(config_.host_if), std::string::npos) << what;
  }
  EXPECT_TRUE(test::file_exists("/sys/class/net/" + config_.host_if)) << "the TUN interface was deleted";
  EXPECT_FALSE(test::file_exists("/run/netns/" + config_.netns));
}

TEST_F(TestbedTest, KernelRefusalIsOneLineDeviceError) {
  // A qdisc tc does not know: the failure names the command and tc's complaint, on one line,
  // and nothing is left behind.
  config_.qdisc = "nosuchqdisc";
  try {
    testbed_up(config_);
    ADD_FAILURE() << "no DeviceError";
  } catch (const DeviceError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_NE(what.find("tc qdisc replace dev " + config_.host_if), std::string::npos) << what;
  }
  EXPECT_FALSE(test::file_exists("/sys/class/net/" + config_.host_if));
  EXPECT_FALSE(test::file_exists("/run/netns/" + config_.netns));
  EXPECT_FALSE(find_testbed(config_.host_if).has_value());
}
