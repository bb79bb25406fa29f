// SPDX-License-Identifier: MIT
// The sink (sink.hpp) on a real veth testbed: frames sent from the host end with a plain
// AF_PACKET socket (a known sequence with a gap, a duplicate and a reordering) are counted
// exactly per sender on the peer end inside its netns; `other`, reset(), wait_for(), errors; a
// TUN interface (no link header); and parse_ipv4_packet() (frame.hpp) without any kernel.
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <netinet/in.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/net_test_util.hpp"
#include "txpath/error.hpp"
#include "txpath/frame.hpp"
#include "txpath/sink.hpp"
#include "txpath/testbed.hpp"

using namespace txpath;
using namespace std::chrono_literals;

namespace {

// Sends raw Ethernet frames out of one interface of the caller's netns. The thread is pinned to
// its current CPU while the object lives: veth hands each frame to the receive backlog of the
// sending CPU, so frames sent from one CPU arrive in the order they were sent.
class RawSender {
 public:
  explicit RawSender(const std::string& ifname) {
    fd_ = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    EXPECT_GE(fd_, 0) << std::strerror(errno);
    ifindex_ = static_cast<int>(::if_nametoindex(ifname.c_str()));
    EXPECT_NE(ifindex_, 0) << ifname;
    CPU_ZERO(&old_);
    ::sched_getaffinity(0, sizeof old_, &old_);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(::sched_getcpu(), &one);
    ::sched_setaffinity(0, sizeof one, &one);
  }
  ~RawSender() {
    ::sched_setaffinity(0, sizeof old_, &old_);
    if (fd_ >= 0) ::close(fd_);
  }
  void send(std::span<const std::byte> frame) {
    sockaddr_ll to{};
    to.sll_family = AF_PACKET;
    to.sll_protocol = htons(ETH_P_IP);
    to.sll_ifindex = ifindex_;
    const ssize_t n = ::sendto(fd_, frame.data(), frame.size(), 0,
                               reinterpret_cast<const sockaddr*>(&to), sizeof to);
    EXPECT_EQ(n, static_cast<ssize_t>(frame.size())) << std::strerror(errno);
  }

 private:
  int fd_ = -1;
  int ifindex_ = 0;
  cpu_set_t old_{};
};

template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout = 10s) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return pred();
}

const SinkSenderCounts* find_sender(const SinkReport& r, uint32_t id) {
  for (const auto& s : r.senders)
    if (s.sender == id) return &s;
  return nullptr;
}

class SinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TXPATH_REQUIRE_ROOT();
    config_ = test::unique_testbed('s');
    config_.qdisc = "pfifo limit 10000";  // nothing dropped on the way for these few frames
    info_ = testbed_up(config_);
    FrameSpec spec;
    spec.dst_mac = info_.peer_mac;
    spec.src_mac = info_.host_mac;
    spec.src_ip = info_.host_ip;
    spec.dst_ip = info_.peer_ip;
    frames_ = FrameTemplate(spec);
  }
  void TearDown() override {
    if (::geteuid() != 0) return;
    test::sh("ip link del dev " + config_.host_if);
    test::sh("ip netns del " + config_.netns);
    ::unlink(("/run/txpath/testbed/" + config_.host_if).c_str());
  }
  SinkConfig sink_config() const {
    return SinkConfig{.ifname = config_.peer_if, .netns = config_.netns, .absorb_port = 9000};
  }
  void send(RawSender& tx, uint32_t sender, uint64_t seq) {
    std::vector<std::byte> buf(frames_.size());
    ASSERT_EQ(frames_.write(buf, sender, seq), buf.size());
    tx.send(buf);
  }
  // A frame that is not a txpath frame: the same UDP datagram with the magic cleared.
  void send_foreign(RawSender& tx) {
    std::vector<std::byte> buf(frames_.size());
    ASSERT_EQ(frames_.write(buf, 0, 0), buf.size());
    buf[kHeadersLen] = std::byte{0};
    tx.send(buf);
  }

  TestbedConfig config_;
  TestbedInfo info_;
  FrameTemplate frames_;
};

}  // namespace

TEST_F(SinkTest, CountsPerSenderExactly) {
  Sink sink(sink_config());
  sink.start();
  {
    RawSender tx(config_.host_if);
    // sender 0: a gap (3 never sent)
    for (const uint64_t seq : {0, 1, 2, 4, 5}) send(tx, 0, seq);
    // sender 1: a duplicate of 2
    for (const uint64_t seq : {0, 1, 2, 2, 3}) send(tx, 1, seq);
    // sender 2: 1 and 2 swapped
    for (const uint64_t seq : {0, 2, 1, 3}) send(tx, 2, seq);
  }
  ASSERT_TRUE(sink.wait_for(13, 5s, 20s)) << "13 distinct frames did not arrive";
  // The duplicate is counted separately from received: wait for all 14 txpath frames.
  ASSERT_TRUE(eventually([&] { return sink.report().frames >= 14; }));
  const SinkReport r = sink.stop();
  EXPECT_EQ(r.frames, 14u);
  EXPECT_EQ(r.received, 13u);
  EXPECT_EQ(r.lost, 1u);
  EXPECT_EQ(r.duplicated, 1u);
  EXPECT_EQ(r.out_of_order, 1u);
  EXPECT_EQ(r.socket_drops, 0u);
  ASSERT_EQ(r.senders.size(), 3u);
  const auto* s0 = find_sender(r, 0);
  const auto* s1 = find_sender(r, 1);
  const auto* s2 = find_sender(r, 2);
  ASSERT_TRUE(s0 && s1 && s2);
  EXPECT_EQ(s0->received, 5u);
  EXPECT_EQ(s0->lost, 1u);
  EXPECT_EQ(s0->duplicated, 0u);
  EXPECT_EQ(s0->out_of_order, 0u);
  EXPECT_EQ(s0->max_seq, 5u);
  EXPECT_EQ(s0->bytes, 5 * frames_.size());
  EXPECT_EQ(s1->received, 4u);
  EXPECT_EQ(s1->lost, 0u);
  EXPECT_EQ(s1->duplicated, 1u);
  EXPECT_EQ(s1->out_of_order, 0u);
  EXPECT_EQ(s1->max_seq, 3u);
  EXPECT_EQ(s2->received, 4u);
  EXPECT_EQ(s2->lost, 0u);
  EXPECT_EQ(s2->duplicated, 0u);
  EXPECT_EQ(s2->out_of_order, 1u);
  EXPECT_EQ(s2->max_seq, 3u);
  EXPECT_GT(r.seconds, 0.0);
  EXPECT_GT(sink.cpu_ns(), 0u);
}

TEST_F(SinkTest, ForeignFramesAndHugeSenderIdsCountAsOther) {
  Sink sink(sink_config());
  sink.start();
  {
    RawSender tx(config_.host_if);
    send_foreign(tx);
    send(tx, 70000, 0);  // sender id above the cap
    send(tx, 7, 0);
  }
  ASSERT_TRUE(sink.wait_for(1, 5s, 20s));
  ASSERT_TRUE(eventually([&] { return sink.report().other >= 2; }));
  const SinkReport r = sink.stop();
  ASSERT_EQ(r.senders.size(), 1u);
  EXPECT_EQ(r.senders[0].sender, 7u);
  EXPECT_EQ(r.frames, 1u);
  EXPECT_GE(r.other, 2u);
}

TEST_F(SinkTest, ResetZeroesAndWaitForStopsWhenQuiet) {
  Sink sink(sink_config());
  sink.start();
  {
    RawSender tx(config_.host_if);
    for (uint64_t seq = 0; seq < 10; ++seq) send(tx, 3, seq);
  }
  ASSERT_TRUE(sink.wait_for(10, 5s, 20s));
  // Far more than will ever come: returns false once nothing arrived for `quiet`.
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(sink.wait_for(1000, 50ms, 60s));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 50s) << "wait_for ignored `quiet`";
  EXPECT_FALSE(sink.wait_for(1000, 60s, 20ms)) << "wait_for ignored `timeout`";

  sink.reset();
  SinkReport r = sink.report();
  EXPECT_EQ(r.frames, 0u);
  EXPECT_EQ(r.received, 0u);
  EXPECT_EQ(r.other, 0u);
  EXPECT_TRUE(r.senders.empty());

  // Counting goes on after reset(): the same sequence numbers are new again.
  {
    RawSender tx(config_.host_if);
    for (uint64_t seq = 0; seq < 4; ++seq) send(tx, 3, seq);
  }
  ASSERT_TRUE(sink.wait_for(4, 5s, 20s));
  r = sink.stop();
  ASSERT_EQ(r.senders.size(), 1u);
  EXPECT_EQ(r.senders[0].received, 4u);
  EXPECT_EQ(r.senders[0].duplicated, 0u);
  EXPECT_EQ(r.senders[0].lost, 0u);
}

TEST_F(SinkTest, CountsKernelUdpWithOffloadedChecksum) {
  // The kernel's own UDP datagrams cross the veth with the checksum left to "hardware" (only the
  // pseudo-header sum in the field): the sink must still count them.
  Sink sink(sink_config());
  sink.start();
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(9000);
  to.sin_addr.s_addr = htonl(info_.peer_ip);
  for (uint64_t seq = 0; seq < 5; ++seq) {
    std::vector<std::byte> f(frames_.size());
    ASSERT_EQ(frames_.write(f, 6, seq), f.size());
    const auto payload = std::span<const std::byte>(f).subspan(kHeadersLen);
    EXPECT_EQ(::sendto(fd, payload.data(), payload.size(), 0,
                       reinterpret_cast<const sockaddr*>(&to), sizeof to),
              static_cast<ssize_t>(payload.size()))
        << std::strerror(errno);
  }
  ::close(fd);
  ASSERT_TRUE(sink.wait_for(5, 5s, 20s)) << "other: " << sink.report().other;
  const SinkReport r = sink.stop();
  ASSERT_EQ(r.senders.size(), 1u);
  EXPECT_EQ(r.senders[0].sender, 6u);
  EXPECT_EQ(r.senders[0].received, 5u);
}

TEST_F(SinkTest, OutgoingFramesAreNotCounted) {
  // A sink on the host end sees what the host end transmits only as outgoing frames.
  Sink sink(SinkConfig{.ifname = config_.host_if, .netns = "", .absorb_port = 0});
  sink.start();
  {
    RawSender tx(config_.host_if);
    for (uint64_t seq = 0; seq < 5; ++seq) send(tx, 1, seq);
  }
  // And the peer's copy proves they were sent.
  Sink peer(sink_config());
  peer.start();
  {
    RawSender tx(config_.host_if);
    for (uint64_t seq = 5; seq < 10; ++seq) send(tx, 1, seq);
  }
  ASSERT_TRUE(peer.wait_for(5, 5s, 20s));
  const SinkReport r = sink.stop();
  EXPECT_EQ(r.frames, 0u);
  EXPECT_TRUE(r.senders.empty());
}

TEST_F(SinkTest, StopWithoutStartAndStartTwice) {
  Sink sink(sink_config());
  SinkReport r = sink.stop();
  EXPECT_EQ(r.frames, 0u);
  sink.start();
  sink.start();  // no second thread
  r = sink.stop();
  EXPECT_EQ(r.frames, 0u);
}

TEST_F(SinkTest, MissingInterfaceIsOneLineDeviceError) {
  try {
    Sink sink(SinkConfig{.ifname = "nosuchif0", .netns = config_.netns, .absorb_port = 0});
    ADD_FAILURE() << "no DeviceError";
  } catch (const DeviceError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what, "sink 'nosuchif0' in netns '" + config_.netns + "': no such interface");
  }
  // The peer end is not in the caller's netns either.
  EXPECT_THROW(Sink(SinkConfig{.ifname = config_.peer_if, .netns = "", .absorb_port = 0}),
               DeviceError);
}

TEST(SinkErrors, MissingNetnsIsOneLineDeviceError) {
  TXPATH_REQUIRE_ROOT();
  const std::string ns = "txpath-nosuch" + std::to_string(::getpid());
  try {
    Sink sink(SinkConfig{.ifname = "lo", .netns = ns, .absorb_port = 0});
    ADD_FAILURE() << "no DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_EQ(std::string(e.what()), "sink 'lo' in netns '" + ns + "': no such netns");
  }
}

TEST(SinkErrors, InvalidNamesAreDeviceErrors) {
  EXPECT_THROW(Sink(SinkConfig{.ifname = "", .netns = "", .absorb_port = 0}), DeviceError);
  EXPECT_THROW(Sink(SinkConfig{.ifname = "lo", .netns = "../x", .absorb_port = 0}), DeviceError);
}

namespace {

// A TUN interface (no link header) in the caller's netns; deleted when the fd closes.
class TunIf {
 public:
  TunIf() {
    name_ = "tt" + std::to_string(::getpid() % 100000) + "s";
    fd_ = ::open("/dev/net/tun", O_RDWR | O_CLOEXEC);
    if (fd_ < 0) return;
    ifreq req{};
    std::strncpy(req.ifr_name, name_.c_str(), IFNAMSIZ - 1);
    req.ifr_flags = IFF_TUN | IFF_NO_PI;
    if (::ioctl(fd_, TUNSETIFF, &req) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~TunIf() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  int fd_ = -1;
};

}  // namespace

TEST(SinkTun, CountsIpv4PacketsWithoutLinkHeader) {
  TXPATH_REQUIRE_ROOT();
  TunIf tun;
  ASSERT_GE(tun.fd(), 0) << "cannot create a TUN interface: " << std::strerror(errno);
  ASSERT_EQ(test::sh("sysctl -qw net.ipv6.conf." + tun.name() + ".disable_ipv6=1 >/dev/null; ip link set dev " +
                     tun.name() + " up").status, 0);
  Sink sink(SinkConfig{.ifname = tun.name(), .netns = "", .absorb_port = 0});
  sink.start();
  FrameTemplate frames{FrameSpec{}};
  std::vector<std::byte> buf(frames.size());
  for (const uint64_t seq : {0, 1, 3}) {
    ASSERT_EQ(frames.write(buf, 4, seq), buf.size());
    // Writing to the TUN fd is the interface receiving the packet: IPv4, no Ethernet header.
    const auto packet = std::span<const std::byte>(buf).subspan(14);
    ASSERT_EQ(::write(tun.fd(), packet.data(), packet.size()), static_cast<ssize_t>(packet.size()))
        << std::strerror(errno);
  }
  ASSERT_TRUE(sink.wait_for(3, 5s, 20s));
  const SinkReport r = sink.stop();
  ASSERT_EQ(r.senders.size(), 1u);
  EXPECT_EQ(r.senders[0].sender, 4u);
  EXPECT_EQ(r.senders[0].received, 3u);
  EXPECT_EQ(r.senders[0].lost, 1u);
  EXPECT_EQ(r.senders[0].max_seq, 3u);
  EXPECT_EQ(r.senders[0].bytes, 3 * (frames.size() - 14));
}

// parse_ipv4_packet(): the frame checks without the Ethernet header.
TEST(FrameIpv4, ParsesPacketsWithoutLinkHeader) {
  for (const std::size_t payload : {std::size_t{16}, std::size_t{32}, std::size_t{1472}}) {
    FrameTemplate t(FrameSpec{.payload = payload});
    std::vector<std::byte> f(t.size());
    ASSERT_EQ(t.write(f, 9, 0x1122334455667788ull), f.size());
    const auto packet = std::span<const std::byte>(f).subspan(14);
    const auto info = parse_ipv4_packet(packet);
    ASSERT_TRUE(info.has_value()) << payload;
    EXPECT_EQ(info->sender, 9u);
    EXPECT_EQ(info->seq, 0x1122334455667788ull);
    EXPECT_EQ(info->payload, payload);
    // Not an Ethernet frame, and an Ethernet frame is not a bare IPv4 packet.
    EXPECT_FALSE(parse_frame(packet).has_value());
    EXPECT_FALSE(parse_ipv4_packet(f).has_value());
    EXPECT_TRUE(parse_frame(f).has_value());
  }
}

TEST(FrameIpv4, RejectsTrailingBytesTruncationAndCorruption) {
  FrameTemplate t(FrameSpec{.payload = 16});
  std::vector<std::byte> f(t.size());
  ASSERT_EQ(t.write(f, 1, 2), f.size());
  std::vector<std::byte> p(f.begin() + 14, f.end());
  ASSERT_TRUE(parse_ipv4_packet(p).has_value());

  auto longer = p;
  longer.push_back(std::byte{0});  // no Ethernet padding exists without Ethernet
  EXPECT_FALSE(parse_ipv4_packet(longer).has_value());
  for (std::size_t n = 0; n < p.size(); ++n)
    EXPECT_FALSE(parse_ipv4_packet(std::span<const std::byte>(p).first(n)).has_value()) << n;
  for (const std::size_t off : {0u, 9u, 10u, 12u, 28u}) {  // version, proto, csum, src, magic
    auto bad = p;
    bad[off] ^= std::byte{0x01};
    EXPECT_FALSE(parse_ipv4_packet(bad).has_value()) << "byte " << off;
  }
  // parse_frame still accepts the padded minimum frame and rejects other trailing bytes.
  auto padded = f;
  padded.resize(60, std::byte{0});
  EXPECT_TRUE(parse_frame(padded).has_value());
  auto trailing = f;
  trailing.resize(61, std::byte{0});
  EXPECT_FALSE(parse_frame(trailing).has_value());
}
