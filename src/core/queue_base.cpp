// SPDX-License-Identifier: MIT
#include "core/queue_base.hpp"

#include <sys/prctl.h>

#include <algorithm>
#include <utility>

#include "base/clock.hpp"

namespace txpath {

namespace {
// Ticks without driver-loop activity before the service thread stops ticking and sleeps until
// kicked (still waking every kIdleWake to reap device completions).
constexpr int kActiveTicks = 20;
constexpr std::chrono::milliseconds kIdleWake{1};
// How often a waiting inspect_qdisc() asks for another deferred run.
constexpr std::chrono::milliseconds kInspectRetry{1};

}  // namespace

QueueBase::QueueBase(Device& device, std::unique_ptr<Qdisc> qdisc, const TxQueueConfig& config,
                     std::string_view strategy, std::string_view lock_kind)
    : device_(device),
      qdisc_(std::move(qdisc)),
      strategy_(strategy),
      lock_kind_(lock_kind),
      quota_(config.quota > 0 ? config.quota : 64),
      service_tick_(config.service_tick.count() > 0 ? config.service_tick
                                                    : std::chrono::microseconds(50)),
      service_thread_(config.service_thread) {
  // The device's only upstream signal: a woken queue schedules a run (netif_tx_wake_queue).
  device_.attach_queue([this] { schedule(); });
}

QueueBase::~QueueBase() { shutdown(); }

void QueueBase::start_service() {
  if (service_thread_) service_ = std::thread([this] { service_main(); });
}

bool QueueBase::service() noexcept {
  const uint64_t poll_at = device_.next_poll_ns();
  if (poll_at != 0 && poll_at <= now_ns()) device_.poll();
  // The qdisc watchdog: a due deadline becomes a pending run. acquire: pairs with the seq_cst
  // exchange in arm_watchdog() (the deadline a run armed is seen with what it dequeued).
  if (uint64_t wd = watchdog_.load(std::memory_order_acquire); wd != 0 && wd <= now_ns()) {
    // acq_rel: only a deadline not re-armed meanwhile is consumed; a newer one stays armed.
    if (watchdog_.compare_exchange_strong(wd, 0, std::memory_order_acq_rel)) {
      watchdog_fires_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
      sched_.store(true, std::memory_order_seq_cst);  // consumed just below
    }
  }
  // acq_rel: pairs with schedule()'s exchange (see service_main()).
  if (!sched_.exchange(false, std::memory_order_acq_rel)) return false;
  // relaxed: a statistic; service() may run on several threads at once, hence the RMW.
  deferred_runs_.fetch_add(1, std::memory_order_relaxed);
  deferred_run();
  return true;
}

void QueueBase::shutdown() noexcept {
  close_inspect();  // first: no inspect_qdisc() waits for a service thread that is gone
  if (service_.joinable()) {
    {
      std::lock_guard lock(service_mutex_);
      // release: pairs with the acquire load in service_main()'s loop condition.
      stop_.store(true, std::memory_order_release);
    }
    service_cv_.notify_all();
    service_.join();
  }
  device_.detach_queue();
  // Teardown: whatever is still queued is freed and counted as dropped (qdisc_reset + purge).
  // AQM victims still held were counted as drops when they were dropped: not purged again.
  PacketList already_dropped;
  qdisc_->take_dequeue_drops(already_dropped);
  free_packets(std::move(already_dropped));
  PacketList to_free;
  qdisc_->reset(to_free);
  requeue_qlen_.set(0);
  requeue_backlog_.set(0);
  to_free.splice_back(requeue_);
  purge_strategy(to_free);
  purged_.add(to_free.size());
  free_packets(std::move(to_free));
}

void QueueBase::schedule() noexcept {
  // seq_cst, twice: a Dekker pair with service_main(), which stores service_idle_ = true and
  // then loads sched_: either it sees SCHED before sleeping, or we see it idle and wake it.
  if (sched_.exchange(true, std::memory_order_seq_cst)) return;  // a run is already pending
  if (service_idle_.load(std::memory_order_seq_cst)) {
    std::lock_guard lock(service_mutex_);  // pairs with the predicate check in wait_until()
    service_cv_.notify_one();
  }
}

void QueueBase::arm_watchdog(uint64_t at_ns) noexcept {
  // seq_cst: a Dekker pair with service_main(), like schedule(): it stores service_idle_ and then
  // loads watchdog_ for its deadline; either it sees this deadline, or we see it idle and wake
  // it. The same deadline armed again (a throttled qdisc polled by every send) costs no wake-up.
  const uint64_t old = watchdog_.exchange(at_ns, std::memory_order_seq_cst);
  if (old == at_ns) return;
  if (service_idle_.load(std::memory_order_seq_cst) || old == 0 || at_ns < old) {
    std::lock_guard lock(service_mutex_);  // pairs with the predicate check in the wait
    service_cv_.notify_one();
  }
}

void QueueBase::service_main() {
  // Timer slack would stretch the tick (default 50 us on Linux); ask for 1 us.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  int quiet = 0;
  uint64_t last_runs = ~0ULL;
  // acquire: pairs with the release store in shutdown().
  while (!stop_.load(std::memory_order_acquire)) {
    // Reap due completions (the TX-completion "interrupt"), then a pending run. SCHED is
    // cleared before the run, so a schedule() during the run is not lost: it sets SCHED again.
    if (service()) {
      quiet = 0;
      continue;
    }

    const uint64_t runs = runs_.get();
    if (runs != last_runs) {
      last_runs = runs;
      quiet = 0;
    } else if (quiet < kActiveTicks) {
      ++quiet;
    }
    const bool deep = quiet >= kActiveTicks;
    uint64_t deadline = now_ns() + static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(
            deep ? std::chrono::duration_cast<std::chrono::microseconds>(kIdleWake) : service_tick_)
            .count());
    const uint64_t next_poll = device_.next_poll_ns();
    if (next_poll != 0 && next_poll < deadline) deadline = next_poll;

    if (deep) {
      service_idle_.store(true, std::memory_order_seq_cst);  // Dekker pair with schedule()
      if (sched_.load(std::memory_order_seq_cst)) {
        service_idle_.store(false, std::memory_order_relaxed);
        continue;
      }
    }
    // seq_cst: the other half of arm_watchdog()'s Dekker pair (after service_idle_ above).
    const uint64_t wd_seen = watchdog_.load(std::memory_order_seq_cst);
    if (wd_seen != 0 && wd_seen < deadline) deadline = wd_seen;
    {
      // A relative wait: now_ns() may be a TSC clock whose scale differs from steady_clock's
      // by a few ppm, so absolute deadlines would drift.
      const uint64_t now = now_ns();
      const auto wait = std::chrono::nanoseconds(deadline > now ? deadline - now : 0);
      std::unique_lock lock(service_mutex_);
      service_cv_.wait_for(lock, wait, [this, wd_seen] {
        // acquire/relaxed: re-checked under the mutex that schedule()/shutdown()/arm_watchdog()
        // take to notify; a re-armed watchdog changes the deadline, so it ends the wait too.
        return stop_.load(std::memory_order_acquire) || sched_.load(std::memory_order_relaxed) ||
               watchdog_.load(std::memory_order_relaxed) != wd_seen;
      });
    }
    service_idle_.store(false, std::memory_order_relaxed);  // only a hint for schedule()
  }
}

bool QueueBase::inspect_qdisc(const std::function<void(const Qdisc&)>& fn,
                              std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + timeout;
  std::unique_lock lock(inspect_mutex_);
  if (inspect_closed_) return false;
  ++inspect_callers_;
  // Wait for the slot: one request at a time.
  inspect_cv_.wait_until(lock, deadline, [this] { return inspect_closed_ || !inspect_fn_; });
  bool served = false;
  std::exception_ptr error;
  if (!inspect_closed_ && !inspect_fn_) {
    inspect_fn_ = &fn;
    inspect_done_ = false;
    inspect_error_ = nullptr;
    for (;;) {
      // seq_cst: set before the schedule() below (whose SCHED exchange the service thread
      // acquires), so the deferred run it asks for sees it; read relaxed by owners in run_end().
      inspect_pending_.store(true, std::memory_order_seq_cst);
      lock.unlock();
      schedule();  // an idle queue gets a deferred run, whose run_end() serves the request
      lock.lock();
      const Clock::time_point slice = std::min(deadline, Clock::now() + kInspectRetry);
      inspect_cv_.wait_until(lock, slice, [this] { return inspect_done_ || inspect_closed_; });
      if (inspect_done_ || inspect_closed_ || Clock::now() >= deadline) break;
    }
    served = inspect_done_;
    error = std::exchange(inspect_error_, nullptr);
    // Withdraw (on timeout or shutdown): fn is never called once the slot is cleared.
    // relaxed: under inspect_mutex_, which serve_inspect_slow() takes before reading the slot.
    inspect_pending_.store(false, std::memory_order_relaxed);
    inspect_fn_ = nullptr;
    inspect_done_ = false;
  }
  --inspect_callers_;
  inspect_cv_.notify_all();  // the next caller in line, or close_inspect() waiting for us
  lock.unlock();
  if (error) std::rethrow_exception(error);
  return served;
}

void QueueBase::serve_inspect_slow() noexcept {
  std::lock_guard lock(inspect_mutex_);
  if (!inspect_fn_ || inspect_done_) return;  // withdrawn, or served by an earlier owner
  // relaxed: under inspect_mutex_ (see inspect_qdisc()).
  inspect_pending_.store(false, std::memory_order_relaxed);
  try {
    (*inspect_fn_)(*qdisc_);
  } catch (...) {
    inspect_error_ = std::current_exception();  // rethrown by the caller
  }
  inspect_done_ = true;
  inspect_cv_.notify_all();
}

void QueueBase::close_inspect() noexcept {
  std::unique_lock lock(inspect_mutex_);
  inspect_closed_ = true;
  inspect_cv_.notify_all();
  inspect_cv_.wait(lock, [this] { return inspect_callers_ == 0; });
}

int QueueBase::xmit_list(PacketList& batch) noexcept {
  int sent = 0;
  {
    std::lock_guard tx(device_.tx_lock());  // HARD_TX_LOCK
    while (!batch.empty()) {
      if (device_.stopped()) break;  // stopped (before or mid-train): the rest is requeued
      Packet* p = batch.pop_front();
      const bool more = !batch.empty();  // xmit_more: the doorbell waits for the last packet
      if (device_.xmit(p, more) != XmitResult::ok) {
        batch.push_front(p);
        break;
      }
      ++sent;
    }
    sent_.add(static_cast<uint64_t>(sent));
    batches_.add(1);
  }
  return sent;
}

void QueueBase::requeue(PacketList& rest) noexcept {
  const uint64_t n = rest.size();
  requeue_qlen_.add(n);
  requeue_backlog_.add(rest.bytes());
  requeues_.add(n);
  // The refused packets go back at the HEAD. They were the oldest packets of the queue: either
  // the batch came from the qdisc, and then the requeue list was empty, or it was a prefix of
  // the requeue list (cut short by the quota or the BQL budget), and then what is still on the
  // list came after them.
  rest.splice_back(requeue_);
  requeue_ = std::move(rest);
}

bool QueueBase::drain(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (device_.in_flight() == 0 && quiescent() && device_.in_flight() == 0) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

TxQueueStats QueueBase::stats() const {
  TxQueueStats s;
  s.submitted = submitted_.sum();
  s.sent = sent_.get();
  s.qdisc = qdisc_->stats();
  s.qdisc.requeues = requeues_.get();
  s.qdisc.qlen += requeue_qlen_.get();
  s.qdisc.backlog += requeue_backlog_.get();
  s.dropped = s.qdisc.drops + strategy_drops_.sum() + purged_.get();
  s.queued = s.qdisc.qlen + strategy_queued();
  s.requeues = requeues_.get();
  s.bypassed = bypassed_.get();
  s.runs = runs_.get();
  s.deferred_runs = deferred_runs_.load(std::memory_order_relaxed);  // relaxed: a statistic
  s.batches = batches_.get();
  s.device = device_.stats();
  lock_stats(s.lock_waits, s.lock_wait_ns);
  return s;
}

std::optional<TxQueueStats> QueueBase::consistent_stats(std::chrono::milliseconds timeout) {
  // Served by the driver-loop owner at run_end(): no batch is between the qdisc and the device
  // there, and nothing else dequeues or sends.
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + timeout;
  for (;;) {
    TxQueueStats s;
    bool complete = false;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    const auto read = [&](const Qdisc&) {
      s = stats();
      complete = snapshot_complete();
    };
    if (left.count() <= 0 || !inspect_qdisc(read, left)) return std::nullopt;
    if (complete) return s;
    std::this_thread::sleep_for(std::chrono::microseconds(100));  // a hand-off was under way
  }
}

}  // namespace txpath
