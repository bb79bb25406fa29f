// SPDX-License-Identifier: MIT
// The real devices with several TX queues (make_net_device("KIND:...,queues=N")): one socket,
// ring or descriptor per queue, every frame sent through queue i arriving, the spec round trip,
// and which kernel TX queue each queue's frames take where the kernel lets us see it.
//
// The kernel TX queue of a frame is observed on the far end of a veth pair: veth hands a frame to
// its peer with the sender's TX queue number in skb->queue_mapping, and a PACKET_FANOUT group of
// type PACKET_FANOUT_QM (net/packet/af_packet.c, fanout_demux_qm) gives member j the frames whose
// queue_mapping modulo the member count is j. With as many members as queues, member j's frames
// are those of kernel TX queue j.
//
// Spec errors need no privilege; the veth, tun and AF_XDP tests need root (skipped with a message
// outside CI, failed in CI). Names and subnets are unique per test process.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/cpu_mask.hpp"
#include "device/afpacket_device.hpp"
#include "device/afxdp_device.hpp"
#include "device/netif.hpp"
#include "device/tun_device.hpp"
#include "device/udp_device.hpp"
#include "net/sink.hpp"
#include "support/net_test_util.hpp"
#include "support/udp_receiver.hpp"
#include "txpath/device.hpp"
#include "txpath/error.hpp"
#include "txpath/frame.hpp"
#include "txpath/multiqueue.hpp"
#include "txpath/netdev.hpp"
#include "txpath/pool.hpp"
#include "txpath/real_device.hpp"

using namespace txpath;
using namespace std::chrono_literals;

namespace {

constexpr uint32_t kQueues = 4;

// --- spec errors and round trips (no privilege) ---------------------------------------------

TEST(RealMultiQueueSpecs, BadQueueCountsAreOneLineConfigErrorsNamingTheSpec) {
  const std::string pcap =
      ::testing::TempDir() + "txpath_mq_" + std::to_string(::getpid()) + ".pcap";
  for (const std::string& spec : std::vector<std::string>{
           "afpacket:lo,queues=0", "afpacket:lo,queues=5000", "afpacket:lo,queues=x",
           "afpacket:lo,prio=16", "afpacket:lo,prio=13,queues=4", "udp:127.0.0.1:9,queues=0",
           "udp:127.0.0.1:9,queues=5000", "udp:127.0.0.1:9,queues=2,queues=2", "tun:tq0,queues=0",
           "tun:tq0,queues=257", "tun:tq0,ring=2", "afxdp:lo,queues=0", "afxdp:lo,queues=5000",
           "afxdp:lo:4094,queues=3", "afxdp:lo:1,color=2", "pcap:" + pcap + ",queues=2",
           "pcap:" + pcap + ",queues=0"}) {
    test::expect_spec_error([](const std::string& s) { make_net_device(s); }, spec);
  }
  try {
    make_net_device("pcap:" + pcap + ",queues=2");
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "device 'pcap:" + pcap +
                                         ",queues=2': pcap writes one file, so it has one TX "
                                         "queue (queues=2 is not possible)");
  }
  // A single-queue Device cannot stand for a device of several.
  EXPECT_THROW(make_device("udp:127.0.0.1:9,queues=2"), ConfigError);
}

TEST(RealMultiQueueSpecs, PcapTakesQueuesOneAndWritesTheFileItNames) {
  const std::string pcap =
      ::testing::TempDir() + "txpath_mq1_" + std::to_string(::getpid()) + ".pcap";
  auto dev = make_net_device("pcap:" + pcap + ",queues=1");
  ASSERT_EQ(dev->num_tx_queues(), 1u);
  EXPECT_EQ(dev->describe(), "pcap:" + pcap);
  abandon_output(dev->tx_queue(0));
}

// `per_queue` frames through every TX queue of `dev`, queue q's stamped with sender id q and
// sent on q explicitly (Packet::tx_queue); returns each queue's stats after the drain.
std::vector<TxQueueStats> send_on_each_queue(NetDevice& dev, uint64_t per_queue, FrameSpec spec) {
  Pool pool(PoolConfig{.packets = 4096, .buffer_size = 2048, .cache_size = 0});
  dev.tx_queue(0).address_frames(spec);
  const FrameTemplate tmpl(spec);
  MultiQueueConfig mc;
  mc.queue.strategy = "busylock";
  mc.queue.qdisc = "pfifo limit 100000";  // nothing dropped by the qdisc
  auto tx = MultiQueueTx::create(dev, mc);
  for (uint64_t seq = 0; seq < per_queue; ++seq) {
    for (uint32_t q = 0; q < dev.num_tx_queues(); ++q) {
      Packet* p = pool.get();
      EXPECT_NE(p, nullptr);
      if (!p) break;
      p->len = static_cast<uint32_t>(tmpl.write(p->buffer(), q, seq));
      p->tx_queue = q;
      EXPECT_EQ(tx->send(p), SendStatus::queued);
    }
  }
  EXPECT_TRUE(tx->drain(20s));
  return tx->queue_stats();
}

TEST(UdpMultiQueue, EachQueueSendsOnItsOwnConnectedSocket) {
  const test::UdpReceiver rx;
  const std::string spec = "udp:127.0.0.1:" + std::to_string(rx.port) + ",batch=16,queues=4";
  auto dev = make_net_device(spec);
  ASSERT_EQ(dev->num_tx_queues(), kQueues);
  EXPECT_EQ(dev->describe(), spec);
  EXPECT_EQ(make_net_device(dev->describe())->describe(), spec) << "the spec round-trips";
  // Four sockets, each connected to the receiver from its own local port.
  std::set<int> fds;
  std::map<uint16_t, uint32_t> queue_of_port;
  for (uint32_t q = 0; q < kQueues; ++q) {
    const auto* udp = dynamic_cast<const UdpDevice*>(&dev->tx_queue(q));
    ASSERT_NE(udp, nullptr);
    fds.insert(udp->socket_fd());
    sockaddr_in local{};
    socklen_t len = sizeof local;
    ASSERT_EQ(::getsockname(udp->socket_fd(), reinterpret_cast<sockaddr*>(&local), &len), 0);
    queue_of_port[ntohs(local.sin_port)] = q;
    ASSERT_TRUE(socket_peer(dev->tx_queue(q))) << "queue " << q;
  }
  EXPECT_EQ(fds.size(), kQueues);
  ASSERT_EQ(queue_of_port.size(), kQueues) << "one local port per queue";

  constexpr uint64_t kPerQueue = 60;
  FrameSpec fs;
  fs.payload = 100;
  const auto stats = send_on_each_queue(*dev, kPerQueue, fs);
  for (uint32_t q = 0; q < kQueues; ++q) EXPECT_EQ(stats[q].sent, kPerQueue) << "queue " << q;
  // Every datagram comes from the socket of the queue it was sent on, in order per queue.
  dev->tx_queue(0).address_frames(fs);
  const FrameTemplate tmpl(fs);
  std::vector<uint64_t> next(kQueues, 0);
  std::vector<std::byte> want(tmpl.size()), got(4096);
  for (uint64_t i = 0; i < kQueues * kPerQueue; ++i) {
    sockaddr_in from{};
    socklen_t len = sizeof from;
    const ssize_t n = ::recvfrom(rx.fd.get(), got.data(), got.size(), 0,
                                 reinterpret_cast<sockaddr*>(&from), &len);
    ASSERT_EQ(n, static_cast<ssize_t>(fs.payload)) << "datagram " << i;
    const auto it = queue_of_port.find(ntohs(from.sin_port));
    ASSERT_NE(it, queue_of_port.end()) << "from an unknown port";
    const uint32_t q = it->second;
    tmpl.write(want, q, next[q]++);
    EXPECT_EQ(std::memcmp(got.data(), want.data() + kHeadersLen, fs.payload), 0)
        << "queue " << q << ": payload " << next[q] - 1 << " out of place";
  }
  for (uint32_t q = 0; q < kQueues; ++q) EXPECT_EQ(next[q], kPerQueue) << "queue " << q;
}

TEST(RealMultiQueueSpecs, XpsCpuMasksReadAsTheKernelWritesThem) {
  using V = std::vector<unsigned>;
  EXPECT_EQ(parse_cpu_mask("0"), V{});
  EXPECT_EQ(parse_cpu_mask("5"), (V{0, 2}));
  EXPECT_EQ(parse_cpu_mask("00000000,80000003"), (V{0, 1, 31}));
  EXPECT_EQ(parse_cpu_mask("1,00000000"), V{32});
  EXPECT_EQ(parse_cpu_mask("ff,0,1"), (V{0, 64, 65, 66, 67, 68, 69, 70, 71}));
  for (const char* bad : {"", "x", "1,,2", ",1", "1,", "100000000"})
    EXPECT_EQ(parse_cpu_mask(bad), std::nullopt) << bad;
  // Written back as the kernel would read it.
  EXPECT_EQ(format_cpu_mask(V{}), "0");
  EXPECT_EQ(format_cpu_mask(V{0, 2}), "5");
  EXPECT_EQ(format_cpu_mask(V{0, 1, 31}), "80000003");
  EXPECT_EQ(format_cpu_mask(V{32}), "1,00000000");
  for (const V& v : {V{3}, V{0, 64, 70}, V{4095}}) EXPECT_EQ(parse_cpu_mask(format_cpu_mask(v)), v);
}

// --- on a veth pair with 4 TX and 4 RX queues (root) -----------------------------------------

// Frames seen on one interface, sorted by the kernel queue they came with (a PACKET_FANOUT_QM
// group of `members` sockets), opened inside `netns`.
class QueueObserver {
 public:
  QueueObserver(const std::string& netns, const std::string& ifname, uint32_t members) {
    // setns() moves only the calling thread: open the sockets from a thread of their own; they
    // stay in the namespace they were made in.
    std::thread([&] {
      netif::Fd ns(::open(("/run/netns/" + netns).c_str(), O_RDONLY | O_CLOEXEC));
      if (!ns || ::setns(ns.get(), CLONE_NEWNET) != 0) {
        error_ = "setns " + netns + ": " + std::strerror(errno);
        return;
      }
      const int index = static_cast<int>(::if_nametoindex(ifname.c_str()));
      const int group = (::getpid() & 0xffff) | (PACKET_FANOUT_QM << 16);
      for (uint32_t j = 0; j < members && error_.empty(); ++j) {
        netif::Fd fd(
            ::socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ALL)));
        sockaddr_ll sll{};
        sll.sll_family = AF_PACKET;
        sll.sll_protocol = htons(ETH_P_ALL);
        sll.sll_ifindex = index;
        const int big = 16 << 20;
        ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
        if (!fd || ::bind(fd.get(), reinterpret_cast<sockaddr*>(&sll), sizeof sll) != 0 ||
            ::setsockopt(fd.get(), SOL_PACKET, PACKET_FANOUT, &group, sizeof group) != 0)
          error_ = "fanout socket on " + ifname + ": " + std::strerror(errno);
        fds_.push_back(std::move(fd));
      }
    }).join();
  }
  const std::string& error() const { return error_; }

  // counts[j][s]: txpath frames of sender s that member j (kernel queue j) received, read until
  // `expected` arrived or a second passed without one.
  std::vector<std::vector<uint64_t>> read(uint64_t expected, uint32_t senders) {
    std::vector<std::vector<uint64_t>> counts(fds_.size(), std::vector<uint64_t>(senders, 0));
    std::vector<pollfd> pfds;
    for (const auto& fd : fds_) pfds.push_back({fd.get(), POLLIN, 0});
    std::vector<std::byte> frame(4096);
    uint64_t got = 0;
    auto last = std::chrono::steady_clock::now();
    while (got < expected && std::chrono::steady_clock::now() - last < 1s) {
      if (::poll(pfds.data(), pfds.size(), 50) <= 0) continue;
      for (std::size_t j = 0; j < fds_.size(); ++j) {
        ssize_t n;
        while ((n = ::recv(fds_[j].get(), frame.data(), frame.size(), 0)) > 0) {
          const auto info = parse_frame({frame.data(), static_cast<std::size_t>(n)});
          if (!info || info->sender >= senders) continue;  // not ours
          ++counts[j][info->sender];
          ++got;
          last = std::chrono::steady_clock::now();
        }
      }
    }
    return counts;
  }

 private:
  std::vector<netif::Fd> fds_;
  std::string error_;
};

class MultiQueueVeth : public ::testing::Test {
 protected:
  void SetUp() override {
    TXPATH_REQUIRE_ROOT();
    const int pid = static_cast<int>(::getpid());
    host_ = "mq" + std::to_string(pid % 100000) + "a";
    peer_ = "mq" + std::to_string(pid % 100000) + "b";
    netns_ = "txpath-mq" + std::to_string(pid);
    const std::string x = std::to_string(pid % 250 + 1);
    host_ip_ = "10.81." + x + ".1";
    peer_ip_ = "10.81." + x + ".2";
    const std::string q = " numtxqueues 4 numrxqueues 4";
    for (const std::string& cmd :
         {"ip netns add " + netns_,
          "ip link add " + host_ + q + " type veth peer name " + peer_ + q + " address " +
              kPeerMac + " netns " + netns_,
          "ip addr add " + host_ip_ + "/24 dev " + host_, "ip link set " + host_ + " up",
          "ip -n " + netns_ + " addr add " + peer_ip_ + "/24 dev " + peer_,
          "ip -n " + netns_ + " link set " + peer_ + " up",
          "ip neigh replace " + peer_ip_ + " lladdr " + kPeerMac + " dev " + host_ +
              " nud permanent"}) {
      const test::CmdOut r = test::sh(cmd);
      ASSERT_EQ(r.status, 0) << cmd << ": " << r.out;
      up_ = true;
    }
  }
  void TearDown() override {
    if (!up_) return;
    test::sh("ip link del " + host_);
    test::sh("ip netns del " + netns_);
  }

  FrameSpec frame_spec() const {
    FrameSpec spec;
    spec.payload = 64;
    spec.dst_mac = {0x02, 0x00, 0x00, 0x00, 0x4d, 0x51};  // kPeerMac
    spec.src_ip = ntohl(::inet_addr(host_ip_.c_str()));
    spec.dst_ip = ntohl(::inet_addr(peer_ip_.c_str()));
    return spec;
  }

  // Up to `n` CPUs this process may run on (below 32, so that one mask word names them).
  static std::vector<int> allowed_cpus(std::size_t n) {
    cpu_set_t allowed;
    std::vector<int> cpus;
    if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) return cpus;
    for (int c = 0; c < 32 && cpus.size() < n; ++c)
      if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
    return cpus;
  }
  // Pins the calling thread to `cpu`.
  static bool pin_to(int cpu) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return ::sched_setaffinity(0, sizeof one, &one) == 0;
  }
  static std::string cpu_mask(int cpu) {
    char mask[16];
    std::snprintf(mask, sizeof mask, "%x", 1u << cpu);
    return mask;
  }

  void write_xps(uint32_t queue, const std::string& mask) {
    std::ofstream f("/sys/class/net/" + host_ + "/queues/tx-" + std::to_string(queue) +
                    "/xps_cpus");
    f << mask;
    f.close();
    ASSERT_TRUE(f) << "xps_cpus of tx-" << queue;
  }

  // Every frame txpath queue q sent arrived, on kernel queue `kernel_queue[q]` when that is set
  // (else on any one queue).
  void expect_on_queues(const std::vector<std::vector<uint64_t>>& counts, uint64_t per_queue,
                        const std::vector<int>& kernel_queue) {
    for (uint32_t s = 0; s < kernel_queue.size(); ++s) {
      uint64_t total = 0;
      for (uint32_t j = 0; j < counts.size(); ++j) total += counts[j][s];
      EXPECT_EQ(total, per_queue) << "txpath queue " << s << ": frames arrived";
      if (kernel_queue[s] >= 0) {
        EXPECT_EQ(counts[static_cast<uint32_t>(kernel_queue[s])][s], per_queue)
            << "txpath queue " << s << " on kernel queue " << kernel_queue[s];
      }
    }
  }

  static constexpr const char* kPeerMac = "02:00:00:00:4d:51";
  std::string host_, peer_, netns_, host_ip_, peer_ip_;
  bool up_ = false;
};

// Four distinct descriptors among the queues of `dev`, as `fd_of` finds them.
template <class DeviceClass, class FdOf>
void expect_distinct_fds(NetDevice& dev, FdOf fd_of) {
  std::set<int> fds;
  for (uint32_t q = 0; q < dev.num_tx_queues(); ++q) {
    const auto* d = dynamic_cast<const DeviceClass*>(&dev.tx_queue(q));
    ASSERT_NE(d, nullptr) << "queue " << q;
    EXPECT_GE(fd_of(*d), 0) << "queue " << q;
    fds.insert(fd_of(*d));
  }
  EXPECT_EQ(fds.size(), dev.num_tx_queues()) << "one socket per queue";
}

TEST_F(MultiQueueVeth, AfPacketQueuesEachSendOnTheirOwnSocketAndEveryFrameArrives) {
  if (!up_) return;
  for (const std::string opts : {"", ",bypass=0"}) {
    SCOPED_TRACE(opts);
    const std::string spec = "afpacket:" + host_ + opts + ",queues=4";
    auto dev = make_net_device(spec);
    ASSERT_EQ(dev->num_tx_queues(), kQueues);
    EXPECT_EQ(dev->describe(), spec);
    expect_distinct_fds<AfPacketDevice>(*dev,
                                        [](const AfPacketDevice& d) { return d.socket_fd(); });
    for (uint32_t q = 0; q < kQueues; ++q) EXPECT_EQ(link_interface(dev->tx_queue(q)), host_);
    QueueObserver seen(netns_, peer_, kQueues);
    ASSERT_EQ(seen.error(), "");
    constexpr uint64_t kPerQueue = 200;  // 800 in all: below the backlog of one CPU (1000)
    const auto stats = send_on_each_queue(*dev, kPerQueue, frame_spec());
    for (uint32_t q = 0; q < kQueues; ++q) {
      EXPECT_EQ(stats[q].sent, kPerQueue) << "queue " << q;
      EXPECT_EQ(stats[q].device.tx_packets, kPerQueue) << "queue " << q;
      EXPECT_GT(stats[q].device.doorbells, 0u) << "queue " << q << " kicked its own socket";
    }
    expect_on_queues(seen.read(kQueues * kPerQueue, kQueues), kPerQueue, {-1, -1, -1, -1});
  }
  // The spec round-trips, ring and priority included.
  auto dev = make_net_device("afpacket:" + host_ + ",ring=64,prio=3,queues=4");
  EXPECT_EQ(make_net_device(dev->describe())->describe(), dev->describe());
  EXPECT_EQ(dev->describe(), "afpacket:" + host_ + ",ring=64,prio=3,queues=4");
  for (uint32_t q = 0; q < kQueues; ++q) {
    const auto& d = dynamic_cast<const AfPacketDevice&>(dev->tx_queue(q));
    int prio = -1;
    socklen_t len = sizeof prio;
    ASSERT_EQ(::getsockopt(d.socket_fd(), SOL_SOCKET, SO_PRIORITY, &prio, &len), 0);
    EXPECT_EQ(prio, static_cast<int>(3 + q)) << "queue " << q << " sends at priority 3 + " << q;
  }
}

// With PACKET_QDISC_BYPASS the kernel picks the TX queue from the CPU that kicks the socket:
// that CPU's XPS queue when the interface has an XPS map for it, else CPU mod queue count
// (packet_pick_tx_queue -> netdev_pick_tx -> skb_tx_hash on the recorded queue). Through the
// qdisc path, XPS decides the same way. So txpath queue i lands on kernel queue i when the CPU
// that kicks it is mapped to i.
TEST_F(MultiQueueVeth, AfPacketFramesTakeTheKernelQueueOfTheKickingCpusXpsMap) {
  if (!up_) return;
  const std::vector<int> cpus = allowed_cpus(2);
  ASSERT_FALSE(cpus.empty());
  for (const bool bypass : {true, false}) {
    SCOPED_TRACE(bypass ? "bypass=1" : "bypass=0");
    auto dev = make_net_device("afpacket:" + host_ + (bypass ? "" : ",bypass=0") + ",queues=4");
    const FrameTemplate tmpl = [&] {
      FrameSpec spec = frame_spec();
      dev->tx_queue(0).address_frames(spec);
      return FrameTemplate(spec);
    }();
    QueueObserver seen(netns_, peer_, kQueues);
    ASSERT_EQ(seen.error(), "");
    constexpr uint64_t kFrames = 100;
    // First without an XPS map, then with one sending CPU k to queue 2 + k. The kernel queue
    // expected for each txpath queue sent on; -1: any one queue (the frames' flow hash decides:
    // the qdisc path without XPS).
    for (const bool xps : {false, true}) {
      for (uint32_t q = 0; q < kQueues; ++q) write_xps(q, "0");
      std::vector<std::pair<uint32_t, int>> expected;  // (txpath queue, kernel queue)
      for (std::size_t k = 0; k < (xps ? cpus.size() : 1); ++k) {
        if (xps) {
          write_xps(static_cast<uint32_t>(2 + k), cpu_mask(cpus[k]));
          expected.emplace_back(2 + k, static_cast<int>(2 + k));
        } else {
          expected.emplace_back(0, bypass ? cpus[0] % static_cast<int>(kQueues) : -1);
        }
      }
      Pool pool(PoolConfig{.packets = 1024, .buffer_size = 2048, .cache_size = 0});
      for (std::size_t k = 0; k < expected.size(); ++k) {
        // Txpath queue expected[k].first, written and kicked from CPU cpus[k] alone.
        std::thread([&] {
          ASSERT_TRUE(pin_to(cpus[k]));
          Device& d = dev->tx_queue(expected[k].first);
          {
            std::lock_guard lock(d.tx_lock());
            for (uint64_t seq = 0; seq < kFrames; ++seq) {
              Packet* p = pool.get();
              p->len = static_cast<uint32_t>(tmpl.write(p->buffer(), expected[k].first, seq));
              ASSERT_EQ(d.xmit(p, seq + 1 < kFrames), XmitResult::ok);
            }
          }
          for (int i = 0; i < 2000 && d.in_flight() > 0; ++i) {
            d.poll();
            std::this_thread::sleep_for(1ms);
          }
        }).join();
      }
      const auto counts = seen.read(kFrames * expected.size(), kQueues);
      SCOPED_TRACE(xps ? "with XPS" : "without XPS");
      for (const auto& [txq, kernel_queue] : expected) {
        uint32_t where = kQueues;
        for (uint32_t j = 0; j < kQueues; ++j)
          if (counts[j][txq] == kFrames) where = j;
        ASSERT_LT(where, kQueues) << "txpath queue " << txq << ": all frames on one kernel queue";
        if (kernel_queue >= 0) {
          EXPECT_EQ(where, static_cast<uint32_t>(kernel_queue)) << "txpath queue " << txq;
        }
      }
    }
  }
  for (uint32_t q = 0; q < kQueues; ++q) write_xps(q, "0");
}

// follow_kernel_tx_queues(): txpath's XPS map made to agree with the kernel's choice for the
// kicking CPU, so that a pinned sender's frames take the same queue number in txpath and in the
// kernel, without an explicit queue.
TEST_F(MultiQueueVeth, FollowingTheKernelsChoicePutsTxpathQueueQOnKernelQueueQ) {
  if (!up_) return;
  const std::vector<int> cpus = allowed_cpus(2);
  ASSERT_FALSE(cpus.empty());
  EXPECT_FALSE(follow_kernel_tx_queues(*make_net_device("null:queues=4")));
  for (const bool xps : {false, true}) {
    SCOPED_TRACE(xps ? "with an XPS map" : "without XPS");
    for (uint32_t q = 0; q < kQueues; ++q) write_xps(q, "0");
    // Without XPS the kernel sends CPU c's kicks on queue c mod 4; with it, CPU cpus[k] on
    // queue 3 - k.
    const auto queue_for = [&](std::size_t k) {
      return xps ? static_cast<uint32_t>(3 - k) : static_cast<uint32_t>(cpus[k]) % kQueues;
    };
    if (xps) {
      for (std::size_t k = 0; k < cpus.size(); ++k) write_xps(queue_for(k), cpu_mask(cpus[k]));
    }
    const auto by_queue = kernel_tx_queue_cpus(host_);
    ASSERT_EQ(by_queue.size(), kQueues);
    auto dev = make_net_device("afpacket:" + host_ + ",queues=4");
    ASSERT_TRUE(follow_kernel_tx_queues(*dev));
    for (std::size_t k = 0; k < cpus.size(); ++k) {
      const auto& on = by_queue[queue_for(k)];
      EXPECT_NE(std::find(on.begin(), on.end(), static_cast<unsigned>(cpus[k])), on.end())
          << "CPU " << cpus[k] << " -> kernel queue " << queue_for(k);
      const auto mapped = dev->xps_cpus(queue_for(k));
      EXPECT_NE(std::find(mapped.begin(), mapped.end(), static_cast<unsigned>(cpus[k])),
                mapped.end())
          << "txpath XPS: CPU " << cpus[k] << " -> queue " << queue_for(k);
    }
    QueueObserver seen(netns_, peer_, kQueues);
    ASSERT_EQ(seen.error(), "");
    constexpr uint64_t kFrames = 100;
    FrameSpec spec = frame_spec();
    dev->tx_queue(0).address_frames(spec);
    const FrameTemplate tmpl(spec);
    Pool pool(PoolConfig{.packets = 1024, .buffer_size = 2048, .cache_size = 0});
    MultiQueueConfig mc;
    mc.queue.strategy = "busylock";  // each sender runs the driver loop: it kicks from its CPU
    mc.queue.qdisc = "pfifo limit 100000";
    auto tx = MultiQueueTx::create(*dev, mc);
    for (std::size_t k = 0; k < cpus.size(); ++k) {
      std::thread([&] {
        ASSERT_TRUE(pin_to(cpus[k]));
        for (uint64_t seq = 0; seq < kFrames; ++seq) {
          Packet* p = pool.get();
          p->len = static_cast<uint32_t>(tmpl.write(p->buffer(), static_cast<uint32_t>(k), seq));
          ASSERT_EQ(tx->send(p), SendStatus::queued);  // no explicit queue: XPS picks it
        }
      }).join();
    }
    ASSERT_TRUE(tx->drain(20s));
    const auto stats = tx->queue_stats();
    const auto counts = seen.read(kFrames * cpus.size(), static_cast<uint32_t>(cpus.size()));
    for (std::size_t k = 0; k < cpus.size(); ++k) {
      EXPECT_EQ(stats[queue_for(k)].sent, kFrames) << "txpath queue " << queue_for(k);
      EXPECT_EQ(counts[queue_for(k)][k], kFrames)
          << "CPU " << cpus[k] << ": txpath queue " << queue_for(k) << " on kernel queue "
          << queue_for(k);
    }
  }
  for (uint32_t q = 0; q < kQueues; ++q) write_xps(q, "0");
}

TEST_F(MultiQueueVeth, UdpQueuesEachSendOnTheirOwnSocketAndEveryFrameArrives) {
  if (!up_) return;
  const std::string spec = "udp:" + peer_ip_ + ":9000,queues=4";
  auto dev = make_net_device(spec);
  ASSERT_EQ(dev->num_tx_queues(), kQueues);
  EXPECT_EQ(dev->describe(), spec);
  expect_distinct_fds<UdpDevice>(*dev, [](const UdpDevice& d) { return d.socket_fd(); });
  // The sink (it accepts the kernel's own UDP headers, checksum left to the offload included).
  Sink sink(SinkConfig{.ifname = peer_, .netns = netns_});
  sink.start();
  constexpr uint64_t kPerQueue = 200;
  const auto stats = send_on_each_queue(*dev, kPerQueue, frame_spec());
  for (uint32_t q = 0; q < kQueues; ++q) EXPECT_EQ(stats[q].sent, kPerQueue) << "queue " << q;
  EXPECT_TRUE(sink.wait_for(kQueues * kPerQueue, 2s, 20s));
  const SinkReport r = sink.report();
  EXPECT_EQ(r.received, kQueues * kPerQueue);
  EXPECT_EQ(r.out_of_order, 0u);
  ASSERT_EQ(r.senders.size(), kQueues);
  for (const auto& c : r.senders) EXPECT_EQ(c.received, kPerQueue) << "queue " << c.sender;
}

// An XSK on queue id QUEUE + i for TX queue i: in copy mode the kernel transmits each socket's
// frames on exactly its queue id (xsk_generic_xmit -> __dev_direct_xmit(skb, queue_id)).
TEST_F(MultiQueueVeth, AfXdpQueuesAreOneSocketPerQueueIdAndLandOnIt) {
  if (!up_) return;
  const std::string spec = "afxdp:" + host_ + ":1,queues=3";
  std::unique_ptr<NetDevice> dev;
  try {
    dev = make_net_device(spec);
  } catch (const DeviceError& e) {
    // A build without libxdp has no AF_XDP device at all (its one-line error says so).
    if (std::string(e.what()).find("without libxdp") != std::string::npos) GTEST_SKIP() << e.what();
    throw;
  }
  ASSERT_EQ(dev->num_tx_queues(), 3u);
  EXPECT_EQ(dev->describe(), spec);
  expect_distinct_fds<AfXdpDevice>(*dev, [](const AfXdpDevice& d) { return d.socket_fd(); });
  for (uint32_t q = 0; q < 3; ++q) {
    EXPECT_EQ(dynamic_cast<const AfXdpDevice&>(dev->tx_queue(q)).config().queue, 1 + q);
    EXPECT_EQ(dev->tx_queue(q).describe(), "afxdp:" + host_ + ":" + std::to_string(1 + q));
    EXPECT_EQ(link_interface(dev->tx_queue(q)), host_);
  }
  QueueObserver seen(netns_, peer_, kQueues);
  ASSERT_EQ(seen.error(), "");
  constexpr uint64_t kPerQueue = 200;
  const auto stats = send_on_each_queue(*dev, kPerQueue, frame_spec());
  for (uint32_t q = 0; q < 3; ++q) EXPECT_EQ(stats[q].sent, kPerQueue) << "queue " << q;
  expect_on_queues(seen.read(3 * kPerQueue, 3), kPerQueue, {1, 2, 3});
  dev.reset();
  // From queue 0, and the round trip of that spec (queue 0 named by default).
  auto dev0 = make_net_device("afxdp:" + host_ + ",queues=4");
  EXPECT_EQ(dev0->describe(), "afxdp:" + host_ + ",queues=4");
  EXPECT_EQ(dev0->tx_queue(3).describe(), "afxdp:" + host_ + ":3");
  dev0.reset();
  EXPECT_THROW(make_net_device("afxdp:" + host_ + ":2,queues=4"), DeviceError)
      << "queue ids 2..5 on an interface of 4 queues";
}

// --- tun with IFF_MULTI_QUEUE (root) ----------------------------------------------------------

unsigned tun_flags(int fd) {
  ifreq ifr{};
  if (::ioctl(fd, TUNGETIFF, &ifr) != 0) return 0;
  return static_cast<unsigned short>(ifr.ifr_flags);
}

TEST(TunMultiQueue, EachQueueIsItsOwnMultiQueueDescriptorAndEveryPacketArrives) {
  TXPATH_REQUIRE_ROOT();
  const std::string name = "txmq" + std::to_string(::getpid() % 100000);
  {
    auto single = make_net_device("tun:" + name);
    ASSERT_EQ(single->num_tx_queues(), 1u);
    EXPECT_EQ(single->describe(), "tun:" + name);
    EXPECT_EQ(tun_flags(dynamic_cast<const TunDevice&>(single->tx_queue(0)).fd()) & IFF_MULTI_QUEUE,
              0u)
        << "queues=1 is today's single-queue open";
  }
  const std::string spec = "tun:" + name + ",queues=4";
  auto dev = make_net_device(spec);
  ASSERT_EQ(dev->num_tx_queues(), kQueues);
  EXPECT_EQ(dev->describe(), spec);
  expect_distinct_fds<TunDevice>(*dev, [](const TunDevice& d) { return d.fd(); });
  for (uint32_t q = 0; q < kQueues; ++q) {
    const auto& d = dynamic_cast<const TunDevice&>(dev->tx_queue(q));
    EXPECT_NE(tun_flags(d.fd()) & IFF_MULTI_QUEUE, 0u) << "queue " << q;
    EXPECT_EQ(d.ifname(), name);
  }
  // The kernel receives each descriptor's packets on that descriptor's own queue: a fanout-QM
  // group on the tun sees each txpath queue's packets on one member, a different one per queue.
  std::vector<netif::Fd> members;
  const int group = ((::getpid() + 1) & 0xffff) | (PACKET_FANOUT_QM << 16);
  for (uint32_t j = 0; j < kQueues; ++j) {
    netif::Fd fd(::socket(AF_PACKET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ALL)));
    sockaddr_ll sll{};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = static_cast<int>(::if_nametoindex(name.c_str()));
    ASSERT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&sll), sizeof sll), 0);
    ASSERT_EQ(::setsockopt(fd.get(), SOL_PACKET, PACKET_FANOUT, &group, sizeof group), 0);
    members.push_back(std::move(fd));
  }
  constexpr uint64_t kPerQueue = 100;
  FrameSpec fs;
  fs.payload = 48;
  const auto stats = send_on_each_queue(*dev, kPerQueue, fs);
  for (uint32_t q = 0; q < kQueues; ++q) EXPECT_EQ(stats[q].sent, kPerQueue) << "queue " << q;
  std::vector<std::vector<uint64_t>> counts(kQueues, std::vector<uint64_t>(kQueues, 0));
  std::vector<std::byte> buf(4096);
  uint64_t got = 0;
  for (auto last = std::chrono::steady_clock::now();
       got < kQueues * kPerQueue && std::chrono::steady_clock::now() - last < 1s;) {
    bool any = false;
    for (uint32_t j = 0; j < kQueues; ++j) {
      sockaddr_ll from{};
      socklen_t len = sizeof from;
      const ssize_t n = ::recvfrom(members[j].get(), buf.data(), buf.size(), 0,
                                   reinterpret_cast<sockaddr*>(&from), &len);
      if (n <= 0 || from.sll_pkttype == PACKET_OUTGOING) continue;
      const auto info = parse_ipv4_packet({buf.data(), static_cast<std::size_t>(n)});
      if (!info || info->sender >= kQueues) continue;
      ++counts[j][info->sender];
      ++got;
      any = true;
      last = std::chrono::steady_clock::now();
    }
    if (!any) std::this_thread::sleep_for(1ms);
  }
  std::set<uint32_t> members_used;
  for (uint32_t s = 0; s < kQueues; ++s) {
    uint32_t where = kQueues;
    for (uint32_t j = 0; j < kQueues; ++j)
      if (counts[j][s] == kPerQueue) where = j;
    EXPECT_LT(where, kQueues) << "txpath queue " << s << ": all its packets on one kernel queue";
    members_used.insert(where);
  }
  EXPECT_EQ(members_used.size(), kQueues) << "a different kernel queue for each descriptor";
  dev.reset();
  EXPECT_EQ(make_net_device(spec)->describe(), spec) << "the spec round-trips";
}

}  // namespace
