// SPDX-License-Identifier: MIT
#include "engine/queue_base.hpp"

#include <thread>
#include <utility>

namespace txpath {

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
  inspect_.close();  // no inspect_qdisc() waits for a service thread that is gone
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
  return inspect_.request(fn, timeout, [this] { schedule(); });
}

void QueueBase::serve_inspect_slow() noexcept { inspect_.serve(*qdisc_); }

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
    if (edit.root_goes) loop_.take_requeued(left);  // the old root's requeued packets: RUNNING is ours
    edit.dropped += left.size();
    edit.freed.splice_back(left);
  }
  // TxQueueStats::dropped (the root's drops + ... + edit_drops_) grows by exactly edit.dropped,
  // whatever part of it the (new) root's own counter holds; unsigned wrap-around: a new root may
  // count fewer drops than the old one did.
  edit_drops_.add(edit.dropped - (qdisc_->drops() - drops_before));
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
