// SPDX-License-Identifier: MIT
// The scheduler of deferred driver-loop runs: SCHED and the wake-up (Linux __netif_schedule),
// the service thread that performs the runs (net_tx_action, and ksoftirqd's role), and the qdisc
// watchdog (qdisc_watchdog_schedule_ns). One per queue; the queue (QueueBase) is its Client.
//
// Deferred runs. schedule() sets SCHED and, if the service thread sleeps, wakes it. The service
// thread clears SCHED and asks the queue for a run (Client::deferred_run(): for lock-based
// strategies, root lock + qdisc_run_begin + the loop). While deferred runs keep coming it ticks
// every `service_tick` and needs no wake-up call; after kActiveTicks ticks without one it sleeps
// until kicked (or the device's poll time, or 1 ms). Senders that run the loop themselves never
// schedule, so an uncontended queue leaves the service thread asleep: no wake-up per packet, nor
// per tick. It also polls the device when the device asks
// (next_poll_ns): that is the TX-completion interrupt, which returns buffers and wakes a stopped
// queue. While another thread keeps doing those polls (a sender's clean on xmit, or
// TxQueue::service()), the interrupt is masked and becomes a backed-off timer (IrqDeferral), so
// that the sender's core is not woken for polls already done.
//
// The watchdog. A shaping qdisc that holds packets not yet eligible names the time they become
// so; the driver loop arms the watchdog with it (arm_watchdog), and the service thread sleeps at
// most until then, turns the due deadline into SCHED and so runs the loop again without any
// further send().
//
// Without the service thread (TxQueueConfig::service_thread = false) the application calls
// service() (TxQueue::service) and nothing here runs on its own.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/irq_deferral.hpp"
#include "txpath/device.hpp"
#include "txpath/txqueue.hpp"

namespace txpath {

class Scheduler {
 public:
  // What the scheduler calls back into: the queue that owns it. Called on the service thread (or
  // the caller of service()), never on the per-packet path.
  class Client {
   public:
    // A run of the driver loop on behalf of the service thread (net_tx_action's qdisc_run).
    virtual void deferred_run() noexcept = 0;

   protected:
    ~Client() = default;
  };

  Scheduler(Device& device, Client& client, const TxQueueConfig& config);
  ~Scheduler() { stop(); }
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Starts the service thread if the configuration asks for one. Once, before any stop().
  void start();
  // Stops and joins the service thread. Idempotent; no thread of the queue's may be inside
  // deferred_run() on the scheduler's behalf once it returns.
  void stop() noexcept;

  // __netif_schedule(): ask for a deferred driver-loop run. Any thread, any context, no lock.
  void schedule() noexcept;
  // qdisc_watchdog_schedule_ns(): ask for a deferred run at steady-clock time `at_ns` (the
  // service thread sleeps until then). Loop owner only (root lock held). A later call replaces
  // an earlier deadline, as the kernel's hrtimer is re-armed.
  void arm_watchdog(uint64_t at_ns) noexcept;

  // The device's completion interrupt (Device::raise_completion_irq, tx_lock held): a poll
  // time appeared where there was none. Wakes the service thread if it sleeps until kicked, so
  // that it polls at that time rather than at the end of that sleep (up to kIdleWake).
  void raise_irq() noexcept;
  // One round of the service thread's work on the calling thread (TxQueue::service): reap due
  // device completions, fire a due watchdog, perform a pending run. No lock held; thread-safe.
  bool service() noexcept;

  // Runs performed by service() (a statistic).
  uint64_t deferred_runs() const noexcept {
    return deferred_runs_.load(std::memory_order_relaxed);  // relaxed: a statistic
  }

 private:
  // A due watchdog deadline becomes SCHED. No lock held.
  void fire_watchdog() noexcept;
  // net_tx_action in a loop until stop(). The service thread only.
  void service_main();
  // Wakes the service thread from wait_for_work(), whose predicate the caller has changed.
  void kick() noexcept;
  // Reaps the device's completions if their poll time `poll_at` (next_poll_ns(), as the caller
  // read it) has come; true if it did.
  bool poll_if_due(uint64_t poll_at) noexcept;
  // Performs the pending deferred run, if any (clears SCHED first); true if it did.
  bool run_if_pending() noexcept;

  // The service thread's sleep between rounds: a tick while `deep` is false, else until kicked
  // (kIdleWake at most). Never past the device's poll time, which a masked `irq` delays and
  // which then no longer kicks (IrqDeferral). Says how the sleep ended.
  IrqDeferral::Wake wait_for_work(bool deep, const IrqDeferral& irq);

  // What a sleeping service thread lets wake it (service_idle_).
  enum class Sleep : uint8_t {
    awake,       // in a round, or in its tick sleep: only stop() or a nearer watchdog kicks it
    irq_masked,  // deep: schedule() and any arm_watchdog() kick it too
    irq_open,    // deep: raise_irq() too
  };

  Device& device_;
  Client& client_;
  const std::chrono::microseconds service_tick_;
  const bool service_thread_;
  const std::vector<unsigned> service_cpus_;  // TxQueueConfig::service_cpus

  // Runs performed by service(); several threads may call service() at once.
  std::atomic<uint64_t> deferred_runs_{0};

  alignas(64) std::atomic<bool> sched_{false};  // __QDISC_STATE_SCHED
  std::atomic<uint64_t> watchdog_{0};           // armed deadline (ns), 0: none; see arm_watchdog
  std::atomic<Sleep> service_idle_{Sleep::awake};  // what may kick the service thread
  std::atomic<bool> stop_{false};
  std::mutex service_mutex_;
  std::condition_variable service_cv_;
  std::thread service_;
};

}  // namespace txpath
