// SPDX-License-Identifier: MIT
// The veth testbed (testbed.hpp): up/down/replace, the peer end inside its netns, the root qdisc
// of the host end, static neighbours, the state file that find_testbed() reads, and validation.
// Ownership (issue 12): only what `up` made is ever replaced or removed; names with control
// bytes give one escaped error line. Tests that touch the kernel need root (skipped without it
// unless CI is set).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "net/mac.hpp"
#include "net/testbed.hpp"
#include "support/net_test_util.hpp"
#include "txpath/error.hpp"

using namespace txpath;
using txpath::net::mac_text;
using txpath::test::sh;

namespace {

std::string read_first_word(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  in >> s;
  return s;
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
    sh("ip link del dev " + config_.peer_if);
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

TEST_F(TestbedTest, UpTwiceSaysWhatItReplaced) {
  TestbedRemoval first;
  testbed_up(config_, &first);
  EXPECT_FALSE(first.recorded) << "a first up replaced something";
  TestbedRemoval replaced;
  testbed_up(config_, &replaced);
  EXPECT_TRUE(replaced.recorded);
  EXPECT_TRUE(replaced.removed_pair);
  EXPECT_TRUE(replaced.removed_netns);
  EXPECT_TRUE(replaced.kept.empty());
  EXPECT_EQ(replaced.config.netns, config_.netns);
  EXPECT_TRUE(find_testbed(config_.host_if).has_value());
}

TEST_F(TestbedTest, DownRemovesEverythingAndIsFalseTheSecondTime) {
  testbed_up(config_);
  ASSERT_TRUE(find_testbed(config_.host_if).has_value());
  const TestbedRemoval removed = testbed_down(config_);
  EXPECT_TRUE(removed.recorded);
  EXPECT_TRUE(removed.removed_pair);
  EXPECT_TRUE(removed.removed_netns);
  EXPECT_TRUE(removed.kept.empty());
  EXPECT_FALSE(test::file_exists("/sys/class/net/" + config_.host_if));
  EXPECT_FALSE(test::file_exists("/run/netns/" + config_.netns));
  EXPECT_FALSE(test::file_exists("/run/txpath/testbed/" + config_.host_if));
  EXPECT_FALSE(find_testbed(config_.host_if).has_value());
  const TestbedRemoval again = testbed_down(config_);
  EXPECT_FALSE(again);
  EXPECT_FALSE(again.recorded);
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

// --- ownership (issue 12): only what `up` made is replaced or removed ---------------------------

namespace {

// The message of the DeviceError testbed_up() throws, or "" (and a test failure) if none.
std::string up_error(const TestbedConfig& c) {
  try {
    testbed_up(c);
  } catch (const DeviceError& e) {
    return e.what();
  }
  ADD_FAILURE() << "testbed_up succeeded";
  return {};
}

int ifindex_of(const std::string& ifname) {
  std::ifstream in("/sys/class/net/" + ifname + "/ifindex");
  int i = -1;
  in >> i;
  return i;
}

// A user's interface `name` inside `netns`: an ifb as in the reproduction, or a veth
// pair (name and name+"p") where the ifb module is missing.
bool add_foreign(const std::string& netns, const std::string& name) {
  return sh("ip -n " + netns + " link add " + name + " type ifb").status == 0 ||
         sh("ip -n " + netns + " link add " + name + " type veth peer name " + name + "p").status == 0;
}

}  // namespace

TEST_F(TestbedTest, ForeignInterfaceInAnExistingNetnsSurvivesAndUpIsRefused) {
  ASSERT_EQ(sh("ip netns add " + config_.netns).status, 0);
  ASSERT_TRUE(add_foreign(config_.netns, config_.peer_if));
  const std::string what = up_error(config_);
  EXPECT_EQ(what, "testbed: netns \"" + config_.netns +
                      "\" exists and was not made by txpath testbed: choose another name with --netns");
  EXPECT_EQ(sh("ip -n " + config_.netns + " link show dev " + config_.peer_if).status, 0)
      << "the foreign interface is gone";
  EXPECT_FALSE(test::file_exists("/sys/class/net/" + config_.host_if)) << "up went on after refusing";
  EXPECT_FALSE(test::file_exists("/run/txpath/testbed/" + config_.host_if));
}

TEST_F(TestbedTest, UsersOwnVethWithTheChosenNameSurvives) {
  ASSERT_EQ(sh("ip link add " + config_.host_if + " type veth peer name " + config_.peer_if).status, 0);
  const int before = ifindex_of(config_.host_if);
  const std::string what = up_error(config_);
  EXPECT_EQ(what, "testbed: interface \"" + config_.host_if +
                      "\" exists and was not made by txpath testbed: choose another name with --host-if");
  EXPECT_EQ(ifindex_of(config_.host_if), before) << "the user's veth was replaced";
  EXPECT_TRUE(test::file_exists("/sys/class/net/" + config_.peer_if));
  EXPECT_FALSE(test::file_exists("/run/netns/" + config_.netns)) << "up went on after refusing";
}

TEST_F(TestbedTest, DownWithoutARecordRemovesNothing) {
  ASSERT_EQ(sh("ip link add " + config_.host_if + " type veth peer name " + config_.peer_if).status, 0);
  ASSERT_EQ(sh("ip netns add " + config_.netns).status, 0);
  const TestbedRemoval r = testbed_down(config_);
  EXPECT_FALSE(r.recorded);
  EXPECT_FALSE(r);
  EXPECT_EQ(r.kept.size(), 2u);
  EXPECT_TRUE(test::file_exists("/sys/class/net/" + config_.host_if)) << "down removed a user's veth";
  EXPECT_TRUE(test::file_exists("/run/netns/" + config_.netns)) << "down removed a user's netns";
}

TEST_F(TestbedTest, DownKeepsOurNetnsWhenItHoldsForeignInterfaces) {
  testbed_up(config_);
  const std::string foreign = config_.peer_if + "x";
  ASSERT_TRUE(add_foreign(config_.netns, foreign));
  const TestbedRemoval r = testbed_down(config_);
  EXPECT_TRUE(r.removed_pair);
  EXPECT_FALSE(r.removed_netns);
  ASSERT_EQ(r.kept.size(), 1u);
  EXPECT_NE(r.kept[0].find("netns " + config_.netns + " stays"), std::string::npos) << r.kept[0];
  EXPECT_NE(r.kept[0].find("\"" + foreign + "\""), std::string::npos) << r.kept[0];
  EXPECT_FALSE(test::file_exists("/sys/class/net/" + config_.host_if));
  EXPECT_EQ(sh("ip -n " + config_.netns + " link show dev " + foreign).status, 0);
  EXPECT_FALSE(test::file_exists("/run/txpath/testbed/" + config_.host_if));
}

TEST_F(TestbedTest, UpRefusesToReplaceOurNetnsWhenItHoldsForeignInterfaces) {
  testbed_up(config_);
  const std::string foreign = config_.peer_if + "x";
  ASSERT_TRUE(add_foreign(config_.netns, foreign));
  const std::string what = up_error(config_);
  EXPECT_NE(what.find("holds \"" + foreign + "\""), std::string::npos) << what;
  EXPECT_NE(what.find("--netns"), std::string::npos) << what;
  EXPECT_TRUE(find_testbed(config_.host_if).has_value()) << "the old testbed was taken down";
  EXPECT_EQ(sh("ip -n " + config_.netns + " link show dev " + foreign).status, 0);
}

TEST_F(TestbedTest, ANetnsRecreatedBySomeoneElseIsNotOurs) {
  testbed_up(config_);
  ASSERT_EQ(sh("ip netns del " + config_.netns).status, 0);  // takes the pair with it
  ASSERT_EQ(sh("ip netns add " + config_.netns).status, 0);  // a user's, same name
  const TestbedRemoval r = testbed_down(config_);
  EXPECT_TRUE(r.recorded);
  EXPECT_FALSE(r.removed_netns);
  EXPECT_TRUE(test::file_exists("/run/netns/" + config_.netns)) << "down removed the user's netns";
  EXPECT_FALSE(test::file_exists("/run/txpath/testbed/" + config_.host_if));
}

TEST_F(TestbedTest, AnInterfaceRecreatedBySomeoneElseIsNotOurs) {
  testbed_up(config_);
  ASSERT_EQ(sh("ip link del dev " + config_.host_if).status, 0);
  ASSERT_EQ(sh("ip link add " + config_.host_if + " type veth peer name " + config_.peer_if).status, 0);
  EXPECT_FALSE(find_testbed(config_.host_if).has_value()) << "a user's veth taken for the testbed";
  const int before = ifindex_of(config_.host_if);
  const TestbedRemoval r = testbed_down(config_);
  EXPECT_TRUE(r.recorded);
  EXPECT_FALSE(r.removed_pair);
  EXPECT_TRUE(r.removed_netns) << "our (now empty) netns stays";
  EXPECT_EQ(ifindex_of(config_.host_if), before) << "down removed the user's veth";
}

TEST_F(TestbedTest, ARecordNotOwnedByRootIsNotTrusted) {
  testbed_up(config_);
  const std::string record = "/run/txpath/testbed/" + config_.host_if;
  ASSERT_EQ(::chown(record.c_str(), 65534, 65534), 0);
  EXPECT_FALSE(find_testbed(config_.host_if).has_value());
  try {
    testbed_down(config_);
    ADD_FAILURE() << "down trusted a record owned by uid 65534";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("not trusting it"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(test::file_exists("/sys/class/net/" + config_.host_if));
  ASSERT_EQ(::chown(record.c_str(), 0, 0), 0);
  ASSERT_EQ(::chmod(record.c_str(), 0666), 0);
  EXPECT_FALSE(find_testbed(config_.host_if).has_value()) << "a world-writable record was read";
  EXPECT_THROW(testbed_up(config_), DeviceError);
  ASSERT_EQ(::chmod(record.c_str(), 0600), 0);
  EXPECT_TRUE(testbed_down(config_));
}

TEST(TestbedConfigCheck, ControlBytesInNamesGiveOneEscapedLine) {
  // No root needed: validation comes first. The other names are unique to this process, so a
  // build that did not validate would touch nothing of anyone else's (and is cleaned up below).
  const TestbedConfig base = test::unique_testbed('v');
  const std::string esc = "\x1b[31m";
  const std::string huge(128 * 1024, 'n');
  for (auto set : std::vector<void (*)(TestbedConfig&, const std::string&)>{
           [](TestbedConfig& c, const std::string& v) { c.host_if = v; },
           [](TestbedConfig& c, const std::string& v) { c.peer_if = v; },
           [](TestbedConfig& c, const std::string& v) { c.netns = v; },
           [](TestbedConfig& c, const std::string& v) { c.host_addr = v; },
           [](TestbedConfig& c, const std::string& v) { c.peer_addr = v; },
           [](TestbedConfig& c, const std::string& v) { c.qdisc = v; }}) {
    for (const std::string& bad : {std::string("a\nb"), "x" + esc + "y", std::string("v\xff"), huge}) {
      TestbedConfig c = base;
      set(c, bad);
      try {
        testbed_up(c);
        ADD_FAILURE() << "accepted a bad name";
      } catch (const ConfigError& e) {
        const std::string what = e.what();
        EXPECT_EQ(what.find('\n'), std::string::npos) << what;
        EXPECT_EQ(what.find('\x1b'), std::string::npos) << what;
        EXPECT_EQ(what.find('\xff'), std::string::npos) << what;
        EXPECT_LT(what.size(), 400u) << what.substr(0, 100);
      }
    }
  }
  TestbedConfig c = base;
  c.netns = "-x";
  expect_config_error(c, "\"-x\"");
  c = base;
  c.host_if = ".x";
  expect_config_error(c, "\".x\"");
  if (::geteuid() == 0 && ::testing::Test::HasFailure()) {
    sh("ip link del dev " + base.host_if);
    sh("ip link del dev .x");
    sh("ip netns del " + base.netns);
    sh("ip netns del -x");
    ::unlink(("/run/txpath/testbed/" + base.host_if).c_str());
    ::unlink("/run/txpath/testbed/.x");
  }
}
