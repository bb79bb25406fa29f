// SPDX-License-Identifier: MIT
// The calm bypass (docs/architecture.md, "The calm bypass"): a root lock whose last acquisitions
// never waited stays held across a bypass's device call; a sender that arrives meanwhile waits
// for it, and by waiting ends the calm, so that the next bypass releases the lock around the
// device call again (the kernel's sch_direct_xmit), letting senders enqueue during it.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <thread>

#include "support/scripted_device.hpp"
#include "sync/counting_lock.hpp"
#include "sync/ticket_lock.hpp"
#include "txpath/txqueue.hpp"

using namespace std::chrono_literals;

namespace txpath {
namespace {

TEST(CalmLock, CalmAfterSixtyFourFreeAcquisitionsAndNotAfterOneThatWaited) {
  CountingLock<TicketLock> lock;
  for (int i = 0; i < 63; ++i) {
    lock.lock();
    EXPECT_FALSE(lock.calm()) << "after " << i + 1 << " acquisitions";
    lock.unlock();
  }
  lock.lock();
  EXPECT_TRUE(lock.calm());
  lock.unlock();
  // A second thread waits for the lock we hold: its acquisition ends the calm. It may reach
  // lock() only after we let go (a loaded machine): then it did not wait, and we try again.
  bool calm_seen = true;
  for (int attempt = 1; lock.waits() == 0 && attempt <= 50; ++attempt) {
    lock.lock();
    std::thread waiter([&] {
      lock.lock();
      calm_seen = lock.calm();
      lock.unlock();
    });
    std::this_thread::sleep_for(attempt * 10ms);  // time for the waiter to reach lock()
    lock.unlock();
    waiter.join();
  }
  ASSERT_EQ(lock.waits(), 1u);
  EXPECT_FALSE(calm_seen);
  lock.lock();
  EXPECT_FALSE(lock.calm());
  lock.unlock();
}

// A device whose xmit() of one chosen call blocks until the test opens the gate.
class GatedDevice : public test::ScriptedDevice {
 public:
  XmitResult xmit(Packet* p, bool more) noexcept override {
    {
      std::unique_lock lock(m_);
      if (calls_seen_++ == gate_at_) {
        in_gate_ = true;
        cv_.notify_all();
        cv_.wait(lock, [&] { return open_; });
      }
    }
    return ScriptedDevice::xmit(p, more);
  }
  void close_at(uint64_t call) {
    std::lock_guard lock(m_);
    gate_at_ = call;
    open_ = false;
    in_gate_ = false;
  }
  bool wait_in_gate() {
    std::unique_lock lock(m_);
    return cv_.wait_for(lock, 10s, [&] { return in_gate_; });
  }
  void open() {
    std::lock_guard lock(m_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  uint64_t calls_seen_ = 0;
  uint64_t gate_at_ = ~0ull;
  bool open_ = true;
  bool in_gate_ = false;
};

class CalmBypass : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<TxQueue> make() {
    TxQueueConfig cfg;
    cfg.strategy = GetParam();
    cfg.lock = "ticket";
    cfg.service_thread = false;  // no other root-lock taker: the calm is the senders' alone
    return TxQueue::create(dev, cfg);
  }
  // Sends one packet of sender 1 from another thread while sender 0's xmit is in the gate;
  // returns whether that send() came back within `wait`, before the gate opened.
  bool second_sender_returns_during_the_gate(TxQueue& txq, uint64_t gate_call, uint64_t seq0,
                                             std::chrono::milliseconds wait) {
    dev.close_at(gate_call);
    auto first = std::async(std::launch::async, [&] { return txq.send(frames.make(0, seq0)); });
    EXPECT_TRUE(dev.wait_in_gate());
    auto second = std::async(std::launch::async, [&] { return txq.send(frames.make(1, 0)); });
    const bool returned = second.wait_for(wait) == std::future_status::ready;
    dev.open();
    EXPECT_EQ(first.get(), SendStatus::queued);
    EXPECT_EQ(second.get(), SendStatus::queued);
    return returned;
  }
  Pool pool{PoolConfig{.packets = 1024, .buffer_size = 2048, .cache_size = 64}};
  GatedDevice dev;
  test::FrameFactory frames{pool};
};

TEST_P(CalmBypass, ACalmLockIsHeldAcrossTheBypassAndTheWaitEndsTheCalm) {
  auto txq = make();
  constexpr uint64_t kCalm = 100;  // more than CountingLock's 64 free acquisitions in a row
  for (uint64_t i = 0; i < kCalm; ++i) ASSERT_EQ(txq->send(frames.make(0, i)), SendStatus::queued);
  ASSERT_EQ(txq->stats().bypassed, kCalm);

  // Calm: the root lock stays held across the gated xmit, so the second sender cannot enqueue;
  // it gets the lock once the first is done, finds the qdisc empty and bypasses too.
  EXPECT_FALSE(second_sender_returns_during_the_gate(*txq, kCalm, kCalm, 200ms))
      << "a calm root lock is held across the bypass's device call";
  ASSERT_TRUE(txq->drain(5s));
  EXPECT_EQ(txq->stats().bypassed, kCalm + 2);

  // That wait ended the calm: the next bypass releases the lock around the device call, the
  // second sender enqueues meanwhile and returns, and the first sends its packet after its own.
  EXPECT_TRUE(second_sender_returns_during_the_gate(*txq, kCalm + 2, kCalm + 1, 10s))
      << "after a wait, the bypass releases the root lock around the device call (the kernel's)";
  ASSERT_TRUE(txq->drain(5s));
  const TxQueueStats s = txq->stats();
  EXPECT_EQ(s.sent, kCalm + 4);
  EXPECT_EQ(s.bypassed, kCalm + 3) << "the second sender's last packet went through the qdisc";
  EXPECT_EQ(s.queued, 0u);
  const auto log = dev.log();
  ASSERT_EQ(log.size(), kCalm + 4);
  EXPECT_EQ(log[kCalm + 3].sender, 1u) << "dequeued after the gated bypass";
}

// The strategies whose senders take the root lock themselves (CountingLock: calm() applies).
INSTANTIATE_TEST_SUITE_P(RootLock, CalmBypass, ::testing::Values("busylock", "rootlock"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace txpath
