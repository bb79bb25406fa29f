// SPDX-License-Identifier: MIT
// The public API under hostile use (issue 31, class 13): what an application can hand the
// library by mistake or on purpose becomes a documented refusal at the API boundary
// (docs/library.md, "Refusals"), never a heap over-read, a hang or a crash.
//
//  * send()/send_burst() of nullptr, of a packet with no pool, of one whose len exceeds its
//    capacity: SendStatus::invalid, the caller keeps the packet, nothing is counted;
//  * the same packet twice (two send() calls, or twice in one burst): SendStatus::in_flight,
//    counted and sent once;
//  * a device's xmit() of a packet whose len exceeds its capacity (pcap, udp): counted as a tx
//    error, nothing read past the buffer, nothing written or sent;
//  * a QdiscEnv with an MTU outside 68..65536 or more TX queues than kMaxTxQueues: ConfigError
//    from make_qdisc(), never a quantum of 0 (a dequeue that spins) or a huge allocation;
//  * inspect_qdisc()/edit_qdisc()/consistent_stats() from inside their own callback: UsageError,
//    never a deadlock.
// Every case runs on every strategy where the strategy matters. On the starting commit these
// crash, hang (run them under `timeout`) or fail their checks; the ASan build sees the over-reads.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/udp_receiver.hpp"
#include "txpath/device.hpp"
#include "txpath/error.hpp"
#include "txpath/frame.hpp"
#include "txpath/multiqueue.hpp"
#include "txpath/netdev.hpp"
#include "txpath/pool.hpp"
#include "txpath/qdisc.hpp"
#include "txpath/traffic_classes.hpp"
#include "txpath/txqueue.hpp"

using namespace txpath;
using namespace std::chrono_literals;

// A named namespace: in a unity build this file shares a source with others' anonymous helpers.
namespace api_hostile {

// Fails the run if the test that makes it does not finish in time: the calls under test must
// never hang (before the fix, a packet twice in one burst spun forever in a cyclic list, and an
// inspect_qdisc() from its own callback deadlocked), and a hung test cannot report a failure
// itself. The bound is the contract "returns at all", not a speed: 30 s against work that takes
// milliseconds, generous even on a loaded 2-core machine under ASan. On expiry it names the test
// and ends the process with status 1 (a thread that spins with a lock held cannot be stopped).
class Watchdog {
 public:
  explicit Watchdog(std::chrono::seconds limit = std::chrono::seconds(30))
      : thread_([this, limit] {
          std::unique_lock lock(mutex_);
          if (cv_.wait_for(lock, limit, [this] { return done_; })) return;
          const auto* t = ::testing::UnitTest::GetInstance()->current_test_info();
          std::fprintf(stderr, "FAILED: %s.%s did not finish within %lld s (a hang)\n",
                       t ? t->test_suite_name() : "?", t ? t->name() : "?",
                       static_cast<long long>(limit.count()));
          std::fflush(stderr);
          std::_Exit(1);
        }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;  // under mutex_
  std::thread thread_;  // last: starts once the members it uses exist
};

constexpr std::size_t kPackets = 64;
constexpr std::size_t kBuffer = 256;  // every packet's capacity; frames stay well below the MTU

// A queue on the null device for `strategy`, with a pool and a cache on the test's thread.
struct Rig {
  explicit Rig(const std::string& strategy)
      : pool(PoolConfig{.packets = kPackets, .buffer_size = kBuffer, .cache_size = 8}),
        cache(pool),
        dev(make_device("null")),
        txq(TxQueue::create(*dev, {.strategy = strategy, .qdisc = "pfifo limit 1000"})) {}
  Packet* fresh(uint32_t len = 100) {
    Packet* p = cache.get();
    EXPECT_NE(p, nullptr);
    if (p) p->len = len;
    return p;
  }
  // A burst of a good packet (`good_len` bytes) between two refused ones: only it is accepted,
  // the two others get `why`.
  void expect_burst_refuses(Packet* first, Packet* last, SendStatus why, uint32_t good_len = 100) {
    std::array<Packet*, 3> burst{first, fresh(good_len), last};
    std::array<SendStatus, 3> status{};
    EXPECT_EQ(txq->send_burst(burst, status), 1u);
    EXPECT_EQ(status[0], why);
    EXPECT_TRUE(is_accepted(status[1]));
    EXPECT_EQ(status[2], why);
  }
  // After drain(): every accepted packet was sent or dropped, each once.
  void expect_conserved(uint64_t accepted) {
    ASSERT_TRUE(txq->drain(5s));
    const TxQueueStats s = txq->stats();
    EXPECT_EQ(s.submitted, accepted);
    EXPECT_EQ(s.sent + s.dropped, accepted);
    EXPECT_EQ(s.queued, 0u);
  }

  Pool pool;  // outlives the device and the queue, which free into it
  Pool::Cache cache;
  std::unique_ptr<Device> dev;
  std::unique_ptr<TxQueue> txq;
};

class HostileSend : public ::testing::TestWithParam<std::string> {};

std::string strategy_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(EveryStrategy, HostileSend, ::testing::ValuesIn(strategy_names()),
                         strategy_name);

TEST_P(HostileSend, NullPacketIsRefused) {
  const Watchdog watchdog;
  Rig r(GetParam());
  EXPECT_EQ(r.txq->send(nullptr), SendStatus::invalid);
  r.expect_burst_refuses(nullptr, nullptr, SendStatus::invalid);
  r.expect_conserved(1);
}

TEST_P(HostileSend, PacketWithoutPoolIsRefusedAndStaysWithTheCaller) {
  const Watchdog watchdog;
  Rig r(GetParam());
  std::array<std::byte, 128> buf{};
  Packet orphan;
  orphan.data = buf.data();
  orphan.capacity = static_cast<uint32_t>(buf.size());
  orphan.len = 60;
  EXPECT_EQ(r.txq->send(&orphan), SendStatus::invalid);
  Packet* const one[] = {&orphan};
  SendStatus status[1] = {};
  EXPECT_EQ(r.txq->send_burst(one, status), 0u);
  EXPECT_EQ(status[0], SendStatus::invalid);
  EXPECT_FALSE(orphan.in_flight);
  r.expect_conserved(0);
}

TEST_P(HostileSend, LenBeyondCapacityIsRefusedAndStaysWithTheCaller) {
  const Watchdog watchdog;
  Rig r(GetParam());
  Packet* p = r.fresh(kBuffer + 1);  // below the device's max frame: not too_big
  EXPECT_EQ(r.txq->send(p), SendStatus::invalid);
  // The device's max frame, far past the buffer (longer than the max would be too_big, as ever).
  Packet* q = r.fresh(r.dev->max_frame_len());
  Packet* huge = r.fresh(UINT32_MAX);
  EXPECT_EQ(r.txq->send(huge), SendStatus::too_big);
  r.expect_burst_refuses(p, q, SendStatus::invalid, kBuffer);  // exactly its capacity: fine
  r.expect_conserved(1);
  r.cache.put(p);  // still ours
  r.cache.put(q);
  r.cache.put(huge);
}

TEST_P(HostileSend, SamePacketTwiceInOneBurstIsSentOnce) {
  const Watchdog watchdog;
  Rig r(GetParam());
  Packet* p = r.fresh();
  Packet* other = r.fresh();
  std::array<Packet*, 4> burst{p, other, p, p};
  std::array<SendStatus, 4> status{};
  EXPECT_EQ(r.txq->send_burst(burst, status), 2u);
  EXPECT_TRUE(is_accepted(status[0]));
  EXPECT_TRUE(is_accepted(status[1]));
  EXPECT_EQ(status[2], SendStatus::in_flight);
  EXPECT_EQ(status[3], SendStatus::in_flight);
  r.expect_conserved(2);
  EXPECT_EQ(r.dev->stats().tx_packets + r.txq->stats().dropped, 2u);
}

TEST_P(HostileSend, SecondSendOfTheSamePacketIsRefused) {
  const Watchdog watchdog;
  Rig r(GetParam());
  Packet* p = r.fresh();
  EXPECT_TRUE(is_accepted(r.txq->send(p)));
  // Whether or not the first send has completed (back in the pool, not handed out again), the
  // packet is not the caller's to send.
  EXPECT_EQ(r.txq->send(p), SendStatus::in_flight);
  r.expect_conserved(1);
  EXPECT_EQ(r.txq->send(p), SendStatus::in_flight) << "completed: still not the caller's";
  Packet* const again[] = {p};
  SendStatus status[1] = {};
  EXPECT_EQ(r.txq->send_burst(again, status), 0u);
  EXPECT_EQ(status[0], SendStatus::in_flight);
  EXPECT_EQ(r.txq->stats().submitted, 1u);
  EXPECT_LE(r.dev->stats().tx_packets, 1u);
}

TEST_P(HostileSend, PacketHandedOutAgainByItsPoolIsAccepted) {
  const Watchdog watchdog;
  // No false positive: the flag lives until the pool hands the packet out again.
  Rig r(GetParam());
  uint64_t accepted = 0;
  for (int i = 0; i < 1000; ++i) {
    Packet* p = nullptr;
    while ((p = r.cache.get()) == nullptr) {  // all in flight: wait for completions
      r.txq->service();
      std::this_thread::yield();
    }
    p->len = 100;
    const SendStatus s = r.txq->send(p);
    ASSERT_TRUE(is_accepted(s)) << "send " << i << " refused: " << static_cast<int>(s);
    ++accepted;
  }
  r.expect_conserved(accepted);
}

TEST(HostileSend, MultiQueueRefusesBeforeThePick) {
  const Watchdog watchdog;
  auto dev = make_net_device("null:queues=4");
  Pool pool(PoolConfig{.packets = kPackets, .buffer_size = kBuffer, .cache_size = 8});
  uint64_t accepted = 0;
  {
    auto tx = MultiQueueTx::create(*dev, {});
    EXPECT_EQ(tx->send(nullptr), SendStatus::invalid);
    Packet* big = pool.get();
    big->len = kBuffer + 1;
    EXPECT_EQ(tx->send(big), SendStatus::invalid);
    Packet* p = pool.get();
    p->len = 100;
    p->flow_hash = 7;
    EXPECT_TRUE(is_accepted(tx->send(p)));
    ++accepted;
    EXPECT_EQ(tx->send(p), SendStatus::in_flight);
    Packet* q = pool.get();
    q->len = 100;
    std::array<Packet*, 5> burst{q, nullptr, q, big, p};
    std::array<SendStatus, 5> status{};
    EXPECT_EQ(tx->send_burst(burst, status), 1u);
    ++accepted;
    EXPECT_TRUE(is_accepted(status[0]));
    EXPECT_EQ(status[1], SendStatus::invalid);
    EXPECT_EQ(status[2], SendStatus::in_flight);
    EXPECT_EQ(status[3], SendStatus::invalid);
    EXPECT_EQ(status[4], SendStatus::in_flight);
    ASSERT_TRUE(tx->drain(5s));
    const TxQueueStats s = tx->stats();
    EXPECT_EQ(s.submitted, accepted);
    EXPECT_EQ(s.sent + s.dropped, accepted);
    pool.put(big);
  }
  EXPECT_EQ(pool.free_count(), kPackets);
}

// ---------------------------------------------------------------------------------------------
// Devices: an xmit() of a packet longer than its buffer (defence behind the queues' check).

// A pool of one packet: its buffer ends where the pool's allocation ends, so a read past it is
// a heap over-read the ASan build reports.
struct OnePacket {
  Pool pool{PoolConfig{.packets = 1, .buffer_size = 64, .cache_size = 2}};
  Packet* p = pool.get();
};

std::string temp_path(const std::string& tag) {
  return ::testing::TempDir() + "txpath_api_" + std::to_string(::getpid()) + "_" + tag;
}

TEST(HostileXmit, PcapDeviceWritesNoRecordForLenBeyondCapacity) {
  const std::string path = temp_path("overlen.pcap");
  OnePacket one;
  ASSERT_NE(one.p, nullptr);
  {
    auto dev = make_device("pcap:" + path);
    one.p->len = 1000;  // 64-byte buffer
    {
      std::lock_guard lock(dev->tx_lock());
      EXPECT_EQ(dev->xmit(one.p, false), XmitResult::ok);  // the device owns it now
    }
    const DeviceStats s = dev->stats();
    EXPECT_EQ(s.tx_errors, 1u);
    EXPECT_EQ(s.completed, 1u);
    EXPECT_EQ(one.pool.free_count(), 1u) << "the packet went back to its pool";
  }
  struct stat st{};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 24) << "only the global header: no record of heap bytes";
  ::unlink(path.c_str());
}

TEST(HostileXmit, UdpDeviceSendsNothingForLenBeyondCapacity) {
  const test::UdpReceiver receiver;
  OnePacket one;  // outlives the device
  ASSERT_NE(one.p, nullptr);
  auto dev = make_device("udp:127.0.0.1:" + std::to_string(receiver.port));
  FrameSpec spec;
  spec.payload = 16;
  dev->address_frames(spec);
  const FrameTemplate tmpl(spec);
  ASSERT_LE(tmpl.size(), one.p->capacity);
  tmpl.write(one.p->buffer(), 0, 0);
  one.p->len = 1000;  // 64-byte buffer: 958 "payload" bytes would come from the heap
  {
    std::lock_guard lock(dev->tx_lock());
    EXPECT_EQ(dev->xmit(one.p, false), XmitResult::ok);
  }
  std::array<std::byte, 2048> got{};
  EXPECT_LT(::recv(receiver.fd.get(), got.data(), got.size(), MSG_DONTWAIT), 0)
      << "a datagram of heap bytes reached the network";
  const DeviceStats s = dev->stats();
  EXPECT_EQ(s.tx_errors, 1u);
  EXPECT_EQ(s.completed, 1u);
  EXPECT_EQ(one.pool.free_count(), 1u);
}

// ---------------------------------------------------------------------------------------------
// QdiscEnv: the device facts a qdisc sizes itself from.

TEST(HostileQdiscEnv, MtuOutOfRangeIsAConfigError) {
  for (const char* kind : {"fq_codel", "fq", "pfifo_fast", "bfifo", "tbf rate 1mbit burst 10k latency 10ms",
                           "htb", "codel"}) {
    for (const uint32_t mtu : {0u, 67u, 65537u, 0xFFFFFFF2u, UINT32_MAX}) {
      SCOPED_TRACE(std::string(kind) + " mtu " + std::to_string(mtu));
      EXPECT_THROW(make_qdisc(kind, QdiscEnv{.mtu = mtu}), ConfigError);
    }
    for (const uint32_t mtu : {68u, 1500u, 9000u, 65535u, 65536u}) {
      SCOPED_TRACE(std::string(kind) + " mtu " + std::to_string(mtu));
      EXPECT_NO_THROW(make_qdisc(kind, QdiscEnv{.mtu = mtu}));
    }
  }
  try {
    make_qdisc("fq_codel", QdiscEnv{.mtu = 0xFFFFFFF2u});
    ADD_FAILURE() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "qdisc environment: mtu 4294967282 is out of range (68..65536)");
  }
}

TEST(HostileQdiscEnv, TxQueueOnADeviceWithAWrappingMtuIsRefused) {
  // A custom device whose MTU the application set: TxQueue::create() builds the root from it.
  struct HugeMtu final : Device {
    HugeMtu() : Device(0xFFFFFFF2u) {}
    std::string_view kind() const noexcept override { return "huge"; }
    std::string describe() const override { return "huge"; }
    XmitResult xmit(Packet*, bool) noexcept override { return XmitResult::busy; }
  } dev;
  EXPECT_THROW(TxQueue::create(dev, {.strategy = "busylock", .qdisc = "fq_codel"}), ConfigError);
}

TEST(HostileQdiscEnv, MqWithTooManyTxQueuesIsAConfigError) {
  ASSERT_THROW(make_qdisc("mq", QdiscEnv{.tx_queues = kMaxTxQueues + 1}), ConfigError);
  EXPECT_THROW(make_qdisc("mq", QdiscEnv{.tx_queues = 100'000'000}), ConfigError);
  EXPECT_THROW(make_qdisc("mqprio", QdiscEnv{.tx_queues = 100'000'000}), ConfigError);
  EXPECT_THROW(make_qdisc("pfifo_fast", QdiscEnv{.tx_queues = 0}), ConfigError);
  EXPECT_NO_THROW(make_qdisc("mq", QdiscEnv{.tx_queues = kMaxTxQueues}));
  try {
    make_qdisc("mq", QdiscEnv{.tx_queues = 100'000'000});
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "qdisc environment: tx_queues 100000000 is out of range (1..4096)");
  }
}

// ---------------------------------------------------------------------------------------------
// inspect_qdisc() / edit_qdisc() from inside their own callback.

class HostileInspect : public ::testing::TestWithParam<bool> {};
INSTANTIATE_TEST_SUITE_P(ServiceThread, HostileInspect, ::testing::Bool());

// Serves the queue (service thread, or service() calls here) while `call` waits.
template <class Call>
void with_service(TxQueue& q, bool service_thread, Call&& call) {
  if (service_thread) {
    call();
    return;
  }
  std::atomic<bool> stop{false};
  std::thread server([&] {
    // relaxed: a stop flag, joined below.
    while (!stop.load(std::memory_order_relaxed)) {
      q.service();
      std::this_thread::sleep_for(100us);
    }
  });
  try {
    call();
  } catch (...) {
    stop.store(true, std::memory_order_relaxed);
    server.join();
    throw;
  }
  stop.store(true, std::memory_order_relaxed);  // relaxed: see above
  server.join();
}

TEST_P(HostileInspect, ReentryFromTheCallbackIsAUsageError) {
  const Watchdog watchdog;
  auto dev = make_device("null");
  auto q = TxQueue::create(*dev, {.strategy = "busylock", .service_thread = GetParam()});
  with_service(*q, GetParam(), [&] {
    EXPECT_THROW(q->inspect_qdisc([&](const Qdisc&) { q->inspect_qdisc([](const Qdisc&) {}, 1s); }, 5s),
                 UsageError);
    EXPECT_THROW(q->inspect_qdisc([&](const Qdisc&) { (void)q->consistent_stats(1s); }, 5s),
                 UsageError);
    EXPECT_THROW(q->inspect_qdisc(
                     [&](const Qdisc&) { q->edit_qdisc([](Qdisc&, TxQueue::QdiscEdit&) {}, 1s); }, 5s),
                 UsageError);
    EXPECT_THROW(q->edit_qdisc(
                     [&](Qdisc&, TxQueue::QdiscEdit&) { q->edit_qdisc([](Qdisc&, TxQueue::QdiscEdit&) {}, 1s); },
                     5s),
                 UsageError);
    EXPECT_THROW(q->edit_qdisc(
                     [&](Qdisc&, TxQueue::QdiscEdit&) { q->inspect_qdisc([](const Qdisc&) {}, 1s); }, 5s),
                 UsageError);
    // The message, and the queue still serves requests after the refusals.
    try {
      q->inspect_qdisc([&](const Qdisc&) { q->inspect_qdisc([](const Qdisc&) {}, 1s); }, 5s);
      ADD_FAILURE() << "no error";
    } catch (const UsageError& e) {
      EXPECT_STREQ(e.what(),
                   "inspect_qdisc/edit_qdisc/consistent_stats called from inside an inspect_qdisc or "
                   "edit_qdisc callback of the same queue (it would wait for itself)");
    }
    bool ran = false;
    EXPECT_TRUE(q->inspect_qdisc([&](const Qdisc&) { ran = true; }, 5s));
    EXPECT_TRUE(ran);
    EXPECT_TRUE(q->consistent_stats(5s).has_value());
  });
}

TEST(HostileInspect, CallbackMayInspectAnotherQueue) {
  const Watchdog watchdog;
  // Only the same queue is refused: another queue's request is served by that queue's threads.
  auto dev_a = make_device("null");
  auto dev_b = make_device("null");
  auto a = TxQueue::create(*dev_a, {});
  auto b = TxQueue::create(*dev_b, {});
  bool inner = false;
  EXPECT_TRUE(a->inspect_qdisc([&](const Qdisc&) { inner = b->inspect_qdisc([](const Qdisc&) {}, 5s); }, 5s));
  EXPECT_TRUE(inner);
}

}  // namespace api_hostile
