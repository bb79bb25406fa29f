// SPDX-License-Identifier: MIT
// The testbed's rtnetlink layer (net/rtnl.hpp) and named namespaces (net/netns.hpp), issue 30:
// every refusal comes back as the kernel's errno and its strerror text on one line (never text
// parsed from a tool), names are made and removed as ip-netns(8) describes, and iproute2 sees
// what we made. Needs root (skipped without it unless CI is set).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "net/netns.hpp"
#include "net/rtnl.hpp"
#include "net/testbed.hpp"
#include "support/net_test_util.hpp"
#include "txpath/error.hpp"

using namespace txpath;
using txpath::net::RtnlOutcome;
using txpath::net::RtnlSocket;
using txpath::test::sh;

namespace {

// A name of this process: "tn<pid><suffix>" (at most 15 characters).
std::string own_name(const std::string& suffix) {
  return "tn" + std::to_string(::getpid() % 100000) + suffix;
}

struct HostSocket : RtnlSocket {
  HostSocket() : RtnlSocket("", "test", [](int) { FAIL() << "no netns to enter"; }) {}
};

// The kernel's text for errno e, as the outcome must carry it (first, before any explanation).
void expect_refused(const RtnlOutcome& o, int e) {
  EXPECT_FALSE(o.ok());
  EXPECT_EQ(o.error, e) << o.text;
  EXPECT_EQ(o.text.rfind(std::strerror(e), 0), 0u) << o.text;
  EXPECT_EQ(o.text.find('\n'), std::string::npos) << o.text;
}

class TestbedNetlink : public ::testing::Test {
 protected:
  void SetUp() override { TXPATH_REQUIRE_ROOT(); }
  void TearDown() override {
    if (::geteuid() != 0) return;
    for (const auto& n : links_) sh("ip link del dev " + n + " 2>/dev/null");
    for (const auto& n : netns_) sh("ip netns del " + n + " 2>/dev/null");
  }
  std::string link(const std::string& suffix) { return links_.emplace_back(own_name(suffix)); }
  std::string netns(const std::string& suffix) {
    return netns_.emplace_back("txpath-tn" + std::to_string(::getpid()) + suffix);
  }
  std::vector<std::string> links_, netns_;
};

}  // namespace

TEST_F(TestbedNetlink, MissingLinkIsTheKernelsNoSuchDevice) {
  HostSocket rtnl;
  const std::string missing = own_name("m");
  expect_refused(rtnl.delete_link(missing), ENODEV);
  expect_refused(rtnl.set_up(missing), ENODEV);
  expect_refused(rtnl.set_alias(missing, "x"), ENODEV);
  expect_refused(rtnl.replace_ipv4_address(missing, 0x0a4d0001, 24), ENODEV);
  int index = -1;
  expect_refused(rtnl.link_index(missing, index), ENODEV);
  EXPECT_EQ(index, 0);
}

TEST_F(TestbedNetlink, NamesTheKernelRefusesGiveItsErrnoText) {
  HostSocket rtnl;
  // Names the kernel itself refuses (dev_valid_name(), the IFLA_IFNAME policy): the testbed's
  // own check refuses them first, so only this layer can show what the kernel says.
  for (const std::string& bad : {std::string("a/b"), std::string("a b"), std::string("..")}) {
    const RtnlOutcome o = rtnl.add_link({bad, 1500, 1, 0}, "ifb");
    expect_refused(o, EINVAL);
    EXPECT_EQ(sh("ip link show dev '" + bad + "'").status == 0, false) << bad;
  }
  // Longer than IFNAMSIZ - 1: libnl would cut it to 15 bytes (another name), so the wrapper
  // refuses it as the kernel does, whatever the request (a delete must not hit a prefix).
  const std::string too_long = own_name("-long-name-here");
  expect_refused(rtnl.add_link({too_long, 1500, 1, 0}, "ifb"), EINVAL);
  expect_refused(rtnl.delete_link(too_long), EINVAL);
  expect_refused(rtnl.add_veth({too_long, 1500, 1, 0}, {"x", 1500, 1, 0}, -1), EINVAL);
  EXPECT_FALSE(test::file_exists("/sys/class/net/" + too_long.substr(0, 15)));
  expect_refused(rtnl.add_link({"lo", 1500, 1, 0}, "ifb"), EEXIST);  // an existing name
  const std::string name = link("k");
  expect_refused(rtnl.add_link({name, 1500, 1, 0}, "nosuchkind"), EOPNOTSUPP);
}

TEST_F(TestbedNetlink, LinkAddressNeighbourAndMqOnAnIfb) {
  HostSocket rtnl;
  const std::string name = link("i");
  const RtnlOutcome added = rtnl.add_link({name, 1400, 2, 1000}, "ifb");
  if (added.error == EOPNOTSUPP) GTEST_SKIP() << "no ifb module: " << added.text;
  ASSERT_TRUE(added.ok()) << added.text;
  expect_refused(rtnl.add_link({name, 1400, 2, 1000}, "ifb"), EEXIST);  // NLM_F_EXCL
  ASSERT_TRUE(rtnl.set_alias(name, "txpath-testbed test").ok());
  std::vector<net::RtnlLink> links;
  ASSERT_TRUE(rtnl.list_links(links).ok());
  bool listed = false;
  for (const auto& l : links) listed |= l.name == name && l.alias == "txpath-testbed test";
  EXPECT_TRUE(listed) << name << " with its alias not listed";
  const uint32_t ip = 0x0a5b0001;  // 10.91.0.1
  ASSERT_TRUE(rtnl.replace_ipv4_address(name, ip, 24).ok());
  EXPECT_TRUE(rtnl.replace_ipv4_address(name, ip, 24).ok()) << "replace is not idempotent";
  const std::array<uint8_t, 6> mac{0x02, 0, 0, 0, 0, 0x42};
  ASSERT_TRUE(rtnl.replace_neighbour(name, ip + 1, mac).ok());
  EXPECT_TRUE(rtnl.replace_neighbour(name, ip + 1, mac).ok()) << "replace is not idempotent";
  ASSERT_TRUE(rtnl.replace_root_mq(name, 1).ok());
  ASSERT_TRUE(rtnl.set_up(name).ok());
  const auto shown = sh("ip -d link show dev " + name);
  EXPECT_NE(shown.out.find("mtu 1400"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("qlen 1000"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("numtxqueues 2 numrxqueues 2"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("alias txpath-testbed test"), std::string::npos) << shown.out;
  const auto addr = sh("ip -o -4 addr show dev " + name);
  EXPECT_NE(addr.out.find("10.91.0.1/24"), std::string::npos) << addr.out;
  const auto neigh = sh("ip neigh show dev " + name);
  EXPECT_NE(neigh.out.find("10.91.0.2 lladdr 02:00:00:00:00:42 PERMANENT"), std::string::npos)
      << neigh.out;
  EXPECT_NE(sh("tc qdisc show dev " + name).out.find("qdisc mq 1: root"), std::string::npos);
  ASSERT_TRUE(rtnl.delete_link(name).ok());
  expect_refused(rtnl.delete_link(name), ENODEV);
}

TEST_F(TestbedNetlink, NamedNetnsIsMadeAndRemovedAsIpNetnsDoes) {
  const std::string ns = netns("a");
  ASSERT_EQ(net::create_named_netns(ns), "");
  const std::string again = net::create_named_netns(ns);
  EXPECT_EQ(again, "cannot create /run/netns/" + ns + ": " + std::strerror(EEXIST));
  // iproute2 sees it, and it is a namespace of its own: only lo, down.
  EXPECT_EQ(sh("ip netns list").out.find(ns) != std::string::npos, true);
  const auto links = sh("ip -n " + ns + " -o link show");
  EXPECT_EQ(links.status, 0) << links.out;
  EXPECT_NE(links.out.find("lo:"), std::string::npos) << links.out;
  EXPECT_EQ(links.out.find("2:"), std::string::npos) << links.out;
  // A socket opened inside it lists only lo, and the caller stays where it was.
  struct stat before {}, after {};
  ASSERT_EQ(::stat("/proc/thread-self/ns/net", &before), 0);
  RtnlSocket inside(ns, "test", [](int e) { FAIL() << std::strerror(e); });
  std::vector<net::RtnlLink> listed;
  ASSERT_TRUE(inside.list_links(listed).ok());
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].name, "lo");
  ASSERT_EQ(::stat("/proc/thread-self/ns/net", &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino) << "the caller's thread changed namespace";
  ASSERT_EQ(net::delete_named_netns(ns), "");
  EXPECT_FALSE(test::file_exists("/run/netns/" + ns));
  EXPECT_EQ(net::delete_named_netns(ns), "cannot remove /run/netns/" + ns + ": " +
                                             std::strerror(ENOENT));
}

TEST_F(TestbedNetlink, SocketInAMissingNetnsReportsEnoent) {
  int seen = 0;
  try {
    RtnlSocket s(own_name("nx"), "test", [&](int e) {
      seen = e;
      throw DeviceError("entering failed");
    });
    ADD_FAILURE() << "a socket in a netns that does not exist";
  } catch (const DeviceError& e) {
    EXPECT_STREQ(e.what(), "entering failed");
  }
  EXPECT_EQ(seen, ENOENT);
}

TEST_F(TestbedNetlink, RefusalsThrownAsOneEscapedLine) {
  const RtnlOutcome refused{EINVAL, std::string("Invalid argument (bad\nname\x1b)")};
  try {
    net::throw_if_refused(refused, "testbed", "creating x\ny");
    ADD_FAILURE() << "not thrown";
  } catch (const DeviceError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("testbed: creating x", 0), 0u) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_EQ(what.find('\x1b'), std::string::npos) << what;
    EXPECT_NE(what.find("Invalid argument"), std::string::npos) << what;
  }
  EXPECT_NO_THROW(net::throw_if_refused(RtnlOutcome{}, "testbed", "anything"));
}

// A veth testbed end to end: the peer was made inside the namespace (IFLA_NET_NS_FD), the
// namespace is a bind mount under a shared /run/netns, and down removes the name.
TEST_F(TestbedNetlink, VethTestbedNamespaceIsABindMountUnderASharedRunNetns) {
  TestbedConfig c = test::unique_testbed('n');
  links_.push_back(c.host_if);
  netns_.push_back(c.netns);
  ASSERT_NO_THROW(testbed_up(c));
  std::ifstream mountinfo("/proc/self/mountinfo");
  bool ns_mounted = false, dir_shared = false;
  for (std::string line; std::getline(mountinfo, line);) {
    if (line.find(" /run/netns/" + c.netns + " ") != std::string::npos) ns_mounted = true;
    if (line.find(" /run/netns ") != std::string::npos && line.find(" shared:") != std::string::npos)
      dir_shared = true;
  }
  EXPECT_TRUE(ns_mounted) << "/run/netns/" << c.netns << " is not a mount point";
  EXPECT_TRUE(dir_shared) << "/run/netns is not a shared mount";
  EXPECT_EQ(sh("ip -n " + c.netns + " link show dev " + c.peer_if).status, 0);
  EXPECT_NE(sh("ip link show dev " + c.peer_if).status, 0) << "the peer is in the host netns";
  const TestbedRemoval removed = testbed_down(c);
  EXPECT_TRUE(removed.removed_pair);
  EXPECT_TRUE(removed.removed_netns);
  EXPECT_FALSE(test::file_exists("/run/netns/" + c.netns));
  EXPECT_FALSE(test::file_exists("/sys/class/net/" + c.host_if));
}
