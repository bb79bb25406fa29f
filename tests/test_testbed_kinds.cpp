// SPDX-License-Identifier: MIT
// The testbed's kinds and queues (issue 14): a veth pair with N queues and mq at the host end;
// the ifb null NIC (up/show/down, ownership as for veth, delivery counted by the kernel);
// records written before issue 14; an interface's kernel counters. Tests that touch the kernel
// need root (skipped without it unless CI is set).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench.hpp"
#include "net/interface_counters.hpp"
#include "net/mac.hpp"
#include "net/testbed.hpp"
#include "support/net_test_util.hpp"
#include "txpath/device.hpp"
#include "txpath/error.hpp"
#include "txpath/frame.hpp"
#include "txpath/pool.hpp"
#include "txpath/real_device.hpp"
#include "txpath/txqueue.hpp"

using namespace txpath;
using txpath::net::mac_text;
using txpath::test::sh;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The number of tx-N (or rx-N) queue directories the kernel shows for an interface.
int queue_dirs(const std::string& ifname, const char* prefix) {
  const auto r = sh("ls /sys/class/net/" + ifname + "/queues | grep -c '^" + prefix + "-'");
  return std::atoi(r.out.c_str());
}

// The message of the exception testbed_up() throws, or "" (and a failure) if none.
template <class E>
std::string up_error_of(const TestbedConfig& c) {
  try {
    testbed_up(c);
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "testbed_up succeeded";
  return {};
}

// An ifb testbed configuration with a name and subnet unique to this process.
TestbedConfig unique_ifb() {
  const TestbedConfig veth = test::unique_testbed('i');
  TestbedConfig c = ifb_testbed_config();
  c.host_if = veth.host_if;
  const int x = static_cast<int>(::getpid()) % 250 + 1;
  c.host_addr = "10.89." + std::to_string(x) + ".1/24";
  c.peer_addr = "10.89." + std::to_string(x) + ".2/24";
  return c;
}

class TestbedKinds : public ::testing::Test {
 protected:
  void SetUp() override {
    TXPATH_REQUIRE_ROOT();
    veth_ = test::unique_testbed('q');
    ifb_ = unique_ifb();
  }
  void TearDown() override {
    if (::geteuid() != 0) return;
    for (const auto& name : {veth_.host_if, ifb_.host_if}) {
      sh("ip link del dev " + name);
      ::unlink(("/run/txpath/testbed/" + name).c_str());
    }
    sh("ip netns del " + veth_.netns);
  }
  TestbedConfig veth_;
  TestbedConfig ifb_;
};

}  // namespace

// --- validation and defaults (no root) ------------------------------------------------------------

// Validation comes before anything runs, so these need no root. The names are this process's
// own: a build that did not validate would touch nothing of anyone else's (and is cleaned up).
namespace {
void remove_if_made(const TestbedConfig& c) {
  if (::geteuid() != 0 || !::testing::Test::HasFailure()) return;
  sh("ip link del dev " + c.host_if);
  if (!c.netns.empty()) sh("ip netns del " + c.netns);
  ::unlink(("/run/txpath/testbed/" + c.host_if).c_str());
}
}  // namespace

TEST(TestbedKindsCheck, QueuesOutOfRangeAreConfigErrors) {
  for (const uint32_t q : {0u, kMaxTestbedQueues + 1}) {
    for (TestbedConfig c : {test::unique_testbed('c'), unique_ifb()}) {
      c.queues = q;
      const std::string what = up_error_of<ConfigError>(c);
      EXPECT_NE(what.find("queues " + std::to_string(q) + " is not in 1..256"), std::string::npos)
          << what;
      remove_if_made(c);
    }
  }
}

TEST(TestbedKindsCheck, IfbTargetMustBeAHostOfTheSubnet) {
  TestbedConfig c = unique_ifb();
  const std::string subnet = c.host_addr.substr(0, c.host_addr.rfind('.') + 1);  // "10.89.X."
  for (const std::string& bad :
       std::vector<std::string>{"10.90.0.2/24", subnet + "0/24", subnet + "255/24", c.host_addr}) {
    c.peer_addr = bad;
    const std::string what = up_error_of<ConfigError>(c);
    EXPECT_NE(what.find("target address"), std::string::npos) << bad << ": " << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    remove_if_made(c);
  }
}

TEST(TestbedKindsCheck, IfbDefaultsAreItsOwnSubnetWithoutPeer) {
  const TestbedConfig c = ifb_testbed_config();
  EXPECT_EQ(c.kind, TestbedKind::ifb);
  EXPECT_EQ(c.host_if, "txpifb0");
  EXPECT_EQ(c.host_addr, "10.88.0.1/24");
  EXPECT_EQ(c.peer_addr, "10.88.0.2/24");
  EXPECT_TRUE(c.peer_if.empty());
  EXPECT_TRUE(c.netns.empty());
  EXPECT_EQ(c.queues, 1u);
  EXPECT_NE(c.host_addr, TestbedConfig{}.host_addr);
  EXPECT_STREQ(testbed_kind_name(TestbedKind::ifb), "ifb");
  EXPECT_STREQ(testbed_kind_name(TestbedKind::veth), "veth");
}

TEST(InterfaceCounters, LoopbackIsReadAndBadNamesAreOneLineErrors) {
  const InterfaceCounters lo = read_interface_counters("lo");
  EXPECT_GE(lo.rx_packets, lo.rx_dropped);  // a sanity look: both were read as numbers
  EXPECT_EQ(read_interface_counter("lo", "tx_errors"), 0u);
  auto error_of = [](auto&& fn) {
    try {
      fn();
    } catch (const DeviceError& e) {
      return std::string(e.what());
    }
    ADD_FAILURE() << "no DeviceError";
    return std::string();
  };
  std::string what = error_of([] { read_interface_counters("txpnosuchif0"); });
  EXPECT_EQ(what, "interface counters of \"txpnosuchif0\": no such interface");
  what = error_of([] { read_interface_counters("../../etc"); });
  EXPECT_EQ(what, "interface counters of \"../../etc\": not an interface name");
  what = error_of([] { read_interface_counter("lo", "../address"); });
  EXPECT_EQ(what, "interface counters of \"lo\": no counter \"../address\"");
  what = error_of([] { read_interface_counter("lo", "no_such_counter"); });
  EXPECT_EQ(what, "interface counters of \"lo\": no counter \"no_such_counter\"");
  what = error_of([] { read_interface_counters("a\nb\x1b"); });
  EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  EXPECT_EQ(what.find('\x1b'), std::string::npos) << what;
  EXPECT_THROW(null_nic_frames("txpnosuchif0"), DeviceError);
  EXPECT_FALSE(find_null_nic("txpnosuchif0").has_value());
}

// --- multi-queue veth ----------------------------------------------------------------------------

TEST_F(TestbedKinds, VethWithQueuesHasThemOnBothEndsAndMqAtTheHostEnd) {
  veth_.queues = 12;  // above 9: mq's class minors are hex (1:a .. 1:c)
  veth_.qdisc = "pfifo limit 77";
  testbed_up(veth_);
  EXPECT_EQ(queue_dirs(veth_.host_if, "tx"), 12);
  EXPECT_EQ(queue_dirs(veth_.host_if, "rx"), 12);
  const auto peer = sh("ip -n " + veth_.netns + " -d link show dev " + veth_.peer_if);
  EXPECT_NE(peer.out.find("numtxqueues 12 numrxqueues 12"), std::string::npos) << peer.out;
  const auto tc = sh("tc qdisc show dev " + veth_.host_if);
  EXPECT_NE(tc.out.find("qdisc mq 1: root"), std::string::npos) << tc.out;
  for (int q = 1; q <= 12; ++q) {
    char parent[16];
    std::snprintf(parent, sizeof parent, "parent 1:%x limit 77p", q);
    EXPECT_NE(tc.out.find(parent), std::string::npos) << parent << "\n" << tc.out;
  }
  EXPECT_EQ(tc.out.find("parent 1:12 "), std::string::npos) << "decimal minor:\n" << tc.out;
  const auto found = find_testbed(veth_.host_if);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->config.queues, 12u);
  EXPECT_EQ(found->config.kind, TestbedKind::veth);
  EXPECT_FALSE(find_null_nic(veth_.host_if).has_value()) << "a veth end is no null NIC";
}

TEST_F(TestbedKinds, OneQueueIsTodaysTestbed) {
  testbed_up(veth_);
  EXPECT_EQ(queue_dirs(veth_.host_if, "tx"), 1);
  const auto tc = sh("tc qdisc show dev " + veth_.host_if);
  EXPECT_EQ(tc.out.find("mq"), std::string::npos) << tc.out;
  EXPECT_NE(tc.out.find("qdisc pfifo_fast"), std::string::npos) << tc.out;
  EXPECT_EQ(find_testbed(veth_.host_if)->config.queues, 1u);
}

TEST_F(TestbedKinds, VethWithQueuesAndNoqueueKeepsTheVethDefault) {
  veth_.queues = 3;
  veth_.qdisc = "noqueue";
  testbed_up(veth_);
  EXPECT_EQ(queue_dirs(veth_.host_if, "tx"), 3);
  const auto tc = sh("tc qdisc show dev " + veth_.host_if);
  EXPECT_NE(tc.out.find("noqueue"), std::string::npos) << tc.out;
  EXPECT_EQ(tc.out.find("mq"), std::string::npos) << tc.out;
}

// --- records from before issue 14 ---------------------------------------------------------------

TEST_F(TestbedKinds, ARecordWithoutKindOrQueuesIsAOneQueueVeth) {
  testbed_up(veth_);
  const std::string path = "/run/txpath/testbed/" + veth_.host_if;
  std::string text = read_text(path), old;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("kind=", 0) != 0 && line.rfind("queues=", 0) != 0) old += line + "\n";
  ASSERT_NE(old, text);
  std::ofstream(path, std::ios::trunc) << old;
  const auto found = find_testbed(veth_.host_if);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->config.kind, TestbedKind::veth);
  EXPECT_EQ(found->config.queues, 1u);
  EXPECT_EQ(found->config.netns, veth_.netns);
  const TestbedRemoval r = testbed_down(veth_);
  EXPECT_TRUE(r.removed_pair);
  EXPECT_TRUE(r.removed_netns);
}

TEST_F(TestbedKinds, ARecordOfAnUnknownKindIsNotOurs) {
  testbed_up(veth_);  // a veth record: complete but for the kind
  const std::string path = "/run/txpath/testbed/" + veth_.host_if;
  std::string text = read_text(path);
  const auto at = text.find("kind=veth");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, 9, "kind=xyz");
  std::ofstream(path, std::ios::trunc) << text;
  EXPECT_FALSE(find_testbed(veth_.host_if).has_value());
  EXPECT_NE(up_error_of<DeviceError>(veth_).find("was not made by txpath testbed"), std::string::npos);
  EXPECT_FALSE(testbed_down(veth_));
  EXPECT_TRUE(test::file_exists("/sys/class/net/" + veth_.host_if));
}

// --- the ifb null NIC ----------------------------------------------------------------------------

TEST_F(TestbedKinds, IfbUpShowDown) {
  ifb_.peer_if = "ignored";  // an ifb has no peer or namespace: the names are not used
  ifb_.netns = "ignored";
  const TestbedInfo info = testbed_up(ifb_);
  const std::string sys = "/sys/class/net/" + ifb_.host_if;
  ASSERT_TRUE(test::file_exists(sys));
  EXPECT_FALSE(test::file_exists("/run/netns/ignored"));
  EXPECT_TRUE(info.config.peer_if.empty());
  EXPECT_TRUE(info.config.netns.empty());
  const auto link = sh("ip -d link show dev " + ifb_.host_if);
  EXPECT_NE(link.out.find("ifb"), std::string::npos) << link.out;
  EXPECT_NE(link.out.find("state UNKNOWN"), std::string::npos) << link.out;  // up; no carrier
  EXPECT_EQ(read_text(sys + "/tx_queue_len"), "1000\n");
  EXPECT_EQ(read_text(sys + "/ifalias"), "txpath-testbed " + info.id + "\n");
  EXPECT_EQ(read_text("/proc/sys/net/ipv6/conf/" + ifb_.host_if + "/disable_ipv6"), "1\n");
  const auto addr = sh("ip -o -4 addr show dev " + ifb_.host_if);
  EXPECT_NE(addr.out.find(ifb_.host_addr), std::string::npos) << addr.out;
  const std::string target = ifb_.peer_addr.substr(0, ifb_.peer_addr.find('/'));
  const auto neigh = sh("ip neigh show dev " + ifb_.host_if + " " + target);
  EXPECT_NE(neigh.out.find(mac_text(info.host_mac) + " PERMANENT"), std::string::npos) << neigh.out;
  const auto route = sh("ip route get " + target);
  EXPECT_NE(route.out.find("dev " + ifb_.host_if), std::string::npos) << route.out;
  const auto tc = sh("tc qdisc show dev " + ifb_.host_if);
  EXPECT_NE(tc.out.find("qdisc pfifo_fast"), std::string::npos) << tc.out;

  const auto found = find_testbed(ifb_.host_if);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->config.kind, TestbedKind::ifb);
  EXPECT_EQ(found->host_mac, info.host_mac);
  EXPECT_EQ(found->peer_mac, info.host_mac);
  EXPECT_EQ(found->peer_ip, info.peer_ip);
  EXPECT_EQ(found->host_ip & 0xff, 1u);
  EXPECT_EQ(found->peer_ip & 0xff, 2u);
  EXPECT_TRUE(found->config.netns.empty());
  EXPECT_TRUE(find_null_nic(ifb_.host_if).has_value());
  EXPECT_EQ(null_nic_frames(ifb_.host_if), 0u) << "nothing sent yet, nothing counted";

  TestbedRemoval replaced;
  testbed_up(ifb_, &replaced);
  EXPECT_TRUE(replaced.recorded);
  EXPECT_TRUE(replaced.removed_pair);
  EXPECT_FALSE(replaced.removed_netns);

  const TestbedRemoval removed = testbed_down(ifb_);
  EXPECT_TRUE(removed.recorded);
  EXPECT_TRUE(removed.removed_pair);
  EXPECT_FALSE(removed.removed_netns);
  EXPECT_TRUE(removed.kept.empty());
  EXPECT_FALSE(test::file_exists(sys));
  EXPECT_FALSE(test::file_exists("/run/txpath/testbed/" + ifb_.host_if));
  EXPECT_FALSE(find_null_nic(ifb_.host_if).has_value());
  EXPECT_FALSE(testbed_down(ifb_));
}

TEST_F(TestbedKinds, IfbWithQueuesHasMqAndPerQueueChildren) {
  ifb_.queues = 4;
  testbed_up(ifb_);
  EXPECT_EQ(queue_dirs(ifb_.host_if, "tx"), 4);
  EXPECT_EQ(queue_dirs(ifb_.host_if, "rx"), 4);
  const auto tc = sh("tc qdisc show dev " + ifb_.host_if);
  EXPECT_NE(tc.out.find("qdisc mq 1: root"), std::string::npos) << tc.out;
  for (int q = 1; q <= 4; ++q)
    EXPECT_NE(tc.out.find("parent 1:" + std::to_string(q) + " bands 3"), std::string::npos) << tc.out;
  EXPECT_EQ(find_null_nic(ifb_.host_if)->config.queues, 4u);
}

TEST_F(TestbedKinds, IfbNoqueueIsSetExplicitly) {
  ifb_.qdisc = "noqueue";  // an ifb's own default would be pfifo_fast
  testbed_up(ifb_);
  const auto tc = sh("tc qdisc show dev " + ifb_.host_if);
  EXPECT_NE(tc.out.find("qdisc noqueue"), std::string::npos) << tc.out;
}

TEST_F(TestbedKinds, AFailedIfbUpLeavesNothingBehind) {
  ifb_.queues = 2;
  ifb_.qdisc = "nosuchqdisc";  // refused by tc for the first mq class, after the ifb was made
  const std::string what = up_error_of<DeviceError>(ifb_);
  EXPECT_NE(what.find("tc qdisc replace dev " + ifb_.host_if + " parent 1:1 nosuchqdisc"),
            std::string::npos)
      << what;
  EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  EXPECT_FALSE(test::file_exists("/sys/class/net/" + ifb_.host_if));
  EXPECT_FALSE(test::file_exists("/run/txpath/testbed/" + ifb_.host_if));
}

TEST_F(TestbedKinds, IfbRefusesAUsersInterfaceAndDownLeavesIt) {
  ASSERT_EQ(sh("ip link add " + ifb_.host_if + " type ifb").status, 0);
  const std::string before = read_text("/sys/class/net/" + ifb_.host_if + "/ifindex");
  EXPECT_EQ(up_error_of<DeviceError>(ifb_),
            "testbed: interface \"" + ifb_.host_if +
                "\" exists and was not made by txpath testbed: choose another name with --host-if");
  const TestbedRemoval r = testbed_down(ifb_);
  EXPECT_FALSE(r.recorded);
  ASSERT_EQ(r.kept.size(), 1u) << "an ifb config has no netns to report";
  EXPECT_NE(r.kept[0].find("exists but was not made by txpath testbed"), std::string::npos);
  EXPECT_EQ(read_text("/sys/class/net/" + ifb_.host_if + "/ifindex"), before);
  EXPECT_FALSE(test::file_exists("/run/txpath/testbed/" + ifb_.host_if));
}

TEST_F(TestbedKinds, AnIfbRecreatedBySomeoneElseIsNotOurs) {
  testbed_up(ifb_);
  ASSERT_EQ(sh("ip link del dev " + ifb_.host_if).status, 0);
  ASSERT_EQ(sh("ip link add " + ifb_.host_if + " type ifb").status, 0);
  EXPECT_FALSE(find_null_nic(ifb_.host_if).has_value());
  const TestbedRemoval r = testbed_down(ifb_);
  EXPECT_TRUE(r.recorded);
  EXPECT_FALSE(r.removed_pair);
  ASSERT_EQ(r.kept.size(), 1u);
  EXPECT_NE(r.kept[0].find("no longer the one txpath testbed made"), std::string::npos) << r.kept[0];
  EXPECT_TRUE(test::file_exists("/sys/class/net/" + ifb_.host_if)) << "down removed a user's ifb";
}

TEST_F(TestbedKinds, AVethTestbedIsReplacedByAnIfbOnTheSameName) {
  testbed_up(veth_);
  TestbedConfig c = ifb_;
  c.host_if = veth_.host_if;
  TestbedRemoval replaced;
  testbed_up(c, &replaced);
  EXPECT_TRUE(replaced.removed_pair);
  EXPECT_TRUE(replaced.removed_netns) << "the veth testbed's namespace went with it";
  EXPECT_FALSE(test::file_exists("/run/netns/" + veth_.netns));
  EXPECT_TRUE(find_null_nic(veth_.host_if).has_value());
  EXPECT_TRUE(testbed_down(c).removed_pair);
}

// --- delivery: every frame sent is counted by the kernel -----------------------------------------

namespace {

// Sends `count` frames through a TxQueue over `spec`'s device; returns what the queue sent.
uint64_t send_frames(const std::string& spec, uint64_t count) {
  auto dev = make_device(spec);
  Pool pool(PoolConfig{.packets = 1024, .buffer_size = 2048, .cache_size = 0});
  FrameSpec frames;
  dev->address_frames(frames);
  address_to_testbed(frames, link_interface(*dev));
  const FrameTemplate tmpl(frames);
  TxQueueConfig qc;
  qc.qdisc = "pfifo limit 100000";
  auto q = TxQueue::create(*dev, qc);
  for (uint64_t seq = 0; seq < count;) {
    Packet* p = pool.get();
    if (p == nullptr) {  // all in flight: the service thread returns them as the ring completes
      std::this_thread::yield();
      continue;
    }
    p->len = static_cast<uint32_t>(tmpl.write(p->buffer(), 0, seq));
    EXPECT_EQ(q->send(p), SendStatus::queued);
    ++seq;
  }
  EXPECT_TRUE(q->drain(std::chrono::seconds(20)));
  return q->stats().sent;
}

// Sends `count` UDP datagrams to the testbed's target through its device, as the kernel row does.
void send_udp(const TestbedInfo& tb, int count) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  const std::string& ifname = tb.config.host_if;
  ASSERT_EQ(::setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifname.c_str(), ifname.size()), 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(9000);
  to.sin_addr.s_addr = htonl(tb.peer_ip);
  const char payload[32] = {};
  for (int i = 0; i < count; ++i)
    EXPECT_EQ(::sendto(fd, payload, sizeof payload, 0, reinterpret_cast<sockaddr*>(&to), sizeof to),
              static_cast<ssize_t>(sizeof payload));
  ::close(fd);
}

}  // namespace

TEST_F(TestbedKinds, IfbCountsEveryFrameSentThroughAfPacketAfXdpAndUdp) {
  for (const uint32_t queues : {1u, 4u}) {
    ifb_.queues = queues;
    const TestbedInfo tb = testbed_up(ifb_);
    SCOPED_TRACE("queues " + std::to_string(queues));
    constexpr uint64_t kFrames = 777;
    // AF_PACKET past the qdisc and through it; AF_XDP in copy mode (the ifb has no zero-copy),
    // on the first and the last queue (an XSK binds to a queue id below the RX queue count).
    for (const std::string& spec :
         {"afpacket:" + ifb_.host_if + ",bypass=1", "afpacket:" + ifb_.host_if + ",bypass=0",
          "afxdp:" + ifb_.host_if, "afxdp:" + ifb_.host_if + ":" + std::to_string(queues - 1)}) {
      const uint64_t before = null_nic_frames(ifb_.host_if);
      EXPECT_EQ(send_frames(spec, kFrames), kFrames) << spec;
      EXPECT_EQ(null_nic_frames(ifb_.host_if) - before, kFrames) << spec;
    }
    const InterfaceCounters before = read_interface_counters(ifb_.host_if);
    send_udp(tb, 333);
    const InterfaceCounters after = read_interface_counters(ifb_.host_if);
    EXPECT_EQ(after.rx_dropped - before.rx_dropped, 333u) << "the kernel row's datagrams";
    EXPECT_EQ(after.rx_packets - before.rx_packets, 333u);
    EXPECT_EQ(after.tx_packets, 0u) << "ifb counts tx only for frames tc redirected to it";
  }
}

// The bench on an ifb testbed checks delivery against the device's own counter: every frame a
// row says it sent was counted by the kernel, with two TX queues transmitting at once (ifb's
// rx_dropped is a racy device-wide increment that lost ~1 in 10^4 such frames here; rx_packets,
// per queue, loses none), for txpath's rows and for the kernel row.
TEST_F(TestbedKinds, TheBenchOnAnIfbCountsEveryFrameItSent) {
  ifb_.queues = 2;
  testbed_up(ifb_);
  BenchConfig cfg;
  cfg.device = "afpacket:" + ifb_.host_if;
  cfg.strategies = {"floor", "busylock", "drainer"};
  cfg.threads = {2};
  cfg.queues = {2};
  cfg.duration_s = 0.2;
  cfg.repeat = 1;
  const std::vector<BenchPoint> points = run_bench(cfg);
  ASSERT_EQ(points.size(), 4u);  // floor, busylock, drainer, kernel
  for (const BenchPoint& p : points) {
    SCOPED_TRACE(p.strategy);
    EXPECT_TRUE(p.conserved);
    EXPECT_TRUE(p.sink_checked) << "the ifb's counter was not read";
    EXPECT_GT(p.sent, 0u);
    EXPECT_EQ(p.sink_received, p.sent);
    EXPECT_EQ(p.sink_lost, 0u);
  }
}
