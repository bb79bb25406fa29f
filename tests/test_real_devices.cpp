// SPDX-License-Identifier: MIT
// The afpacket and udp devices on a real veth testbed, checked at a real sink; the bench's kernel
// row. Needs root: skipped with a message outside CI when not root, failed in CI (CI is root).
//
// Each test makes its own testbed with names derived from the process id (ctest runs tests in
// parallel, one process per test) and removes it in TearDown. Frame counts stay below the veth
// receive backlog (netdev_max_backlog, 1000 per CPU), so no frame can be lost on the link even
// if the receive softirq is late: the tests can demand exact arrival.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench.hpp"
#include "bench/real_path.hpp"
#include "device/netif.hpp"
#include "net/sink.hpp"
#include "net/testbed.hpp"
#include "support/net_test_util.hpp"
#include "support/udp_receiver.hpp"
#include "support/veth_fixture.hpp"
#include "txpath/device.hpp"
#include "txpath/error.hpp"
#include "txpath/frame.hpp"
#include "txpath/pool.hpp"
#include "txpath/real_device.hpp"
#include "txpath/txqueue.hpp"

using namespace txpath;
using namespace std::chrono_literals;

namespace {

// Numbered frames for xmit() straight into a device on the testbed (its addresses filled in),
// from a pool of 64 uncached buffers.
struct DirectFrames {
  DirectFrames(const Device& dev, const std::string& host_if) : tmpl(addressed(dev, host_if)) {}
  Packet* operator()(uint64_t seq) {
    Packet* p = pool.get();
    p->len = static_cast<uint32_t>(tmpl.write(p->buffer(), 0, seq));
    return p;
  }
  static FrameSpec addressed(const Device& dev, const std::string& host_if) {
    FrameSpec spec;
    dev.address_frames(spec);
    address_to_testbed(spec, host_if);
    return spec;
  }
  // Counts the device's queue wakes in `wakes`.
  void count_wakes(Device& dev) {
    dev.set_wake_handler([this] { wakes.fetch_add(1); });
  }
  Pool pool{PoolConfig{.packets = 64, .buffer_size = 2048, .cache_size = 0}};
  const FrameTemplate tmpl;
  std::atomic<int> wakes{0};
};

class RealDevice : public test::VethTestbed<'r'> {
 protected:
  // `senders` threads send `per_sender` frames each through a TxQueue over `dev`, then drain.
  TxQueueStats send_through(Device& dev, const std::string& strategy, int senders,
                            uint64_t per_sender, std::size_t payload = 64) {
    Pool pool(PoolConfig{.packets = 4096, .buffer_size = 2048, .cache_size = 16});
    FrameSpec spec;
    spec.payload = payload;
    dev.address_frames(spec);
    address_to_testbed(spec, cfg_.host_if);
    const FrameTemplate tmpl(spec);
    frame_len_ = tmpl.size();
    TxQueueConfig qc;
    qc.strategy = strategy;
    qc.qdisc = "pfifo limit 100000";  // nothing dropped by the qdisc: every frame must arrive
    auto q = TxQueue::create(dev, qc);
    std::vector<std::thread> threads;
    for (int t = 0; t < senders; ++t) {
      threads.emplace_back([&, t] {
        Pool::Cache cache(pool);
        for (uint64_t seq = 0; seq < per_sender;) {
          Packet* p = cache.get();
          if (!p) {
            std::this_thread::yield();
            continue;
          }
          p->len = static_cast<uint32_t>(tmpl.write(p->buffer(), static_cast<uint32_t>(t), seq));
          EXPECT_NE(q->send(p), SendStatus::too_big);
          ++seq;
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_TRUE(q->drain(20s)) << strategy;
    return q->stats();
  }

  void expect_all_arrived(const Sink& s, int senders, uint64_t per_sender, bool l2 = true) {
    const SinkReport r = expect_once_in_order(s, static_cast<uint64_t>(senders) * per_sender);
    ASSERT_EQ(r.senders.size(), static_cast<std::size_t>(senders));
    for (const auto& c : r.senders) {
      EXPECT_EQ(c.received, per_sender) << "sender " << c.sender;
      EXPECT_EQ(c.max_seq, per_sender - 1) << "sender " << c.sender;
      if (l2) EXPECT_EQ(c.bytes, per_sender * frame_len_) << "sender " << c.sender;
    }
  }

  std::size_t frame_len_ = 0;
};

TEST_F(RealDevice, AfPacketFramesArriveOnceInOrderForEveryStrategy) {
  if (!up_) return;
  auto s = sink();
  // Both kicks: inline (the doorbell's thread) and kick=thread (the queue's kicker thread).
  for (const std::string kick : {"", ",kick=thread"}) {
    for (const std::string strategy : {"busylock", "nolock", "llist", "drainer"}) {
      SCOPED_TRACE(strategy + kick);
      s->reset();
      auto dev = make_device("afpacket:" + cfg_.host_if + kick);
      EXPECT_EQ(dev->kind(), "afpacket");
      EXPECT_EQ(dev->describe(), "afpacket:" + cfg_.host_if + kick);
      EXPECT_EQ(dev->mtu(), cfg_.mtu);
      const TxQueueStats st = send_through(*dev, strategy, 3, 250);
      EXPECT_EQ(st.sent, 750u);
      EXPECT_EQ(st.dropped, 0u);
      EXPECT_EQ(st.device.tx_packets, 750u);
      EXPECT_EQ(st.device.tx_errors, 0u);
      EXPECT_EQ(dev->in_flight(), 0u);
      expect_all_arrived(*s, 3, 250);
    }
  }
}

TEST_F(RealDevice, AfXdpFramesArriveOnceInOrder) {
  if (!up_) return;
  auto s = sink();
  for (const std::string strategy : {"busylock", "drainer"}) {
    s->reset();
    // Copy mode on veth. Opened right after the previous socket on the same queue closed: the
    // kernel releases a queue from a deferred work item, which the device waits out.
    auto dev = make_device("afxdp:" + cfg_.host_if);
    EXPECT_EQ(dev->kind(), "afxdp");
    const TxQueueStats st = send_through(*dev, strategy, 3, 250);
    EXPECT_EQ(st.sent, 750u) << strategy;
    EXPECT_EQ(st.device.tx_packets, 750u) << strategy;
    EXPECT_EQ(dev->in_flight(), 0u) << strategy << ": every UMEM chunk came back";
    SCOPED_TRACE(strategy);
    expect_all_arrived(*s, 3, 250);
  }
  EXPECT_THROW(make_device("afxdp:" + cfg_.host_if + ":4000"), DeviceError)
      << "a queue the interface does not have";
}

// The device knows its interface (the source MAC) and nothing of the testbed; the testbed
// supplies the far end's MAC and both IPv4 addresses.
TEST_F(RealDevice, AfPacketFramesCarryTheInterfaceAndTestbedAddresses) {
  if (!up_) return;
  auto dev = make_device("afpacket:" + cfg_.host_if);
  const FrameSpec defaults;
  FrameSpec spec;
  dev->address_frames(spec);
  EXPECT_EQ(spec.src_mac, info_.host_mac);
  EXPECT_EQ(spec.dst_mac, defaults.dst_mac);
  EXPECT_EQ(spec.dst_ip, defaults.dst_ip);
  EXPECT_EQ(link_interface(*dev), cfg_.host_if);
  ASSERT_TRUE(address_to_testbed(spec, link_interface(*dev)));
  EXPECT_EQ(spec.src_mac, info_.host_mac);
  EXPECT_EQ(spec.dst_mac, info_.peer_mac);
  EXPECT_EQ(spec.src_ip, info_.host_ip);
  EXPECT_EQ(spec.dst_ip, info_.peer_ip);
  // An interface that carries no testbed of ours leaves the frames as they were.
  FrameSpec other;
  EXPECT_FALSE(address_to_testbed(other, "lo"));
  EXPECT_EQ(other.dst_mac, defaults.dst_mac);
  EXPECT_EQ(other.src_ip, defaults.src_ip);
}

TEST_F(RealDevice, AfPacketRingFullStopsTheQueueAndCompletionWakesIt) {
  if (!up_) return;
  auto dev = make_device("afpacket:" + cfg_.host_if + ",ring=8");
  DirectFrames frame(*dev, cfg_.host_if);
  frame.count_wakes(*dev);
  auto s = sink();
  {
    std::lock_guard lock(dev->tx_lock());
    // Seven frames with xmit_more: written into the ring, not yet announced to the kernel.
    for (uint64_t i = 0; i < 7; ++i) ASSERT_EQ(dev->xmit(frame(i), true), XmitResult::ok);
    EXPECT_FALSE(dev->stopped());
    EXPECT_EQ(dev->stats().doorbells, 0u);
    // The eighth fills the ring: the driver stops the queue and rings the doorbell itself.
    // (The kernel may complete the frames inside that very kick — veth delivers in the
    // sender's softirq — and then the reap right after it wakes the queue again.)
    ASSERT_EQ(dev->xmit(frame(7), true), XmitResult::ok);
    EXPECT_EQ(dev->stats().stops, 1u);
    EXPECT_EQ(dev->stats().doorbells, 1u);
    EXPECT_EQ(dev->stopped() ? 0 : 1, frame.wakes.load());
  }
  // Completion (the kernel marks the frames AVAILABLE) reaped by poll() wakes the queue.
  for (int i = 0; i < 10'000 && dev->stopped(); ++i) {
    dev->poll();
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_FALSE(dev->stopped());
  EXPECT_EQ(frame.wakes.load(), 1);
  {
    std::lock_guard lock(dev->tx_lock());
    ASSERT_EQ(dev->xmit(frame(8), false), XmitResult::ok);
  }
  EXPECT_TRUE(s->wait_for(9, 2s, 20s));
  const SinkReport r = s->report();
  EXPECT_EQ(r.received, 9u);
  EXPECT_EQ(r.out_of_order, 0u);
  EXPECT_EQ(frame.pool.free_count(), 64u) << "every buffer returned at the doorbell";
}

// Inline, the doorbell's own kick drops the waiting frames at once; kick=thread, the kicker's
// kick does, a moment later.
TEST_F(RealDevice, AfPacketLinkDownDropsWaitingFramesAsTxErrors) {
  if (!up_) return;
  for (const std::string kick : {"", ",kick=thread"}) {
    SCOPED_TRACE("afpacket" + kick);
    auto dev = make_device("afpacket:" + cfg_.host_if + kick);
    DirectFrames frame(*dev, cfg_.host_if);
    ASSERT_EQ(std::system(("ip link set dev " + cfg_.host_if + " down").c_str()), 0);
    {
      std::lock_guard lock(dev->tx_lock());
      for (uint64_t i = 0; i < 5; ++i) ASSERT_EQ(dev->xmit(frame(i), i < 4), XmitResult::ok);
    }
    if (!kick.empty()) {
      for (int i = 0; i < 20'000 && dev->stats().tx_errors < 5; ++i)
        std::this_thread::sleep_for(100us);
    }
    const DeviceStats st = dev->stats();
    EXPECT_EQ(st.tx_packets, 5u) << "accepted: sent, as far as the queue is concerned";
    EXPECT_EQ(st.tx_errors, 5u) << "and dropped by the device on the dead link";
    dev->poll();
    EXPECT_EQ(dev->in_flight(), 0u) << "nothing waits for the link";
    EXPECT_EQ(frame.pool.free_count(), 64u);
    ASSERT_EQ(std::system(("ip link set dev " + cfg_.host_if + " up").c_str()), 0);
  }
}

// kick=thread: the queue's kicker thread makes every kick; each buffer goes back when the
// kernel completed its frame (not at the doorbell), and a queue stopped for a full ring wakes
// without anyone calling poll().
TEST_F(RealDevice, AfPacketKickThreadReturnsBuffersAtCompletionAndWakesAFullRing) {
  if (!up_) return;
  auto dev = make_device("afpacket:" + cfg_.host_if + ",ring=8,kick=thread");
  DirectFrames frame(*dev, cfg_.host_if);
  frame.count_wakes(*dev);
  auto s = sink();
  {
    std::lock_guard lock(dev->tx_lock());
    for (uint64_t i = 0; i < 7; ++i) ASSERT_EQ(dev->xmit(frame(i), true), XmitResult::ok);
    EXPECT_EQ(frame.pool.free_count(), 57u) << "seven buffers in the ring, none announced";
    // The eighth fills the ring: the queue stops and the doorbell wakes the kicker (xmit()'s own
    // reap may already find the frames completed, if the kick was that quick, and wake it).
    ASSERT_EQ(dev->xmit(frame(7), true), XmitResult::ok);
    EXPECT_EQ(dev->stats().doorbells, 1u);
    EXPECT_EQ(dev->stats().stops, 1u);
  }
  // Nobody polls: the kicker reaps after its kick, returns the buffers and wakes the queue.
  for (int i = 0; i < 20'000 && (dev->stopped() || frame.pool.free_count() < 64); ++i)
    std::this_thread::sleep_for(100us);
  EXPECT_FALSE(dev->stopped());
  EXPECT_EQ(frame.wakes.load(), 1) << "the stop is undone once, by a reap (xmit's own or the kicker's)";
  EXPECT_EQ(frame.pool.free_count(), 64u) << "every buffer returned at its frame's completion";
  EXPECT_EQ(dev->in_flight(), 0u);
  EXPECT_TRUE(s->wait_for(8, 2s, 20s));
  const SinkReport r = s->report();
  EXPECT_EQ(r.received, 8u);
  EXPECT_EQ(r.out_of_order, 0u);
  // The destructor sends what was copied but not announced, with the kicker already stopped.
  {
    std::lock_guard lock(dev->tx_lock());
    ASSERT_EQ(dev->xmit(frame(8), true), XmitResult::ok);
  }
  dev.reset();
  EXPECT_EQ(frame.pool.free_count(), 64u);
  EXPECT_TRUE(s->wait_for(9, 2s, 20s));
  // Doorbells rung just before teardown: the kicker may be told to stop before it kicks them,
  // and then the destructor's own kick sends what waits.
  for (int round = 0; round < 20; ++round) {
    auto again = make_device("afpacket:" + cfg_.host_if + ",kick=thread");
    {
      std::lock_guard lock(again->tx_lock());
      ASSERT_EQ(again->xmit(frame(9 + static_cast<uint64_t>(round)), false), XmitResult::ok);
    }
  }
  EXPECT_EQ(frame.pool.free_count(), 64u);
  EXPECT_TRUE(s->wait_for(29, 2s, 20s));
  EXPECT_EQ(s->report().received, 29u);
  EXPECT_EQ(s->report().out_of_order, 0u);
}

TEST_F(RealDevice, AfPacketThroughTheKernelQdiscWithBypassOff) {
  if (!up_) return;
  auto s = sink();
  auto dev = make_device("afpacket:" + cfg_.host_if + ",bypass=0");
  EXPECT_EQ(dev->describe(), "afpacket:" + cfg_.host_if + ",bypass=0");
  const TxQueueStats st = send_through(*dev, "busylock", 2, 200);
  EXPECT_EQ(st.sent, 400u);
  expect_all_arrived(*s, 2, 200);
}

TEST_F(RealDevice, UdpFramesArriveOnceInOrder) {
  if (!up_) return;
  auto s = sink();
  const std::string spec = "udp:" + bench_detail::ipv4_text(info_.peer_ip) + ":9000";
  for (const std::string strategy : {"busylock", "drainer"}) {
    s->reset();
    auto dev = make_device(spec);
    EXPECT_EQ(dev->describe(), spec);
    const TxQueueStats st = send_through(*dev, strategy, 3, 200);
    EXPECT_EQ(st.sent, 600u);
    EXPECT_EQ(st.device.tx_errors, 0u);
    SCOPED_TRACE(strategy);
    // The kernel writes its own headers (IP id, UDP checksum): the sink parses what arrives,
    // the byte count is the kernel's frame, the same length as ours.
    expect_all_arrived(*s, 3, 200);
  }
}

TEST_F(RealDevice, BenchKernelRowRunsBesideTxpathAndTheSinkChecksEveryRow) {
  if (!up_) return;
  BenchConfig cfg;
  cfg.strategies = {"floor", "busylock", "drainer"};
  cfg.threads = {2};
  cfg.duration_s = 0.05;
  cfg.repeat = 1;
  cfg.device = "afpacket:" + cfg_.host_if;
  const auto points = run_bench(cfg);
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points[0].strategy, kFloorStrategy) << "the floor row is checked at the sink too";
  EXPECT_EQ(points[3].strategy, kKernelStrategy);
  for (const auto& p : points) {
    SCOPED_TRACE(p.strategy);
    EXPECT_TRUE(p.conserved);
    EXPECT_TRUE(p.sink_checked);
    EXPECT_GT(p.sent, 0u);
    EXPECT_GT(p.sink_received, 0u);
    EXPECT_LE(p.sink_received, p.sent);
    EXPECT_EQ(p.sink_received + p.sink_lost, p.sent);
    EXPECT_EQ(p.sink_duplicated, 0u);
    // The kernel's own path may reorder across the veth (see BenchPoint::delivered); ours not.
    if (p.strategy != kKernelStrategy) EXPECT_EQ(p.sink_out_of_order, 0u);
    EXPECT_TRUE(p.delivered);
    EXPECT_GT(p.vs_kernel_mpps, 0);
    EXPECT_GT(p.vs_floor_cpu, 0);
  }
  EXPECT_DOUBLE_EQ(points[3].vs_kernel_mpps, 1.0);
}

// The floor row on the other real devices (afxdp, udp, tun) and on two afpacket TX queues: it
// conserves, and what it sent arrives once and in order per sender.
TEST_F(RealDevice, BenchFloorRowOnEveryRealDeviceArrivesAtTheSink) {
  if (!up_) return;
  const std::string tun = "txpt" + std::to_string(::getpid() % 100000);
  for (const std::string& device :
       std::vector<std::string>{"afxdp:" + cfg_.host_if, "udp:" + bench_detail::ipv4_text(info_.peer_ip) + ":9000",
                                "afpacket:" + cfg_.host_if + ",queues=2", "tun:" + tun}) {
    SCOPED_TRACE(device);
    BenchConfig cfg;
    cfg.strategies = {"floor"};
    cfg.threads = {2};
    cfg.duration_s = 0.05;
    cfg.repeat = 1;
    cfg.device = device;
    // The testbed's peer (auto finds it for udp only on the default testbed); nothing reads the
    // TUN: there the row only conserves.
    cfg.sink = device.starts_with("tun:") ? "none" : cfg_.peer_if + "@" + cfg_.netns;
    const auto points = run_bench(cfg);
    ASSERT_FALSE(points.empty());
    const BenchPoint& p = points[0];
    EXPECT_EQ(p.strategy, kFloorStrategy);
    EXPECT_TRUE(p.conserved);
    EXPECT_TRUE(p.drained);
    EXPECT_GT(p.sent, 0u);
    if (device.starts_with("tun:")) continue;
    EXPECT_TRUE(p.sink_checked);
    EXPECT_EQ(p.sink_duplicated, 0u);
    EXPECT_EQ(p.sink_out_of_order, 0u);
    EXPECT_EQ(p.sink_received + p.sink_lost, p.sent);
    EXPECT_GT(p.sink_received, 0u);
    EXPECT_TRUE(p.delivered);
  }
}

TEST_F(RealDevice, BenchNamesKernelRowWithoutTestbedAsAnError) {
  if (!up_) return;
  BenchConfig cfg;
  cfg.strategies = {"kernel"};
  cfg.threads = {1};
  cfg.device = "null";
  EXPECT_THROW(resolve_bench_config(cfg), ConfigError);
  // A real Ethernet device, but no testbed on it to send to.
  const std::string dummy = "rd" + std::to_string(::getpid() % 100000) + "d";
  ASSERT_EQ(std::system(("ip link add " + dummy + " type veth peer name " + dummy + "x").c_str()), 0);
  cfg.device = "afpacket:" + dummy;
  try {
    resolve_bench_config(cfg);
    ADD_FAILURE() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no testbed on " + dummy), std::string::npos) << e.what();
  }
  // Without naming it, the kernel row is simply not added there.
  cfg.strategies = {"busylock"};
  EXPECT_EQ(resolve_bench_config(cfg).strategies, std::vector<std::string>{"busylock"});
  std::system(("ip link del " + dummy).c_str());
}

// --- without root -----------------------------------------------------------------------------

TEST(RealDeviceErrors, MissingInterfaceIsOneLineNamingDeviceAndCause) {
  for (const std::string spec : {"afpacket:nosuch0", "tun:"}) {
    try {
      make_device(spec);
      ADD_FAILURE() << spec;
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos);
      EXPECT_EQ(what.rfind("device '" + spec + "'", 0), 0u) << what;
    }
  }
  if (::geteuid() == 0) {
    try {
      make_device("afpacket:nosuch0");
    } catch (const DeviceError& e) {
      EXPECT_NE(std::string(e.what()).find("no such interface 'nosuch0'"), std::string::npos)
          << e.what();
    }
  }
}

TEST(RealDeviceErrors, BadSpecsAreConfigErrors) {
  for (const std::string spec :
       {"afpacket:", "afpacket:lo,ring=3", "afpacket:lo,ring=7", "afpacket:lo,bypass=2",
        "afpacket:lo,kick=maybe", "afpacket:lo,color=1", "afpacket:this-name-is-far-too-long",
        "udp:", "udp:10.0.0.1",
        "udp:10.0.0.1:0", "udp:10.0.0.1:70000", "udp::9000", "udp:[::1:9000", "udp:10.0.0.1:9,batch=0",
        "udp:10.0.0.1:9,depth=3"}) {
    test::expect_spec_error([](const std::string& s) { make_device(s); }, spec);
  }
}

// udp over loopback needs no privilege: a receiving socket checks payloads and order.
TEST(UdpDevice, LoopbackPayloadsArriveInOrderAndBuffersReturn) {
  const test::UdpReceiver receiver;
  const netif::Fd& rx = receiver.fd;
  const uint16_t port = receiver.port;

  auto dev = make_device("udp:127.0.0.1:" + std::to_string(port) + ",batch=16");
  EXPECT_EQ(dev->describe(), "udp:127.0.0.1:" + std::to_string(port) + ",batch=16");
  FrameSpec spec;
  spec.payload = 100;
  dev->address_frames(spec);
  EXPECT_EQ(spec.dst_port, port);
  EXPECT_EQ(spec.dst_ip, INADDR_LOOPBACK);
  const FrameTemplate tmpl(spec);
  Pool pool(PoolConfig{.packets = 1024, .buffer_size = 2048, .cache_size = 0});
  constexpr uint64_t kFrames = 300;  // well within the receive buffer
  {
    auto q = TxQueue::create(*dev, {.strategy = "busylock", .qdisc = "pfifo limit 10000"});
    for (uint64_t i = 0; i < kFrames; ++i) {
      Packet* p = pool.get();
      ASSERT_NE(p, nullptr);
      p->len = static_cast<uint32_t>(tmpl.write(p->buffer(), 7, i));
      ASSERT_EQ(q->send(p), SendStatus::queued);
    }
    ASSERT_TRUE(q->drain(10s));
    EXPECT_EQ(q->stats().sent, kFrames);
  }
  std::vector<std::byte> want(tmpl.size()), got(4096);
  for (uint64_t i = 0; i < kFrames; ++i) {
    const ssize_t n = ::recv(rx.get(), got.data(), got.size(), 0);
    ASSERT_EQ(n, static_cast<ssize_t>(spec.payload)) << "datagram " << i;
    tmpl.write(want, 7, i);
    ASSERT_EQ(std::memcmp(got.data(), want.data() + kHeadersLen, spec.payload), 0)
        << "datagram " << i << " is not payload " << i;
  }
  EXPECT_EQ(dev->stats().completed, kFrames);
  EXPECT_EQ(pool.free_count(), 1024u);
}

}  // namespace
