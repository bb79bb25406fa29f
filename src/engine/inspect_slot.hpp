// SPDX-License-Identifier: MIT
// The mailbox of TxQueue::inspect_qdisc(): a control thread leaves one function for the queue's
// serialised context (a driver-loop owner, root lock or the strategy's serialisation held) and
// waits until that context has run it, or until its time is up.
//
// One request at a time; later callers wait for the slot. The caller sets a `pending` hint and
// asks for a run (the `ask` callback: QueueBase::schedule()), and asks again every kRetry: a
// deferred run either wins RUNNING and serves at its run_end(), or finds an owner that serves at
// its own. The hint is not in this object: it lives on the owner's RUNNING cache line, which
// every run writes anyway, and the owners read it there (QueueBase::serve_inspect()), so their
// test costs one load of a line they hold.
// A request withdrawn (timeout, close()) is never run afterwards. close() (shutdown) refuses new
// callers, wakes the waiting ones and returns once they have all left.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>

#include "txpath/qdisc.hpp"

namespace txpath {

class InspectSlot {
 public:
  using Request = std::function<void(const Qdisc&)>;
  // How often a waiting caller asks for another run.
  static constexpr std::chrono::milliseconds kRetry{1};

  // `pending`: the owners' hint (see above). It must outlive the slot.
  explicit InspectSlot(std::atomic<bool>& pending) noexcept : pending_(pending) {}
  InspectSlot(const InspectSlot&) = delete;
  InspectSlot& operator=(const InspectSlot&) = delete;

  // Leaves fn for the serialised context and waits up to `timeout`, calling ask() to have a run
  // serve it. True if fn ran; false on timeout or once closed. What fn threw is rethrown here.
  // Throws UsageError, waiting for nothing, when called from inside this slot's own request
  // (fn, on the thread that serves it), which would wait for itself.
  bool request(const Request& fn, std::chrono::milliseconds timeout, const std::function<void()>& ask);

  // The owners' side, in the serialised context only, once they saw the hint set: runs a
  // waiting request with `root`, the qdisc it may read.
  void serve(const Qdisc& root) noexcept;

  // Refuses further requests, wakes the waiting callers and waits until they have left.
  void close() noexcept;

 private:
  std::atomic<bool>& pending_;
  // All below under mutex_ (control path only).
  std::mutex mutex_;
  std::condition_variable cv_;     // request served, slot freed, or closed
  const Request* fn_ = nullptr;    // the request; null: the slot is free
  bool done_ = false;              // fn has run
  std::exception_ptr error_;       // what fn threw
  bool closed_ = false;            // close() began
  int callers_ = 0;                // threads inside request()
};

}  // namespace txpath
