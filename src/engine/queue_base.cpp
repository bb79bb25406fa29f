// SPDX-License-Identifier: MIT
#include "engine/queue_base.hpp"

#include <algorithm>
#include <thread>
#include <utility>

namespace txpath {

namespace {
// How often a waiting inspect_qdisc() asks for another deferred run.
constexpr std::chrono::milliseconds kInspectRetry{1};

}  // namespace

QueueBase::QueueBase(Device& device, std::unique_ptr<Qdisc> qdisc, const TxQueueConfig& config,
                     std::string_view strategy, std::string_view lock_kind)
    : device_(device),
      qdisc_(std::move(qdisc)),
      strategy_(strategy),
      lock_kind_(lock_kind),
      scheduler_(device, *this, config),
      loop_(device, *qdisc_, scheduler_, config.quota) {
  // The device's only upstream signal: a woken queue schedules a run (netif_tx_wake_queue).
  device_.attach_queue([this] { schedule(); }, [this] { scheduler_.raise_irq(); });
}

// Normally a no-op: Finalized<> (or the owner) has shut the queue down while the strategy still
// existed. stop_workers() would reach only the base's no-op here.
QueueBase::~QueueBase() { shutdown(); }

void QueueBase::shutdown() noexcept {
  if (shut_down_) return;  // done already: by the owner, then again by the destructors
  shut_down_ = true;
  stop_workers();    // first: the strategy's threads feed the qdisc and run the loop
  close_inspect();   // no inspect_qdisc() waits for a service thread that is gone
  scheduler_.stop();
  device_.detach_queue();
  purge();
}

void QueueBase::purge() noexcept {
  // Teardown: whatever is still queued is freed and counted as dropped (qdisc_reset + purge).
  // AQM victims still held were counted as drops when they were dropped: not purged again.
  PacketList already_dropped;
  qdisc_->take_dequeue_drops(already_dropped);
  free_packets(std::move(already_dropped));
  PacketList to_free;
  qdisc_->reset(to_free);
  loop_.take_requeued(to_free);
  purge_strategy(to_free);
  purged_.add(to_free.size());
  free_packets(std::move(to_free));
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

bool QueueBase::edit_qdisc(const std::function<void(Qdisc& root, QdiscEdit& edit)>& fn,
                           std::chrono::milliseconds timeout) {
  if (!editable()) return false;
  QdiscEdit edit;
  // inspect_qdisc() runs the request in the serialised context and only once: either it ran
  // (and the edit is complete) or it never will.
  const bool served = inspect_qdisc([&](const Qdisc&) { apply_edit(fn, edit); }, timeout);
  free_packets(std::move(edit.freed));  // no lock held here
  return served;
}

void QueueBase::apply_edit(const std::function<void(Qdisc& root, QdiscEdit& edit)>& fn,
                           QdiscEdit& edit) {
  const uint64_t drops_before = qdisc_->drops();
  fn(*qdisc_, edit);
  std::unique_ptr<Qdisc> old;
  if (edit.root) {
    {
      std::unique_lock swap(root_mutex_);
      old = std::exchange(qdisc_, std::move(edit.root));
    }
    loop_.set_qdisc(*qdisc_);
    // The old root's dequeue victims were counted when dropped; what it still holds is dropped now.
    old->take_dequeue_drops(edit.freed);
    PacketList left;
    old->reset(left);
    edit.dropped += left.size();
    edit.freed.splice_back(left);
  }
  // TxQueueStats::dropped (the root's drops + ... + edit_drops_) grows by exactly edit.dropped,
  // whatever part of it the (new) root's own counter holds; unsigned wrap-around: a new root may
  // count fewer drops than the old one did.
  edit_drops_.add(edit.dropped - (qdisc_->drops() - drops_before));
}

void QueueBase::close_inspect() noexcept {
  std::unique_lock lock(inspect_mutex_);
  inspect_closed_ = true;
  inspect_cv_.notify_all();
  inspect_cv_.wait(lock, [this] { return inspect_callers_ == 0; });
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
  s.sent = loop_.sent();
  {
    std::shared_lock root(root_mutex_);  // edit_qdisc() may be replacing the root
    s.qdisc = qdisc_->stats();
  }
  s.qdisc.requeues = loop_.requeues();
  s.qdisc.qlen += loop_.requeue_qlen();
  s.qdisc.backlog += loop_.requeue_backlog();
  s.dropped = s.qdisc.drops + strategy_drops_.sum() + purged_.get() + edit_drops_.get();
  s.queued = s.qdisc.qlen + strategy_queued();
  s.requeues = loop_.requeues();
  s.bypassed = loop_.bypassed();
  s.runs = runs_.get();
  s.deferred_runs = scheduler_.deferred_runs();
  s.batches = loop_.batches();
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
