// SPDX-License-Identifier: MIT
// The one teardown of every strategy (QueueBase::shutdown, PeerQueue::shutdown): the owner may
// call it before destroying the queue, and call it again; the destructor then calls it once more.
// Each later call does nothing: packets still queued at the first call are freed and counted as
// dropped once (submitted = sent + dropped + queued, queued = 0), every buffer returns to the
// pool, and the device is detached once — a queue attached to it since is left alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "engine/queue_base.hpp"
#include "qdisc/fifo.hpp"
#include "strategy/peer_queue.hpp"
#include "support/scripted_device.hpp"
#include "txpath/error.hpp"
#include "txpath/pool.hpp"
#include "txpath/qdisc.hpp"
#include "txpath/txqueue.hpp"

using namespace std::chrono_literals;

namespace txpath {
namespace {

// shutdown() is not on the public TxQueue: reach it through the two internal bases.
void shut_down(TxQueue& q) {
  if (auto* base = dynamic_cast<QueueBase*>(&q)) return base->shutdown();
  if (auto* peer = dynamic_cast<PeerQueue*>(&q)) return peer->shutdown();
  FAIL() << "strategy " << q.strategy() << " has neither QueueBase nor PeerQueue as its base";
}

void expect_same_counts(const TxQueueStats& a, const TxQueueStats& b) {
  EXPECT_EQ(a.submitted, b.submitted);
  EXPECT_EQ(a.sent, b.sent);
  EXPECT_EQ(a.dropped, b.dropped);
  EXPECT_EQ(a.queued, b.queued);
}

class Shutdown : public ::testing::TestWithParam<std::string> {
 protected:
  TxQueueConfig config(bool service_thread) const {
    TxQueueConfig cfg;
    cfg.strategy = GetParam();
    cfg.service_thread = service_thread;
    return cfg;
  }
  Pool pool{PoolConfig{.packets = 4096, .buffer_size = 2048, .cache_size = 0}};
  test::ScriptedDevice dev;
  test::FrameFactory frames{pool};
};

TEST_P(Shutdown, TwiceWithPacketsQueuedCountsEachPacketOnce) {
  constexpr uint64_t kPackets = 300;
  const std::size_t free_before = pool.free_count();
  auto q = TxQueue::create(dev, config(/*service_thread=*/true));
  // The first device call is refused (a requeued packet), then the device queue stops: the rest
  // stays in the qdisc, the requeue list or the strategy's own lists (rings, hand-off lists) —
  // or is still on its way there in a strategy thread when shutdown() begins.
  dev.refuse_call(0);
  ASSERT_NE(q->send(frames.make(0, 0)), SendStatus::too_big);
  dev.stop();
  for (uint64_t i = 1; i < kPackets; ++i) ASSERT_NE(q->send(frames.make(0, i)), SendStatus::too_big);
  ASSERT_GT(q->stats().queued, 0u) << "nothing left for shutdown() to free";

  shut_down(*q);
  const TxQueueStats first = q->stats();
  EXPECT_EQ(first.submitted, kPackets);
  EXPECT_EQ(first.queued, 0u) << "shutdown() leaves nothing queued";
  EXPECT_EQ(first.submitted, first.sent + first.dropped + first.queued)
      << "sent " << first.sent << " dropped " << first.dropped << " queued " << first.queued;
  EXPECT_EQ(pool.free_count(), free_before) << "every buffer is back in the pool";

  shut_down(*q);  // again: nothing left to do, nothing counted twice
  expect_same_counts(q->stats(), first);
  q.reset();  // and the destructor's call
  EXPECT_EQ(pool.free_count(), free_before);
}

TEST_P(Shutdown, DestroyingAQueueShutDownEarlierLeavesTheNextQueueAttached) {
  auto first = TxQueue::create(dev, config(/*service_thread=*/false));
  shut_down(*first);
  // shutdown() detached the device: another queue may take it while `first` still exists.
  auto second = TxQueue::create(dev, config(/*service_thread=*/false));
  first.reset();  // its destructor must not detach `second`
  EXPECT_THROW(TxQueue::create(dev, config(false)), ConfigError)
      << "the device lost `second` when `first` was destroyed";

  // `second` still gets the device's wake: packets held behind a stopped queue leave once the
  // device wakes, without another send().
  constexpr uint64_t kPackets = 5;
  dev.stop();
  for (uint64_t i = 0; i < kPackets; ++i) ASSERT_EQ(second->send(frames.make(0, i)), SendStatus::queued);
  // Perform the runs already scheduled (a bypassed packet refused by the stopped queue is
  // requeued with a run scheduled): they find the queue stopped. Only the wake schedules now.
  for (int i = 0; i < 100 && second->service(); ++i) {
  }
  dev.wake();
  for (int i = 0; i < 2000 && !second->drain(1ms); ++i) second->service();
  EXPECT_EQ(dev.log().size(), kPackets) << "the wake did not reach `second`";
}

// A FIFO whose first enqueue lingers: the drainer thread is inside the qdisc (root lock held, the
// rest of its sweep in hand) when the test calls shutdown(). Had shutdown() not stopped the
// drainer first, it would reset the qdisc under the drainer's feet and the packets the drainer
// enqueued afterwards would never return to the pool.
class LingeringFifo final : public FifoQdisc {
 public:
  LingeringFifo() : FifoQdisc(4096) {}
  std::string_view kind() const noexcept override { return "lingering_fifo"; }
  DumpAttrs dump_options() const override { return {}; }
  Verdict enqueue(Packet* p, PacketList&) noexcept override {
    // release: pairs with the test's acquire load; the first call only lingers.
    if (!entered_.exchange(true, std::memory_order_release)) std::this_thread::sleep_for(50ms);
    return enqueue_tail(p);
  }
  bool entered() const noexcept { return entered_.load(std::memory_order_acquire); }  // as above

 private:
  std::atomic<bool> entered_{false};
};

TEST(ShutdownDrainer, StopsItsThreadBeforeFreeingWhatIsQueued) {
  Pool pool{PoolConfig{.packets = 1024, .buffer_size = 2048, .cache_size = 0}};
  test::ScriptedDevice dev;
  test::FrameFactory frames{pool};
  const std::size_t free_before = pool.free_count();
  LingeringFifo* fifo = nullptr;
  TxQueueConfig cfg;
  cfg.strategy = "drainer";
  cfg.root_qdisc = [&fifo](const QdiscEnv&) {
    auto q = std::make_unique<LingeringFifo>();
    fifo = q.get();
    return q;
  };
  auto q = TxQueue::create(dev, cfg);
  ASSERT_NE(fifo, nullptr);
  dev.stop();  // what reaches the qdisc stays there
  constexpr uint64_t kPackets = 200;
  for (uint64_t i = 0; i < kPackets; ++i) ASSERT_EQ(q->send(frames.make(0, i)), SendStatus::queued);
  while (!fifo->entered()) std::this_thread::yield();  // the drainer is inside enqueue()
  shut_down(*q);
  const TxQueueStats s = q->stats();
  EXPECT_EQ(s.submitted, kPackets);
  EXPECT_EQ(s.queued, 0u);
  EXPECT_EQ(s.submitted, s.sent + s.dropped);
  EXPECT_EQ(pool.free_count(), free_before) << "a packet enqueued after the purge was lost";
}

// "peer:ck_ring" -> "peer_ck_ring": a test name has no ':'.
std::string param_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  std::ranges::replace(name, ':', '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(AllStrategies, Shutdown, ::testing::ValuesIn(strategy_names()), param_name);

}  // namespace
}  // namespace txpath
