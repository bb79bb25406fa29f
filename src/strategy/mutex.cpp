// SPDX-License-Identifier: MIT
// Strategy `mutex`: the plain baseline. One pthread mutex around everything — enqueue, and the
// whole driver loop including the device calls (unlike every Linux variant, which drops the
// root lock around the driver). Senders that arrive during a run wait on the mutex; the next one
// in becomes the owner if anything is left. The --lock option does not apply.
//
// Shared cache lines per packet: the mutex, the qdisc.
#include "base/clock.hpp"
#include "strategy/locked_queue.hpp"
#include "sync/counting_lock.hpp"
#include "sync/mutex_lock.hpp"

namespace txpath {

namespace {

class MutexQueue : public QueueBase {
 public:
  MutexQueue(Device& device, std::unique_ptr<Qdisc> qdisc, const TxQueueConfig& config)
      : QueueBase(device, std::move(qdisc), config, "mutex", "mutex") {}

  SendStatus send(Packet* p) noexcept override {
    if (!admit(p)) return SendStatus::too_big;
    p->enqueue_ns = now_ns();
    PacketList to_free;
    mutex_.lock();
    Verdict v = Verdict::success;
    if (q().can_bypass() && backlog_packets() == 0 && run_begin()) {
      if (bypass_xmit(held_, p)) run(held_);
      run_end();
    } else {
      v = q().enqueue(p, to_free);
      if (run_begin()) {
        run(held_);
        run_end();
      }
    }
    mutex_.unlock();
    free_packets(std::move(to_free));
    return to_send_status(v);
  }

 protected:
  void deferred_run() noexcept override {
    mutex_.lock();
    if (run_begin()) {
      run(held_);
      run_end();
    }
    mutex_.unlock();
  }

  bool quiescent() noexcept override {
    mutex_.lock();
    const bool idle = !is_running() && backlog_packets() == 0;
    mutex_.unlock();
    return idle;
  }

  void lock_stats(uint64_t& waits, uint64_t& wait_ns) const noexcept override {
    waits += mutex_.waits();
    wait_ns += mutex_.wait_ns();
  }

 private:
  // What the driver loop "releases and re-takes" around a device call: nothing — the mutex
  // stays held for the whole run.
  struct StaysHeld {
    void lock() noexcept {}
    void unlock() noexcept {}
  };

  CountingLock<MutexLock> mutex_;
  StaysHeld held_;
};

}  // namespace

std::unique_ptr<QueueBase> make_mutex_queue(Device& device, std::unique_ptr<Qdisc> qdisc,
                                            const TxQueueConfig& config) {
  return std::make_unique<Finalized<MutexQueue>>(device, std::move(qdisc), config);
}

}  // namespace txpath
