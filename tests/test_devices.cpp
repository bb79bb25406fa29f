// SPDX-License-Identifier: MIT
// Devices: null, the modelled nic, the fault injector, and the --device spec registry.
//
// Nothing here asserts on timing. Where a test needs completions it waits in a bounded loop of
// poll() + sleep; where it needs completions NOT to happen it uses a wire so slow (10 kbit/s:
// ~1.2 s per 1500-byte frame) that none can be due during the test.
#include <gtest/gtest.h>

#include "support/scripted_device.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.hpp"
#include "device/fault_device.hpp"
#include "device/nic_device.hpp"
#include "device/null_device.hpp"
#include "txpath/device.hpp"
#include "txpath/error.hpp"
#include "txpath/frame.hpp"
#include "txpath/pool.hpp"

using namespace txpath;
using namespace std::chrono_literals;

namespace {

// A pool plus a frame factory: hands out packets carrying real frames.
struct Frames {
  explicit Frames(std::size_t packets = 256, std::size_t payload = 64)
      : pool(PoolConfig{.packets = packets, .buffer_size = 2048, .cache_size = 8}),
        factory(pool, payload) {}

  Packet* make(uint32_t sender, uint64_t seq, uint32_t priority = 0) {
    return factory.make(sender, seq, priority);
  }

  Pool pool;
  test::FrameFactory factory;
};

// Polls until `done()` or ~10 s; returns whether `done()` became true.
template <class Pred>
bool poll_until(Device& dev, Pred done) {
  for (int i = 0; i < 50'000; ++i) {
    dev.poll();
    if (done()) return true;
    std::this_thread::sleep_for(200us);
  }
  return done();
}

XmitResult xmit_locked(Device& dev, Packet* p, bool more) {
  std::lock_guard lock(dev.tx_lock());
  return dev.xmit(p, more);
}

NicConfig quiet_nic(uint32_t ring, bool bql) {
  // No CPU cost (fast tests); 10 Gbit/s wire.
  return NicConfig{.pkt_ns = 0, .doorbell_ns = 0, .ring = ring, .rate_gbit = 10.0,
                   .clean_batch = std::min<uint32_t>(32, ring), .bql = bql};
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// null

TEST(NullDevice, CompletesAtDoorbellAndReturnsBuffers) {
  Frames fr(64);
  NullDevice dev;
  EXPECT_EQ(dev.kind(), "null");
  EXPECT_EQ(dev.describe(), "null");
  EXPECT_EQ(dev.dql(), nullptr);
  uint64_t bytes = 0;
  for (int i = 0; i < 10; ++i) {
    Packet* p = fr.make(0, i);
    bytes += p->len;
    ASSERT_EQ(xmit_locked(dev, p, i != 9), XmitResult::ok);
    if (i < 9) {
      EXPECT_EQ(fr.pool.free_count(), fr.pool.capacity() - (i + 1));
      EXPECT_EQ(dev.in_flight(), uint64_t(i + 1));
    }
  }
  EXPECT_EQ(fr.pool.free_count(), fr.pool.capacity());
  EXPECT_EQ(dev.in_flight(), 0u);
  const auto s = dev.stats();
  EXPECT_EQ(s.tx_packets, 10u);
  EXPECT_EQ(s.tx_bytes, bytes);
  EXPECT_EQ(s.doorbells, 1u);
  EXPECT_EQ(s.completed, 10u);
  EXPECT_EQ(s.busy, 0u);
  EXPECT_EQ(s.stops, 0u);
  EXPECT_FALSE(dev.stopped());
}

TEST(NullDevice, DestructorReturnsUnannouncedPackets) {
  Frames fr(16);
  {
    NullDevice dev;
    for (int i = 0; i < 5; ++i) ASSERT_EQ(xmit_locked(dev, fr.make(0, i), true), XmitResult::ok);
    EXPECT_EQ(fr.pool.free_count(), fr.pool.capacity() - 5);
  }
  EXPECT_EQ(fr.pool.free_count(), fr.pool.capacity());
}

// ---------------------------------------------------------------------------------------------
// nic

TEST(NicDevice, DefaultsAndDescribe) {
  NicDevice dev;
  EXPECT_EQ(dev.kind(), "nic");
  EXPECT_EQ(dev.describe(), "nic:pkt=20,doorbell=200,ring=512,rate=10");
  EXPECT_NE(dev.dql(), nullptr);
  EXPECT_DOUBLE_EQ(dev.wire_ns(60), 67.2);   // 14.88 Mpps at 10G
  EXPECT_DOUBLE_EQ(dev.wire_ns(10), 67.2);   // padded to the minimum frame
  EXPECT_DOUBLE_EQ(dev.wire_ns(1514), 1230.4);
  EXPECT_EQ(dev.next_poll_ns(), 0u);
  EXPECT_EQ(dev.in_flight(), 0u);
}

TEST(NicDevice, RejectsBadConfig) {
  EXPECT_THROW(NicDevice(NicConfig{.ring = 3}), ConfigError);
  EXPECT_THROW(NicDevice(NicConfig{.ring = 1}), ConfigError);
  EXPECT_THROW(NicDevice(NicConfig{.rate_gbit = 0}), ConfigError);
  EXPECT_THROW(NicDevice(NicConfig{.ring = 8, .clean_batch = 9}), ConfigError);
  EXPECT_THROW(NicDevice(NicConfig{.clean_batch = 0}), ConfigError);
}

TEST(NicDevice, RingFullGivesBusyAndStops) {
  Frames fr(32, 1400);
  // 10 kbit/s: nothing can complete during the test; clean only when the whole ring is due.
  NicDevice dev(NicConfig{.pkt_ns = 0, .doorbell_ns = 0, .ring = 8, .rate_gbit = 1e-5,
                          .clean_batch = 8, .bql = false});
  for (int i = 0; i < 7; ++i) {
    ASSERT_EQ(xmit_locked(dev, fr.make(0, i), true), XmitResult::ok);
    EXPECT_FALSE(dev.stopped());
  }
  EXPECT_EQ(dev.stats().doorbells, 0u);  // all pending (xmit_more)
  EXPECT_EQ(dev.next_poll_ns(), 0u);     // nothing visible to the hardware yet
  EXPECT_EQ(dev.in_flight(), 7u);
  // The 8th fills the ring: the driver stops the queue and rings the doorbell for the batch.
  ASSERT_EQ(xmit_locked(dev, fr.make(0, 7), true), XmitResult::ok);
  EXPECT_TRUE(dev.stopped());
  EXPECT_EQ(dev.stats().doorbells, 1u);
  EXPECT_NE(dev.next_poll_ns(), 0u);
  // A call anyway: busy, the packet stays ours.
  Packet* extra = fr.make(0, 8);
  EXPECT_EQ(xmit_locked(dev, extra, false), XmitResult::busy);
  EXPECT_TRUE(dev.stopped());
  const auto s = dev.stats();
  EXPECT_EQ(s.busy, 1u);
  EXPECT_EQ(s.tx_packets, 8u);
  EXPECT_EQ(s.doorbells, 1u);  // nothing was pending at the busy answer
  EXPECT_EQ(s.stops, 1u);
  EXPECT_EQ(s.wakes, 0u);
  EXPECT_EQ(dev.in_flight(), 8u);
  dev.poll();  // nothing is due for seconds
  EXPECT_TRUE(dev.stopped());
  EXPECT_EQ(dev.in_flight(), 8u);
  fr.pool.put(extra);
}

TEST(NicDevice, PollAfterCompletionWakesQueue) {
  Frames fr(32);
  NicDevice dev(NicConfig{.pkt_ns = 0, .doorbell_ns = 0, .ring = 8, .rate_gbit = 10,
                          .clean_batch = 8, .bql = false});
  std::atomic<int> wakes{0};
  // relaxed: a test counter, read on this thread after poll() called the handler.
  dev.set_wake_handler([&] { wakes.fetch_add(1, std::memory_order_relaxed); });
  for (int i = 0; i < 8; ++i) ASSERT_EQ(xmit_locked(dev, fr.make(0, i), true), XmitResult::ok);
  ASSERT_TRUE(dev.stopped());
  // The queue wakes once ring/4 = 2 descriptors are free again, possibly before all are done.
  ASSERT_TRUE(poll_until(dev, [&] { return !dev.stopped(); }));
  EXPECT_EQ(wakes.load(std::memory_order_relaxed), 1);  // relaxed: same thread
  EXPECT_GE(8 - dev.in_flight(), 2u);
  ASSERT_TRUE(poll_until(dev, [&] { return dev.in_flight() == 0; }));
  EXPECT_EQ(wakes.load(std::memory_order_relaxed), 1);  // relaxed: same thread
  EXPECT_EQ(dev.next_poll_ns(), 0u);
  const auto s = dev.stats();
  EXPECT_EQ(s.completed, 8u);
  EXPECT_EQ(s.stops, 1u);
  EXPECT_EQ(s.wakes, 1u);
  EXPECT_EQ(fr.pool.free_count(), fr.pool.capacity());
}

TEST(NicDevice, BqlStopsQueueOverLimitAndCompletionWakesIt) {
  Frames fr(64);
  NicDevice dev(quiet_nic(64, true));
  ASSERT_NE(dev.dql(), nullptr);
  std::atomic<int> wakes{0};
  // relaxed: a test counter, read on this thread after poll() called the handler.
  dev.set_wake_handler([&] { wakes.fetch_add(1, std::memory_order_relaxed); });
  EXPECT_EQ(dev.tx_budget_bytes(), 0);  // limit starts at 0, yet the first packet may go
  Packet* p = fr.make(0, 0);
  const uint32_t len = p->len;
  // more == true, but BQL stops the queue: the device must ring the doorbell anyway.
  ASSERT_EQ(xmit_locked(dev, p, true), XmitResult::ok);
  EXPECT_TRUE(dev.stopped());
  EXPECT_LT(dev.tx_budget_bytes(), 0);
  EXPECT_EQ(dev.stats().doorbells, 1u);
  EXPECT_EQ(dev.stats().stops, 1u);
  EXPECT_NE(dev.next_poll_ns(), 0u);

  ASSERT_TRUE(poll_until(dev, [&] { return !dev.stopped(); }));
  EXPECT_EQ(wakes.load(std::memory_order_relaxed), 1);  // relaxed: same thread
  EXPECT_GE(dev.dql()->limit(), len);                   // starved -> grew
  EXPECT_GE(dev.tx_budget_bytes(), 0);

  // Now several packets fit before BQL stops the queue again.
  int sent = 0;
  while (!dev.stopped() && sent < 64) {
    ASSERT_EQ(xmit_locked(dev, fr.make(0, 1 + sent), true), XmitResult::ok);
    ++sent;
  }
  EXPECT_TRUE(dev.stopped());
  EXPECT_GE(sent, 1);
  ASSERT_TRUE(poll_until(dev, [&] { return dev.in_flight() == 0; }));
  EXPECT_FALSE(dev.stopped());
  const auto s = dev.stats();
  EXPECT_EQ(s.stops, s.wakes);
  EXPECT_EQ(s.completed, s.tx_packets);
  EXPECT_EQ(fr.pool.free_count(), fr.pool.capacity());
}

TEST(NicDevice, DoorbellPerBatch) {
  Frames fr(256);
  NicDevice dev(quiet_nic(512, false));
  const std::vector<int> batches = {1, 5, 10, 3, 32, 1, 1, 17, 30};
  uint64_t seq = 0;
  for (int n : batches) {
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(xmit_locked(dev, fr.make(0, seq++), i != n - 1), XmitResult::ok);
    }
  }
  EXPECT_EQ(dev.stats().doorbells, batches.size());
  EXPECT_EQ(dev.stats().busy, 0u);
  ASSERT_TRUE(poll_until(dev, [&] { return dev.in_flight() == 0; }));
  EXPECT_EQ(dev.stats().completed, seq);
  EXPECT_EQ(fr.pool.free_count(), fr.pool.capacity());
}

TEST(NicDevice, InFlightAndNextPollConsistent) {
  Frames fr(16);
  NicDevice dev(quiet_nic(64, false));
  ASSERT_EQ(xmit_locked(dev, fr.make(0, 0), true), XmitResult::ok);
  EXPECT_EQ(dev.in_flight(), 1u);
  EXPECT_EQ(dev.next_poll_ns(), 0u);  // accepted but unannounced: the hardware has nothing
  ASSERT_EQ(xmit_locked(dev, fr.make(0, 1), false), XmitResult::ok);
  EXPECT_EQ(dev.in_flight(), 2u);
  EXPECT_NE(dev.next_poll_ns(), 0u);
  ASSERT_TRUE(poll_until(dev, [&] { return dev.in_flight() == 0; }));
  EXPECT_EQ(dev.next_poll_ns(), 0u);
  EXPECT_EQ(dev.stats().completed, 2u);
  EXPECT_EQ(fr.pool.free_count(), fr.pool.capacity());
}

TEST(NicDevice, CleansOnXmitInBatches) {
  for (const uint32_t clean : {4u, 16u}) {
    Frames fr(256);
    NicDevice dev(NicConfig{.pkt_ns = 0, .doorbell_ns = 0, .ring = 64, .rate_gbit = 10,
                            .clean_batch = clean, .bql = false});
    // One batch of 8, one doorbell: nothing can be cleaned while it is being written.
    for (int i = 0; i < 8; ++i) {
      ASSERT_EQ(xmit_locked(dev, fr.make(0, i), i != 7), XmitResult::ok);
    }
    // Wait (without polling) until all 8 are surely due: their completion times were fixed at
    // the doorbell, and the last is 8 wire times (< 1 us) after the first.
    const uint64_t first_due = dev.next_poll_ns();
    ASSERT_NE(first_due, 0u);
    while (now_ns() < first_due + 1'000'000) std::this_thread::sleep_for(100us);
    ASSERT_EQ(xmit_locked(dev, fr.make(0, 8), false), XmitResult::ok);
    if (clean <= 8) {
      EXPECT_EQ(dev.stats().completed, 8u);  // a full batch was due: reaped on xmit
      EXPECT_EQ(dev.in_flight(), 1u);
    } else {
      EXPECT_EQ(dev.stats().completed, 0u);  // fewer than clean_batch: left for poll()
      EXPECT_EQ(dev.in_flight(), 9u);
    }
    ASSERT_TRUE(poll_until(dev, [&] { return dev.in_flight() == 0; }));
    EXPECT_EQ(fr.pool.free_count(), fr.pool.capacity());
  }
}

TEST(NicDevice, CompletionInterruptIsModerated) {
  Frames fr(64);
  NicDevice dev(NicConfig{.pkt_ns = 0, .doorbell_ns = 0, .ring = 64, .rate_gbit = 10,
                          .clean_batch = 32, .bql = false, .irq_ns = 5'000'000});
  ASSERT_EQ(xmit_locked(dev, fr.make(0, 0), false), XmitResult::ok);
  const uint64_t before_clean = now_ns();
  dev.poll();  // a clean (probably too early to reap anything, which does not matter)
  ASSERT_EQ(xmit_locked(dev, fr.make(0, 1), false), XmitResult::ok);
  // The next completion interrupt is at least irq_ns after that clean, though the frames are
  // due within a microsecond.
  EXPECT_GE(dev.next_poll_ns(), before_clean + 5'000'000);
  ASSERT_TRUE(poll_until(dev, [&] { return dev.in_flight() == 0; }));
}

TEST(NicDevice, ConcurrentXmitAndPoll) {
  // The driver-loop side and the completion side on two threads, as in a TxQueue.
  Frames fr(128, 100);
  NicDevice dev(NicConfig{.pkt_ns = 0, .doorbell_ns = 0, .ring = 32, .rate_gbit = 10,
                          .clean_batch = 8, .bql = true});
  std::atomic<uint64_t> wakes{0};
  // relaxed: a statistic; the join below orders it for the final read.
  dev.set_wake_handler([&] { wakes.fetch_add(1, std::memory_order_relaxed); });
  std::atomic<bool> stop{false};
  std::thread poller([&] {
    // acquire: pairs with the release store after the sending loop (just a stop flag).
    while (!stop.load(std::memory_order_acquire)) {
      dev.poll();
      std::this_thread::yield();
    }
  });
  constexpr uint64_t kPackets = 20'000;
  uint64_t seq = 0;
  Packet* held = nullptr;
  int batch = 0;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (seq < kPackets && std::chrono::steady_clock::now() < deadline) {
    if (!held) held = fr.make(0, seq);
    if (!held) {  // pool exhausted: completions will refill it
      std::this_thread::yield();
      continue;
    }
    std::unique_lock lock(dev.tx_lock());
    if (dev.stopped()) {
      lock.unlock();
      std::this_thread::yield();
      continue;
    }
    const bool more = (++batch % 8) != 0 && seq + 1 < kPackets;
    if (dev.xmit(held, more) == XmitResult::ok) {
      held = nullptr;
      ++seq;
    }
  }
  ASSERT_EQ(seq, kPackets);
  // Wait for all completions while the poller keeps running.
  for (int i = 0; i < 50'000 && dev.in_flight() != 0; ++i) std::this_thread::sleep_for(200us);
  stop.store(true, std::memory_order_release);  // release: pairs with the poller's acquire
  poller.join();
  dev.poll();
  EXPECT_EQ(dev.in_flight(), 0u);
  const auto s = dev.stats();
  EXPECT_EQ(s.tx_packets, kPackets);
  EXPECT_EQ(s.completed, kPackets);
  EXPECT_EQ(s.stops, s.wakes + (dev.stopped() ? 1 : 0));
  EXPECT_EQ(s.wakes, wakes.load(std::memory_order_relaxed));  // relaxed: after join
  EXPECT_EQ(fr.pool.free_count(), fr.pool.capacity());
}

TEST(NicDevice, DestructorReturnsRingContents) {
  Frames fr(16);
  {
    NicDevice dev(NicConfig{.pkt_ns = 0, .doorbell_ns = 0, .ring = 8, .rate_gbit = 1e-5,
                            .clean_batch = 8, .bql = false});
    for (int i = 0; i < 5; ++i) ASSERT_EQ(xmit_locked(dev, fr.make(0, i), i != 4), XmitResult::ok);
    ASSERT_EQ(xmit_locked(dev, fr.make(0, 5), true), XmitResult::ok);  // one left unannounced
  }
  EXPECT_EQ(fr.pool.free_count(), fr.pool.capacity());
}

// ---------------------------------------------------------------------------------------------
// fault

namespace {

// FaultConfig without designated initializers (it has a std::function member that
// -Wmissing-field-initializers would flag).
FaultConfig fault_cfg(double busy, double stop, uint64_t stop_ns = 200'000, uint64_t seed = 1) {
  FaultConfig c;
  c.busy_prob = busy;
  c.stop_prob = stop;
  c.max_stop_ns = stop_ns;
  c.seed = seed;
  return c;
}

// Drives a fault device with a fixed script and returns what it saw, one letter per call:
// 'o' ok, 'b' busy, upper case when the queue was stopped afterwards.
std::string run_script(uint64_t seed) {
  Frames fr(64);
  auto dev = std::make_unique<FaultDevice>(
      fault_cfg(0.2, 0.1, 0, seed));
  std::string trace;
  uint64_t seq = 0;
  Packet* held = nullptr;
  for (int i = 0; i < 2000; ++i) {
    if (dev->stopped()) dev->poll();  // wake time is "now + 0": always passed
    if (!held) held = fr.make(3, seq);
    const XmitResult r = xmit_locked(*dev, held, i % 4 != 3);
    if (r == XmitResult::ok) {
      held = nullptr;
      ++seq;
    }
    char c = r == XmitResult::ok ? 'o' : 'b';
    if (dev->stopped()) c = static_cast<char>(c - 'a' + 'A');
    trace += c;
  }
  EXPECT_EQ(dev->order_violations(), 0u);
  EXPECT_EQ(dev->unparsable(), 0u);
  EXPECT_EQ(dev->sent_by(3), seq);
  EXPECT_EQ(dev->stats().tx_packets, seq);
  if (held) fr.pool.put(held);
  dev.reset();  // returns unannounced packets before the pool goes
  EXPECT_EQ(fr.pool.free_count(), fr.pool.capacity());
  return trace;
}

}  // namespace

TEST(FaultDevice, DeterministicPerSeed) {
  const std::string a = run_script(42);
  const std::string b = run_script(42);
  const std::string c = run_script(43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // The script exercised every outcome.
  EXPECT_NE(a.find('o'), std::string::npos);
  EXPECT_NE(a.find('b'), std::string::npos);
  EXPECT_NE(a.find('O'), std::string::npos);
  EXPECT_NE(a.find('B'), std::string::npos);
}

TEST(FaultDevice, DetectsReorderAndDuplicate) {
  Frames fr(64);
  FaultDevice dev(fault_cfg(0, 0));
  for (uint64_t seq : {0, 1, 3, 2, 2, 4}) {
    ASSERT_EQ(xmit_locked(dev, fr.make(7, seq), false), XmitResult::ok);
  }
  EXPECT_EQ(dev.order_violations(), 2u);  // 2 after 3, then 2 again
  EXPECT_EQ(dev.sent_by(7), 6u);

  // Different priorities are different order keys: no violation across them.
  ASSERT_EQ(xmit_locked(dev, fr.make(8, 5, 1), false), XmitResult::ok);
  ASSERT_EQ(xmit_locked(dev, fr.make(8, 3, 2), false), XmitResult::ok);
  EXPECT_EQ(dev.order_violations(), 2u);

  // Garbage is counted, not checked.
  Packet* junk = fr.pool.get();
  junk->len = 10;
  ASSERT_EQ(xmit_locked(dev, junk, false), XmitResult::ok);
  EXPECT_EQ(dev.unparsable(), 1u);

  // Out-of-range sender: untracked.
  ASSERT_EQ(xmit_locked(dev, fr.make(FaultDevice::kMaxSenders, 0), false), XmitResult::ok);
  EXPECT_EQ(dev.untracked(), 1u);
  EXPECT_EQ(dev.sent_by(FaultDevice::kMaxSenders), 0u);

  EXPECT_EQ(dev.stats().completed, dev.stats().tx_packets);
  EXPECT_EQ(fr.pool.free_count(), fr.pool.capacity());
}

TEST(FaultDevice, CustomOrderKey) {
  Frames fr(16);
  FaultConfig cfg = fault_cfg(0, 0);
  cfg.order_key = [](const Packet&) { return 0u; };
  FaultDevice dev(std::move(cfg));
  ASSERT_EQ(xmit_locked(dev, fr.make(1, 5, 1), false), XmitResult::ok);
  ASSERT_EQ(xmit_locked(dev, fr.make(1, 3, 2), false), XmitResult::ok);
  EXPECT_EQ(dev.order_violations(), 1u);
}

TEST(FaultDevice, StopThenPollWakes) {
  Frames fr(16);
  FaultDevice dev(fault_cfg(0, 1.0, 1'000'000));
  std::atomic<int> wakes{0};
  // relaxed: a test counter, read on this thread after poll() called the handler.
  dev.set_wake_handler([&] { wakes.fetch_add(1, std::memory_order_relaxed); });
  EXPECT_EQ(dev.next_poll_ns(), 0u);
  ASSERT_EQ(xmit_locked(dev, fr.make(0, 0), true), XmitResult::ok);
  EXPECT_TRUE(dev.stopped());
  EXPECT_NE(dev.next_poll_ns(), 0u);
  // Stopping flushed the batch even though more == true.
  EXPECT_EQ(dev.stats().doorbells, 1u);
  EXPECT_EQ(dev.stats().completed, 1u);
  Packet* p = fr.make(0, 1);
  EXPECT_EQ(xmit_locked(dev, p, false), XmitResult::busy);  // stopped: busy
  ASSERT_TRUE(poll_until(dev, [&] { return !dev.stopped(); }));
  EXPECT_EQ(wakes.load(std::memory_order_relaxed), 1);  // relaxed: same thread
  EXPECT_EQ(dev.next_poll_ns(), 0u);
  EXPECT_EQ(dev.stats().stops, 1u);
  EXPECT_EQ(dev.stats().wakes, 1u);
  fr.pool.put(p);
  EXPECT_EQ(fr.pool.free_count(), fr.pool.capacity());
}

TEST(FaultDevice, BusyFlushesPending) {
  Frames fr(16);
  FaultDevice dev(fault_cfg(0, 0));
  ASSERT_EQ(xmit_locked(dev, fr.make(0, 0), true), XmitResult::ok);
  ASSERT_EQ(xmit_locked(dev, fr.make(0, 1), true), XmitResult::ok);
  EXPECT_EQ(dev.in_flight(), 2u);
  EXPECT_EQ(dev.stats().doorbells, 0u);
  FaultDevice busy(fault_cfg(1.0, 0));
  Packet* p = fr.make(0, 2);
  EXPECT_EQ(xmit_locked(busy, p, true), XmitResult::busy);
  EXPECT_EQ(busy.stats().busy, 1u);
  fr.pool.put(p);
  ASSERT_EQ(xmit_locked(dev, fr.make(0, 3), false), XmitResult::ok);
  EXPECT_EQ(dev.stats().doorbells, 1u);
  EXPECT_EQ(dev.in_flight(), 0u);
}

TEST(FaultDevice, RejectsBadProbabilities) {
  EXPECT_THROW(FaultDevice(fault_cfg(1.5, 0)), ConfigError);
  EXPECT_THROW(FaultDevice(fault_cfg(0, -0.1)), ConfigError);
}

// ---------------------------------------------------------------------------------------------
// registry

TEST(DeviceRegistry, BuildsEachKind) {
  auto n = make_device("null");
  EXPECT_EQ(n->kind(), "null");
  EXPECT_EQ(n->describe(), "null");
  EXPECT_EQ(n->mtu(), 1500u);

  auto nic = make_device("nic");
  EXPECT_EQ(nic->kind(), "nic");
  EXPECT_EQ(nic->describe(), "nic:pkt=20,doorbell=200,ring=512,rate=10");
  EXPECT_NE(nic->dql(), nullptr);

  auto f = make_device("fault");
  EXPECT_EQ(f->kind(), "fault");
  EXPECT_EQ(f->describe(), "fault:busy=0.05,stop=0.02,stop_ns=200000,seed=1");
  EXPECT_EQ(f->dql(), nullptr);
}

TEST(DeviceRegistry, OptionsInAnyOrderAndRoundTrip) {
  auto d = make_device("nic:rate=25,ring=1024,pkt=5,doorbell=100,clean=16");
  auto* nic = dynamic_cast<NicDevice*>(d.get());
  ASSERT_NE(nic, nullptr);
  EXPECT_EQ(nic->config().pkt_ns, 5u);
  EXPECT_EQ(nic->config().doorbell_ns, 100u);
  EXPECT_EQ(nic->config().ring, 1024u);
  EXPECT_DOUBLE_EQ(nic->config().rate_gbit, 25.0);
  EXPECT_EQ(nic->config().clean_batch, 16u);
  EXPECT_EQ(d->describe(), "nic:pkt=5,doorbell=100,ring=1024,rate=25,clean=16");

  for (const char* spec : {"nic:ring=64", "nic:rate=0.5,bql=0", "nic:rate=2.5,mtu=9000",
                           "nic:rate=1e-5", "null:mtu=9000", "fault:seed=7,busy=0.5,stop=0",
                           "fault:stop_ns=1000,busy=0,stop=1,mtu=1000"}) {
    auto a = make_device(spec);
    auto b = make_device(a->describe());
    EXPECT_EQ(a->describe(), b->describe()) << spec;
  }
  EXPECT_EQ(make_device("nic:bql=0")->dql(), nullptr);
  EXPECT_EQ(make_device("nic:mtu=9000")->mtu(), 9000u);
  EXPECT_EQ(make_device("fault:seed=7,busy=0.5,stop=0")->describe(),
            "fault:busy=0.5,stop=0,stop_ns=200000,seed=7");
}

TEST(DeviceRegistry, ErrorsAreOneLineAndNameTheSpec) {
  struct Case {
    std::string spec;
    std::string needle;  // must appear in the message
  };
  const std::vector<Case> cases = {
      {"", "missing device kind"},
      {":pkt=1", "missing device kind"},
      {"bogus", "unknown device kind 'bogus' (known: null, nic, fault, pcap, tun, afpacket, udp, afxdp)"},
      {"bogus:x=1", "unknown device kind"},
      {"NIC", "unknown device kind"},
      {"nic:", "empty option list"},
      {"null:", "empty option list"},
      {"nic:pkt", "not KEY=VALUE"},
      {"nic:pkt=", "bad number"},
      {"nic:pkt=abc", "bad number 'abc' for pkt"},
      {"nic:pkt=-1", "bad number"},
      {"nic:pkt=+1", "bad number"},
      {"nic:pkt=1.5", "bad number"},
      {"nic:pkt=12ns", "bad number"},
      {"nic:pkt=99999999999999999999999", "out of range"},
      {"nic:pkt=2000000000", "out of range"},
      {"nic:ring=3", "power of two"},
      {"nic:ring=1", "out of range"},
      {"nic:ring=0", "out of range"},
      {"nic:ring=4194304", "out of range"},
      {"nic:rate=0", "out of range"},
      {"nic:rate=-1", "out of range"},
      {"nic:rate=abc", "bad number"},
      {"nic:rate=nan", "bad number"},
      {"nic:rate=inf", "bad number"},
      {"nic:rate=10x", "bad number"},
      {"nic:clean=0", "out of range"},
      {"nic:ring=8,clean=16", "clean=16"},
      {"nic:bql=2", "out of range"},
      {"nic:mtu=67", "out of range"},
      {"nic:foo=1",
       "unknown key 'foo' for nic (known: pkt, doorbell, ring, rate, clean, bql, irq, mtu, queues, wire)"},
      {"nic:pkt=1,,doorbell=2", "empty option"},
      {"nic:pkt=1,", "empty option"},
      {"nic:=5", "unknown key ''"},
      {"nic:pkt=1,pkt=2", "given twice"},
      {"null:x=1", "unknown key 'x' for null"},
      {"fault:busy=1.5", "out of range"},
      {"fault:busy=-0.1", "out of range"},
      {"fault:stop=2", "out of range"},
      {"fault:busy=x", "bad number"},
      {"fault:seed=x", "bad number"},
      {"fault:seed=-3", "bad number"},
      {"fault:stop_ns=abc", "bad number"},
      {"fault:stop_ns=100000000000", "out of range"},
      {"fault:ring=8", "unknown key 'ring' for fault"},
      {"nic:pkt=1\nfoo=2", "bad number"},
      {std::string("nic:pkt=1\r"), "bad number"},
  };
  for (const auto& c : cases) {
    try {
      make_device(c.spec);
      ADD_FAILURE() << "no error for spec '" << c.spec << "'";
    } catch (const ConfigError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\r'), std::string::npos) << msg;
      EXPECT_EQ(msg.rfind("device '", 0), 0u) << msg;
      EXPECT_NE(msg.find(c.needle), std::string::npos)
          << "spec '" << c.spec << "': message '" << msg << "' lacks '" << c.needle << "'";
    }
  }
}

// Hostile specs: ESC, a byte that is not UTF-8, a 128 KiB option. One short line, no raw
// control byte, the user text escaped and cut (core/text.hpp).
TEST(DeviceSpec, HostileTextIsEscapedAndCut) {
  const std::string huge(128 * 1024, 'K');
  for (const std::string& spec : {std::string("nic:\x1b[2J=1"), std::string("nic:pkt=\xff"),
                                  "nic:" + huge + "=1", "nosuch" + huge, "afpacket:" + huge}) {
    try {
      make_device(spec);
      ADD_FAILURE() << "no error for a hostile spec";
    } catch (const ConfigError& e) {
      const std::string msg = e.what();
      EXPECT_LT(msg.size(), 1000u) << msg.substr(0, 300);
      for (const char c : msg) {
        const auto u = static_cast<unsigned char>(c);
        EXPECT_FALSE(u < 0x20 || u == 0x7f || u >= 0x80) << "raw byte " << int(u) << " in " << msg;
      }
    }
  }
}
