// SPDX-License-Identifier: MIT
#include "engine/inspect_slot.hpp"

#include <algorithm>
#include <utility>

#include "txpath/error.hpp"

namespace txpath {

namespace {

// The slot whose request this thread is running (serve()), or null: a request() on it from
// inside that request would wait for its own mutex and for the run that is executing it.
thread_local const InspectSlot* tls_serving = nullptr;

}  // namespace

bool InspectSlot::request(const Request& fn, std::chrono::milliseconds timeout,
                          const std::function<void()>& ask) {
  using Clock = std::chrono::steady_clock;
  if (tls_serving == this)
    throw UsageError(
        "inspect_qdisc/edit_qdisc/consistent_stats called from inside an inspect_qdisc or "
        "edit_qdisc callback of the same queue (it would wait for itself)");
  const Clock::time_point deadline = Clock::now() + timeout;
  std::unique_lock lock(mutex_);
  if (closed_) return false;
  ++callers_;
  // Wait for the slot: one request at a time.
  cv_.wait_until(lock, deadline, [this] { return closed_ || !fn_; });
  bool served = false;
  std::exception_ptr error;
  if (!closed_ && !fn_) {
    fn_ = &fn;
    done_ = false;
    error_ = nullptr;
    for (;;) {
      // seq_cst: set before ask()'s schedule() (whose SCHED exchange the service thread
      // acquires), so the deferred run it asks for sees it; read relaxed by owners
      // (maybe_pending()).
      pending_.store(true, std::memory_order_seq_cst);
      lock.unlock();
      ask();  // an idle queue gets a deferred run, whose run_end() serves the request
      lock.lock();
      const Clock::time_point slice = std::min(deadline, Clock::now() + kRetry);
      cv_.wait_until(lock, slice, [this] { return done_ || closed_; });
      if (done_ || closed_ || Clock::now() >= deadline) break;
    }
    served = done_;
    error = std::exchange(error_, nullptr);
    // Withdraw (on timeout or close): fn is never called once the slot is cleared.
    // relaxed: under mutex_, which serve() takes before reading the slot.
    pending_.store(false, std::memory_order_relaxed);
    fn_ = nullptr;
    done_ = false;
  }
  --callers_;
  cv_.notify_all();  // the next caller in line, or close() waiting for us
  lock.unlock();
  if (error) std::rethrow_exception(error);
  return served;
}

void InspectSlot::serve(const Qdisc& root) noexcept {
  std::lock_guard lock(mutex_);
  if (!fn_ || done_) return;  // withdrawn, or served by an earlier owner
  // relaxed: under mutex_ (see request()).
  pending_.store(false, std::memory_order_relaxed);
  const InspectSlot* const outer = std::exchange(tls_serving, this);  // another queue's, or null
  try {
    (*fn_)(root);
  } catch (...) {
    error_ = std::current_exception();  // rethrown by the caller
  }
  tls_serving = outer;
  done_ = true;
  cv_.notify_all();
}

void InspectSlot::close() noexcept {
  std::unique_lock lock(mutex_);
  closed_ = true;
  cv_.notify_all();
  cv_.wait(lock, [this] { return callers_ == 0; });
}

}  // namespace txpath
