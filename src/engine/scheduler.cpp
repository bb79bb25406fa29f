// SPDX-License-Identifier: MIT
#include "engine/scheduler.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>

#include <algorithm>

#include "base/clock.hpp"
#include "engine/irq_deferral.hpp"

namespace txpath {

namespace {
// Ticks without a deferred run before the service thread stops ticking and sleeps until kicked
// (still waking every kIdleWake to reap device completions).
constexpr int kActiveTicks = 20;
constexpr std::chrono::milliseconds kIdleWake{1};

template <class Rep, class Period>
constexpr uint64_t ns_of(std::chrono::duration<Rep, Period> d) noexcept {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

// The calling thread onto `cpus` (TxQueueConfig::service_cpus), best effort: none given, or
// none this process may use, leaves it where it is.
void pin_to_cpus(const std::vector<unsigned>& cpus) {
  if (cpus.empty()) return;
  const unsigned max_cpu = *std::max_element(cpus.begin(), cpus.end());
  cpu_set_t* set = CPU_ALLOC(max_cpu + 1);
  if (set == nullptr) return;
  const std::size_t size = CPU_ALLOC_SIZE(max_cpu + 1);
  CPU_ZERO_S(size, set);
  for (const unsigned c : cpus) CPU_SET_S(c, size, set);
  pthread_setaffinity_np(pthread_self(), size, set);  // EINVAL (no usable CPU): stays as it was
  CPU_FREE(set);
}

}  // namespace

Scheduler::Scheduler(Device& device, Client& client, const TxQueueConfig& config)
    : device_(device),
      client_(client),
      service_tick_(config.service_tick.count() > 0 ? config.service_tick
                                                    : std::chrono::microseconds(50)),
      service_thread_(config.service_thread),
      service_cpus_(config.service_cpus) {}

void Scheduler::start() {
  if (service_thread_) service_ = std::thread([this] { service_main(); });
}

void Scheduler::stop() noexcept {
  if (!service_.joinable()) return;  // never started, or stopped already
  {
    std::lock_guard lock(service_mutex_);
    // release: pairs with the acquire load in service_main()'s loop condition.
    stop_.store(true, std::memory_order_release);
  }
  service_cv_.notify_all();
  service_.join();
}

bool Scheduler::service() noexcept {
  poll_if_due(device_.next_poll_ns());
  fire_watchdog();
  return run_if_pending();
}

bool Scheduler::poll_if_due(uint64_t poll_at) noexcept {
  if (poll_at == 0 || poll_at > now_ns()) return false;
  device_.poll();
  return true;
}

bool Scheduler::run_if_pending() noexcept {
  // acq_rel: pairs with schedule()'s exchange (see service_main()).
  if (!sched_.exchange(false, std::memory_order_acq_rel)) return false;
  // relaxed: a statistic; service() may run on several threads at once, hence the RMW.
  deferred_runs_.fetch_add(1, std::memory_order_relaxed);
  client_.deferred_run();
  return true;
}

void Scheduler::fire_watchdog() noexcept {
  // The qdisc watchdog: a due deadline becomes a pending run. acquire: pairs with the seq_cst
  // exchange in arm_watchdog() (the deadline a run armed is seen with what it dequeued).
  uint64_t wd = watchdog_.load(std::memory_order_acquire);
  if (wd == 0 || wd > now_ns()) return;
  // acq_rel: only a deadline not re-armed meanwhile is consumed; a newer one stays armed.
  if (watchdog_.compare_exchange_strong(wd, 0, std::memory_order_acq_rel))
    sched_.store(true, std::memory_order_seq_cst);  // consumed by service() right after
}

void Scheduler::schedule() noexcept {
  // seq_cst, twice: a Dekker pair with service_main(), which stores service_idle_ = true and
  // then loads sched_: either it sees SCHED before sleeping, or we see it idle and wake it.
  if (sched_.exchange(true, std::memory_order_seq_cst)) return;  // a run is already pending
  if (service_idle_.load(std::memory_order_seq_cst) != Sleep::awake) {
    kick();
  }
}

void Scheduler::arm_watchdog(uint64_t at_ns) noexcept {
  // seq_cst: a Dekker pair with service_main(), like schedule(): it stores service_idle_ and then
  // loads watchdog_ for its deadline; either it sees this deadline, or we see it idle and wake
  // it. The same deadline armed again (a throttled qdisc polled by every send) costs no wake-up.
  const uint64_t old = watchdog_.exchange(at_ns, std::memory_order_seq_cst);
  if (old == at_ns) return;
  if (service_idle_.load(std::memory_order_seq_cst) != Sleep::awake || old == 0 || at_ns < old) {
    kick();
  }
}

void Scheduler::raise_irq() noexcept {
  // seq_cst fence, then the load: a Dekker pair with wait_for_work(), which stores service_idle_
  // (seq_cst), fences and then reads next_poll_ns(): either it sees the device's new poll time
  // (stored before this call) or we see it asleep and wake it — unless it sleeps with the
  // interrupt masked (Sleep::irq_masked: another thread keeps polling, and its own sleep is
  // bounded by the deferral). A thread in its tick sleep is not woken: it looks within
  // service_tick anyway, and the wake-up — a system call under the device's tx lock — would
  // cost the sender more than the tick costs the poll.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // relaxed: ordered by the fence above.
  if (service_idle_.load(std::memory_order_relaxed) != Sleep::irq_open) return;
  kick();
}

void Scheduler::kick() noexcept {
  // An empty critical section, then the notify: the sleeper either has not yet checked its
  // predicate (it is checked under the mutex, after our caller's store) or waits already and
  // gets the notify. Notifying after the unlock spares the woken thread a block on the mutex
  // that we would still hold (a second pair of context switches).
  { std::lock_guard lock(service_mutex_); }
  service_cv_.notify_one();
}

void Scheduler::service_main() {
  // Timer slack would stretch the tick (default 50 us on Linux); ask for 1 us.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  pin_to_cpus(service_cpus_);
  int quiet = kActiveTicks;  // asleep until the first schedule()
  IrqDeferral irq;           // masks the completion interrupt while others poll
  IrqDeferral::Wake wake{};
  // acquire: pairs with the release store in stop().
  while (!stop_.load(std::memory_order_acquire)) {
    // Reap due completions (the TX-completion "interrupt"), then a pending run. SCHED is
    // cleared before the run, so a schedule() during the run is not lost: it sets SCHED again.
    const uint64_t poll_now = device_.next_poll_ns();
    const bool polled = poll_if_due(poll_now);
    irq.after(wake, polled, poll_now);
    fire_watchdog();
    if (run_if_pending()) {
      quiet = 0;
      wake = {};
      continue;
    }
    if (quiet < kActiveTicks) ++quiet;
    wake = wait_for_work(quiet >= kActiveTicks, irq);
  }
}

IrqDeferral::Wake Scheduler::wait_for_work(bool deep, const IrqDeferral& irq) {
  const uint64_t tick_ns = ns_of(service_tick_);
  // A stopped queue waits for its completions, and no sender's xmit polls for it: unmasked.
  const bool masked = irq.masked() && !device_.stopped();
  // Masked, the interrupt is a timer: a tick, 2 ticks or 4 after the poll time.
  const uint64_t defer_ns = masked ? irq.delay_ns(tick_ns, ns_of(kIdleWake)) : 0;
  uint64_t deadline = now_ns() + (!deep ? tick_ns : masked ? defer_ns : ns_of(kIdleWake));
  if (deep) {
    // Dekker pair with schedule() (SCHED) and with raise_irq() (the poll time, read below).
    service_idle_.store(masked ? Sleep::irq_masked : Sleep::irq_open, std::memory_order_seq_cst);
    if (sched_.load(std::memory_order_seq_cst)) {
      service_idle_.store(Sleep::awake, std::memory_order_relaxed);  // relaxed: a hint, as below
      return {};
    }
    // seq_cst fence between our store of service_idle_ and the device's hint: the other half of
    // raise_irq()'s pair (a poll time that appears after this read wakes us).
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  const uint64_t next_poll = device_.next_poll_ns();
  if (next_poll != 0 && next_poll + defer_ns < deadline) deadline = next_poll + defer_ns;
  // seq_cst: the other half of arm_watchdog()'s Dekker pair (after service_idle_ above).
  const uint64_t wd_seen = watchdog_.load(std::memory_order_seq_cst);
  if (wd_seen != 0 && wd_seen < deadline) deadline = wd_seen;
  bool woken = false;
  {
    // A relative wait: now_ns() may be a TSC clock whose scale differs from steady_clock's
    // by a few ppm, so absolute deadlines would drift.
    const uint64_t now = now_ns();
    const auto wait = std::chrono::nanoseconds(deadline > now ? deadline - now : 0);
    std::unique_lock lock(service_mutex_);
    woken = service_cv_.wait_for(lock, wait, [this, wd_seen, next_poll] {
      // acquire/relaxed: re-checked under the mutex that schedule()/stop()/arm_watchdog()/
      // raise_irq() take to notify; a re-armed watchdog or a new poll time (raise_irq, in a deep
      // sleep) changes the deadline, so it ends the wait too.
      return stop_.load(std::memory_order_acquire) || sched_.load(std::memory_order_relaxed) ||
             watchdog_.load(std::memory_order_relaxed) != wd_seen ||
             (next_poll == 0 && device_.next_poll_ns() != 0);
    });
  }
  // relaxed: only a hint for schedule() and raise_irq().
  service_idle_.store(Sleep::awake, std::memory_order_relaxed);
  return {.timed_out = !woken && wd_seen != deadline, .poll_seen = next_poll};
}

}  // namespace txpath
